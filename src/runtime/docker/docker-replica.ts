// Owns one replica of the Docker runtime: its container's whole life — the image made present
// (pulled with the deployment's credentials, its progress and failures as the replica's
// detail), GPUs taken from the host's allocator, the container created and started, its
// output followed from the Engine API into the replica's log, readiness probed, a crash
// restarted with exponential backoff, and a stop with SIGTERM, the grace, then SIGKILL — or
// the same supervision taken over for a container an earlier run of the service left running
// (killed, or stopped cleanly with its replicas released: the container, its files and its
// pod are left as they are).
// A member of an orchestrated deployment's pod (docker-pod.ts) runs in its holder's network
// namespace, at the holder's address and its own port there; it is made again when the holder
// it was created in is gone.

import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import type { LocalReplicaTiming } from '../local-replica.js';
import { probeAnswer, probeOnce, readinessProbe, type Probe } from '../readiness.js';
import { ReplicaBase, replicaLog, restartDelay } from '../replica-base.js';
import type { ReplicaExit, ReplicaHandle, ReplicaObservation, ReplicaRequest, ReplicaShell } from '../runtime.js';
import { containerImage, containerName, publishedPort, runsSimulated, type ContainerImage, type ContainerInputs, planContainer } from './container-spec.js';
import type { PodSeat } from './docker-pod.js';
import { dockerShells } from './exec-shell.js';
import { PullError, type ImagePuller } from './image-puller.js';

export interface DockerReplicaDeps {
  docker: Dockerode;
  puller: ImagePuller;
  replicasDir: string;
  logsDir: string;
  cacheDir: string;
  /** Everything planContainer needs but the replica's own paths and GPUs. */
  container: Omit<ContainerInputs, 'configHostPath' | 'cacheHostPath' | 'gpuHostConfig' | 'pod'>;
  /** Its seat in its deployment's pod (an orchestrated component); null: a container with a network of its own. */
  pod: PodSeat | null;
  /** GPUs for a replica that runs a real engine: ids, or a reason it has to wait. */
  gpus: { acquire(owner: string, count: number): string[] | null; claim(owner: string, ids: readonly string[]): string[]; release(owner: string): void; hostConfig(ids: string[]): Record<string, unknown>; free(): number; total(): number };
  /** Makes the reference engine image present (built here once per host). */
  engineImage(onNote: (line: string) => void): Promise<void>;
  /** Makes the service's network present (another control process of the store may have removed it at its stop). */
  network?: () => Promise<void>;
  timing: LocalReplicaTiming;
  logger: Logger;
}

type Container = Dockerode.Container;

/** Failed probes of a starting container (about 5 s at the default interval) before the detail quotes its answer: a model still loading is not news. */
const NOT_READY_SAYS_WHY_AFTER = 20;

export class DockerReplica extends ReplicaBase implements ReplicaHandle {
  private restarts = 0;
  /** Failed probes since the container started: past a few, what the server answers becomes the detail. */
  private startingProbes = 0;
  private stopping = false;
  private container: Container | null = null;
  private pid: number | null = null;
  private port: number | null = null;
  private metricsPort: number | null = null;
  /** The container's own address on its bridge network (a pod member: its holder's): probes see the server itself there, not Docker's port proxy. */
  private containerIp: string | null = null;
  /** The pod holder the container was created in (a pod member): its network namespace is that holder's. */
  private holderId: string | null = null;
  /** Ends the log follow of the current container start. */
  private unfollow: (() => void) | null = null;
  private readonly root: string;
  private readonly probe: Probe;

  constructor(
    private readonly req: ReplicaRequest,
    private readonly deps: DockerReplicaDeps,
    /** A container an earlier run left, what it was inspected as, whether it answered its readiness probe when taken back, and the restarts its record counted. */
    adopted: { container: Container; info: Dockerode.ContainerInspectInfo; ready: boolean; restarts: number } | null = null,
  ) {
    super(replicaLog(deps.logsDir, req));
    if (adopted !== null) {
      this.container = adopted.container;
      this.restarts = adopted.restarts;
      this.readInspect(adopted.info);
      // Taken back ready, at the address it had, it stays in routing without a gap while its supervision resumes.
      if (adopted.ready && this.port !== null) this.phase = 'ready';
    }
    this.root = path.join(deps.replicasDir, req.name);
    this.probe = readinessProbe(req);
    deps.pod?.onLost(() => this.podLost());
    if (adopted !== null) void this.takeOver(adopted.container);
    else void this.launch();
  }

  /**
   * The supervision of a container an earlier run left running, probed before it is handed
   * back: a ready one keeps serving through the restart of the control process.
   */
  static async takeBack(req: ReplicaRequest, deps: DockerReplicaDeps, container: Container, restarts = 0): Promise<DockerReplica> {
    const info = await container.inspect();
    const held = (info.HostConfig.DeviceRequests ?? []).flatMap((r) => r.DeviceIDs ?? []).map((id) => id.replace(/^nvidia\.com\/gpu=/, ''));
    const conflicts = deps.gpus.claim(req.name, held);
    if (conflicts.length > 0) deps.logger.warn({ replica: req.name, gpus: conflicts }, 'a container taken back holds GPUs another replica holds');
    const ip = deps.pod !== null ? (deps.pod.current()?.ip ?? null) : bridgeAddress(info);
    const port = deps.pod?.port ?? req.containerPort;
    const ready = ip !== null && (await probeOnce(readinessProbe(req), ip, port, deps.timing.probeTimeoutMs).catch(() => false));
    return new DockerReplica(req, deps, { container, info, ready, restarts });
  }

  get name(): string {
    return this.req.name;
  }

  observe(): ReplicaObservation {
    // A general replica is reached at its published port on loopback; a pod member at its holder's address.
    const host = this.deps.pod === null ? '127.0.0.1' : this.containerIp;
    const reachable = this.port !== null && host !== null;
    return {
      phase: this.phase,
      address: reachable ? `${host}:${this.port}` : null,
      metricsTarget: reachable ? { address: `${host}:${this.metricsPort ?? this.port}`, path: this.req.metricsPath ?? '/metrics' } : null,
      pid: this.pid,
      restarts: this.restarts,
      detail: this.phase === 'ready' ? null : this.detail,
      lastExit: this.lastExit,
      pull: this.pull,
    };
  }

  shellContext(): ReplicaShell | null {
    if (this.stopping || this.container === null || this.pid === null) return null;
    // The exec inherits the container's environment, user and working directory.
    return { argv: ['/bin/sh'], cwd: '', env: {}, launcher: dockerShells(this.deps.docker, this.container.id) };
  }

  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.clearTimer();
    const container = this.container;
    if (container !== null) {
      this.note(`stopping: SIGTERM, then SIGKILL after ${graceMs} ms`);
      // The daemon sends the image's stop signal (SIGTERM by default), waits t seconds, then SIGKILL.
      await container.stop({ t: Math.max(1, Math.ceil(graceMs / 1000)) }).catch(() => {});
      await container.remove({ force: true, v: true }).catch((err: Error) => this.deps.logger.warn({ err, replica: this.req.name }, 'removing a container failed'));
    }
    this.unfollow?.();
    this.deps.gpus.release(this.req.name);
    this.container = null;
    this.pid = null;
    // Its port in the pod is free again; the holder goes with the pod's last member.
    await this.deps.pod?.leave().catch((err: Error) => this.deps.logger.warn({ err, replica: this.req.name }, 'removing a pod holder failed'));
    this.setPhase('stopped');
    await this.log?.close();
    rmSync(this.root, { recursive: true, force: true });
  }

  /**
   * The service stops and leaves the container running: probes, restarts and the log follow
   * end here; the container, its config file, its model cache, its GPUs and its pod holder stay,
   * for the next start to take back (a container this run was still making is not left
   * half-made: launch removes it once it sees the replica stopping).
   */
  async release(): Promise<void> {
    this.stopping = true;
    this.clearTimer();
    this.unfollow?.();
    this.unfollow = null;
    await this.log?.close();
  }

  private later(ms: number, step: () => Promise<void>): void {
    this.clearTimer();
    if (!this.stopping) this.timer = setTimeout(() => void step(), ms);
  }

  /** Files the container mounts from this host: its config file, its deployment's model cache, and a Frontend's workers file directory. */
  private prepareHostPaths(): { configHostPath: string | null; cacheHostPath: string | null } {
    rmSync(this.root, { recursive: true, force: true });
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    let configHostPath: string | null = null;
    if (this.req.configFile !== null) {
      mkdirSync(path.join(this.root, 'config'), { recursive: true });
      configHostPath = path.join(this.root, 'config', this.req.configFile.filename);
      // Readable by the image's user, whoever it is; only this container mounts it, and the
      // data directory around it is the service's own.
      writeFileSync(configHostPath, this.req.configFile.content, { mode: 0o644 });
    }
    // A Frontend's workers file directory, bound read-only: Docker refuses a bind of a missing path.
    for (const dir of this.req.readOnlyPaths ?? []) mkdirSync(dir, { recursive: true, mode: 0o755 });
    let cacheHostPath: string | null = null;
    if (this.req.modelCaching) {
      cacheHostPath = path.join(this.deps.cacheDir, String(this.req.deploymentId));
      mkdirSync(cacheHostPath, { recursive: true });
      // Writable by the image's user, whoever it is (mkdir's mode is cut by the umask); the data
      // directory around it keeps other host users out.
      chmodSync(cacheHostPath, 0o777);
    }
    return { configHostPath, cacheHostPath };
  }

  /** Image, GPUs, container: each step either moves on or says what it waits for and tries again later. */
  private async launch(): Promise<void> {
    if (this.stopping) return;
    try {
      if (this.container !== null && this.deps.pod !== null && (await this.deps.pod.join()).id !== this.holderId) {
        // Its holder is gone, and its network namespace with it: a container is made in the new one.
        this.note('its pod holder was made anew: the container is made again in it');
        await this.container.remove({ force: true, v: true }).catch(() => undefined);
        this.container = null;
      }
      if (this.stopping) return;
      if (this.container === null) {
        const created = await this.create();
        if (created === null) return;
        if (this.stopping) {
          // Stopped while it was being made: nothing else would remove it.
          await created.remove({ force: true, v: true }).catch(() => undefined);
          return;
        }
        this.container = created;
      }
      await this.startContainer(this.container);
    } catch (err) {
      if (this.stopping) return;
      // Removed behind the runtime's back: made anew at the next try.
      if ((err as { statusCode?: number }).statusCode === 404) this.container = null;
      this.note(`cannot start the container: ${(err as Error).message}`);
      this.lastExit = { code: null, signal: null };
      this.crashed(`cannot start the container: ${firstLine((err as Error).message)}`);
    }
  }

  /** The container, created; null when the image or GPUs are not there yet (a retry is scheduled). */
  private async create(): Promise<Container | null> {
    // A host without GPUs runs every container without one (and says so); a GPU host never
    // runs a GPU replica on fewer GPUs than its hardware instance has.
    const wantsGpus = !runsSimulated(this.req, this.deps.container) && this.req.gpus > 0;
    const gpuIds = wantsGpus && this.deps.gpus.total() > 0 ? this.deps.gpus.acquire(this.req.name, this.req.gpus) : [];
    if (gpuIds === null) {
      this.setDetail(`waiting for ${this.req.gpus} GPU${this.req.gpus === 1 ? '' : 's'}: ${this.deps.gpus.free()} free on this host`);
      this.later(5000, () => this.launch());
      return null;
    }
    const hostPaths = this.prepareHostPaths();
    if (!(await this.imagePresent(containerImage(this.req, this.deps.container)))) return null;
    const holder = this.deps.pod === null ? null : await this.joinPod(this.deps.pod);
    const pod = holder === null || this.deps.pod === null ? null : { holder: holder.id, port: this.deps.pod.port };
    const plan = planContainer(this.req, { ...this.deps.container, ...hostPaths, gpuHostConfig: this.deps.gpus.hostConfig(gpuIds), pod });
    if (gpuIds.length > 0) plan.notes.push(`infergate runtime: GPUs ${gpuIds.join(', ')}`);
    else if (wantsGpus) plan.notes.push('infergate runtime: this host has no GPUs: the container runs without one');
    for (const line of plan.notes) this.note(line);
    const name = containerName(this.deps.container.scope, this.req.name);
    await this.deps.network?.();
    // A container of this name left by a crash between create and record is not ours to keep.
    await this.deps.docker.getContainer(name).remove({ force: true }).catch(() => {});
    const created = await this.deps.docker.createContainer({ name, ...plan.body });
    this.holderId = holder?.id ?? null;
    return created;
  }

  /** Its pod's running holder (made first when there is none), said as the detail while it is being made. */
  private async joinPod(seat: PodSeat): Promise<{ id: string; ip: string }> {
    if (seat.current() === null) this.setDetail('preparing its pod (the network namespace it shares with its deployment)');
    return seat.join();
  }

  /** The pod's holder stopped: the container, without a network now, is stopped and made again in a new holder. */
  private podLost(): void {
    const container = this.container;
    if (this.stopping || container === null) return;
    this.note('its pod holder stopped, and its network with it: restarting in a new one');
    // Its exit is then a crash like any: the restart (launch) joins the new holder.
    void container.kill().catch(() => undefined);
  }

  /** Whether the plan's image is on this host; when not, the reason is the detail and a retry is scheduled. */
  private async imagePresent(plan: ContainerImage): Promise<boolean> {
    try {
      if (plan.engineImage) {
        this.setDetail(`preparing the reference engine image ${plan.image}`);
        await this.deps.engineImage((line) => this.note(line));
      } else {
        this.pull = { image: plan.image, state: 'pulling', reason: null, permanent: false };
        this.setDetail(`pulling ${plan.image}`);
        await this.deps.puller.ensure(plan.image, this.req.registryAuth, (pct) => this.setDetail(`pulling ${plan.image}: ${pct}%`));
        this.pull = { image: plan.image, state: 'pulled', reason: null, permanent: false };
        this.emit();
      }
      return true;
    } catch (err) {
      if (this.stopping) return false;
      const retryAt = err instanceof PullError ? err.retryAt : Date.now() + this.deps.timing.backoffMaxMs;
      const waitMs = Math.max(1000, retryAt - Date.now());
      const reason = err instanceof PullError ? err.failure.reason : `the image cannot be prepared: ${firstLine((err as Error).message)}`;
      // Retried with a backoff whatever the kind; these ones only an edit of the deployment (or the registry) mends.
      const permanent = err instanceof PullError && ['unknown_image', 'unknown_tag', 'refused_credentials', 'refused_registry'].includes(err.failure.kind);
      if (!plan.engineImage) this.pull = { image: plan.image, state: 'failed', reason, permanent };
      this.note(`${reason}; trying again in ${Math.round(waitMs / 1000)} s`);
      this.deps.logger.warn({ replica: this.req.name, image: plan.image, kind: err instanceof PullError ? err.failure.kind : 'other', reason }, 'image pull failed');
      this.setDetail(`${reason}; retrying in ${Math.round(waitMs / 1000)} s`);
      this.later(waitMs, () => this.launch());
      return false;
    }
  }

  private async startContainer(container: Container): Promise<void> {
    const startedAt = Math.floor(Date.now() / 1000);
    await container.start();
    if (this.stopping) return;
    await this.attach(container, startedAt);
    this.note(`started container ${container.id.slice(0, 12)} (pid ${this.pid}) on ${this.observe().address ?? `port ${this.port}`}`);
    this.deps.logger.info({ replica: this.req.name, container: container.id.slice(0, 12), port: this.port }, 'replica container started');
  }

  /** Reads what the started container got (pid, published ports, address), follows its output and its exit, and probes it. */
  private async attach(container: Container, since: number): Promise<void> {
    this.readInspect(await container.inspect());
    this.setDetail(null);
    this.failedProbes = 0;
    this.startingProbes = 0;
    this.emit();
    await this.follow(container, since);
    void container.wait().then(
      (result: { StatusCode?: number }) => this.exited(container, `container exited with code ${result.StatusCode ?? '?'}`, { code: result.StatusCode ?? null, signal: null }),
      (err: Error) => this.exited(container, `lost the container: ${firstLine(err.message)}`, { code: null, signal: null }),
    );
    this.schedule();
  }

  /** The started container's pid, published ports and bridge address (a pod member: its port in the pod, and its holder's address). */
  private readInspect(info: Dockerode.ContainerInspectInfo): void {
    this.pid = info.State.Pid > 0 ? info.State.Pid : null;
    if (this.deps.pod !== null) {
      this.port = this.deps.pod.port;
      this.metricsPort = null;
      this.containerIp = this.deps.pod.current()?.ip ?? null;
      this.holderId = /^container:(.+)$/.exec(info.HostConfig.NetworkMode ?? '')?.[1] ?? null;
      return;
    }
    const ports = info.NetworkSettings.Ports as Record<string, Array<{ HostIp: string; HostPort: string }> | null>;
    const metrics = this.req.metricsPort !== null && this.req.metricsPort !== this.req.containerPort ? `${this.req.metricsPort}/tcp` : null;
    this.port = publishedPort(ports, `${this.req.containerPort}/tcp`);
    this.metricsPort = metrics === null ? null : publishedPort(ports, metrics);
    this.containerIp = bridgeAddress(info);
  }

  private async follow(container: Container, since: number): Promise<void> {
    this.unfollow?.();
    if (this.log === null) return;
    const log = this.log;
    const stream = (await container.logs({ follow: true, stdout: true, stderr: true, since })) as NodeJS.ReadableStream & { destroy?: () => void };
    const out = new PassThrough();
    const err = new PassThrough();
    out.on('data', (chunk: Buffer) => log.chunk('stdout', chunk));
    err.on('data', (chunk: Buffer) => log.chunk('stderr', chunk));
    this.deps.docker.modem.demuxStream(stream, out, err);
    stream.on('error', () => {});
    this.unfollow = () => stream.destroy?.();
  }

  private exited(container: Container, description: string, exit: ReplicaExit): void {
    if (this.stopping || this.container !== container) return;
    this.note(description);
    this.lastExit = exit;
    this.port = null;
    this.pid = null;
    this.crashed(description);
  }

  private crashed(why: string): void {
    this.clearTimer();
    this.restarts++;
    this.crashesInARow++;
    const delay = restartDelay(this.deps.timing, this.crashesInARow);
    this.note(`restarting in ${delay} ms (restart ${this.restarts})`);
    this.deps.logger.warn({ replica: this.req.name, restarts: this.restarts, delayMs: delay }, 'replica container exited; restarting');
    this.detail = `${why}; restarting in ${Math.round(delay / 1000)} s (restart ${this.restarts})`;
    this.phase = 'starting';
    this.emit();
    this.later(delay, () => this.launch());
  }

  private schedule(): void {
    const { timing } = this.deps;
    this.later(this.phase === 'ready' ? timing.readyProbeMs : timing.startingProbeMs, () => this.probeOnce());
  }

  /** One readiness probe and its consequence; then the next is scheduled. */
  private async probeOnce(): Promise<void> {
    const { timing } = this.deps;
    const container = this.container;
    if (container === null || this.port === null || this.stopping) return;
    // A TCP probe through Docker's port proxy would pass before the server listens: the container's own address is probed.
    const [host, port] = this.containerIp !== null ? [this.containerIp, this.deps.pod?.port ?? this.req.containerPort] : ['127.0.0.1', this.port];
    const { ok, answer } = await probeAnswer(this.probe, host, port, timing.probeTimeoutMs).catch((err: Error) => ({ ok: false, answer: err.message }));
    if (this.container !== container || this.stopping || this.port === null) return;
    if (!ok && this.phase !== 'ready' && ++this.startingProbes >= NOT_READY_SAYS_WHY_AFTER) this.setDetail(`running, not ready: ${answer}`);
    const wasReady = this.phase === 'ready';
    this.probeVerdict(ok, timing.failuresToUnready);
    if (wasReady && this.phase !== 'ready') this.setDetail(`readiness probe failing: ${answer}`);
    this.schedule();
  }

  /** Supervises a container an earlier run started: its GPUs are claimed by the runtime, its output followed from now. */
  private async takeOver(container: Container): Promise<void> {
    try {
      this.note(`taken back by a new run of the service: container ${container.id.slice(0, 12)}`);
      await this.attach(container, Math.floor(Date.now() / 1000));
    } catch (err) {
      this.crashed(`cannot take back the container: ${firstLine((err as Error).message)}`);
    }
  }
}

function firstLine(s: string): string {
  return (s.split('\n')[0] ?? '').slice(0, 300);
}

/** The container's address on its bridge network, where the host reaches its server without Docker's port proxy. */
function bridgeAddress(info: Dockerode.ContainerInspectInfo): string | null {
  return Object.values(info.NetworkSettings.Networks ?? {}).find((n) => n.IPAddress)?.IPAddress ?? null;
}
