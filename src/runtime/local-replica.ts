// Owns one replica of the local runtime: a supervised process — inside the replica sandbox
// when the host has one, else in its own process group — started with PORT, the deployment's
// env and its config file under the replica's root; probed for readiness; restarted with
// exponential backoff when it exits on its own (each restart counted); and stopped with
// SIGTERM to its command, then SIGKILL after a grace period. A host command is never run
// unsandboxed unless the operator allowed it. Sandboxed, the deployment's env is handed to
// the sandbox on a descriptor, never as the environment of bubblewrap or setpriv (sandbox.ts).
// Where the host gives pods (pods.ts), the replica joins its pod before its first start and
// leaves it once stopped: it listens on every address of the pod, and the gateway, the probes
// and the scrapes reach it at the pod's address; otherwise on the host's loopback.

import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, lchownSync, lstatSync, mkdirSync, openSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { ImageMap } from '../domain/image-map.js';
import type { PortBook } from './free-port.js';
import { planLaunch, REPLICA_HOST, type LaunchPlan } from './launch-plan.js';
import type { ListenChecks, ListenTarget } from './listen-checks.js';
import { beyondLoopback, formatAddress, type ListeningAddress } from './listening-sockets.js';
import { sandboxProcesses, signalGroup, signalPid, type ProcessTable } from './process-tree.js';
import { probeOnce } from './readiness.js';
import { ReplicaBase, replicaLog, restartDelay } from './replica-base.js';
import type { ReplicaExit, ReplicaHandle, ReplicaObservation, ReplicaRequest, ReplicaShell } from './runtime.js';
import { localShells } from './shell-launcher.js';
import { envScript } from './env-script.js';
import { POD_LISTEN_HOST, podKey } from './pod-network.js';
import type { PodHandle, Pods } from './pods.js';
import { FIXED_ENV, SANDBOX_FD, sandboxArgv, shellArgv, type SandboxedReplica, type SandboxHost } from './sandbox.js';
import { withExistingHidden } from './sandbox-probe.js';

export interface LocalReplicaTiming {
  /** Probe interval while starting, and while ready. */
  startingProbeMs: number;
  readyProbeMs: number;
  probeTimeoutMs: number;
  /** Consecutive failed probes that take a ready replica out of routing. */
  failuresToUnready: number;
  /** How often what a replica on the host's network listens on is checked (also when it becomes ready); all replicas at once. */
  listenCheckMs: number;
  /** First restart delay; doubles per consecutive crash up to the maximum. */
  backoffInitialMs: number;
  backoffMaxMs: number;
}

export const DEFAULT_TIMING: LocalReplicaTiming = {
  startingProbeMs: 250,
  readyProbeMs: 1000,
  probeTimeoutMs: 2000,
  failuresToUnready: 3,
  listenCheckMs: 30_000,
  backoffInitialMs: 1000,
  backoffMaxMs: 30_000,
};

export interface LocalReplicaDeps {
  replicasDir: string;
  logsDir: string;
  cacheDir: string;
  selfCommand: string[];
  images: ImageMap;
  inherited: Record<string, string>;
  /** setpriv path for the parent-death signal of unsandboxed replicas, or null. */
  pdeathsig: string | null;
  /** The replica sandbox; null: replicas run unsandboxed, as the service's user. */
  sandbox: SandboxHost | null;
  /** The user-namespace filter's program (seccomp.ts) as a file, when the sandbox applies it. */
  seccompFile: string | null;
  /** The operator's --allow-unsandboxed-host-commands: host commands may run without a sandbox. */
  allowUnsandboxedHostCommands: boolean;
  /** This host's pods (only with a root sandbox); null: replicas share the host's network. */
  pods: Pods | null;
  /** The runtime's ports: a port held in one pod is never given to another replica. */
  ports: PortBook;
  /** The runtime's checks of what replicas on the host's network listen on; null: none (tests). */
  listenChecks: ListenChecks | null;
  timing: LocalReplicaTiming;
  logger: Logger;
}

export class LocalReplica extends ReplicaBase implements ReplicaHandle {
  private child: ChildProcess | null = null;
  private restarts = 0;
  /** While it is ready on the host's network: its entry in the runtime's listen checks. */
  private listenTarget: ListenTarget | null = null;
  /** Addresses beyond loopback already reported, so each is said once per process. */
  private readonly exposed = new Set<string>();
  private port: number | null = null;
  private metricsPort: number | null = null;
  private stopping = false;
  private readonly exitWaiters: Array<() => void> = [];
  private readonly root: string;
  private plan: LaunchPlan | null = null;
  private cacheDir: string | null = null;
  /** The pod it joined (held from its first start until it stops); null: the host's network. */
  private pod: PodHandle | null = null;
  private joining: Promise<PodHandle> | null = null;

  constructor(
    private readonly req: ReplicaRequest,
    private readonly deps: LocalReplicaDeps,
  ) {
    super(replicaLog(deps.logsDir, req));
    this.root = path.join(deps.replicasDir, req.name);
    void this.launch();
  }

  get name(): string {
    return this.req.name;
  }

  /** Where the host reaches it: its pod's address, or the host's loopback. */
  private get host(): string {
    return this.pod?.address ?? REPLICA_HOST;
  }

  observe(): ReplicaObservation {
    const address = this.port === null ? null : `${this.host}:${this.port}`;
    const metricsPort = this.metricsPort ?? this.port;
    return {
      phase: this.phase,
      address,
      metricsTarget: metricsPort === null ? null : { address: `${this.host}:${metricsPort}`, path: this.req.metricsPath ?? '/metrics' },
      pid: this.child?.pid ?? null,
      restarts: this.restarts,
      detail: this.phase === 'ready' ? null : this.detail,
      lastExit: this.lastExit,
    };
  }

  shellContext(): ReplicaShell | null {
    const pid = this.child?.pid;
    if (this.stopping || pid === undefined || this.plan === null) return null;
    const { sandbox } = this.deps;
    if (sandbox === null) return { argv: ['/bin/sh'], cwd: this.root, env: { ...this.plan.env }, launcher: localShells };
    // The replica's command, found from outside: the terminal reads its environment and (as root) joins its PID namespace.
    const command = sandboxProcesses(pid)[0];
    if (command === undefined) return null;
    let pidNamespace: string;
    try {
      pidNamespace = readlinkSync(`/proc/${command}/ns/pid`);
    } catch {
      return null; // gone meanwhile
    }
    const argv = shellArgv(withExistingHidden(sandbox), this.sandboxed(), { pid: command, pidNamespace }, this.deps.seccompFile);
    return { argv, cwd: '/', env: { ...FIXED_ENV }, launcher: localShells };
  }

  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.clearTimer();
    this.unwatchListening();
    const child = this.child;
    if (child?.pid !== undefined) {
      const exited = new Promise<void>((resolve) => this.exitWaiters.push(resolve));
      if (this.deps.sandbox === null) {
        this.note(`stopping: SIGTERM to process group ${child.pid}`);
        signalGroup(child.pid, 'SIGTERM');
      } else {
        // SIGTERM to every process in the sandbox (as systemd stops a service), not to
        // bubblewrap: it would die of it and its namespace with SIGKILL, leaving the command no
        // graceful shutdown. SIGKILL to bubblewrap later ends the namespace, setsid children included.
        const inside = sandboxProcesses(child.pid);
        this.note(inside.length > 0 ? `stopping: SIGTERM to the ${inside.length} processes of sandbox ${child.pid}` : `stopping: nothing runs in sandbox ${child.pid} yet; SIGKILL`);
        if (inside.length === 0) signalGroup(child.pid, 'SIGKILL');
        for (const pid of inside) signalPid(pid, 'SIGTERM');
      }
      const timedOut = await Promise.race([exited.then(() => false), sleep(graceMs).then(() => true)]);
      if (timedOut) {
        this.note(`still running ${graceMs} ms after SIGTERM: SIGKILL`);
        signalGroup(child.pid, 'SIGKILL');
        await exited;
      }
    }
    await this.leavePod();
    this.deps.ports.give(this.port);
    this.deps.ports.give(this.metricsPort);
    this.setPhase('stopped');
    await this.log?.close();
    rmSync(this.root, { recursive: true, force: true });
  }

  /** Joins its pod once: restarts keep it, so its address stays what the gateway has. */
  private async joinPod(): Promise<void> {
    const pods = this.deps.pods;
    // Stopping: stop() has left (or will leave) the pod already; joining now would hold one nobody releases.
    if (pods === null || this.pod !== null || this.stopping) return;
    this.joining ??= pods.acquire(podKey(this.req), this.req.name);
    try {
      this.pod = await this.joining;
    } catch (err) {
      // Nothing is held: the next start tries again.
      this.joining = null;
      throw err;
    }
  }

  /** After its last process is gone (or it never started): the last member out removes the pod. */
  private async leavePod(): Promise<void> {
    const pods = this.deps.pods;
    if (pods === null || this.joining === null) return;
    await this.joining.catch(() => null);
    this.joining = null;
    this.pod = null;
    await pods.release(podKey(this.req), this.req.name);
  }

  private async prepare(): Promise<LaunchPlan> {
    await this.joinPod();
    const { ports } = this.deps;
    ports.give(this.port);
    ports.give(this.metricsPort);
    this.port = await ports.take();
    const separateMetrics = this.req.metricsPort !== null && this.req.metricsPort !== this.req.containerPort;
    this.metricsPort = separateMetrics ? await ports.take() : null;
    rmSync(this.root, { recursive: true, force: true });
    mkdirSync(this.root, { recursive: true });
    let configPath: string | null = null;
    if (this.req.configFile) {
      // The mount path is taken inside the replica's root, so a deployment writes only there.
      const dir = path.join(this.root, this.req.configFile.mount_path);
      mkdirSync(dir, { recursive: true });
      configPath = path.join(dir, this.req.configFile.filename);
      writeFileSync(configPath, this.req.configFile.content, { mode: 0o600 });
    }
    // One cache per deployment: its replicas (and their restarts, and later revisions) share
    // it, while another deployment's replicas — the same sandbox user — can neither read nor
    // poison it, since only this directory is bound into the sandbox.
    const cacheDir = this.req.modelCaching ? path.join(this.deps.cacheDir, String(this.req.deploymentId)) : null;
    if (cacheDir !== null) mkdirSync(cacheDir, { recursive: true });
    this.cacheDir = cacheDir;
    for (const dir of this.req.readOnlyPaths ?? []) mkdirSync(dir, { recursive: true, mode: 0o755 });
    const identity = this.deps.sandbox?.identity;
    if (identity?.kind === 'root') {
      // The replica's user owns its root (config files are 0600) and may write the model cache.
      chownTree(this.root, identity.uid, identity.gid);
      if (cacheDir !== null) chownSync(cacheDir, identity.uid, identity.gid);
    }
    const plan = planLaunch(this.req, {
      port: this.port,
      host: this.pod !== null ? POD_LISTEN_HOST : REPLICA_HOST,
      metricsPort: this.metricsPort,
      root: this.root,
      configPath,
      cacheDir,
      selfCommand: this.deps.selfCommand,
      images: this.deps.images,
      inherited: this.deps.inherited,
    });
    // In the sandbox, home is the replica's root and /tmp its private one.
    if (this.deps.sandbox !== null) Object.assign(plan.env, { HOME: this.root, TMPDIR: '/tmp' });
    return plan;
  }

  private sandboxed(): SandboxedReplica {
    const network = this.pod !== null ? { nsenter: this.pod.nsenter, netns: this.pod.netns } : undefined;
    return { root: this.root, writable: this.cacheDir !== null ? [this.cacheDir] : [], readOnly: this.req.readOnlyPaths ?? [], ...(network ? { network } : {}) };
  }

  private async launch(): Promise<void> {
    if (this.stopping) return;
    let plan: LaunchPlan;
    try {
      plan = await this.prepare();
    } catch (err) {
      this.note(`cannot prepare the replica: ${(err as Error).message}`);
      this.detail = `cannot prepare the replica: ${(err as Error).message}`;
      this.lastExit = { code: null, signal: null };
      this.crashed();
      return;
    }
    if (this.stopping) {
      this.deps.ports.give(this.port);
      this.deps.ports.give(this.metricsPort);
      return;
    }
    this.plan = plan;
    for (const line of plan.notes) this.note(line);
    if (plan.argv.length === 0) {
      this.note('cannot start: no command to run');
      this.detail = 'cannot start: no command to run';
      this.lastExit = { code: null, signal: null };
      this.crashed();
      return;
    }
    const { sandbox, pdeathsig } = this.deps;
    if (plan.hostCommand && sandbox === null && !this.deps.allowUnsandboxedHostCommands) {
      // Not a crash: it would be refused again at every restart. It stays starting until changed.
      this.detail = 'refused: a host command needs the replica sandbox (bubblewrap), which this node lacks';
      this.note(
        'refusing to run the command: this node has no replica sandbox (bubblewrap), and a host command would run as the service\'s own user; ' +
          'install bubblewrap, or start the service with --allow-unsandboxed-host-commands to run it anyway',
      );
      this.emit();
      this.deps.logger.warn({ replica: this.req.name }, 'host command refused: no replica sandbox and no --allow-unsandboxed-host-commands');
      return;
    }
    const child = sandbox !== null ? this.spawnSandboxed(sandbox, plan) : this.spawnPlain(plan, pdeathsig);
    this.child = child;
    this.exposed.clear();
    child.stdout?.on('data', (chunk: Buffer) => this.log?.chunk('stdout', chunk));
    child.stderr?.on('data', (chunk: Buffer) => this.log?.chunk('stderr', chunk));
    let gone = false;
    const onGone = (description: string, exit: ReplicaExit) => {
      if (gone) return;
      gone = true;
      if (!this.stopping) this.lastExit = exit;
      // Whatever the leader left in its group (a shell's children) goes with it.
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      this.child = null;
      this.unwatchListening();
      this.note(description);
      this.detail = description;
      for (const resolve of this.exitWaiters.splice(0)) resolve();
      if (!this.stopping) this.crashed();
    };
    child.once('error', (err) => onGone(`cannot start ${plan.argv[0]}: ${err.message}`, { code: null, signal: null }));
    child.once('exit', (code, signal) => onGone(`process ${child.pid} exited ${signal ? `on ${signal}` : `with code ${code}`}`, { code, signal }));
    this.detail = null;
    if (child.pid !== undefined) {
      this.note(`started process ${child.pid}${sandbox !== null ? ' (replica sandbox)' : ''} on ${this.pod !== null ? `${this.pod.address}:${this.port} (its pod)` : `port ${this.port}`}`);
      this.deps.logger.info({ replica: this.req.name, pid: child.pid, port: this.port }, 'replica process started');
    }
    this.failedProbes = 0;
    this.emit();
    this.scheduleProbe(plan);
  }

  /**
   * On the host's network (no pods), a replica that listens beyond loopback (a host command
   * that ignored $HOST) answers anyone who can reach this host, with no token, no client
   * certificate and no rate limit. The runtime cannot stop it; it says so, in the replica's
   * log and the service's, once per address and process. It is checked when it becomes ready
   * and then with every other replica at the runtime's interval (listen-checks.ts). In a pod
   * every address it can listen on is the pod's own, which only this host reaches: nothing to
   * check.
   */
  private watchListening(child: ChildProcess): void {
    const checks = this.deps.listenChecks;
    if (child.pid === undefined || this.pod !== null || checks === null) return;
    this.unwatchListening();
    const pid = child.pid;
    const target: ListenTarget = {
      pids: (table) => (this.child !== child ? [] : this.processesOf(pid, table)),
      found: (addresses) => {
        if (this.child === child) this.reportListening(addresses);
      },
    };
    this.listenTarget = target;
    checks.add(target);
  }

  private unwatchListening(): void {
    if (this.listenTarget !== null) this.deps.listenChecks?.remove(this.listenTarget);
    this.listenTarget = null;
  }

  /** The replica's processes: in its sandbox, or in its session (it leads one). */
  private processesOf(pid: number, table: ProcessTable): number[] {
    return this.deps.sandbox !== null ? table.sandboxProcesses(pid) : table.inSession(pid);
  }

  private reportListening(addresses: ListeningAddress[]): void {
    const fresh = beyondLoopback(addresses)
      .map(formatAddress)
      .filter((a) => !this.exposed.has(a));
    if (fresh.length === 0) return;
    for (const a of fresh) this.exposed.add(a);
    this.note(
      `WARNING: listening beyond loopback on ${fresh.join(', ')}: reachable by anyone who can reach this host, without the endpoint's token, ` +
        'client certificate or rate limit; listen on $HOST (127.0.0.1) instead, as the runtime asks',
    );
    this.deps.logger.warn({ replica: this.req.name, addresses: fresh }, 'replica listens beyond loopback: reachable without the gateway');
  }

  /**
   * bubblewrap and setpriv start with FIXED_ENV; the replica's environment goes to the sandbox
   * as a script on SANDBOX_FD.env, loaded by the replica's own shell after privileges are gone.
   */
  private spawnSandboxed(sandbox: SandboxHost, plan: LaunchPlan): ChildProcess {
    const argv = sandboxArgv(withExistingHidden(sandbox), this.sandboxed(), plan.argv);
    const { script, skipped } = envScript(plan.env);
    if (skipped.length > 0) this.note(`environment variables left out (a shell cannot export these names): ${skipped.join(', ')}`);
    const stdio: Array<'ignore' | 'pipe' | number> = ['ignore', this.log ? 'pipe' : 'ignore', this.log ? 'pipe' : 'ignore', 'pipe'];
    const filter = sandbox.seccomp && this.deps.seccompFile !== null ? openSync(this.deps.seccompFile, 'r') : null;
    stdio[SANDBOX_FD.seccomp] = filter ?? 'ignore';
    try {
      const child = spawn(argv[0] as string, argv.slice(1), { cwd: this.root, env: { ...FIXED_ENV }, detached: true, stdio });
      const envPipe = child.stdio[SANDBOX_FD.env] as Writable | null;
      envPipe?.on('error', () => {}); // bubblewrap failed before reading it: its exit says why
      envPipe?.end(script);
      return child;
    } finally {
      if (filter !== null) closeSync(filter);
    }
  }

  /** Unsandboxed (no bubblewrap here): the process runs as the service's user with the replica's environment. */
  private spawnPlain(plan: LaunchPlan, pdeathsig: string | null): ChildProcess {
    const argv = pdeathsig ? [pdeathsig, '--pdeathsig', 'KILL', '--', ...plan.argv] : plan.argv;
    const output = this.log ? 'pipe' : 'ignore';
    return spawn(argv[0] as string, argv.slice(1), { cwd: this.root, env: plan.env, detached: true, stdio: ['ignore', output, output] });
  }

  private crashed(): void {
    this.clearTimer();
    this.restarts++;
    this.crashesInARow++;
    const delay = restartDelay(this.deps.timing, this.crashesInARow);
    this.note(`restarting in ${delay} ms (restart ${this.restarts})`);
    this.detail = `${this.detail ?? 'it could not start'}; restarting in ${Math.round(delay / 1000)} s (restart ${this.restarts})`;
    this.deps.logger.warn({ replica: this.req.name, restarts: this.restarts, delayMs: delay }, 'replica exited; restarting');
    this.phase = 'starting';
    this.emit();
    this.timer = setTimeout(() => void this.launch(), delay);
  }

  private scheduleProbe(plan: LaunchPlan): void {
    const { timing } = this.deps;
    const interval = this.phase === 'ready' ? timing.readyProbeMs : timing.startingProbeMs;
    this.timer = setTimeout(() => void this.probe(plan), interval);
  }

  /** One readiness probe and its consequence; then the next is scheduled. */
  private async probe(plan: LaunchPlan): Promise<void> {
    const { timing } = this.deps;
    const child = this.child;
    if (child === null || this.port === null || this.stopping) return;
    // A probe that throws (it should only answer false) counts as a failed one, so probing goes on.
    const ok = await probeOnce(plan.probe, this.host, this.port, timing.probeTimeoutMs).catch(() => false);
    if (this.child !== child || this.stopping) return;
    const wasReady = this.phase === 'ready';
    if (this.probeVerdict(ok, timing.failuresToUnready)) this.watchListening(child);
    else if (wasReady && this.phase !== 'ready') this.unwatchListening();
    this.scheduleProbe(plan);
  }
}

/** chown of what the runtime wrote into a replica's root (its directories and config file). */
function chownTree(dir: string, uid: number, gid: number): void {
  chownSync(dir, uid, gid);
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    if (lstatSync(p).isDirectory()) chownTree(p, uid, gid);
    else lchownSync(p, uid, gid);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
