// Owns the Docker runtime: every replica as a container on this host's Docker Engine
// (docker-replica.ts), behind the same Runtime port as the local one. It keeps what one host
// shares between its replicas — the bridge network without inter-container traffic, the
// image puller (one pull per image), the GPU allocator, the reference engine image built once,
// the pods of orchestrated deployments (docker-pod.ts: one network namespace per deployment,
// which its Frontend and workers share) — takes back its containers by label after a restart,
// and removes the ones no replica record names. The local runtime it wraps only reaps what an
// earlier run left as processes.

import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { COMPONENT } from '../../domain/components.js';
import type { ImageMap } from '../../domain/image-map.js';
import type { RegistryGate } from '../../domain/ports.js';
import { runtimeDirs } from '../local-runtime.js';
import { DEFAULT_TIMING, type LocalReplicaTiming } from '../local-replica.js';
import type { LeftoverReplica, ReplicaHandle, ReplicaRequest, Runtime } from '../runtime.js';
import { containerLimits } from './container-limits.js';
import { LABEL } from './container-spec.js';
import { DockerPods } from './docker-pod.js';
import { DockerReplica, type DockerReplicaDeps } from './docker-replica.js';
import { buildEngineImage, ENGINE_CONTENT_LABEL, engineContentDigest } from './engine-image.js';
import type { GpuAllocator } from './gpu-allocator.js';
import { gpuHostConfig, type GpuMode } from './gpu-request.js';
import { DEFAULT_PULL_BACKOFF, ImagePuller, type PullBackoff } from './image-puller.js';

export interface DockerRuntimeOptions {
  docker: Dockerode;
  dataDir: string;
  /** What this service's containers share as a label: one per store, so services on one daemon keep apart. */
  scope: string;
  images: ImageMap;
  logger: Logger;
  gpus: GpuAllocator;
  gpuMode: GpuMode;
  /** The reference engine image's ref, and the checkout it is built from when missing. */
  engineImage: string;
  appDir: string;
  /** Reaps replica processes and sweeps directories an earlier run left (one under the local runtime, or before orchestrated deployments were containers). */
  local: Runtime;
  /** CPUs the daemon has: container CPU limits are clamped to it (Docker refuses more). */
  hostCpus: number;
  timing?: Partial<LocalReplicaTiming>;
  pullBackoff?: PullBackoff;
  /** Which registry hosts the daemon may pull from (--registries), asked before every pull; absent: any. */
  registries?: RegistryGate;
}

/** The scope of a service: its store (the Redis URL and key prefix, else the data directory), hashed. */
export function dockerScope(dataDir: string, redisUrl: string | null, redisPrefix = ''): string {
  let where = redisUrl === null ? dataDir : `${redisUrl}\n${redisPrefix}`;
  if (redisUrl === null) {
    try {
      where = realpathSync(dataDir);
    } catch {
      where = path.resolve(dataDir);
    }
  }
  return createHash('sha256').update(where).digest('hex').slice(0, 10);
}

export function networkName(scope: string): string {
  return `infergate-${scope}`;
}

/**
 * The network replicas join: a bridge where containers cannot reach each other (icc off); the
 * host's loopback services are out of reach in any container's own network namespace.
 */
export async function ensureNetwork(docker: Dockerode, scope: string): Promise<string> {
  const name = networkName(scope);
  const existing = await docker.listNetworks({ filters: { name: [name] } });
  if (existing.some((n) => n.Name === name)) return name;
  try {
    await docker.createNetwork({
      Name: name,
      Driver: 'bridge',
      CheckDuplicate: true,
      Options: { 'com.docker.network.bridge.enable_icc': 'false' },
      Labels: { [LABEL.scope]: scope },
    });
  } catch (err) {
    // Another process of the same service made it meanwhile.
    if ((err as { statusCode?: number }).statusCode !== 409) throw err;
  }
  return name;
}

export class DockerRuntime implements Runtime {
  private readonly puller: ImagePuller;
  private building: Promise<void> | null = null;
  private readonly deps: DockerReplicaDeps;
  private readonly pods: DockerPods;

  constructor(private readonly opts: DockerRuntimeOptions) {
    this.puller = new ImagePuller(opts.docker, opts.pullBackoff ?? DEFAULT_PULL_BACKOFF, Date.now, opts.registries ?? null);
    const { replicasDir, logsDir, cacheDir } = runtimeDirs(opts.dataDir);
    const { gpus, gpuMode } = opts;
    this.deps = {
      docker: opts.docker,
      puller: this.puller,
      replicasDir,
      logsDir,
      cacheDir,
      container: {
        scope: opts.scope,
        network: networkName(opts.scope),
        images: opts.images,
        engineImage: opts.engineImage,
        simulateEngines: gpus.total === 0,
        limits: containerLimits(null, opts.hostCpus),
      },
      gpus: {
        acquire: (owner, count) => gpus.acquire(owner, count),
        claim: (owner, ids) => gpus.claim(owner, ids),
        release: (owner) => gpus.release(owner),
        free: () => gpus.free,
        total: () => gpus.total,
        hostConfig: (ids) => ({ ...gpuHostConfig(ids, gpuMode) }),
      },
      engineImage: (onNote) => this.engineImage(onNote),
      timing: { ...DEFAULT_TIMING, ...opts.timing },
      logger: opts.logger,
      pod: null,
    };
    this.pods = new DockerPods({
      docker: opts.docker,
      scope: opts.scope,
      network: networkName(opts.scope),
      engineImage: opts.engineImage,
      prepareEngineImage: (onNote) => this.engineImage(onNote),
      logger: opts.logger,
    });
  }

  get description(): string {
    const gpus = this.opts.gpus.total === 0 ? 'no GPUs: known engine images run the reference engine image (simulated)' : `${this.opts.gpus.total} GPUs`;
    return `replicas run as containers on Docker Engine (network ${networkName(this.opts.scope)}, ${gpus})`;
  }

  start(request: ReplicaRequest): ReplicaHandle {
    if (!inPod(request)) return new DockerReplica(request, this.depsFor(request));
    // A new member's port is free in its pod (a seat is refused only for a port asked for).
    const seat = this.pods.seat(request.deploymentId, request.name)!;
    return new DockerReplica(request, { ...this.depsFor(request), pod: seat });
  }

  async adopt(leftover: LeftoverReplica, request: ReplicaRequest): Promise<ReplicaHandle | null> {
    const [found] = await this.containersOf(leftover.name);
    if (found === undefined || found.State !== 'running') return null;
    const container = this.opts.docker.getContainer(found.Id);
    if (!inPod(request)) return DockerReplica.takeBack(request, this.depsFor(request), container);
    // A pod member is taken back on its port, in its holder, when that holder still runs.
    const port = Number(found.Labels[LABEL.podPort]);
    const holder = /^container:(.+)$/.exec(found.HostConfig.NetworkMode)?.[1];
    const seat = Number.isInteger(port) && port > 0 && holder !== undefined ? this.pods.seat(request.deploymentId, leftover.name, port) : null;
    if (seat === null) return null;
    if (!(await this.pods.takeBack(request.deploymentId, holder!))) {
      seat.forget();
      return null;
    }
    return DockerReplica.takeBack(request, { ...this.depsFor(request), pod: seat }, container);
  }

  async reap(leftover: LeftoverReplica): Promise<boolean> {
    const local = await this.opts.local.reap(leftover);
    const containers = await this.containersOf(leftover.name);
    for (const c of containers) await this.opts.docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => {});
    if (containers.length > 0) this.opts.logger.warn({ replica: leftover.name }, 'removed a container left by an earlier run');
    return local || containers.length > 0;
  }

  async sweep(keep: ReadonlySet<string>): Promise<string[]> {
    const removed = await this.opts.local.sweep(keep);
    const ours = await this.opts.docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${this.opts.scope}`] } });
    for (const c of ours) {
      // A pod holder stays while a member of this run is in it.
      if (c.Labels[LABEL.pod] !== undefined) {
        if (this.pods.holds(c)) continue;
        await this.opts.docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => {});
        removed.push(c.Names[0]?.replace(/^\//, '') ?? c.Id.slice(0, 12));
        continue;
      }
      const replica = c.Labels[LABEL.replica] ?? '';
      if (keep.has(replica)) continue;
      await this.opts.docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => {});
      removed.push(replica);
    }
    if (removed.length > 0) this.opts.logger.warn({ replicas: removed }, 'removed containers and directories no replica record names');
    return removed;
  }

  /** A shell in a container is a Docker exec as the container's user: nothing runs on this host. */
  shellRefusal(): string | null {
    return null;
  }

  private depsFor(request: ReplicaRequest): DockerReplicaDeps {
    return { ...this.deps, container: { ...this.deps.container, limits: containerLimits(request.hardware, this.opts.hostCpus) } };
  }

  private containersOf(replica: string): Promise<Dockerode.ContainerInfo[]> {
    return this.opts.docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${this.opts.scope}`, `${LABEL.replica}=${replica}`] } });
  }

  /** The reference engine image, built here from this checkout when missing or out of date; once at a time. */
  private engineImage(onNote: (line: string) => void): Promise<void> {
    this.building ??= this.buildIfStale(onNote).finally(() => {
      this.building = null;
    });
    return this.building;
  }

  private async buildIfStale(onNote: (line: string) => void): Promise<void> {
    const { docker, engineImage, appDir, logger } = this.opts;
    const digest = await engineContentDigest(appDir);
    const current = await docker
      .getImage(engineImage)
      .inspect()
      .catch(() => null);
    if (current?.Config.Labels?.[ENGINE_CONTENT_LABEL] === digest) return;
    onNote(`building the reference engine image ${engineImage} on this host (once per installed version)`);
    logger.info({ image: engineImage }, 'building the reference engine image');
    const built = await buildEngineImage(docker, { appDir, ref: engineImage });
    logger.info({ image: engineImage, bytes: built.bytes }, 'reference engine image built');
    // The image the tag moved away from would stay as an untagged ~150 MiB copy; Docker refuses
    // to remove it while a container still uses it, and then it is left for `docker image prune`.
    if (current && current.Id !== built.id) await docker.getImage(current.Id).remove().catch(() => undefined);
  }
}

/** Orchestrated components (Frontend, Worker, Prefill, Decode) share their deployment's pod; a general replica has a network of its own. */
function inPod(request: ReplicaRequest): boolean {
  return request.component !== COMPONENT.Replica;
}
