// Owns what the Docker runtime asks the Engine for one replica, as pure functions: which image
// runs (the user's image:tag, or the reference engine image standing in for a known engine on
// a host without GPUs, and for the orchestrated Frontend), its entrypoint and command, its
// environment, labels, published ports, mounts, limits and hardening; and the holder container
// of an orchestrated deployment's pod. No I/O: every rule is a table test.
//
// The container keeps the image's user (root inside is allowed, as the product promises) and
// gets what a platform adds around it (one hardening for every container: hardenedHostConfig,
// built on containerHardening): never privileged, NET_RAW dropped, and SETUID, SETGID, MKNOD,
// FSETID and SETFCAP unless an admin's deployment keeps them, no-new-privileges, a pids limit,
// CPU and memory from the hardware instance, its own network namespace on a bridge where
// containers cannot reach each other, ports published on 127.0.0.1 only, and no host path but
// its own replica directory (the config file), its deployment's model cache and, for a
// Frontend, its workers file's directory (read-only). A member of an orchestrated deployment's
// pod (Frontend, Worker, Prefill, Decode) shares its holder's network namespace instead: nothing
// is published, and it listens on the port the runtime gave it in the pod.

import { GRANTABLE_CAPABILITIES, type ContainerCapability } from '../../domain/container-capabilities.js';
import { resolveImage, type ImageMap } from '../../domain/image-map.js';
import { deploymentEnv, simulatedEngineArgs } from '../launch-plan.js';
import type { ReplicaRequest } from '../runtime.js';
import type { ContainerLimits } from './container-limits.js';
import { ENGINE_NODE } from './engine-image.js';

export const LABEL = {
  scope: 'io.infergate.scope',
  deploymentId: 'io.infergate.deployment-id',
  revision: 'io.infergate.revision',
  component: 'io.infergate.component',
  replica: 'io.infergate.replica',
  simulated: 'io.infergate.simulated',
  /** On an orchestrated deployment's pod holder: the deployment's id. */
  pod: 'io.infergate.pod',
  /** On a member of a pod: the port it listens on there. */
  podPort: 'io.infergate.pod-port',
} as const;

/** Where the deployment's model cache appears inside the container. */
export const CONTAINER_CACHE_DIR = '/model-cache';
/** The address a container's server listens on: its own network namespace, reached only through the published port. */
export const CONTAINER_HOST = '0.0.0.0';
/**
 * A pod's members listen on ports from here up, one each (two revisions' members side by side
 * during a rollout included): far below the kernel's ephemeral range, where a Prefill worker's
 * KV server and a gRPC Frontend's inner HTTP side take theirs.
 */
export const POD_FIRST_PORT = 8000;

/** Where a member of an orchestrated deployment's pod runs: in its holder's network namespace, on its own port. */
export interface PodPlace {
  /** The holder container's id. */
  holder: string;
  port: number;
}

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
  /** Set for a member of an orchestrated deployment's pod; null: a container of its own (a general replica). */
  pod: PodPlace | null;
}

export interface ContainerPlan extends ContainerImage {
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

/** The registry host of an image reference: the rule is the domain's (registry-hosts.ts), re-exported for the runtime. */
export { registryOf } from '../../domain/registry-hosts.js';

export function containerName(scope: string, replica: string): string {
  return `infergate-${scope}-${replica}`;
}

export function holderName(scope: string, deploymentId: number): string {
  return `infergate-${scope}-pod-${deploymentId}`;
}

/** Whether the reference engine image stands in for the request's image: always for the reference engine, for other known engines on a host without GPUs. */
export function runsSimulated(req: Pick<ReplicaRequest, 'image' | 'tag'>, inputs: Pick<ContainerInputs, 'images' | 'simulateEngines'>): boolean {
  const launch = resolveImage(inputs.images, req.image, req.tag);
  return launch.kind === 'engine' && (launch.native || inputs.simulateEngines);
}

/** Which image a replica's container runs, and whether it is one to pull or the reference engine image made on this host. */
export interface ContainerImage {
  /** The image to pull (or find) and run. */
  image: string;
  /** The reference engine stands in for a known engine (labelled io.infergate.simulated). */
  simulated: boolean;
  /** The reference engine image (a simulated engine, or the orchestrated Frontend, which is infergate's own program): built here, never pulled. */
  engineImage: boolean;
}

export function containerImage(req: Pick<ReplicaRequest, 'image' | 'tag'>, inputs: Pick<ContainerInputs, 'images' | 'simulateEngines' | 'engineImage'>): ContainerImage {
  const simulated = runsSimulated(req, inputs);
  const frontend = resolveImage(inputs.images, req.image, req.tag).kind === 'frontend';
  const ours = simulated || frontend;
  return { image: ours ? inputs.engineImage : imageRef(req.image, req.tag), simulated, engineImage: ours };
}

/**
 * What the platform adds to every container it makes (replicas and pod holders alike): never
 * privileged, no capability added and NET_RAW dropped, no-new-privileges, pids, memory and CPU
 * limits. One function, so no kind of container can miss a part of it.
 */
export function hardenedHostConfig(limits: ContainerLimits, keep: readonly ContainerCapability[] = []): Record<string, unknown> {
  return {
    ...containerHardening(keep),
    PidsLimit: limits.pidsLimit,
    Memory: limits.memoryBytes,
    NanoCpus: limits.nanoCpus,
  };
}

export function planContainer(req: ReplicaRequest, inputs: ContainerInputs): ContainerPlan {
  const notes: string[] = [];
  const launch = resolveImage(inputs.images, req.image, req.tag);
  const { image, simulated, engineImage } = containerImage(req, inputs);
  const pod = inputs.pod;
  const serve = `${req.containerPort}/tcp`;
  const separateMetrics = req.metricsPort !== null && req.metricsPort !== req.containerPort;
  const metrics = separateMetrics ? `${req.metricsPort}/tcp` : null;

  let entrypoint: string[] | undefined;
  let cmd: string[] | undefined;
  if (simulated && launch.kind === 'engine') {
    cmd = simulatedEngineArgs(req, launch, separateMetrics ? req.metricsPort : null, notes);
    notes.push(`infergate runtime: container from ${image} (no GPU on this host: the reference engine stands in for ${imageRef(req.image, req.tag)})`);
  } else if (engineImage) {
    // The orchestrated Frontend is infergate's own program, which the reference engine image holds.
    cmd = ['frontend', ...req.command];
    notes.push(`infergate runtime: container from ${image} running the orchestrated Frontend (infergate frontend)`);
  } else {
    // The spec's command replaces the image's entrypoint, arguments included; empty keeps the
    // image's own ENTRYPOINT and CMD.
    if (req.command.length > 0) {
      entrypoint = req.command;
      cmd = [];
    }
    notes.push(`infergate runtime: container from ${image}${req.command.length > 0 ? ' with the deployment\'s command as its entrypoint' : ' with its own entrypoint'}`);
  }
  if (pod !== null) {
    // Last on the command line, so a deployment's own flags (extra_args) cannot move a member
    // onto another member's port in the pod.
    if (cmd !== undefined) cmd.push('--host', CONTAINER_HOST, '--port', String(pod.port));
    notes.push(`infergate runtime: in the network namespace of its deployment's pod (holder ${pod.holder.slice(0, 12)}), listening on port ${pod.port}`);
  }

  const env: Record<string, string> = {
    ...deploymentEnv(req.env, engineImage, notes),
    PORT: String(pod?.port ?? req.containerPort),
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
  // Host directories it reads (a Frontend's workers file), at the same path: its flags name them.
  for (const dir of req.readOnlyPaths ?? []) mounts.push({ Type: 'bind', Source: dir, Target: dir, ReadOnly: true });

  const published = pod === null ? [serve, ...(metrics !== null ? [metrics] : [])] : [];
  const labels: Record<string, string> = {
    [LABEL.scope]: inputs.scope,
    [LABEL.deploymentId]: String(req.deploymentId),
    [LABEL.revision]: String(req.revision),
    [LABEL.component]: req.component,
    [LABEL.replica]: req.name,
    [LABEL.simulated]: String(simulated),
  };
  if (pod !== null) labels[LABEL.podPort] = String(pod.port);
  const body: Record<string, unknown> = {
    Image: image,
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    Labels: labels,
    HostConfig: {
      // A pod member has no network of its own: Docker refuses a hostname or published ports with it.
      NetworkMode: pod === null ? inputs.network : `container:${pod.holder}`,
      Mounts: mounts,
      ...hardenedHostConfig(inputs.limits, req.containerCapabilities ?? []),
      // The runtime restarts a crashed replica itself, with its backoff, and says so in the log.
      RestartPolicy: { Name: 'no' },
      // A chatty engine must not fill the disk: the runtime copies output into its own rotated logs.
      LogConfig: CONTAINER_LOG,
      ...inputs.gpuHostConfig,
    },
  };
  if (pod === null) {
    body.Hostname = req.name.slice(0, 63);
    body.ExposedPorts = Object.fromEntries(published.map((p) => [p, {}]));
    // HostPort '' lets Docker pick a free port, so two replicas on one container port both serve.
    (body.HostConfig as Record<string, unknown>).PortBindings = Object.fromEntries(published.map((p) => [p, [{ HostIp: '127.0.0.1', HostPort: '' }]]));
  } else {
    // The worker's model-hub token is named relative to its root (./secrets/…), where the config file is mounted.
    body.WorkingDir = '/';
  }
  if (entrypoint !== undefined) body.Entrypoint = entrypoint;
  if (cmd !== undefined) body.Cmd = cmd;
  return { image, simulated, engineImage, body, ports: { serve, metrics }, notes };
}

const CONTAINER_LOG = { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } };

/** A pod holder's limits: an idle process, no more. */
export const HOLDER_LIMITS: ContainerLimits = Object.freeze({ nanoCpus: 250_000_000, memoryBytes: 96 * 1024 ** 2, pidsLimit: 32 });

/** What the holder runs: an idle Node process (the reference engine image has no shell to rely on), ended by SIGTERM. */
export const HOLDER_SCRIPT = "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1 << 30);";

/**
 * The holder of an orchestrated deployment's pod: the network namespace its members (every
 * component of every revision) share, on the service's network with inter-container traffic
 * off and nothing published. It runs an idle process and is hardened like every container.
 */
export function planHolder(deploymentId: number, inputs: Pick<ContainerInputs, 'scope' | 'network' | 'engineImage'>): Record<string, unknown> {
  return {
    Image: inputs.engineImage,
    Entrypoint: [ENGINE_NODE, '-e', HOLDER_SCRIPT],
    Cmd: [],
    Hostname: `pod-${deploymentId}`,
    Labels: { [LABEL.scope]: inputs.scope, [LABEL.deploymentId]: String(deploymentId), [LABEL.pod]: String(deploymentId) },
    HostConfig: {
      NetworkMode: inputs.network,
      Mounts: [],
      ...hardenedHostConfig(HOLDER_LIMITS),
      // Its loss is the runtime's to see (the members lose their network with it): it makes it anew.
      RestartPolicy: { Name: 'no' },
      LogConfig: CONTAINER_LOG,
    },
  };
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
