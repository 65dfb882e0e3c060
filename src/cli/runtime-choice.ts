// Owns which replica runtime `serve` uses (`--runtime local|docker|auto`) and its making:
// auto takes Docker when a daemon answers (DOCKER_HOST, else /var/run/docker.sock), else the
// local runtime, and the start-up line says which and why — and what a stop does to the
// replicas (stopLine, stoppedLine: the Docker runtime leaves its containers running unless
// --drain-on-stop; the local runtime's processes always stop with the service). The Docker runtime gets its
// network, the daemon's CPU count for limits, this host's GPUs (`--gpus`, else nvidia-smi)
// and the reference engine image's name; the local runtime stays inside it for what does not
// run in containers. Both are named with the service's scope (its containers and network, its
// pods).

import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../config/config.js';
import type { ImageMap } from '../domain/image-map.js';
import type { RegistryGate } from '../domain/ports.js';
import { LocalRuntime } from '../runtime/local-runtime.js';
import type { PodSettings } from '../runtime/pods.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SandboxHost } from '../runtime/sandbox.js';
import { serviceScope } from '../runtime/service-scope.js';
import { selfCommand } from './self-command.js';
import { packageVersion } from './version.js';

export interface ChosenRuntime {
  runtime: Runtime;
  kind: 'local' | 'docker';
  /** The start-up line: which runtime, and why. */
  line: string;
  /**
   * At a clean stop, after the controller has stopped or released the replicas (Docker: the
   * network goes unless containers remain; `kept` replicas left running keep it).
   */
  close(kept?: number): Promise<void>;
}

/** Whether a clean stop leaves the replicas running: a runtime whose replicas outlive the service, without --drain-on-stop. */
export function keepsReplicasOnStop(runtime: Runtime, config: Pick<Config, 'drainOnStop'>): boolean {
  return runtime.replicasOutliveService && !config.drainOnStop;
}

/** The start-up line: what a stop of this service does to its replicas. */
export function stopLine(chosen: Pick<ChosenRuntime, 'runtime' | 'kind'>, config: Pick<Config, 'drainOnStop'>): string {
  if (keepsReplicasOnStop(chosen.runtime, config)) {
    return 'infergate: at a stop (SIGTERM), replicas keep running and serving; the next start on this store takes them back (--drain-on-stop drains them instead)';
  }
  if (chosen.runtime.replicasOutliveService) return 'infergate: at a stop (SIGTERM), every replica is drained and removed (--drain-on-stop)';
  return `infergate: at a stop (SIGTERM), every replica is drained and stopped: under the ${chosen.kind} runtime replicas are processes of this service and stop with it`;
}

/** The line a clean stop ends with: how many replicas keep running for the next start, or were drained. */
export function stoppedLine(outcome: { kept: number; drained: number }): string {
  const replicas = (n: number) => `${n} replica${n === 1 ? '' : 's'}`;
  if (outcome.kept > 0) {
    const drained = outcome.drained > 0 ? ` (${replicas(outcome.drained)} drained)` : '';
    return `infergate: ${replicas(outcome.kept)} keep running${drained}; the next start of infergate serve on this store takes them back (--drain-on-stop drains them at a stop)`;
  }
  return `infergate: ${replicas(outcome.drained)} drained and stopped`;
}

const nothingToClose = (): Promise<void> => Promise.resolve();

/** The checkout or installed package (dist/cli/ → its root): what the engine image is built from. */
function appDir(): string {
  return fileURLToPath(new URL('../../', import.meta.url));
}

/** `registries`: which registry hosts the daemon may pull from, asked again before every pull. */
export async function chooseRuntime(config: Config, images: ImageMap, sandbox: SandboxHost | null, pods: PodSettings | null, logger: Logger, registries?: RegistryGate): Promise<ChosenRuntime> {
  const scope = serviceScope(config.dataDir, config.redisUrl, config.redisPrefix);
  const local = new LocalRuntime({
    dataDir: config.dataDir,
    selfCommand: selfCommand(),
    images,
    logger,
    sandbox,
    allowUnsandboxedHostCommands: config.allowUnsandboxedHostCommands,
    pods,
    scope,
  });
  if (config.runtime === 'local') return { runtime: local, kind: 'local', line: `infergate: runtime local (--runtime local): ${local.description}`, close: nothingToClose };
  // The Docker client (dockerode) is loaded only when Docker may be used: a third of a
  // second of every start with --runtime local.
  const [{ dockerAnswers, dockerClient, dockerEndpoint }, { DockerRuntime, ensureNetwork }, { engineImageRef }, { discoverGpus, GpuAllocator }] = await Promise.all([
    import('../runtime/docker/client.js'),
    import('../runtime/docker/docker-runtime.js'),
    import('../runtime/docker/engine-image.js'),
    import('../runtime/docker/gpu-allocator.js'),
  ]);
  const docker = dockerClient();
  const answer = await dockerAnswers(docker);
  if (!answer.ok) {
    if (config.runtime === 'docker') throw new ConfigError(`--runtime docker: ${answer.reason}`);
    return { runtime: local, kind: 'local', line: `infergate: runtime local (auto: ${answer.reason}): ${local.description}`, close: nothingToClose };
  }
  await ensureNetwork(docker, scope, { subnet: config.dockerSubnet, logger });
  const info = (await docker.info()) as { NCPU?: number };
  const found = config.gpus !== null ? { ids: config.gpus, source: '--gpus' } : await discoverGpus();
  const runtime = new DockerRuntime({
    docker,
    dataDir: config.dataDir,
    scope,
    images,
    logger,
    gpus: new GpuAllocator(found.ids),
    gpuMode: config.gpuRequest,
    engineImage: config.engineImage ?? engineImageRef(packageVersion()),
    appDir: appDir(),
    local,
    hostCpus: info.NCPU ?? 1,
    ...(registries ? { registries } : {}),
    subnet: config.dockerSubnet,
  });
  const why = config.runtime === 'auto' ? `auto: Docker Engine ${answer.version} answers at ${dockerEndpoint(docker)}` : `--runtime docker, Docker Engine ${answer.version}`;
  return { runtime, kind: 'docker', line: `infergate: runtime docker (${why}): ${runtime.description}; GPUs from ${found.source}`, close: (kept) => runtime.close(kept) };
}
