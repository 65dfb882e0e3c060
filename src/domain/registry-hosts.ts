// Owns the rules about image registry hosts, pure and shared by the control API, the
// controller, the image puller, the console and the CLI: which host an image is pulled from
// (Docker Hub's names and short names are one host, docker.io), the form of a host[:port] (a
// vault credential's `registry`, an entry of --registries), which hosts the daemon may be sent
// to (the operator's list; by default any host but loopback, link-local and this service's own
// listeners), whether a vault credential may be used for an image (only on the host it is bound
// to) and what a clone or a PATCH that moves an image to another host does with the registry
// credentials it inherits (drops them; the request must say so). Addresses a name resolves
// to and this host's own addresses are the callers' to find (DNS, interfaces) and pass in:
// nothing here does I/O.

import { resolveImage, type ImageMap } from './image-map.js';

/** Docker Hub, under the one name these rules use for it. */
export const DOCKER_HUB = 'docker.io';
/** The names Docker Hub goes by; an image with no registry part is Docker Hub's too. */
const DOCKER_HUB_NAMES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);
/** --registries entry meaning "any host the default would take": not loopback, link-local nor this service. */
export const ANY_PUBLIC_REGISTRY = '*';

/**
 * The registry part of an image reference as Docker reads it (`127.0.0.1:5000/team/x` →
 * `127.0.0.1:5000`, `nvcr.io/nim/x` → `nvcr.io`), or null for Docker Hub's short names
 * (`vllm/vllm-openai`, `ubuntu`): a first component is a registry only when it has a `.` or a
 * `:`, or is `localhost`.
 */
export function registryOf(image: string): string | null {
  const first = image.split('/')[0] ?? '';
  if (!image.includes('/')) return null;
  return first.includes('.') || first.includes(':') || first === 'localhost' ? first : null;
}

/**
 * Whether a container runtime pulls `image` from its registry: every image but infergate's own
 * (the reference engine and the Frontend), which run from the engine image this service builds.
 */
export function pulledFromRegistry(images: ImageMap, image: string, tag: string): boolean {
  const launch = resolveImage(images, image, tag);
  return !(launch.kind === 'frontend' || (launch.kind === 'engine' && launch.native));
}

/** A host[:port] as these rules compare it: lower case, Docker Hub's names as docker.io. */
export function normaliseRegistryHost(host: string): string {
  const lower = host.toLowerCase();
  return DOCKER_HUB_NAMES.has(lower) ? DOCKER_HUB : lower;
}

/** The registry host an image is pulled from, normalised: docker.io for Docker Hub's images. */
export function registryHostOf(image: string): string {
  const registry = registryOf(image);
  return registry === null ? DOCKER_HUB : normaliseRegistryHost(registry);
}

/** A host[:port] split: the name or address (an IPv6 one without its brackets) and the port, if given. */
export function splitRegistryHost(host: string): { name: string; port: number | null } {
  const bracketed = /^\[([^\]]*)\](?::(\d+))?$/.exec(host);
  if (bracketed) return { name: bracketed[1] ?? '', port: bracketed[2] === undefined ? null : Number(bracketed[2]) };
  const colon = host.lastIndexOf(':');
  if (colon < 0) return { name: host, port: null };
  return { name: host.slice(0, colon), port: /^\d+$/.test(host.slice(colon + 1)) ? Number(host.slice(colon + 1)) : Number.NaN };
}

const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
/** Numbers a resolver may read as an IPv4 address (`127.1`, `2130706433`, `0x7f.1`): only the dotted quad is taken. */
const NUMERIC_HOST = /^(0x[0-9a-f]*|\d+)(\.(0x[0-9a-f]*|\d+))*$/i;

export const REGISTRY_HOST_FORM = 'a registry host, host[:port] (e.g. nvcr.io, registry.example.com:5000, 127.0.0.1:5000), without a scheme or a path';

/**
 * What is wrong with `value` as a registry host, in words naming `field`; undefined when it
 * is one. The host needs a `.` or a port, or is `localhost`: otherwise Docker reads the name
 * as a Docker Hub namespace and no image would ever be pulled from it.
 */
export function registryHostProblem(value: string, field = 'registry'): string | undefined {
  if (value === '') return `${field} is required: ${REGISTRY_HOST_FORM}`;
  if (/[\s/@?#]/.test(value) || value.includes('://')) return `${field} must be ${REGISTRY_HOST_FORM}`;
  const { name, port } = splitRegistryHost(value);
  if (port !== null && (!Number.isInteger(port) || port < 1 || port > 65535)) return `${field} has no valid port: ${REGISTRY_HOST_FORM}, the port 1 to 65535`;
  if (value.startsWith('[')) {
    return ipv6Groups(name) === null ? `${field} must be ${REGISTRY_HOST_FORM}; "${name}" is not an IPv6 address` : undefined;
  }
  if (NUMERIC_HOST.test(name) && !IPV4.test(name)) return `${field} must write an IPv4 address as four decimal numbers (a.b.c.d), not "${name}"`;
  if (!name.split('.').every((label) => DNS_LABEL.test(label))) return `${field} must be ${REGISTRY_HOST_FORM}`;
  if (!name.includes('.') && port === null && name.toLowerCase() !== 'localhost') {
    return `${field} "${value}" has no "." and no port: Docker would read it as a Docker Hub namespace; give the registry's full name (e.g. ${name}.example.com) or its port`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------
// Addresses.

export type AddressKind = 'loopback' | 'link-local' | 'unspecified' | 'other';

/** The eight 16-bit groups of an IPv6 address (an embedded IPv4 tail read too), or null when it is not one. */
function ipv6Groups(address: string): number[] | null {
  let text = address.split('%')[0] ?? '';
  if (!/^[0-9a-f:.]+$/i.test(text) || !text.includes(':')) return null;
  const lastColon = text.lastIndexOf(':');
  const v4 = text.slice(lastColon + 1);
  if (v4.includes('.')) {
    // `::ffff:127.0.0.1`: the dotted tail is the last two groups.
    if (!IPV4.test(v4)) return null;
    const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string): number[] | null => {
    if (part === '') return [];
    const groups = part.split(':');
    return groups.every((g) => /^[0-9a-f]{1,4}$/i.test(g)) ? groups.map((g) => parseInt(g, 16)) : null;
  };
  const left = parse(halves[0] ?? '');
  const right = parse(halves[1] ?? '');
  if (left === null || right === null) return null;
  if (halves.length === 1) return left.length === 8 ? left : null;
  const missing = 8 - left.length - right.length;
  return missing < 1 ? null : [...left, ...new Array<number>(missing).fill(0), ...right];
}

/**
 * What an address reaches: this host's loopback (127.0.0.0/8, ::1, and an IPv4-mapped
 * 127.x), a link-local address (169.254.0.0/16, fe80::/10: cloud metadata services live
 * there), the unspecified address (0.0.0.0/8, ::, which connects to this host), or anything
 * else. Not an IP address: 'other' (a name is judged by what it resolves to).
 */
export function addressKind(address: string): AddressKind {
  if (IPV4.test(address)) {
    const [a, b] = address.split('.').map(Number) as [number, number];
    if (a === 127) return 'loopback';
    if (a === 0) return 'unspecified';
    if (a === 169 && b === 254) return 'link-local';
    return 'other';
  }
  const groups = ipv6Groups(address);
  if (groups === null) return 'other';
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [number, number, number, number, number, number, number, number];
  const zeroHead = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (zeroHead && g5 === 0xffff) return addressKind(`${g6 >> 8}.${g6 & 0xff}.${g7 >> 8}.${g7 & 0xff}`);
  if (zeroHead && g5 === 0 && g6 === 0 && g7 === 1) return 'loopback';
  if (zeroHead && g5 === 0 && g6 === 0 && g7 === 0) return 'unspecified';
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  return 'other';
}

/** An address as sets of addresses hold it: IPv6 in full lower-case groups, an IPv4-mapped one as IPv4. */
export function canonicalAddress(address: string): string {
  if (IPV4.test(address)) return address;
  const groups = ipv6Groups(address);
  if (groups === null) return address.toLowerCase();
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [g6, g7] = [groups[6] ?? 0, groups[7] ?? 0];
    return `${g6 >> 8}.${g6 & 0xff}.${g7 >> 8}.${g7 & 0xff}`;
  }
  return groups.map((g) => g.toString(16)).join(':');
}

/** Whether `name` is an IP address literal (the DNS is not asked about those). */
export function isAddressLiteral(name: string): boolean {
  return IPV4.test(name) || ipv6Groups(name) !== null;
}

// ---------------------------------------------------------------------------------------
// Which hosts the daemon may be sent to.

/** What the caller found out about a host and this service, for registryRefusal. */
export interface RegistryFacts {
  /** The addresses the host's name resolves to (none for an address literal, or a name that did not resolve). */
  resolved: readonly string[];
  /** This service's own listeners: the addresses this host has (canonical) and the ports it listens on. */
  own: { addresses: ReadonlySet<string>; ports: ReadonlySet<number> };
}

/**
 * --registries as the service reads it: entries checked (a host[:port], or `*`) and
 * normalised; empty means `*`. The problem with the first bad entry, if any.
 */
export function parseRegistryList(raw: string): { list: string[] } | { problem: string } {
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const list: string[] = [];
  for (const entry of entries) {
    if (entry === ANY_PUBLIC_REGISTRY) {
      list.push(entry);
      continue;
    }
    const problem = registryHostProblem(entry, `--registries entry "${entry}"`);
    if (problem) return { problem: `${problem}; or * for any host that is not loopback, link-local or this service` };
    list.push(normaliseRegistryHost(entry));
  }
  return { list: [...new Set(list)] };
}

const DEFAULT_PORTS = [443, 80];

/**
 * Why the daemon must not be sent to `host` (a registry host as an image names it), or
 * undefined when it may. `listed` is the operator's --registries (normalised; empty: `*`):
 * a host listed exactly (host and port) is taken; `*` takes any host that is not loopback,
 * link-local or unspecified — by its name (`localhost`), its address, or any address its
 * name resolves to. This service's own listeners (its addresses with the gateway, API or
 * metrics port; no port means 443 and 80) are refused even when listed: a pull is a GET the
 * daemon sends wherever it is told, never a registry.
 */
export function registryRefusal(host: string, listed: readonly string[], facts: RegistryFacts): string | undefined {
  const normalised = normaliseRegistryHost(host);
  const form = registryHostProblem(normalised, 'the registry host');
  if (form) return `${form}; the image names "${host}"`;
  const { name, port } = splitRegistryHost(normalised);
  const addresses = [...(isAddressLiteral(name) ? [name] : []), ...facts.resolved].map(canonicalAddress);
  const thisHost = name === 'localhost' || addresses.some((a) => addressKind(a) === 'loopback' || addressKind(a) === 'unspecified');
  const local = thisHost || addresses.some((a) => addressKind(a) === 'link-local');
  const ports = port === null ? DEFAULT_PORTS : [port];
  const own = thisHost || addresses.some((a) => facts.own.addresses.has(a));
  const ownPort = ports.find((p) => facts.own.ports.has(p));
  if (own && ownPort !== undefined) {
    return `registry ${normalised} is this service's own listener (port ${ownPort} on this host): an image is never pulled from it`;
  }
  if (listed.includes(normalised)) return undefined;
  const anyPublic = listed.length === 0 || listed.includes(ANY_PUBLIC_REGISTRY);
  if (anyPublic && !local) return undefined;
  if (anyPublic) {
    const what = thisHost ? 'this host (loopback)' : 'a link-local address';
    return `registry ${normalised} is ${what}: the service pulls from such a host only when the operator lists it exactly in --registries`;
  }
  const shown = listed.map((l) => (l === ANY_PUBLIC_REGISTRY ? '* (any public host)' : l)).join(', ');
  return `registry ${normalised} is not one this service pulls from (--registries: ${shown})`;
}

// ---------------------------------------------------------------------------------------
// Registry credentials and the host they are for.

/** What the rules need of a vault registry credential. */
export interface BoundCredential {
  id: number;
  name: string;
  /** The registry host it is bound to; null: none yet (an older credential an admin must bind). */
  registry: string | null;
}

/** The reasons of the deployment events about registry credentials that were not sent. */
export const REGISTRY_CREDENTIAL_EVENTS = {
  /** The vault credential is bound to no registry host (an older one an admin has not bound). */
  unbound: 'RegistryCredentialUnbound',
  /** The vault credential is bound to another host than the image's: its password stays here. */
  withheld: 'RegistryCredentialWithheld',
} as const;

/** The words for a vault credential bound to no host: it is not used until an admin binds it. */
export function unboundCredentialMessage(c: Pick<BoundCredential, 'id' | 'name'>): string {
  return `registry credential "${c.name}" (id ${c.id}) is bound to no registry host, so it is not used: an admin must bind it (PATCH /vault/registry-credentials/${c.id} with {"registry": "<host[:port]>"}, or infergate registry-credentials bind)`;
}

/**
 * Why `credential` may not be used to pull `image`, naming registry_credential_id; undefined
 * when it may: a credential is sent only to the registry host it is bound to.
 */
export function credentialHostProblem(credential: BoundCredential, image: string): string | undefined {
  if (credential.registry === null) return unboundCredentialMessage(credential);
  const host = registryHostOf(image);
  if (normaliseRegistryHost(credential.registry) === host) return undefined;
  return `registry_credential_id ${credential.id} ("${credential.name}") is for the registry ${credential.registry}, and image ${image} is pulled from ${host}: a credential is sent only to its own registry; choose one bound to ${host}, or none`;
}

/** The registry credential fields of a general deployment's request. */
export const REGISTRY_CREDENTIAL_FIELDS = ['registry_username', 'registry_password', 'registry_credential_id'] as const;
export type RegistryCredentialField = (typeof REGISTRY_CREDENTIAL_FIELDS)[number];

/** What the stored deployment (a PATCH) or the clone's source holds of registry credentials. */
export interface HeldCredentials {
  registry_username: string | null;
  has_registry_password: boolean;
  registry_credential_id: number | null;
}

/** The inherited credential fields, in the order the API reports them. */
export function heldFields(held: HeldCredentials): RegistryCredentialField[] {
  return REGISTRY_CREDENTIAL_FIELDS.filter((f) => (f === 'registry_username' ? held.registry_username !== null : f === 'registry_password' ? held.has_registry_password : held.registry_credential_id !== null));
}

/**
 * A clone or a PATCH that moves a deployment's image to another registry host drops the
 * registry credentials it inherits: those of host A are never sent to host B. `moved` is
 * null when the host stays (nothing dropped); otherwise the fields dropped and, when the
 * request neither gives credentials again nor sets them to null (it names none of the three
 * fields), one problem per inherited field.
 */
export function registryMove(
  fromImage: string,
  toImage: string,
  held: HeldCredentials,
  body: Readonly<Record<string, unknown>>,
): { moved: null } | { moved: { from: string; to: string }; dropped: RegistryCredentialField[]; problems: { field: RegistryCredentialField; message: string }[] } {
  const from = registryHostOf(fromImage);
  const to = registryHostOf(toImage);
  if (from === to) return { moved: null };
  const dropped = heldFields(held);
  const addressed = REGISTRY_CREDENTIAL_FIELDS.some((f) => Object.hasOwn(body, f));
  if (dropped.length === 0 || addressed) return { moved: { from, to }, dropped, problems: [] };
  const message = registryMoveMessage(from, to, dropped);
  return { moved: { from, to }, dropped, problems: dropped.map((field) => ({ field, message })) };
}

export function registryMoveMessage(from: string, to: string, fields: readonly string[]): string {
  const which = fields.join(' and ');
  return `the image moves from the registry ${from} to ${to}, and the credentials of ${from} (${which}) are not sent to ${to}: give ${to}'s (registry_credential_id, or registry_username and registry_password), or set ${which} to null to pull without`;
}
