// Owns the Docker runtime: general replicas as containers on this host's Docker Engine
// (docker-replica.ts), behind the same Runtime port as the local one. It keeps what one host
// shares between its replicas — the bridge network without inter-container traffic, the
// image puller (one pull per image), the GPU allocator, the reference engine image built once
// — takes back its containers by label after a restart, and removes the ones no replica
// record names. Orchestrated components (the Frontend and its workers) run on the local
// runtime it wraps: the Frontend reaches its workers on host loopback (docs/runtime.md says
// what containers for them would take).

import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { COMPONENT } from '../../domain/components.js';
import type { ImageMap } from '../../domain/image-map.js';
import { runtimeDirs } from '../local-runtime.js';
import { DEFAULT_TIMING, type LocalReplicaTiming } from '../local-replica.js';
import type { LeftoverReplica, ReplicaHandle, ReplicaRequest, Runtime } from '../runtime.js';
import { containerLimits } from './container-limits.js';
import { LABEL } from './container-spec.js';
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
  /** Runs what is not a container here (orchestrated components). */
  local: Runtime;
  /** CPUs the daemon has: container CPU limits are clamped to it (Docker refuses more). */
  hostCpus: number;
  timing?: Partial<LocalReplicaTiming>;
  pullBackoff?: PullBackoff;
}

/** The scope of a service (service-scope.ts): what its containers are labelled with. */
export { serviceScope as dockerScope } from '../service-scope.js';

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

  constructor(private readonly opts: DockerRuntimeOptions) {
    this.puller = new ImagePuller(opts.docker, opts.pullBackoff ?? DEFAULT_PULL_BACKOFF);
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
    };
  }

  get description(): string {
    const gpus = this.opts.gpus.total === 0 ? 'no GPUs: known engine images run the reference engine image (simulated)' : `${this.opts.gpus.total} GPUs`;
    return `replicas run as containers on Docker Engine (network ${networkName(this.opts.scope)}, ${gpus})`;
  }

  start(request: ReplicaRequest): ReplicaHandle {
    if (!this.containerized(request)) return this.guarded(this.opts.local.start(request));
    return new DockerReplica(request, this.depsFor(request));
  }

  async adopt(leftover: LeftoverReplica, request: ReplicaRequest): Promise<ReplicaHandle | null> {
    if (!this.containerized(request)) {
      const handle = await this.opts.local.adopt(leftover, request);
      return handle === null ? null : this.guarded(handle);
    }
    const [found] = await this.containersOf(leftover.name);
    if (found === undefined || found.State !== 'running') return null;
    return DockerReplica.takeBack(request, this.depsFor(request), this.opts.docker.getContainer(found.Id));
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

  /** A local replica's shell runs on this host: only where the local runtime allows shells. */
  private guarded(handle: ReplicaHandle): ReplicaHandle {
    const local = this.opts.local;
    return {
      get name() {
        return handle.name;
      },
      observe: () => handle.observe(),
      onChange: (listener) => handle.onChange(listener),
      stop: (graceMs) => handle.stop(graceMs),
      shellContext: () => (local.shellRefusal() === null ? handle.shellContext() : null),
    };
  }

  /** General replicas are containers; orchestrated components stay local processes. */
  private containerized(request: ReplicaRequest): boolean {
    return request.component === COMPONENT.Replica;
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
