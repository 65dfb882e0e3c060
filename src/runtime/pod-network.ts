// Owns the arithmetic and the command text of the local runtime's pods, as pure functions: a
// pod is one network namespace — a general replica's own, or one an orchestrated deployment's
// components share (its Frontend reaches its workers, and Decode its Prefill's KV port, inside
// it) — linked to the host by a veth pair on a /30 of the operator's range (`--replica-subnet`):
// the host side `igr<index>` holds the block's first address, the pod's `eth0` the second, and
// the pod has no other route, so it reaches nothing but its own link. The index names the
// host-side interface, so the kernel's rule that names are unique on the host is what keeps two
// services (or two pods of one) from taking the same block. Running these commands, and when,
// is pods.ts's job.

import { COMPONENT } from '../domain/components.js';
import type { ReplicaRequest } from './runtime.js';

/** An IPv4 range pods take their /30s from. */
export interface Subnet {
  /** The network address as an unsigned 32-bit number. */
  base: number;
  prefix: number;
}

/** Addresses per pod: a /30 holds the network address, the host side, the pod side and the broadcast address. */
export const BLOCK_SIZE = 4;
export const BLOCK_PREFIX = 30;

/** Where `ip netns` keeps named namespaces (/var/run is /run on current systems). */
export const NETNS_DIR = '/var/run/netns';

/** The host side of every pod's veth pair starts with this: the firewall rules match `igr+`. */
export const HOST_INTERFACE_PREFIX = 'igr';

/** The pod's side of its veth pair, once it is inside the pod. */
export const POD_INTERFACE = 'eth0';

/** What processes in a pod listen on: every address of their own namespace (its loopback and its link). */
export const POD_LISTEN_HOST = '0.0.0.0';

/**
 * `10.213.0.0/16` → the range; a string says what is wrong with it. `maxPrefix`: the smallest
 * range the caller can use (a pod's /30 here; a Docker bridge needs a /29 for its gateway and a
 * container).
 */
export function parseSubnet(raw: string, maxPrefix = BLOCK_PREFIX): Subnet | string {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(raw.trim());
  if (!m) return `must be an IPv4 range in CIDR form (e.g. 10.213.0.0/16), not "${raw}"`;
  const octets = m.slice(1, 5).map(Number);
  const prefix = Number(m[5]);
  if (octets.some((o) => o > 255)) return `"${raw}" is not an IPv4 address range`;
  if (prefix < 8 || prefix > maxPrefix) return `must be between a /8 and a /${maxPrefix}${maxPrefix === BLOCK_PREFIX ? ` (one pod takes a /${BLOCK_PREFIX})` : ''}, not a /${prefix}`;
  const base = toNumber(octets);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  if ((base & mask) >>> 0 !== base) return `"${raw}" has host bits set: the range starts at ${formatAddress((base & mask) >>> 0)}/${prefix}`;
  const first = octets[0]!;
  if (first === 0 || first === 127 || first >= 224 || (first === 169 && octets[1] === 254)) {
    return `"${raw}" is not a range for hosts (this-network, loopback, link-local, multicast or reserved)`;
  }
  return { base, prefix };
}

export function formatSubnet(s: Subnet): string {
  return `${formatAddress(s.base)}/${s.prefix}`;
}

/** How many pods the range holds. */
export function blockCount(s: Subnet): number {
  return 2 ** (32 - s.prefix) / BLOCK_SIZE;
}

/** One pod's link: the names and addresses of block `index`. */
export interface PodLink {
  index: number;
  /** The named namespace (`ip netns`), under NETNS_DIR. */
  namespace: string;
  /** The host side of the veth pair, in the host's namespace. */
  hostInterface: string;
  hostAddress: string;
  /** What replicas of the pod are reached at, from the host. */
  podAddress: string;
}

export function podLink(subnet: Subnet, scope: string, index: number): PodLink {
  if (!Number.isInteger(index) || index < 0 || index >= blockCount(subnet)) throw new RangeError(`pod block ${index} is outside ${formatSubnet(subnet)}`);
  const network = subnet.base + index * BLOCK_SIZE;
  return {
    index,
    namespace: podNamespace(scope, index),
    hostInterface: `${HOST_INTERFACE_PREFIX}${index}`,
    hostAddress: formatAddress(network + 1),
    podAddress: formatAddress(network + 2),
  };
}

/** A service's pods are named with its scope, so a later start of the same service finds what an earlier one left. */
export function podNamespace(scope: string, index: number): string {
  return `infergate-${scope}-${index}`;
}

/** The block index of one of this scope's namespaces, or null for any other name. */
export function podIndexOf(scope: string, namespace: string): number | null {
  const m = /^infergate-([0-9a-f]+)-(\d+)$/.exec(namespace);
  return m && m[1] === scope ? Number(m[2]) : null;
}

/** The block index a host-side interface name holds (`igr12` → 12), or null. */
export function interfaceIndex(name: string): number | null {
  const m = /^igr(\d+)$/.exec(name);
  return m ? Number(m[1]) : null;
}

/**
 * The smallest index that is in the range and in none of `taken`, or null when the range is
 * full. `taken` are the host's igr interfaces and the indexes this process is setting up.
 */
export function freeIndex(subnet: Subnet, taken: ReadonlySet<number>): number | null {
  const count = blockCount(subnet);
  for (let i = 0; i < count; i++) if (!taken.has(i)) return i;
  return null;
}

/**
 * Which pod a replica belongs to: a general replica is a pod of its own; every component of an
 * orchestrated deployment, of every revision, shares the deployment's, as a Kubernetes pod's
 * containers share its network.
 */
export function podKey(req: Pick<ReplicaRequest, 'name' | 'component' | 'deploymentId'>): string {
  return req.component === COMPONENT.Replica ? `replica:${req.name}` : `deployment:${req.deploymentId}`;
}

/**
 * The host's half of a pod's set-up, for one `ip -batch` in the host's namespace. The first
 * line takes the index: it fails with "File exists" when `igr<index>` is already someone's,
 * before anything was made. The pod's end is made under a temporary name, moved into the new
 * namespace, and renamed there (podScript). `ipv6`: the host has IPv6, so no link-local
 * address is made on either side (addrgenmode none) — the pair carries IPv4 only.
 */
export function hostScript(link: PodLink, ipv6: boolean): string {
  const peer = `${link.hostInterface}p`;
  return lines([
    `link add ${link.hostInterface} type veth peer name ${peer}`,
    `netns add ${link.namespace}`,
    `link set ${peer} netns ${link.namespace}`,
    ...(ipv6 ? [`link set ${link.hostInterface} addrgenmode none`] : []),
    `addr add ${link.hostAddress}/${BLOCK_PREFIX} dev ${link.hostInterface}`,
    `link set ${link.hostInterface} up`,
  ]);
}

/** The pod's half, for one `ip -n <namespace> -batch`: loopback up, and the link with its address — and no default route. */
export function podScript(link: PodLink, ipv6: boolean): string {
  return lines([
    'link set lo up',
    `link set ${link.hostInterface}p name ${POD_INTERFACE}`,
    ...(ipv6 ? [`link set ${POD_INTERFACE} addrgenmode none`] : []),
    `addr add ${link.podAddress}/${BLOCK_PREFIX} dev ${POD_INTERFACE}`,
    `link set ${POD_INTERFACE} up`,
  ]);
}

/** Undoes a half-made pod (`ip -force -batch`: each line is tried, whatever the one before did). */
export function undoScript(link: PodLink): string {
  return lines([`netns del ${link.namespace}`, `link del ${link.hostInterface}`]);
}

/** Removes namespaces (their veth pairs go with them once no process is left inside). */
export function removeScript(namespaces: readonly string[]): string {
  return lines(namespaces.map((n) => `netns del ${n}`));
}

/** The line `ip -batch` names in "Command failed -:<line>", or null. */
export function failedLine(stderr: string): number | null {
  const m = /Command failed \S*:(\d+)/.exec(stderr);
  return m ? Number(m[1]) : null;
}

/**
 * The rules that keep pods off the host itself, for iptables and ip6tables alike: no new
 * connection from a pod's link is accepted by this host (a reply to the gateway's or a probe's
 * connection is not new), and nothing is forwarded to or from a pod's link. A pod has no route
 * beyond its link anyway; these cover the host's own addresses on it, and anyone who would
 * route to a pod through this host.
 */
export const FIREWALL_RULES: readonly (readonly string[])[] = [
  ['INPUT', '-i', `${HOST_INTERFACE_PREFIX}+`, '-m', 'conntrack', '--ctstate', 'NEW', '-j', 'DROP'],
  ['FORWARD', '-i', `${HOST_INTERFACE_PREFIX}+`, '-j', 'DROP'],
  ['FORWARD', '-o', `${HOST_INTERFACE_PREFIX}+`, '-j', 'DROP'],
];

/** The rules `iptables-save -t filter` (or ip6tables-save) does not list: the ones to add. */
export function missingRules(saved: string): (readonly string[])[] {
  const present = new Set(saved.split('\n').map((l) => l.trim()));
  return FIREWALL_RULES.filter(([chain, ...match]) => !present.has(`-A ${chain} ${match.join(' ')}`));
}

/**
 * A shell script that adds `rules` unless each is there (`-C`: another service may have added
 * it meanwhile), first in its chain, with the program given as its argument (iptables or
 * ip6tables, an absolute path). Fixed text but for the rules, which are this module's.
 */
export function firewallScript(rules: readonly (readonly string[])[]): string {
  const lines = rules.map(([chain, ...match]) => {
    const spec = match.join(' ');
    return `"$1" -w -C ${chain} ${spec} 2>/dev/null || "$1" -w -I ${chain} 1 ${spec} || status=1`;
  });
  return ['status=0', ...lines, 'exit $status'].join('\n');
}

/** `net:[4026532281]` → 4026532281: the inode a namespace link names. */
export function namespaceInode(link: string): number | null {
  const m = /^net:\[(\d+)\]$/.exec(link);
  return m ? Number(m[1]) : null;
}

/** Effective capabilities from /proc/<pid>/status (`CapEff:\t000001ffffffffff`): whether `bit` is set. */
export function hasCapability(status: string, bit: number): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(status);
  if (!m) return false;
  return (BigInt(`0x${m[1]}`) >> BigInt(bit)) & 1n ? true : false;
}

export const CAP_NET_ADMIN = 12;
export const CAP_SYS_ADMIN = 21;

function lines(l: readonly string[]): string {
  return l.join('\n') + '\n';
}

function toNumber(octets: number[]): number {
  return (((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0) as number;
}

export function formatAddress(n: number): string {
  return [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
}
