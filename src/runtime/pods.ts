// Owns the local runtime's pods on this host: deciding at start whether replicas get them
// (root, the replica sandbox, iproute2's `ip` and util-linux's `nsenter`, the capabilities to
// make namespaces) and saying so, making a pod when its first replica starts (one `ip -batch`
// in the host's namespace, one in the pod's: a netlink socket belongs to one namespace, so the
// two halves cannot share a process), removing it when its last replica stops, keeping pods
// off the host itself with iptables rules installed once, and sweeping the namespaces an
// earlier run of this service left. The names, addresses and command text are
// pod-network.ts's. Every program here runs as root with FIXED_ENV, never with anything a
// deployment sets.

import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../config/config.js';
import {
  CAP_NET_ADMIN,
  CAP_SYS_ADMIN,
  failedLine,
  FIREWALL_RULES,
  firewallScript,
  formatSubnet,
  freeIndex,
  hasCapability,
  hostScript,
  interfaceIndex,
  missingRules,
  namespaceInode,
  NETNS_DIR,
  podIndexOf,
  podLink,
  podNamespace,
  podScript,
  removeScript,
  undoScript,
  type PodLink,
  type Subnet,
} from './pod-network.js';
import { FIXED_ENV, type SandboxHost } from './sandbox.js';
import { firstExecutable } from './host-tools.js';

/** What this host offers pods (resolved once at start). */
export interface PodSettings {
  ip: string;
  nsenter: string;
  /** iptables and ip6tables as found here, each with its -save (absolute paths); empty: no firewall rules. */
  firewall: { program: string; save: string }[];
  subnet: Subnet;
  /** The host has IPv6: veth ends get no link-local address. */
  ipv6: boolean;
}

export interface ReplicaNetworkDetection {
  /** Null: replicas share the host's network. */
  pods: PodSettings | null;
  /** The start-up lines saying how replicas are networked. */
  lines: string[];
}

/** A pod as a replica uses it: where the host reaches it, and the namespace to run in. */
export interface PodHandle {
  address: string;
  /** The namespace's file, for `nsenter --net=`. */
  netns: string;
  nsenter: string;
}

const SHARED_WARNING =
  "each can reach every other replica's port, the metrics listener (and its /sd/replicas) and any service on this host's loopback (a Redis without a password)";

/**
 * Decides how replicas are networked. `host` (or no way to make pods under `auto`) keeps the
 * host's network, with a line that names what is not isolated; `pod` refuses to start without
 * pods (ConfigError).
 */
export function detectReplicaNetwork(settings: Pick<Config, 'replicaNetwork' | 'replicaSubnet'>, sandbox: SandboxHost | null): ReplicaNetworkDetection {
  if (settings.replicaNetwork === 'host') {
    return { pods: null, lines: [`infergate: replicas share this host's network (--replica-network host): they listen on loopback, and ${SHARED_WARNING}`] };
  }
  const found = podTools(sandbox);
  if (typeof found === 'string') {
    if (settings.replicaNetwork === 'pod') throw new ConfigError(`--replica-network pod: replicas cannot have network namespaces here: ${found}`);
    return {
      pods: null,
      lines: [
        `infergate: WARNING: replicas share this host's network (no pods: ${found}); they listen on loopback, but ${SHARED_WARNING}; ` +
          'run the service as root, in the replica sandbox, with iproute2 installed to give each replica a network namespace of its own',
      ],
    };
  }
  const pods: PodSettings = { ...found, subnet: settings.replicaSubnet, ipv6: existsSync('/proc/sys/net/ipv6') };
  const lines = [
    `infergate: replicas run in pods: a network namespace for each general replica and one for each orchestrated deployment, ` +
      `linked to this host by a veth pair in ${formatSubnet(pods.subnet)} (--replica-subnet) with no route beyond it`,
  ];
  if (pods.firewall.length === 0) {
    lines.push(
      "infergate: WARNING: iptables is not installed: a pod can open connections to this host's services that listen on every address (0.0.0.0, the gateway among them) " +
        "at its link's host address; its loopback is its own, so the host's loopback services stay out of reach. Install iptables to drop those connections",
    );
  }
  return { pods, lines };
}

/** The programs pods need, or why there are none here. */
function podTools(sandbox: SandboxHost | null): Omit<PodSettings, 'subnet' | 'ipv6'> | string {
  if (sandbox === null) return 'replicas run unsandboxed, so nothing would keep one in its namespace';
  if (sandbox.identity.kind !== 'root') return 'the service is not root (rootless), and making network namespaces and veth pairs needs root';
  const ip = firstExecutable(['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip']);
  if (ip === null) return 'ip (iproute2) is not installed';
  const nsenter = firstExecutable(['/usr/bin/nsenter', '/bin/nsenter', '/usr/sbin/nsenter']);
  if (nsenter === null) return 'nsenter (util-linux) is not installed';
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'latin1');
  } catch {
    // no /proc: the capability check below says no
  }
  if (!hasCapability(status, CAP_NET_ADMIN) || !hasCapability(status, CAP_SYS_ADMIN)) return 'the service lacks CAP_NET_ADMIN or CAP_SYS_ADMIN (a container without them?)';
  const firewall: PodSettings['firewall'] = [];
  for (const name of ['iptables', 'ip6tables']) {
    const program = firstExecutable([`/usr/sbin/${name}`, `/sbin/${name}`]);
    const save = firstExecutable([`/usr/sbin/${name}-save`, `/sbin/${name}-save`]);
    if (program !== null && save !== null) firewall.push({ program, save });
  }
  return { ip, nsenter, firewall };
}

interface PodEntry {
  members: Set<string>;
  ready: Promise<PodLink>;
}

/** Attempts at a free block before giving up (each lost race to another service costs one). */
const MAX_ATTEMPTS = 64;

export class Pods {
  private readonly pods = new Map<string, PodEntry>();
  /** Block indexes this process is setting up or holds: never offered twice. */
  private readonly claimed = new Set<number>();
  private firewall: Promise<void> | null = null;

  constructor(private readonly opts: { settings: PodSettings; scope: string; logger: Logger }) {}

  /**
   * The pod `key` names, made if `member` is its first: resolves once it is set up; rejects
   * (and holds nothing) when it cannot be.
   */
  acquire(key: string, member: string): Promise<PodHandle> {
    let entry = this.pods.get(key);
    if (entry === undefined) {
      const made: PodEntry = { members: new Set(), ready: this.create() };
      made.ready.catch(() => {
        if (this.pods.get(key) === made) this.pods.delete(key);
      });
      this.pods.set(key, made);
      entry = made;
    }
    entry.members.add(member);
    return entry.ready.then((link) => ({ address: link.podAddress, netns: path.join(NETNS_DIR, link.namespace), nsenter: this.opts.settings.nsenter }));
  }

  /** `member` leaves its pod; the last one out removes it (its veth pair goes with it). */
  async release(key: string, member: string): Promise<void> {
    const entry = this.pods.get(key);
    if (entry === undefined || !entry.members.delete(member) || entry.members.size > 0) return;
    this.pods.delete(key);
    const link = await entry.ready.catch(() => null);
    if (link === null) return;
    const removed = await runIp(this.opts.settings.ip, ['-batch', '-'], removeScript([link.namespace]));
    this.claimed.delete(link.index);
    if (!removed.ok) this.opts.logger.warn({ namespace: link.namespace, error: removed.stderr }, 'could not remove a pod\'s network namespace');
  }

  /**
   * Removes this service's namespaces that no process is in and this process does not hold:
   * what an earlier run left when it was killed. One in use may be another process of the same
   * service's (a standby on a shared store): it is left alone.
   */
  async sweep(): Promise<string[]> {
    let names: string[];
    try {
      names = readdirSync(NETNS_DIR);
    } catch {
      return [];
    }
    const held = new Set([...this.claimed].map((i) => podNamespace(this.opts.scope, i)));
    const ours = names.filter((n) => podIndexOf(this.opts.scope, n) !== null && !held.has(n));
    if (ours.length === 0) return [];
    const used = namespacesInUse();
    const idle = ours.filter((n) => {
      try {
        return !used.has(statSync(path.join(NETNS_DIR, n)).ino);
      } catch {
        return false;
      }
    });
    if (idle.length === 0) return [];
    const result = await runIp(this.opts.settings.ip, ['-force', '-batch', '-'], removeScript(idle));
    const removed = idle.filter((n) => !existsSync(path.join(NETNS_DIR, n)));
    if (removed.length > 0) this.opts.logger.warn({ namespaces: removed }, 'removed network namespaces of pods left by an earlier run');
    if (!result.ok) this.opts.logger.warn({ error: result.stderr }, 'could not remove every network namespace left by an earlier run');
    return removed;
  }

  private async create(): Promise<PodLink> {
    // The first pod's set-up and the firewall's check run side by side; neither is used before both are done.
    const [link] = await Promise.all([this.make(), this.installFirewall()]);
    return link;
  }

  private async make(): Promise<PodLink> {
    const { ip, subnet, ipv6 } = this.opts.settings;
    const tried = new Set<number>();
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const index = freeIndex(subnet, new Set([...this.claimed, ...tried, ...hostInterfaceIndexes()]));
      if (index === null) throw new Error(`no free /30 left in ${formatSubnet(subnet)} (--replica-subnet) for another pod on this host`);
      this.claimed.add(index);
      const link = podLink(subnet, this.opts.scope, index);
      const host = await runIp(ip, ['-batch', '-'], hostScript(link, ipv6));
      if (!host.ok) {
        const line = failedLine(host.stderr);
        // Line 1 made nothing; line 2 made the pair but not the namespace (whose name may be another process's).
        if (line === 2) await runIp(ip, ['-force', '-batch', '-'], `link del ${link.hostInterface}\n`);
        else if (line !== 1) await runIp(ip, ['-force', '-batch', '-'], undoScript(link));
        this.claimed.delete(index);
        tried.add(index);
        if (/File exists/.test(host.stderr)) continue; // another service took this block first
        throw new Error(`cannot set up the replica's network namespace: ip: ${firstLine(host.stderr)}`);
      }
      const pod = await runIp(ip, ['-n', link.namespace, '-batch', '-'], podScript(link, ipv6));
      if (!pod.ok) {
        await runIp(ip, ['-force', '-batch', '-'], undoScript(link));
        this.claimed.delete(index);
        throw new Error(`cannot set up the replica's network namespace: ip -n ${link.namespace}: ${firstLine(pod.stderr)}`);
      }
      return link;
    }
    throw new Error(`cannot set up the replica's network namespace: ${MAX_ATTEMPTS} blocks of ${formatSubnet(subnet)} were taken while trying`);
  }

  /**
   * Once per process, with the first pod: the rules are the same for every service. They are
   * read with iptables-save (one process per family) and only missing ones are added, so a
   * host that has them — every start but the first since boot — runs no insert.
   */
  private installFirewall(): Promise<void> {
    const families = this.opts.settings.firewall;
    this.firewall ??= Promise.all(
      families.map(async ({ program, save }) => {
        const saved = await run(save, ['-t', 'filter'], '');
        const missing = saved.ok ? missingRules(saved.stdout) : FIREWALL_RULES;
        if (missing.length === 0) return;
        const added = await run('/bin/sh', ['-c', firewallScript(missing), 'infergate-firewall', program], '');
        if (!added.ok) {
          this.opts.logger.warn({ program, error: added.stderr }, "could not add every iptables rule that keeps pods off this host: a pod may open connections to this host's services on every address");
        }
      }),
    ).then(() => undefined);
    return this.firewall;
  }
}

/** The block indexes of the host's igr interfaces (the host's namespace: this process's). */
function hostInterfaceIndexes(): number[] {
  try {
    return readdirSync('/sys/class/net')
      .map(interfaceIndex)
      .filter((i): i is number => i !== null);
  } catch {
    return [];
  }
}

/** The network namespaces live processes are in, by inode. */
function namespacesInUse(): Set<number> {
  const out = new Set<number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const inode = namespaceInode(readlinkSync(`/proc/${entry}/ns/net`));
      if (inode !== null) out.add(inode);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function runIp(ip: string, args: string[], script: string): Promise<{ ok: boolean; stderr: string }> {
  return run(ip, args, script);
}

/** Runs a root tool with FIXED_ENV, `input` on its stdin. */
function run(file: string, args: string[], input: string): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env: { ...FIXED_ENV }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.stdin.on('error', () => {}); // it failed before reading: its exit says why
    child.stdin.end(input);
    child.once('error', (err) => resolve({ ok: false, stdout, stderr: err.message }));
    child.once('close', (code) => resolve({ ok: code === 0, stdout, stderr: stderr.trim() }));
  });
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}
