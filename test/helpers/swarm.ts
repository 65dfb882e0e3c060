// Test helper: a three-node Docker Swarm on this one machine, for the Swarm suites. Each node is
// a network namespace with its own dockerd (own data root, exec root, socket, pidfile and
// containerd namespace), its eth0 a veth end on a Linux bridge in a private /24 that overlaps
// nothing on the host (no address, no route, no network of the host's daemon). The first node
// inits the Swarm on its bridge address, the others join it as workers; each node gets the
// labels and NVIDIA-GPU generic resources its spec gives, so a test can ask for hardware. A
// registry (Debian's docker-registry, htpasswd) listens on the bridge's host address, and every
// daemon trusts it over plain HTTP (--insecure-registry). The reference engine image is read
// once from the host's daemon (`docker save`) and at the same time uploaded to the registry and
// loaded into every node, tagged there with the registry's name: a service created with the
// registry's credentials makes each node ask the registry for the manifest, and finds the
// layers already unpacked (a full pull on three nodes took 15 s here against 4-13 s of loads).
// An attachable overlay network is made on the manager.
//
// dockerd is started with `nsenter --net=…`, not `ip netns exec`: that one remounts /sys, hides
// the cgroup mounts, and dockerd stops with "Devices cgroup isn't mounted". Docker sets the
// host's FORWARD policy to DROP and bridged frames pass iptables here (br_netfilter), so the
// bridge gets an ACCEPT rule in DOCKER-USER for its own traffic. A second dockerd is never run
// in the host's namespace (one with --bridge=none once removed the host daemon's docker0): the
// start refuses a namespace that is the host's, or a socket, data root or exec root of the
// host's daemon. stop() removes everything start made, in reverse, also after a failed start:
// the services, the Swarm (each node leaves it; its networks go with it), the dockerds (by their
// pids; what a killed one left mounted is unmounted), the registry, the iptables rule, the
// namespaces, the bridge and the directory holding the data roots. A run killed before its
// stop() (a worker ended by a timeout) leaves all that behind: the next start sweeps the node
// namespaces whose run's pid (in their names) is gone, and everything that went with them.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { PassThrough, type Readable } from 'node:stream';
import { mkdir, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { dockerAnswers, dockerClient } from '../../src/runtime/docker/client.js';
import { dockerGate, ensureEngineImage, startRegistry, splitRef, type Registry, type RegistryAuth } from './docker.js';
import { uploadImage } from './registry-upload.js';
import { removeTempDir, unmountBelow } from './temp-dirs.js';
import { waitFor } from './wait.js';

const run = promisify(execFile);

/** What one node is: its labels (node.labels.<key> in constraints) and GPUs (NVIDIA-GPU generic resources). */
export interface SwarmNodeSpec {
  labels: Record<string, string>;
  gpus: string[];
}

/** The ground's default: two nodes of one cluster with two L4s each, and one of another with four H100s. */
export const DEFAULT_NODES: readonly SwarmNodeSpec[] = [
  { labels: { 'infergate.cluster': 'east', 'infergate.hardware': 'l4' }, gpus: ['gpu-0', 'gpu-1'] },
  { labels: { 'infergate.cluster': 'east', 'infergate.hardware': 'l4' }, gpus: ['gpu-0', 'gpu-1'] },
  { labels: { 'infergate.cluster': 'west', 'infergate.hardware': 'h100' }, gpus: ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3'] },
];

/** The generic resource kind GPUs are advertised as. */
export const GPU_KIND = 'NVIDIA-GPU';

export interface SwarmNode {
  /** 1-based; node 1 is the manager. */
  index: number;
  /** Its hostname (a UTS namespace of its own), as Description.Hostname shows it. */
  hostname: string;
  /** Its address on the bridge. */
  address: string;
  netns: string;
  /** unix:///… of its dockerd. */
  dockerHost: string;
  docker: Dockerode;
  /** Its Swarm node id. */
  id: string;
  spec: SwarmNodeSpec;
  /** The pid of its dockerd. */
  pid: number;
}

export interface SwarmGround {
  nodes: SwarmNode[];
  manager: SwarmNode;
  /** The bridge's /24 and the host's address on it (where the registry listens). */
  subnet: string;
  hostAddress: string;
  registry: { host: string; auth: RegistryAuth; pid: number };
  /** The reference engine image as every node has it (pulled from the registry). */
  engineImage: string;
  /** The attachable overlay network. */
  network: { name: string; id: string };
  /** Milliseconds each phase took, and `total`. */
  timings: Record<string, number>;
  /** Removes what start made; safe to call twice and after a failure. */
  stop(): Promise<void>;
}

const REQUIRED_TOOLS = ['ip', 'nsenter', 'unshare', 'dockerd', 'iptables'];

/** Whether `name` is a program on PATH (the sbin directories included, as root's PATH has them). */
function onPath(name: string): boolean {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin'];
  return dirs.some((d) => d !== '' && existsSync(path.join(d, name)));
}

let gate: Promise<boolean> | undefined;

/**
 * Whether the Swarm suites can run here: root, the tools above, Debian's docker-registry and a
 * host daemon (it holds the engine image). Skipped loudly when not; under CI=true (whose
 * .ci/run installs them) a missing piece is an error.
 */
export function swarmGate(): Promise<boolean> {
  gate ??= (async () => {
    const missing = REQUIRED_TOOLS.filter((t) => !onPath(t));
    if (!existsSync(process.env.DOCKER_REGISTRY_PATH ?? '/usr/bin/docker-registry')) missing.push('docker-registry');
    if (process.getuid?.() !== 0) missing.push('root');
    if (!(await dockerGate())) missing.push('a host dockerd');
    if (missing.length === 0) return true;
    const why = `the Swarm suites need ${missing.join(', ')}`;
    if (process.env.CI === 'true') throw new Error(`${why} under CI=true`);
    process.stderr.write(`\n!!! WARNING: ${why} — Swarm suites are SKIPPED\n\n`);
    return false;
  })();
  return gate;
}

let serial = 0;
/** A tag is the pid in base 36 at this width, then a serial: a sweep can tell whose a namespace was. */
const PID_WIDTH = 5;
const NETNS_PATTERN = new RegExp(`^infergate-swarm-([0-9a-z]{${PID_WIDTH}})([0-9a-z]+)-n\\d+$`);

/** Makes the Swarm; on any failure, removes what it made and rethrows. */
export async function startSwarm(opts: { nodes?: readonly SwarmNodeSpec[] } = {}): Promise<SwarmGround> {
  const specs = opts.nodes ?? DEFAULT_NODES;
  if (specs.length < 1) throw new Error('a Swarm needs at least one node');
  const ground = new Ground(specs);
  try {
    await ground.start();
    return ground.view();
  } catch (err) {
    const cleanup = await ground.stop().then(
      () => '',
      (e: Error) => `\n(and its cleanup failed: ${e.message})`,
    );
    throw new Error(`${(err as Error).message}${cleanup}`, { cause: err });
  }
}

interface NodeProcess {
  index: number;
  hostname: string;
  address: string;
  netns: string;
  dir: string;
  socket: string;
  docker: Dockerode;
  child?: ChildProcess;
  log: string;
  pid?: number;
  id?: string;
}

class Ground {
  /** Short and unique per process and call: interface names are limited to 15 characters. */
  private readonly tag = `${process.pid.toString(36).padStart(PID_WIDTH, '0')}${(serial++).toString(36)}`;
  private readonly bridge = `igsw${this.tag}`;
  private readonly nodes: NodeProcess[] = [];
  /** Undo steps, run in reverse by stop(). */
  private readonly undo: { what: string; fn: () => Promise<void> }[] = [];
  private dir = '';
  private subnetBase = '';
  private registry: Registry | undefined;
  private readonly auth: RegistryAuth = { username: 'swarm', password: `pw-${process.pid}-${Date.now()}` };
  private engineImage = '';
  private network = { name: '', id: '' };
  private readonly timings: Record<string, number> = {};
  private stopped: Promise<void> | undefined;

  constructor(private readonly specs: readonly SwarmNodeSpec[]) {}

  async start(): Promise<void> {
    const t0 = Date.now();
    const lap = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
      const t = Date.now();
      try {
        return await fn();
      } finally {
        this.timings[name] = Date.now() - t;
      }
    };
    // The image is the host daemon's (built once per run and reused across runs): not the Swarm's time.
    const hostImage = await ensureEngineImage();
    await sweepLeftovers();
    const started = Date.now();
    this.timings.engineImage = started - t0;
    await lap('network', () => this.makeNetwork());
    const hostAddress = `${this.subnetBase}.1`;
    const { repo, tag } = splitRef(hostImage);
    const registryUp = lap('registry', async () => {
      this.registry = await startRegistry({ users: { [this.auth.username]: this.auth.password }, address: hostAddress });
      this.undo.push({ what: 'stop the registry', fn: () => this.registry!.stop() });
    });
    // The registry's port is needed by the daemons' --insecure-registry.
    await lap('daemons', () => this.startDaemons(registryUp));
    await registryUp;
    // One `docker save` stream of the host's image, read once, feeds the registry upload and a
    // `docker load` into every node at the same time (the loads are what takes long: each
    // daemon unpacks the layer's files).
    // By id: the tag may move meanwhile (another checkout on this host building its own image).
    const imageId = (await dockerClient().getImage(hostImage).inspect()).Id;
    const [toRegistry, ...toNodes] = await teeImage(imageId, this.nodes.length + 1);
    const uploaded = lap('upload', () => uploadImage(toRegistry!, hostImage, { registry: this.registry!.host, repo, tag, auth: this.auth }));
    const loaded = lap('loads', () => Promise.all(this.nodes.map((n, i) => loadImage(n.docker, toNodes[i]!))));
    await Promise.all([
      uploaded,
      lap('swarm', () => this.formSwarm()),
      loaded,
    ]);
    this.engineImage = `${this.registry!.host}/${repo}:${tag}`;
    // Each node has the image under the registry's name: a task start asks the registry for the
    // manifest (with the service's credentials) and finds every layer already there.
    await Promise.all(this.nodes.map((n) => n.docker.getImage(imageId).tag({ repo: `${this.registry!.host}/${repo}`, tag })));
    await lap('overlay', async () => {
      const name = `infergate-ground-${this.tag}`;
      const made = await this.nodes[0]!.docker.createNetwork({ Name: name, Driver: 'overlay', Attachable: true, CheckDuplicate: true, Labels: { 'io.infergate.test': 'swarm-ground' } });
      this.network = { name, id: made.id };
    });
    this.timings.total = Date.now() - started;
  }

  view(): SwarmGround {
    const nodes: SwarmNode[] = this.nodes.map((n) => ({
      index: n.index,
      hostname: n.hostname,
      address: n.address,
      netns: n.netns,
      dockerHost: `unix://${n.socket}`,
      docker: n.docker,
      id: n.id!,
      spec: this.specs[n.index - 1]!,
      pid: n.pid!,
    }));
    return {
      nodes,
      manager: nodes[0]!,
      subnet: `${this.subnetBase}.0/24`,
      hostAddress: `${this.subnetBase}.1`,
      registry: { host: this.registry!.host, auth: this.auth, pid: this.registry!.pid },
      engineImage: this.engineImage,
      network: this.network,
      timings: { ...this.timings },
      stop: () => this.stop(),
    };
  }

  // ---- the bridge and the namespaces ------------------------------------------------------------

  private async makeNetwork(): Promise<void> {
    this.dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-swarm-'));
    this.undo.push({ what: `remove ${this.dir}`, fn: () => removeTempDir(this.dir) });
    this.subnetBase = await freeSubnet();
    const base = this.subnetBase;
    for (const [i] of this.specs.entries()) {
      const index = i + 1;
      const netns = `infergate-swarm-${this.tag}-n${index}`;
      if (existsSync(`/var/run/netns/${netns}`)) throw new Error(`network namespace ${netns} exists already: not made by this run, left alone`);
      const dir = path.join(this.dir, `n${index}`);
      const socket = path.join(dir, 'docker.sock');
      this.nodes.push({ index, hostname: `swarm-${this.tag}-n${index}`, address: `${base}.${10 + index}`, netns, dir, socket, docker: dockerClient({ DOCKER_HOST: `unix://${socket}` }), log: '' });
    }
    const links = await run('ip', ['-o', 'link', 'show']).then((r) => r.stdout);
    if (links.includes(` ${this.bridge}:`) || links.includes(` ${this.bridge}@`)) throw new Error(`interface ${this.bridge} exists already: not made by this run, left alone`);

    // One `ip -batch` for the host's side; each namespace's own side after it.
    this.undo.push({ what: `delete bridge ${this.bridge}`, fn: () => ipQuiet(['link', 'del', this.bridge]) });
    for (const n of this.nodes) this.undo.push({ what: `delete namespace ${n.netns}`, fn: () => ipQuiet(['netns', 'del', n.netns]) });
    const host = [`link add ${this.bridge} type bridge`, `addr add ${base}.1/24 dev ${this.bridge}`, `link set ${this.bridge} up`];
    for (const n of this.nodes) {
      const veth = `${this.bridge}-${n.index}`;
      host.push(`netns add ${n.netns}`, `link add ${veth} type veth peer name eth0 netns ${n.netns}`, `link set ${veth} master ${this.bridge} up`);
    }
    await ipBatch(host);
    await Promise.all(
      this.nodes.map(async (n) => {
        // No default route: a node reaches the bridge and nothing beyond it (a pull of anything but the registry fails at once).
        await ipBatch([`addr add ${n.address}/24 dev eth0`, 'link set eth0 up', 'link set lo up'], n.netns);
      }),
    );
    const chain = (await chainExists('DOCKER-USER')) ? 'DOCKER-USER' : 'FORWARD';
    const rule = ['-i', this.bridge, '-o', this.bridge, '-j', 'ACCEPT'];
    await run('iptables', ['-w', '-I', chain, ...rule]);
    this.undo.push({ what: `remove the ${chain} rule for ${this.bridge}`, fn: () => run('iptables', ['-w', '-D', chain, ...rule]).then(() => undefined) });
  }

  // ---- the daemons ------------------------------------------------------------------------------

  private async startDaemons(registryReady: Promise<void>): Promise<void> {
    // --insecure-registry needs the registry's address before the daemons start.
    const registryHost = await waitForRegistryHost(() => this.registry, registryReady);
    this.undo.push({ what: 'stop the dockerds', fn: async () => void (await Promise.all(this.nodes.map((n) => stopDaemon(n)))) });
    await Promise.all(
      this.nodes.map(async (n) => {
        await mkdir(n.dir, { recursive: true });
        const spec = this.specs[n.index - 1]!;
        const paths = { data: path.join(n.dir, 'data'), exec: path.join(n.dir, 'exec'), pidfile: path.join(n.dir, 'dockerd.pid') };
        await refuseHostParts(`/var/run/netns/${n.netns}`, [n.socket, paths.data, paths.exec, paths.pidfile]);
        const args = [
          `--net=/var/run/netns/${n.netns}`,
          '--',
          'unshare', '--uts', '--',
          'sh', '-c', 'hostname "$0" && exec dockerd "$@"', n.hostname,
          '--data-root', paths.data,
          '--exec-root', paths.exec,
          '--pidfile', paths.pidfile,
          '-H', `unix://${n.socket}`,
          // Its own containerd namespaces: a containerd the host runs at /run/containerd would otherwise be shared with the host's daemon.
          '--containerd-namespace', `igsw-${this.tag}-n${n.index}`,
          '--containerd-plugins-namespace', `igsw-${this.tag}-n${n.index}-plugins`,
          '--insecure-registry', registryHost,
          ...spec.gpus.flatMap((g) => ['--node-generic-resource', `${GPU_KIND}=${g}`]),
        ];
        const logFile = createWriteStream(path.join(n.dir, 'dockerd.log'));
        // nsenter, unshare and sh each exec the next: the child's pid is dockerd's.
        const child = spawn('nsenter', args, { stdio: ['ignore', 'pipe', 'pipe'] });
        n.child = child;
        n.pid = child.pid;
        const keep = (b: Buffer) => {
          n.log = (n.log + b.toString()).slice(-8192);
          logFile.write(b);
        };
        child.stdout?.on('data', keep);
        child.stderr?.on('data', keep);
        child.once('exit', () => logFile.end());
        await waitFor(
          async () => {
            if (child.exitCode !== null || child.signalCode !== null) throw new Error(`dockerd of node ${n.index} exited (${child.signalCode ?? child.exitCode}):\n${n.log}`);
            return (await dockerAnswers(n.docker, 1000)).ok;
          },
          60_000,
          `dockerd of node ${n.index} to answer on ${n.socket}`,
          25,
        );
      }),
    );
  }

  // ---- the Swarm --------------------------------------------------------------------------------

  private async formSwarm(): Promise<void> {
    const [manager, ...workers] = this.nodes as [NodeProcess, ...NodeProcess[]];
    // Leaving first: a daemon stopped while in a Swarm keeps trying to reach its peers on a next start (not that these start again).
    this.undo.push({
      what: 'the nodes leave the Swarm',
      fn: async () => {
        await Promise.all(workers.map((w) => leaveSwarm(w)));
        await leaveSwarm(manager);
      },
    });
    await manager.docker.swarmInit({
      ListenAddr: `${manager.address}:2377`,
      AdvertiseAddr: manager.address,
      // Overlay subnets from a range of their own, apart from the bridge's.
      DefaultAddrPool: [`10.${Number(this.subnetBase.split('.')[1]) + 1}.0.0/16`],
      SubnetSize: 24,
    });
    const swarm = (await manager.docker.swarmInspect()) as { JoinTokens: { Worker: string } };
    await Promise.all(
      workers.map((w) => w.docker.swarmJoin({ ListenAddr: `${w.address}:2377`, AdvertiseAddr: w.address, RemoteAddrs: [`${manager.address}:2377`], JoinToken: swarm.JoinTokens.Worker })),
    );
    await Promise.all(
      this.nodes.map(async (n) => {
        const info = (await n.docker.info()) as { Swarm: { NodeID: string } };
        n.id = info.Swarm.NodeID;
      }),
    );
    await waitFor(
      async () => {
        const listed = await manager.docker.listNodes();
        return this.nodes.every((n) => listed.some((l) => l.ID === n.id && l.Status?.State === 'ready'));
      },
      30_000,
      'every node to be ready in the Swarm',
      25,
    );
    await Promise.all(
      this.nodes.map(async (n) => {
        const node = manager.docker.getNode(n.id!);
        const current = (await node.inspect()) as { Version: { Index: number }; Spec: Record<string, unknown> };
        await node.update({ _query: { version: current.Version.Index }, _body: { ...current.Spec, Labels: this.specs[n.index - 1]!.labels } });
      }),
    );
  }

  // ---- the end ----------------------------------------------------------------------------------

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      const failures: string[] = [];
      const manager = this.nodes[0];
      // What tests made on the Swarm first: services (their tasks' containers go with them).
      if (manager?.id !== undefined) {
        try {
          const t = Date.now();
          await removeSwarmObjects(manager.docker);
          if (process.env.SWARM_DEBUG) process.stderr.write(`remove swarm objects: ${Date.now() - t} ms\n`);
        } catch (err) {
          failures.push(`remove services: ${(err as Error).message}`);
        }
      }
      for (const step of this.undo.splice(0).reverse()) {
        try {
          const t = Date.now();
          await step.fn();
          if (process.env.SWARM_DEBUG) process.stderr.write(`${step.what}: ${Date.now() - t} ms\n`);
        } catch (err) {
          failures.push(`${step.what}: ${(err as Error).message}`);
        }
      }
      if (failures.length > 0) throw new Error(`the Swarm test ground was not fully removed:\n${failures.join('\n')}`);
    })();
    return this.stopped;
  }
}

/**
 * Removes every service (the daemons stop their tasks' containers). The networks and the rest of
 * the Swarm's state go as the nodes leave and their data roots are removed: waiting here until
 * each network is unused would add seconds to every suite.
 */
async function removeSwarmObjects(docker: Dockerode): Promise<void> {
  const services = await docker.listServices();
  await Promise.all(services.map((s) => docker.getService(s.ID).remove().catch(ignoreGone)));
}

function ignoreGone(err: { statusCode?: number }): void {
  if (err.statusCode !== 404) throw err;
}

async function leaveSwarm(n: NodeProcess): Promise<void> {
  if (!n.child || n.child.exitCode !== null || n.child.signalCode !== null) return;
  await n.docker.swarmLeave({ force: true }).catch((err: { statusCode?: number; message?: string }) => {
    // 503: not in a Swarm (a join that never happened).
    if (err.statusCode !== 503) throw err;
  });
}

/** SIGTERM by pid, SIGKILL after 20 s; then what it left mounted under its directory goes. */
async function stopDaemon(n: NodeProcess): Promise<void> {
  const child = n.child;
  if (child && child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    process.kill(child.pid, 'SIGTERM');
    const timer = setTimeout(() => child.exitCode === null && child.signalCode === null && process.kill(child.pid!, 'SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  }
  // A dockerd stopped cleanly unmounts its own; one killed leaves netns and overlay mounts.
  unmountBelow(n.dir);
}

// ---- what a killed run left ---------------------------------------------------------------------

/**
 * Removes what a run that was killed before its stop() left: for each node namespace whose
 * run's pid is gone, the dockerd in it (SIGTERM: it stops its containers; SIGKILL after 20 s),
 * its directory, its registry (by the address in its config), the namespace, the bridge and the
 * iptables rule. A live run's namespaces are left alone.
 */
async function sweepLeftovers(): Promise<void> {
  const names = existsSync('/var/run/netns') ? readdirSync('/var/run/netns') : [];
  const stale = new Map<string, string[]>();
  for (const name of names) {
    const m = NETNS_PATTERN.exec(name);
    if (!m || isRunning(parseInt(m[1]!, 36))) continue;
    const tag = `${m[1]}${m[2]}`;
    stale.set(tag, [...(stale.get(tag) ?? []), name]);
  }
  for (const [tag, netnses] of stale) {
    const bridge = `igsw${tag}`;
    const subnet = await run('ip', ['-4', '-o', 'addr', 'show', 'dev', bridge]).then(
      (r) => /inet (\d+\.\d+\.\d+)\.1\//.exec(r.stdout)?.[1],
      () => undefined,
    );
    const dirs = new Set<string>();
    await Promise.all(
      netnses.map(async (netns) => {
        const ns = statSync(`/var/run/netns/${netns}`);
        for (const pid of processesWhere((p) => statSync(`/proc/${p}/ns/net`).ino === ns.ino && readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'dockerd')) {
          const dataRoot = /--data-root\0([^\0]+)/.exec(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))?.[1];
          const dir = dataRoot && path.dirname(path.dirname(dataRoot));
          if (dir && path.basename(dir).startsWith('infergate-swarm-')) dirs.add(dir);
          await killAndWait(pid);
        }
      }),
    );
    if (subnet !== undefined) {
      for (const pid of processesWhere((p) => readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'docker-registry')) {
        const config = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[2];
        if (config && readFileSync(config, 'utf8').includes(`addr: ${subnet}.1:`)) {
          await killAndWait(pid);
          if (path.basename(path.dirname(config)).startsWith('infergate-registry-')) dirs.add(path.dirname(config));
        }
      }
    }
    for (const dir of dirs) await removeTempDir(dir);
    for (const netns of netnses) await ipQuiet(['netns', 'del', netns]);
    await ipQuiet(['link', 'del', bridge]);
    for (const chain of ['DOCKER-USER', 'FORWARD']) await run('iptables', ['-w', '-D', chain, '-i', bridge, '-o', bridge, '-j', 'ACCEPT']).catch(() => undefined);
    process.stderr.write(`swarm ground: removed what a killed run left (${netnses.join(', ')})\n`);
  }
}

function processesWhere(test: (pid: string) => boolean): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return test(p);
      } catch {
        return false; // gone meanwhile, or not ours to read
      }
    })
    .map(Number);
}

async function killAndWait(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const gone = await waitFor(() => !isRunning(pid), 20_000, `pid ${pid} to end`, 50).catch(() => false);
  if (!gone) {
    process.kill(pid, 'SIGKILL');
    await waitFor(() => !isRunning(pid), 5_000, `pid ${pid} to end after SIGKILL`, 50);
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// ---- the image ----------------------------------------------------------------------------------

/** `count` streams of one `docker save` of `ref`, read at the pace of the slowest. */
async function teeImage(ref: string, count: number): Promise<PassThrough[]> {
  const source = (await dockerClient().getImage(ref).get()) as unknown as Readable;
  const sinks = Array.from({ length: count }, () => new PassThrough({ highWaterMark: 1 << 20 }));
  source.on('error', (err: Error) => sinks.forEach((s) => s.destroy(err)));
  for (const sink of sinks) source.pipe(sink);
  return sinks;
}

async function loadImage(docker: Dockerode, tarStream: Readable): Promise<void> {
  const output = (await docker.loadImage(tarStream, { quiet: true })) as unknown as NodeJS.ReadableStream;
  let text = '';
  for await (const chunk of output) text += chunk.toString();
  if (/"error"/.test(text)) throw new Error(`docker load: ${text.slice(0, 500)}`);
}

// ---- host facts ---------------------------------------------------------------------------------

/**
 * Throws unless `netnsFile` is a network namespace other than this process's and init's, and
 * none of `paths` (a daemon's socket, data root, exec root, pidfile) is the host daemon's: a
 * second dockerd beside the host's, in its namespace, once took the host's docker0 away.
 */
export async function refuseHostParts(netnsFile: string, paths: readonly string[]): Promise<void> {
  const ns = statSync(netnsFile);
  for (const host of ['/proc/self/ns/net', '/proc/1/ns/net']) {
    let h: ReturnType<typeof statSync> | undefined;
    try {
      h = statSync(host);
    } catch {
      continue; // init's namespace is not ours to look at in some sandboxes; this process's always is
    }
    if ( ns.ino === h.ino && ns.dev === h.dev) throw new Error(`${netnsFile} is the host's own network namespace (${host}): refusing to start a dockerd there`);
  }
  const hostPaths = await hostDaemonPaths();
  for (const p of paths) {
    if (hostPaths.has(path.resolve(p))) throw new Error(`${p} is the host daemon's: refusing to start a second dockerd on it`);
  }
}

/** The socket, data root and exec root of the host's daemon (and the defaults): never a node's. */
async function hostDaemonPaths(): Promise<Set<string>> {
  const paths = new Set(['/var/run/docker.sock', '/run/docker.sock', '/var/lib/docker', '/var/run/docker', '/run/docker', '/var/run/docker.pid', '/run/docker.pid']);
  const host = process.env.DOCKER_HOST;
  if (host?.startsWith('unix://')) paths.add(host.slice('unix://'.length));
  const info = (await dockerClient().info()) as { DockerRootDir?: string };
  if (info.DockerRootDir) paths.add(info.DockerRootDir);
  return paths;
}

/**
 * A free 10.219.x.0/24 (x from the pid on): one no host address or route is in, and no network
 * of the host's daemon overlaps (its pools may have been set to anything).
 */
async function freeSubnet(): Promise<string> {
  const taken: [number, number][] = [];
  const routes = await run('ip', ['-4', '-o', 'route', 'show', 'table', 'all']).then((r) => r.stdout);
  const addrs = await run('ip', ['-4', '-o', 'addr', 'show']).then((r) => r.stdout);
  for (const m of `${routes}\n${addrs}`.matchAll(/(\d+\.\d+\.\d+\.\d+)(?:\/(\d+))?/g)) taken.push(cidrRange(m[1]!, m[2] === undefined ? 32 : Number(m[2])));
  for (const n of await dockerClient().listNetworks()) {
    for (const c of n.IPAM?.Config ?? []) {
      const [ip, bits] = (c as { Subnet?: string }).Subnet?.split('/') ?? [];
      if (ip?.includes('.') && bits !== undefined) taken.push(cidrRange(ip, Number(bits)));
    }
  }
  for (let i = 0; i < 256; i++) {
    const x = (process.pid + serial * 7 + i) % 256;
    const [lo, hi] = cidrRange(`10.219.${x}.0`, 24);
    // 0.0.0.0/0 (the default route) overlaps everything: only prefixes of /8 and longer count.
    if (!taken.some(([a, b]) => b - a < 2 ** 24 && a <= hi && lo <= b)) return `10.219.${x}`;
  }
  throw new Error('no free /24 in 10.219.0.0/16 on this host');
}

function cidrRange(ip: string, bits: number): [number, number] {
  const n = ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const size = 2 ** (32 - bits);
  const lo = Math.floor(n / size) * size;
  return [lo, lo + size - 1];
}

async function chainExists(chain: string): Promise<boolean> {
  return run('iptables', ['-w', '-S', chain]).then(
    () => true,
    () => false,
  );
}

async function ipBatch(commands: string[], netns?: string): Promise<void> {
  const args = netns === undefined ? ['-batch', '-'] : ['-n', netns, '-batch', '-'];
  await new Promise<void>((resolve, reject) => {
    const child = spawn('ip', args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ip ${args.join(' ')} failed (${code}): ${stderr.trim()}\n${commands.join('\n')}`))));
    child.stdin.end(commands.join('\n') + '\n');
  });
}

/** `ip …` where a missing object is fine (it went with its namespace, or was never made). */
async function ipQuiet(args: string[]): Promise<void> {
  await run('ip', args).catch((err: { stderr?: string }) => {
    if (!/Cannot find device|No such file|does not exist/i.test(err.stderr ?? '')) throw new Error(`ip ${args.join(' ')}: ${err.stderr?.trim()}`);
  });
}

/** The registry's host:port as soon as it is known (it starts while the namespaces are made). */
async function waitForRegistryHost(current: () => Registry | undefined, ready: Promise<void>): Promise<string> {
  let failed: unknown;
  ready.catch((err: unknown) => (failed = err));
  return waitFor(
    () => {
      if (failed !== undefined) throw failed instanceof Error ? failed : new Error(String(failed));
      return current()?.host;
    },
    30_000,
    'the registry to listen',
    10,
  );
}
