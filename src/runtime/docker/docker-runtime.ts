// Owns the Docker runtime: every replica as a container on this host's Docker Engine
// (docker-replica.ts), behind the same Runtime port as the local one. It keeps what one host
// shares between its replicas — the bridge network without inter-container traffic (one per
// service: reused across restarts, kept while containers are on it, removed at a clean stop
// when none remains, on
// --docker-subnet or the daemon's pools, whose exhaustion is a start-up error saying what to
// do), the image puller (one pull per image), the GPU allocator, the reference engine image
// built once, the pods of orchestrated deployments (docker-pod.ts: one network namespace per
// deployment, which its Frontend and workers share) — takes back its containers by label after
// a restart (a clean stop leaves them running unless --drain-on-stop: replicasOutliveService),
// and removes the ones no replica record names. The local runtime it wraps only reaps what an
// earlier run left as processes.

import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { COMPONENT } from '../../domain/components.js';
import type { ImageMap } from '../../domain/image-map.js';
import type { RegistryGate } from '../../domain/ports.js';
import { runtimeDirs } from '../local-runtime.js';
import { DEFAULT_TIMING, type LocalReplicaTiming } from '../local-replica.js';
import type { LeftoverReplica, ReplicaHandle, ReplicaRequest, Runtime } from '../runtime.js';
import { ConfigError } from '../../config/serve-flags.js';
import { dockerEndpoint } from './client.js';
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
  /** `--docker-subnet`: the service network's subnet; null or absent: the daemon's default pools. */
  subnet?: string | null;
  timing?: Partial<LocalReplicaTiming>;
  pullBackoff?: PullBackoff;
  /** Which registry hosts the daemon may pull from (--registries), asked before every pull; absent: any. */
  registries?: RegistryGate;
}

/** The scope of a service (service-scope.ts): what its containers are labelled with. */
export { serviceScope as dockerScope } from '../service-scope.js';

export function networkName(scope: string): string {
  return `infergate-${scope}`;
}

export interface NetworkOptions {
  /** `--docker-subnet`: the network's IPv4 subnet; null: one from the daemon's default address pools. */
  subnet?: string | null;
  logger?: Logger;
}

/**
 * The network replicas join: a bridge where containers cannot reach each other (icc off); the
 * host's loopback services are out of reach in any container's own network namespace. One per
 * service (its scope), reused when it is there — after a restart, or made by another control
 * process of the same store — and removed at a clean stop (releaseNetwork). Called at start and
 * again before each container is made, so a network another process of the store removed
 * meanwhile is made anew. A daemon that cannot make it is a start-up error that says what to do.
 */
export async function ensureNetwork(docker: Dockerode, scope: string, opts: NetworkOptions = {}): Promise<string> {
  const name = networkName(scope);
  const subnet = opts.subnet ?? null;
  const existing = (await docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
  if (existing !== undefined) {
    const subnets = (existing.IPAM?.Config ?? []).map((c) => c.Subnet);
    if (subnet === null || subnets.includes(subnet)) return name;
    // Another subnet asked for: made anew, unless containers still use the old one.
    if (Object.keys((await docker.getNetwork(existing.Id).inspect()).Containers ?? {}).length > 0) {
      opts.logger?.warn({ network: name, subnet: subnets.join(','), wanted: subnet }, 'docker network kept on its subnet: containers still use it; --docker-subnet applies once they are gone');
      return name;
    }
    await docker.getNetwork(existing.Id).remove().catch(ignoreGone);
  }
  try {
    await docker.createNetwork({
      Name: name,
      Driver: 'bridge',
      CheckDuplicate: true,
      Options: { 'com.docker.network.bridge.enable_icc': 'false' },
      Labels: { [LABEL.scope]: scope },
      ...(subnet !== null ? { IPAM: { Driver: 'default', Config: [{ Subnet: subnet }] } } : {}),
    });
    opts.logger?.info({ network: name, subnet }, 'docker network created');
  } catch (err) {
    // Another process of the same service made it meanwhile.
    if ((err as { statusCode?: number }).statusCode === 409) return name;
    const refusal = networkRefusal(daemonMessage(err), name, subnet, dockerEndpoint(docker));
    if (refusal !== null) throw new ConfigError(refusal);
    throw err;
  }
  return name;
}

/**
 * At a clean stop: the service's network goes when no container of its scope (nor any other)
 * remains on it — one network per service, never a pile of them on the daemon's address pools.
 * Kept, and said, while containers remain (another control process of the same store runs its
 * replicas there).
 */
export async function releaseNetwork(docker: Dockerode, scope: string, logger: Logger): Promise<'removed' | 'kept' | 'absent'> {
  const name = networkName(scope);
  const network = docker.getNetwork(name);
  const ours = await docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${scope}`] } });
  const attached = await network.inspect().then(
    (n: { Containers?: Record<string, unknown> }) => Object.keys(n.Containers ?? {}).length,
    (err: unknown) => (isGone(err) ? null : Promise.reject(err)),
  );
  if (attached === null) return 'absent';
  if (ours.length > 0 || attached > 0) {
    logger.warn({ network: name, containers: Math.max(ours.length, attached) }, 'docker network kept: containers still use it (it is removed at a clean stop once none remains)');
    return 'kept';
  }
  try {
    await network.remove();
  } catch (err) {
    if (isGone(err)) return 'absent';
    // 403: a container joined it meanwhile (another process of the store).
    logger.warn({ network: name, err: daemonMessage(err) }, 'docker network kept: the daemon refused to remove it');
    return 'kept';
  }
  logger.info({ network: name }, 'docker network removed');
  return 'removed';
}

/** What the daemon said, without dockerode's "(HTTP code 500) server error - " prefix. */
function daemonMessage(err: unknown): string {
  const json = (err as { json?: { message?: unknown } }).json;
  if (typeof json?.message === 'string') return json.message;
  return (err as Error).message.replace(/^\(HTTP code \d+\)[^-]*- /, '').trim();
}

function isGone(err: unknown): boolean {
  return (err as { statusCode?: number }).statusCode === 404;
}

function ignoreGone(err: unknown): void {
  if (!isGone(err)) throw err;
}

/**
 * The start-up error for a network the daemon would not make, naming the cause and the fix;
 * null for a refusal with no advice here (thrown as it came).
 */
export function networkRefusal(message: string, name: string, subnet: string | null, endpoint: string): string | null {
  if (/could not find an available, non-overlapping IPv4 address pool/i.test(message)) {
    return (
      `the Docker daemon at ${endpoint} has no address pool left for this service's network ${name} (${message}). ` +
      'Free one: remove networks nothing uses (docker network prune; docker network ls lists them, infergate-* ones included), ' +
      'or give this service a subnet of its own with --docker-subnet (e.g. --docker-subnet 10.213.0.0/24), ' +
      "or widen the daemon's default-address-pools in /etc/docker/daemon.json and restart it"
    );
  }
  if (subnet !== null && /overlap/i.test(message)) {
    return (
      `--docker-subnet ${subnet} overlaps a network the Docker daemon at ${endpoint} already has (${message}): ` +
      'choose a free range (docker network inspect shows the subnets in use), or remove the network that holds it'
    );
  }
  if (subnet !== null && /invalid|pool/i.test(message)) return `--docker-subnet ${subnet}: the Docker daemon at ${endpoint} refused it for the network ${name} (${message})`;
  return null;
}

export class DockerRuntime implements Runtime {
  private readonly puller: ImagePuller;
  private building: Promise<void> | null = null;
  /** The scope's containers as one takeover's adopts and reaps share them: listed at the first, dropped at the sweep that ends it, or once stale. */
  private takeover: { containers: Promise<Dockerode.ContainerInfo[]>; listedAt: number } | null = null;
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
      network: () => ensureNetwork(opts.docker, opts.scope, { subnet: opts.subnet ?? null, logger: opts.logger }).then(() => undefined),
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

  /** Containers outlive the control process: a clean stop may leave them serving, for the next start to take back. */
  readonly replicasOutliveService = true;

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
    if (!inPod(request)) return DockerReplica.takeBack(request, this.depsFor(request), container, leftover.restarts);
    // A pod member is taken back on its port, in its holder, when that holder still runs.
    const port = Number(found.Labels[LABEL.podPort]);
    const holder = /^container:(.+)$/.exec(found.HostConfig.NetworkMode)?.[1];
    const seat = Number.isInteger(port) && port > 0 && holder !== undefined ? this.pods.seat(request.deploymentId, leftover.name, port) : null;
    if (seat === null) return null;
    if (!(await this.pods.takeBack(request.deploymentId, holder!))) {
      seat.forget();
      return null;
    }
    return DockerReplica.takeBack(request, { ...this.depsFor(request), pod: seat }, container, leftover.restarts);
  }

  async reap(leftover: LeftoverReplica): Promise<boolean> {
    const local = await this.opts.local.reap(leftover);
    const containers = await this.containersOf(leftover.name);
    for (const c of containers) await this.opts.docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => {});
    if (containers.length > 0) this.opts.logger.warn({ replica: leftover.name }, 'removed a container left by an earlier run');
    return local || containers.length > 0;
  }

  async sweep(keep: ReadonlySet<string>): Promise<string[]> {
    this.takeover = null;
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

  /**
   * At a clean stop, once the controller has stopped or released its replicas: the network goes
   * unless containers remain. `kept` replicas were left running on it for the next start, and
   * it stays for them without a word (the stop's own line says they keep running).
   */
  async close(kept = 0): Promise<void> {
    if (kept > 0) return;
    await releaseNetwork(this.opts.docker, this.opts.scope, this.opts.logger);
  }

  /** A shell in a container is a Docker exec as the container's user: nothing runs on this host. */
  shellRefusal(): string | null {
    return null;
  }

  private depsFor(request: ReplicaRequest): DockerReplicaDeps {
    return { ...this.deps, container: { ...this.deps.container, limits: containerLimits(request.hardware, this.opts.hostCpus) } };
  }

  /**
   * A leftover replica's containers. A takeover asks this for every replica record in a row:
   * the scope's containers are listed once for all of them (one Engine API call, not one per
   * record), listed again if a takeover takes longer than TAKEOVER_LIST_MS.
   */
  private async containersOf(replica: string): Promise<Dockerode.ContainerInfo[]> {
    const now = performance.now();
    if (this.takeover === null || now - this.takeover.listedAt > TAKEOVER_LIST_MS) {
      const containers = this.opts.docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${this.opts.scope}`] } });
      this.takeover = { containers, listedAt: now };
      containers.catch(() => (this.takeover = null));
    }
    return (await this.takeover.containers).filter((c) => c.Labels[LABEL.replica] === replica);
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

/** How long the adopts and reaps of one takeover share one listing of the scope's containers. */
const TAKEOVER_LIST_MS = 10_000;

/** Orchestrated components (Frontend, Worker, Prefill, Decode) share their deployment's pod; a general replica has a network of its own. */
function inPod(request: ReplicaRequest): boolean {
  return request.component !== COMPONENT.Replica;
}
