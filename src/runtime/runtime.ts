// Owns the runtime interface: what the controller asks of any replica runtime (start a
// replica of a container spec, watch what it does, stop it) and what it observes. The local
// process runtime implements it; a container runtime would implement the same.

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
  /** Host directories the replica reads besides its own root (the Frontend's workers file directory). */
  readOnlyPaths?: string[];
}

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
}

export interface ReplicaHandle {
  readonly name: string;
  observe(): ReplicaObservation;
  /** Called on every change of the observation. */
  onChange(listener: (o: ReplicaObservation) => void): void;
  /** SIGTERM to the replica's process group, SIGKILL after `graceMs`; resolves once it is gone. */
  stop(graceMs: number): Promise<void>;
  /** How to start a shell in this replica's environment (inside its sandbox, as its user); null when not running. */
  shellContext(): ShellCommand | null;
}

/** A process to spawn: the terminal runs it without knowing how the runtime isolates replicas. */
export interface ShellCommand {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
}

/** A replica left by an earlier run of this node (the service crashed or was killed). */
export interface LeftoverReplica {
  name: string;
  pid: number | null;
}

export interface Runtime {
  start(request: ReplicaRequest): ReplicaHandle;
  /** Stops what an earlier run left behind, if it is still running and still that replica. */
  reap(leftover: LeftoverReplica): Promise<boolean>;
  /** Removes what earlier runs left on disk (replica directories no live process uses); returns what it removed. */
  sweep(): Promise<string[]>;
  /** Why no shell may be opened in replicas here (a shell is a host command), or null. */
  shellRefusal(): string | null;
}
