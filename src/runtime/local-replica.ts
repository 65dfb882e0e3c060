// Owns one replica of the local runtime: a supervised process in its own process group,
// started with PORT, the deployment's env and its config file under the replica's root;
// probed for readiness; restarted with exponential backoff when it exits on its own (each
// restart counted); and stopped with SIGTERM, then SIGKILL after a grace period.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ImageMap } from '../domain/image-map.js';
import { freePort } from './free-port.js';
import { logFilePath, ReplicaLogWriter } from './log-files.js';
import { planLaunch, type LaunchPlan } from './launch-plan.js';
import { signalGroup } from './process-tree.js';
import { probeOnce } from './readiness.js';
import type { ReplicaHandle, ReplicaObservation, ReplicaPhase, ReplicaRequest } from './runtime.js';

export interface LocalReplicaTiming {
  /** Probe interval while starting, and while ready. */
  startingProbeMs: number;
  readyProbeMs: number;
  probeTimeoutMs: number;
  /** Consecutive failed probes that take a ready replica out of routing. */
  failuresToUnready: number;
  /** First restart delay; doubles per consecutive crash up to the maximum. */
  backoffInitialMs: number;
  backoffMaxMs: number;
}

export const DEFAULT_TIMING: LocalReplicaTiming = {
  startingProbeMs: 250,
  readyProbeMs: 1000,
  probeTimeoutMs: 2000,
  failuresToUnready: 3,
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
  /** setpriv path for the parent-death signal, or null. */
  pdeathsig: string | null;
  timing: LocalReplicaTiming;
  logger: Logger;
}

export class LocalReplica implements ReplicaHandle {
  private child: ChildProcess | null = null;
  private phase: ReplicaPhase = 'starting';
  private restarts = 0;
  private crashesInARow = 0;
  private failedProbes = 0;
  private port: number | null = null;
  private metricsPort: number | null = null;
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly listeners: Array<(o: ReplicaObservation) => void> = [];
  private readonly exitWaiters: Array<() => void> = [];
  private readonly log: ReplicaLogWriter | null;
  private readonly root: string;
  private plan: LaunchPlan | null = null;

  constructor(
    private readonly req: ReplicaRequest,
    private readonly deps: LocalReplicaDeps,
  ) {
    this.root = path.join(deps.replicasDir, req.name);
    this.log = req.logging
      ? new ReplicaLogWriter(logFilePath(deps.logsDir, { deploymentId: req.deploymentId, revision: req.revision, component: req.component, replica: req.name }))
      : null;
    void this.launch();
  }

  get name(): string {
    return this.req.name;
  }

  observe(): ReplicaObservation {
    const address = this.port === null ? null : `127.0.0.1:${this.port}`;
    const metricsPort = this.metricsPort ?? this.port;
    return {
      phase: this.phase,
      address,
      metricsTarget: metricsPort === null ? null : { address: `127.0.0.1:${metricsPort}`, path: this.req.metricsPath ?? '/metrics' },
      pid: this.child?.pid ?? null,
      restarts: this.restarts,
    };
  }

  onChange(listener: (o: ReplicaObservation) => void): void {
    this.listeners.push(listener);
  }

  shellContext(): { cwd: string; env: Record<string, string> } | null {
    if (this.stopping || this.child === null || this.plan === null) return null;
    return { cwd: this.root, env: { ...this.plan.env } };
  }

  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.clearTimer();
    const child = this.child;
    if (child?.pid !== undefined) {
      const exited = new Promise<void>((resolve) => this.exitWaiters.push(resolve));
      this.note(`stopping: SIGTERM to process group ${child.pid}`);
      signalGroup(child.pid, 'SIGTERM');
      const timedOut = await Promise.race([exited.then(() => false), sleep(graceMs).then(() => true)]);
      if (timedOut) {
        this.note(`still running ${graceMs} ms after SIGTERM: SIGKILL`);
        signalGroup(child.pid, 'SIGKILL');
        await exited;
      }
    }
    this.setPhase('stopped');
    await this.log?.close();
    rmSync(this.root, { recursive: true, force: true });
  }

  private note(line: string): void {
    this.log?.line('runtime', line);
  }

  private emit(): void {
    const o = this.observe();
    for (const listener of this.listeners) listener(o);
  }

  private setPhase(phase: ReplicaPhase): void {
    if (this.phase === phase) return;
    this.phase = phase;
    this.emit();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async prepare(): Promise<LaunchPlan> {
    this.port = await freePort();
    const separateMetrics = this.req.metricsPort !== null && this.req.metricsPort !== this.req.containerPort;
    this.metricsPort = separateMetrics ? await freePort() : null;
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
    const cacheDir = this.req.modelCaching ? this.deps.cacheDir : null;
    if (cacheDir !== null) mkdirSync(cacheDir, { recursive: true });
    return planLaunch(this.req, {
      port: this.port,
      metricsPort: this.metricsPort,
      root: this.root,
      configPath,
      cacheDir,
      selfCommand: this.deps.selfCommand,
      images: this.deps.images,
      inherited: this.deps.inherited,
    });
  }

  private async launch(): Promise<void> {
    if (this.stopping) return;
    let plan: LaunchPlan;
    try {
      plan = await this.prepare();
    } catch (err) {
      this.note(`cannot prepare the replica: ${(err as Error).message}`);
      this.crashed();
      return;
    }
    if (this.stopping) return;
    this.plan = plan;
    for (const line of plan.notes) this.note(line);
    if (plan.argv.length === 0) {
      this.note('cannot start: no command to run');
      this.crashed();
      return;
    }
    const argv = this.deps.pdeathsig ? [this.deps.pdeathsig, '--pdeathsig', 'KILL', '--', ...plan.argv] : plan.argv;
    const output = this.log ? 'pipe' : 'ignore';
    const child = spawn(argv[0] as string, argv.slice(1), { cwd: this.root, env: plan.env, detached: true, stdio: ['ignore', output, output] });
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => this.log?.chunk('stdout', chunk));
    child.stderr?.on('data', (chunk: Buffer) => this.log?.chunk('stderr', chunk));
    let gone = false;
    const onGone = (description: string) => {
      if (gone) return;
      gone = true;
      // Whatever the leader left in its group (a shell's children) goes with it.
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      this.child = null;
      this.note(description);
      for (const resolve of this.exitWaiters.splice(0)) resolve();
      if (!this.stopping) this.crashed();
    };
    child.once('error', (err) => onGone(`cannot start ${plan.argv[0]}: ${err.message}`));
    child.once('exit', (code, signal) => onGone(`process ${child.pid} exited ${signal ? `on ${signal}` : `with code ${code}`}`));
    if (child.pid !== undefined) {
      this.note(`started process ${child.pid} on port ${this.port}`);
      this.deps.logger.info({ replica: this.req.name, pid: child.pid, port: this.port }, 'replica process started');
    }
    this.failedProbes = 0;
    this.emit();
    this.scheduleProbe(plan);
  }

  private crashed(): void {
    this.clearTimer();
    this.restarts++;
    this.crashesInARow++;
    const delay = Math.min(this.deps.timing.backoffMaxMs, this.deps.timing.backoffInitialMs * 2 ** (this.crashesInARow - 1));
    this.note(`restarting in ${delay} ms (restart ${this.restarts})`);
    this.deps.logger.warn({ replica: this.req.name, restarts: this.restarts, delayMs: delay }, 'replica exited; restarting');
    this.phase = 'starting';
    this.emit();
    this.timer = setTimeout(() => void this.launch(), delay);
  }

  private scheduleProbe(plan: LaunchPlan): void {
    const { timing } = this.deps;
    const interval = this.phase === 'ready' ? timing.readyProbeMs : timing.startingProbeMs;
    this.timer = setTimeout(async () => {
      const child = this.child;
      if (child === null || this.port === null || this.stopping) return;
      const ok = await probeOnce(plan.probe, '127.0.0.1', this.port, timing.probeTimeoutMs);
      if (this.child !== child || this.stopping) return;
      if (ok) {
        this.failedProbes = 0;
        if (this.phase !== 'ready') {
          this.crashesInARow = 0;
          this.note('readiness probe passed: ready');
          this.setPhase('ready');
        }
      } else if (this.phase === 'ready' && ++this.failedProbes >= timing.failuresToUnready) {
        this.note(`readiness probe failed ${this.failedProbes} times: not ready`);
        this.setPhase('starting');
      }
      this.scheduleProbe(plan);
    }, interval);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
