// Owns the I/O around the registry-host rule (domain/registry-hosts.ts): it resolves a
// registry's name the way the daemon will (getaddrinfo, /etc/hosts included), reads this
// host's own addresses, and knows the ports this service listens on (told as each listener
// binds: a port 0 is known only then). The control API asks it before it accepts an image
// (a 400 naming `image`), and the image puller asks it again just before every pull, so a
// record written another way, or a name that resolves elsewhere now, still reaches no
// refused host. The rule itself is the domain's; this only gathers the facts it needs.

import { lookup } from 'node:dns/promises';
import os from 'node:os';
import type { RegistryGate } from '../domain/ports.js';
import { canonicalAddress, DOCKER_HUB, isAddressLiteral, normaliseRegistryHost, registryHostProblem, registryRefusal, splitRegistryHost } from '../domain/registry-hosts.js';

/** How long a name's lookup may take before the host is judged by its name alone. */
const LOOKUP_TIMEOUT_MS = 3000;

export interface RegistryGateOptions {
  /** --registries, normalised (parseRegistryList); empty: any host that is not loopback, link-local or this service. */
  listed: readonly string[];
  /** This service's listener ports known at start (more are added as listeners bind). */
  ports?: readonly number[];
  /** Resolves a name to its addresses; default: getaddrinfo through node:dns. */
  resolve?: (name: string) => Promise<string[]>;
  /** This host's addresses; default: every interface's. */
  addresses?: () => string[];
}

async function resolveName(name: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string[]>((resolve) => {
    timer = setTimeout(() => resolve([]), LOOKUP_TIMEOUT_MS);
    timer.unref();
  });
  const found = lookup(name, { all: true, verbatim: true }).then(
    (all) => all.map((a) => a.address),
    // A name that does not resolve here is not reached by the daemon either (same resolver).
    () => [],
  );
  try {
    return await Promise.race([found, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function interfaceAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

export class HostRegistryGate implements RegistryGate {
  readonly listed: readonly string[];
  private readonly ports: Set<number>;
  private readonly resolve: (name: string) => Promise<string[]>;
  private readonly addresses: () => string[];

  constructor(opts: RegistryGateOptions) {
    this.listed = opts.listed;
    this.ports = new Set((opts.ports ?? []).filter((p) => p > 0));
    this.resolve = opts.resolve ?? resolveName;
    this.addresses = opts.addresses ?? interfaceAddresses;
  }

  /** A port this service now listens on (the gateway, the control API, the metrics listener). */
  addOwnPort(port: number): void {
    if (port > 0) this.ports.add(port);
  }

  async refusal(host: string): Promise<string | undefined> {
    const normalised = normaliseRegistryHost(host);
    const { name } = splitRegistryHost(normalised);
    // Docker Hub and address literals need no lookup; nor does localhost, refused by its name.
    const needsLookup = normalised !== DOCKER_HUB && registryHostProblem(normalised) === undefined && !isAddressLiteral(name) && name !== 'localhost';
    const resolved = needsLookup ? await this.resolve(name) : [];
    const own = new Set([...this.addresses(), '0.0.0.0', '::'].map(canonicalAddress));
    return registryRefusal(host, this.listed, { resolved, own: { addresses: own, ports: this.ports } });
  }
}
