// Owns the controller's public types: the options it is made with, what a clean stop did, and
// where an operator's shell runs (controller.ts re-exports them).

import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import type { DeploymentRecord } from '../domain/records.js';
import type { ReplicaRequest, ReplicaShell, Runtime } from '../runtime/runtime.js';
import type { Store } from '../store/store.js';
import type { UsageLedger } from '../store/usage-ledger.js';
import type { DeploymentLeftovers } from './leftovers.js';
import type { ReplicaLoad } from './replicas.js';

/** Where an operator's shell runs: what to start in a ready replica (inside its sandbox or container, as its user). */
export interface ShellTarget extends ReplicaShell {
  replica: string;
  /** Called once the replica stops (the shell is closed then). */
  onGone(listener: () => void): void;
}


export interface ControllerOptions {
  store: Store;
  runtime: Runtime;
  clock: Clock;
  logger: Logger;
  /** Longest wait for a draining replica's in-flight requests to finish. */
  drainTimeoutMs: number;
  /** SIGTERM → SIGKILL grace. */
  stopGraceMs: number;
  /** In-flight requests per replica over the gateways (this process's and those reporting through the store); null: drain waits `drainSettleMs` only. */
  load: ReplicaLoad | null;
  /** The tick: due timers and retries are moved into the dirty set, running replicas' books kept. */
  tickMs?: number;
  /** How often the lease is renewed; default: every tick, at most a third of its TTL. */
  leaseRenewMs?: number;
  /** How long routing tables take to drop a draining replica before in-flight is trusted. */
  drainSettleMs?: number;
  /** What deleted deployments leave behind (logs, model cache, workers files, usage rows). */
  leftovers?: DeploymentLeftovers;
  /**
   * How often the store is scanned for usage rows of deployments deleted unseen (another
   * process's late flush). Directories and the store are read at each taking of the lease; a
   * deletion seen on the change feed needs neither.
   */
  leftoverScanMs?: number;
  /**
   * The autoscaler's desired count for a deployment (undefined until it decided): `revision`
   * null for a deployment whose traffic names one revision, else the count of that revision of
   * a split (domain/traffic.ts: splitOf). With it, a min-0 deployment may go to zero: the
   * activator brings it back.
   */
  autoscaled?: (deploymentId: number, revision: number | null) => number | undefined;
  /** Where orchestrated deployments' workers files live (one per deployment and running revision); none: they do not run. */
  workersDir?: string;
  /** Opens sealed secrets (the model-hub token the workers get as a file, secret environment variables). */
  unseal?: (sealed: string) => string;
  /** Replica lifetimes (× GPUs) go here, per deployment and hour (the usage view). */
  usage?: UsageLedger;
  /** GPUs of one replica's hardware instance (each GPU worker replica is one instance). */
  gpusPerReplica?: (d: DeploymentRecord, component: string) => number;
  /** The hardware instance one replica runs on (its CPU and memory become container limits); null: unknown. */
  hardwareOf?: (d: DeploymentRecord, component: string) => ReplicaRequest['hardware'];
  /** Replicas a rolling update may run beyond the desired count. */
  rolloutSurge?: number;
  /** How long a new revision has to get every desired replica ready. */
  rolloutDeadlineMs?: number;
  /** How long the controller lease lasts without renewal: a standby takes over this long after the leader stops. */
  leaseTtlMs?: number;
  /** Where replicas' logs are: a crash-looping replica's last line goes into its deployment's status reason. None: no line. */
  logsDir?: string;
  /**
   * At a clean stop, leave the replicas the runtime can leave (runtime.replicasOutliveService)
   * running with their records, for the next start to take back; false or absent: drain them all.
   */
  keepOnStop?: boolean;
}

/** What a clean stop did with the replicas this controller ran. */
export interface StopOutcome {
  /** Left running with their records (keepOnStop): the next start takes them back. */
  kept: number;
  /** Drained, stopped and their records removed. */
  drained: number;
}
