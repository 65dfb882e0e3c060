// Owns the runtime interface: what the controller asks of any replica runtime (start a
// replica of a container spec, watch what it does, stop it, take back one an earlier run left)
// and what it observes. The local process runtime and the Docker runtime implement it; the
// controller never knows which one runs.

import type { ShellCommand, ShellLauncher } from '../domain/ports.js';
import type { ContainerCapability } from '../domain/container-capabilities.js';
import type { Protocol } from '../domain/records.js';

/** What to run for one replica: a container spec, runtime-neutral. */
export interface ReplicaRequest {
  /** `<deployment>-r<revision>-<id>`: unique, reported by engines as their replica id. */
  name: string;
  deploymentId: number;
  revision: number;
  component: string;
  image: string;
  tag: string;
  /** Entrypoint command and arguments; empty = the image's own entrypoint. */
  command: string[];
  env: Record<string, string>;
  configFile: { filename: string; mount_path: string; content: string } | null;
  containerPort: number;
  protocol: Protocol;
  healthPath: string;
  /** Null: the container port (spec: "defaults: the container port and /metrics"). */
  metricsPort: number | null;
  metricsPath: string | null;
  logging: boolean;
  modelCaching: boolean;
  /** Capabilities its container keeps of those the Docker runtime drops by default (an admin's container_capabilities); absent: none. */
  containerCapabilities?: ContainerCapability[];
  /** Host directories the replica reads besides its own root (the Frontend's workers file directory). */
  readOnlyPaths?: string[];
  /** GPUs of its hardware instance (0: a CPU-only component such as the Frontend). */
  gpus: number;
  /** CPU and memory of its hardware instance, from the catalog; null: the runtime's CPU-only default. */
  hardware: { gpus_per_instance: number; cpus?: number; memory_gib?: number } | null;
  /** Credentials for the image's registry, unsealed; null: an image pulled without. Never logged. */
  registryAuth: { username: string; password: string } | null;
}

/** What the deployment's spec says of a replica; the controller adds the host-side facts (hardware, GPUs, registry credentials). */
export type ReplicaSpec = Omit<ReplicaRequest, 'gpus' | 'hardware' | 'registryAuth'>;

export type ReplicaPhase = 'starting' | 'ready' | 'stopped';

/** What the runtime sees of a replica at one moment. */
export interface ReplicaObservation {
  phase: ReplicaPhase;
  /** host:port traffic goes to; null before the process has a port. */
  address: string | null;
  metricsTarget: { address: string; path: string } | null;
  pid: number | null;
  /** Times the process was started again after it exited on its own. */
  restarts: number;
  /**
   * Why it is not ready, in words for the deployment's status reason ("pulling <image>: 45%",
   * "image not found: …"); null when there is nothing to say.
   */
  detail: string | null;
  /** How it last exited on its own (a crash: the code, or the signal); null before it ever did. */
  lastExit?: ReplicaExit | null;
  /** Its image pull, where the runtime pulls one (Docker): what, and how it stands; null or absent when none. */
  pull?: ReplicaPull | null;
}

/** A code, a signal, or neither when the process could not start at all. */
export interface ReplicaExit {
  code: number | null;
  signal: string | null;
}

export interface ReplicaPull {
  image: string;
  state: 'pulling' | 'pulled' | 'failed';
  /** Why it failed, in words; null unless failed. */
  reason: string | null;
  /** Failed in a way retrying will not mend (no such image or tag, refused credentials). */
  permanent: boolean;
}

export interface ReplicaHandle {
  readonly name: string;
  observe(): ReplicaObservation;
  /** Called on every change of the observation. */
  onChange(listener: (o: ReplicaObservation) => void): void;
  /** SIGTERM to the replica's process group, SIGKILL after `graceMs`; resolves once it is gone. */
  stop(graceMs: number): Promise<void>;
  /**
   * Ends this process's supervision and leaves the replica running (its container, its files,
   * its pod), for the next start of the service to take back with the runtime's adopt. Present
   * only where a replica can outlive the service (a container); absent where it cannot (a
   * process of the service, which dies with it).
   */
  release?(): Promise<void>;
  /** How to start a shell in this replica (inside its sandbox or container, as its user); null when not running. */
  shellContext(): ReplicaShell | null;
}

/** A shell to open in a replica: what to run, and what starts it (a host process, or a Docker exec). */
export interface ReplicaShell extends ShellCommand {
  launcher: ShellLauncher;
}

/** A replica left by an earlier run of this node (the service crashed or was killed). */
export interface LeftoverReplica {
  name: string;
  pid: number | null;
  /** Its record's restart count: a replica taken back carries on counting from there. */
  restarts: number;
}

export interface Runtime {
  /** One line for the start-up banner: which runtime and why. */
  readonly description: string;
  /**
   * Whether its replicas can keep running after the service stops (containers: yes; processes
   * of the service: no), so a clean stop may leave them for the next start to take back.
   */
  readonly replicasOutliveService: boolean;
  start(request: ReplicaRequest): ReplicaHandle;
  /**
   * Takes back a replica an earlier run of the service left running (a container outlives the
   * control process), under the request its record's revision describes; null when there is
   * nothing to take back here (the controller reaps it and starts a new one).
   */
  adopt(leftover: LeftoverReplica, request: ReplicaRequest): Promise<ReplicaHandle | null>;
  /** Stops what an earlier run left behind, if it is still running and still that replica. */
  reap(leftover: LeftoverReplica): Promise<boolean>;
  /**
   * Removes what earlier runs left (replica directories no live process uses, containers no
   * replica record names); `keep` are the replicas the controller runs. Returns what it removed.
   */
  sweep(keep: ReadonlySet<string>): Promise<string[]>;
  /** Why no shell may be opened in replicas here (a shell is a host command), or null. */
  shellRefusal(): string | null;
}
