// Owns what the Docker runtime asks the Engine for one replica, as pure functions: which image
// runs (the user's image:tag, or the reference engine image standing in for a known engine on
// a host without GPUs), its entrypoint and command, its environment, labels, published ports,
// mounts, limits and hardening. No I/O: every rule is a table test.
//
// The container keeps the image's user (root inside is allowed, as the product promises) and
// gets what a platform adds around it: the hardening every container shares
// (containerHardening: never privileged, NET_RAW dropped, and SETUID, SETGID, MKNOD, FSETID
// and SETFCAP unless an admin's deployment keeps them, no-new-privileges), a pids limit, CPU
// and memory from the hardware instance, its own network namespace on a bridge where
// containers cannot reach each other, ports published on 127.0.0.1 only, and no host path but
// its own replica directory (the config file) and its deployment's model cache.

import { GRANTABLE_CAPABILITIES, type ContainerCapability } from '../../domain/container-capabilities.js';
import { resolveImage, type ImageMap } from '../../domain/image-map.js';
import { deploymentEnv, simulatedEngineArgs } from '../launch-plan.js';
import type { ReplicaRequest } from '../runtime.js';
import type { ContainerLimits } from './container-limits.js';

export const LABEL = {
  scope: 'io.infergate.scope',
  deploymentId: 'io.infergate.deployment-id',
  revision: 'io.infergate.revision',
  component: 'io.infergate.component',
  replica: 'io.infergate.replica',
  simulated: 'io.infergate.simulated',
} as const;

/** Where the deployment's model cache appears inside the container. */
export const CONTAINER_CACHE_DIR = '/model-cache';
/** The address a container's server listens on: its own network namespace, reached only through the published port. */
export const CONTAINER_HOST = '0.0.0.0';

/** Dropped from every container's capabilities whatever its deployment says: raw sockets (ARP and ICMP spoofing on the bridge). */
export const ALWAYS_DROPPED_CAPABILITIES = ['NET_RAW'] as const;

export interface ContainerHardening {
  Privileged: false;
  CapDrop: string[];
  SecurityOpt: string[];
}

/**
 * The HostConfig fields every container of this runtime gets, whatever runs in it. Root in a
 * container is the host's uid 0, and what it writes on a host path (the model cache) stays on
 * the host: without SETUID, SETGID, FSETID and SETFCAP it can neither change its uid nor keep
 * the set-id bits and file capabilities that would act outside, without MKNOD it makes no device
 * node; `no-new-privileges` stops a set-id file from raising anyone inside. `keep` are the
 * capabilities an admin's deployment asked to keep (container_capabilities).
 */
export function containerHardening(keep: readonly ContainerCapability[] = []): ContainerHardening {
  return {
    Privileged: false,
    CapDrop: [...ALWAYS_DROPPED_CAPABILITIES, ...GRANTABLE_CAPABILITIES.filter((c) => !keep.includes(c))],
    SecurityOpt: ['no-new-privileges:true'],
  };
}

export interface ContainerInputs {
  /** Labels this service's containers share (one per store), so two services on one daemon never touch each other's. */
  scope: string;
  network: string;
  images: ImageMap;
  /** The reference engine image (engine-image.ts), run for known engine images on a host without GPUs. */
  engineImage: string;
  /** Whether known engine images run for real (the host has GPUs) or are simulated. */
  simulateEngines: boolean;
  limits: ContainerLimits;
  /** HostConfig fields for the replica's GPUs (gpu-request.ts). */
  gpuHostConfig: Record<string, unknown>;
  /** Host path of the config file to mount, when the deployment has one. */
  configHostPath: string | null;
  /** Host path of the deployment's model cache, when caching is on. */
  cacheHostPath: string | null;
}

export interface ContainerPlan {
  /** The image to pull (or find) and run. */
  image: string;
  simulated: boolean;
  /** The Engine API's create body (POST /containers/create). */
  body: Record<string, unknown>;
  /** Container port → the role it plays, published on 127.0.0.1. */
  ports: { serve: string; metrics: string | null };
  /** Lines for the replica's log explaining what was chosen and why. */
  notes: string[];
}

/** `name:tag` of a reference with a digest or tag; a registry port (`host:5000/x`) is not a tag. */
export function imageRef(image: string, tag: string): string {
  return `${image}:${tag}`;
}

/** The registry host of an image reference (`127.0.0.1:5000/team/x` → `127.0.0.1:5000`), or null for Docker Hub's short names. */
export function registryOf(image: string): string | null {
  const first = image.split('/')[0] ?? '';
  if (!image.includes('/')) return null;
  return first.includes('.') || first.includes(':') || first === 'localhost' ? first : null;
}

export function containerName(scope: string, replica: string): string {
  return `infergate-${scope}-${replica}`;
}

/** Whether the reference engine image stands in for the request's image: always for the reference engine, for other known engines on a host without GPUs. */
export function runsSimulated(req: Pick<ReplicaRequest, 'image' | 'tag'>, inputs: Pick<ContainerInputs, 'images' | 'simulateEngines'>): boolean {
  const launch = resolveImage(inputs.images, req.image, req.tag);
  return launch.kind === 'engine' && (launch.native || inputs.simulateEngines);
}

export function planContainer(req: ReplicaRequest, inputs: ContainerInputs): ContainerPlan {
  const notes: string[] = [];
  const launch = resolveImage(inputs.images, req.image, req.tag);
  const simulated = runsSimulated(req, inputs);
  const serve = `${req.containerPort}/tcp`;
  const separateMetrics = req.metricsPort !== null && req.metricsPort !== req.containerPort;
  const metrics = separateMetrics ? `${req.metricsPort}/tcp` : null;

  let image = imageRef(req.image, req.tag);
  let entrypoint: string[] | undefined;
  let cmd: string[] | undefined;
  if (simulated && launch.kind === 'engine') {
    image = inputs.engineImage;
    cmd = simulatedEngineArgs(req, launch, separateMetrics ? req.metricsPort : null, notes);
    notes.push(`infergate runtime: container from ${image} (no GPU on this host: the reference engine stands in for ${imageRef(req.image, req.tag)})`);
  } else {
    // The spec's command replaces the image's entrypoint, arguments included; empty keeps the
    // image's own ENTRYPOINT and CMD.
    if (req.command.length > 0) {
      entrypoint = req.command;
      cmd = [];
    }
    notes.push(`infergate runtime: container from ${image}${req.command.length > 0 ? ' with the deployment\'s command as its entrypoint' : ' with its own entrypoint'}`);
  }

  const env: Record<string, string> = {
    ...deploymentEnv(req.env, simulated, notes),
    PORT: String(req.containerPort),
    HOST: CONTAINER_HOST,
    INFERGATE_REPLICA_ID: req.name,
  };
  if (separateMetrics) env.METRICS_PORT = String(req.metricsPort);
  const mounts: Array<Record<string, unknown>> = [];
  if (inputs.configHostPath !== null && req.configFile !== null) {
    const target = joinContainerPath(req.configFile.mount_path, req.configFile.filename);
    mounts.push({ Type: 'bind', Source: inputs.configHostPath, Target: target, ReadOnly: true });
    env.INFERGATE_CONFIG_FILE = target;
  }
  if (inputs.cacheHostPath !== null) {
    mounts.push({ Type: 'bind', Source: inputs.cacheHostPath, Target: CONTAINER_CACHE_DIR, ReadOnly: false });
    env.INFERGATE_MODEL_CACHE_DIR = CONTAINER_CACHE_DIR;
  }

  const published = [serve, ...(metrics !== null ? [metrics] : [])];
  const body: Record<string, unknown> = {
    Image: image,
    Hostname: req.name.slice(0, 63),
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    ExposedPorts: Object.fromEntries(published.map((p) => [p, {}])),
    Labels: {
      [LABEL.scope]: inputs.scope,
      [LABEL.deploymentId]: String(req.deploymentId),
      [LABEL.revision]: String(req.revision),
      [LABEL.component]: req.component,
      [LABEL.replica]: req.name,
      [LABEL.simulated]: String(simulated),
    },
    HostConfig: {
      NetworkMode: inputs.network,
      // HostPort '' lets Docker pick a free port, so two replicas on one container port both serve.
      PortBindings: Object.fromEntries(published.map((p) => [p, [{ HostIp: '127.0.0.1', HostPort: '' }]])),
      Mounts: mounts,
      ...containerHardening(req.containerCapabilities ?? []),
      PidsLimit: inputs.limits.pidsLimit,
      Memory: inputs.limits.memoryBytes,
      NanoCpus: inputs.limits.nanoCpus,
      // The runtime restarts a crashed replica itself, with its backoff, and says so in the log.
      RestartPolicy: { Name: 'no' },
      // A chatty engine must not fill the disk: the runtime copies output into its own rotated logs.
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } },
      ...inputs.gpuHostConfig,
    },
  };
  if (entrypoint !== undefined) body.Entrypoint = entrypoint;
  if (cmd !== undefined) body.Cmd = cmd;
  return { image, simulated, body, ports: { serve, metrics }, notes };
}

function joinContainerPath(dir: string, file: string): string {
  const base = dir.startsWith('/') ? dir : `/${dir}`;
  return `${base.replace(/\/+$/, '')}/${file}`;
}

/** The host port Docker published for `containerPort` on 127.0.0.1, from an inspect's NetworkSettings.Ports. */
export function publishedPort(ports: Record<string, Array<{ HostIp: string; HostPort: string }> | null> | undefined, containerPort: string): number | null {
  const bindings = ports?.[containerPort] ?? null;
  const binding = bindings?.find((b) => b.HostIp === '127.0.0.1') ?? bindings?.[0];
  const port = binding ? Number(binding.HostPort) : NaN;
  return Number.isInteger(port) && port > 0 ? port : null;
}
