// Owns what every runtime's replica handle shares: its phase and detail (and how it last
// exited, and its image pull), the listeners that hear
// each change of its observation, its runtime lines in the replica's log, its one pending timer,
// and the restart backoff (doubling per crash in a row, up to a maximum). The local process and
// the container replica build their supervision on it.

import { logFilePath, ReplicaLogWriter } from './log-files.js';
import type { ReplicaExit, ReplicaObservation, ReplicaPhase, ReplicaPull, ReplicaRequest } from './runtime.js';

/** The replica's log under `logsDir`, when its deployment has logging on. */
export function replicaLog(logsDir: string, req: ReplicaRequest): ReplicaLogWriter | null {
  return req.logging
    ? new ReplicaLogWriter(logFilePath(logsDir, { deploymentId: req.deploymentId, revision: req.revision, component: req.component, replica: req.name }))
    : null;
}

export function restartDelay(timing: { backoffInitialMs: number; backoffMaxMs: number }, crashesInARow: number): number {
  return Math.min(timing.backoffMaxMs, timing.backoffInitialMs * 2 ** (crashesInARow - 1));
}

export abstract class ReplicaBase {
  protected phase: ReplicaPhase = 'starting';
  /** Why it is not ready, for the deployment's status reason. */
  protected detail: string | null = null;
  /** How it last exited on its own, and its image pull (where the runtime pulls): the controller's events and failing status. */
  protected lastExit: ReplicaExit | null = null;
  protected pull: ReplicaPull | null = null;
  protected timer: NodeJS.Timeout | null = null;
  /** Failed probes in a row while ready, and crashes in a row since it was last ready (the backoff's exponent). */
  protected failedProbes = 0;
  protected crashesInARow = 0;
  private readonly listeners: Array<(o: ReplicaObservation) => void> = [];

  constructor(protected readonly log: ReplicaLogWriter | null) {}

  abstract observe(): ReplicaObservation;

  onChange(listener: (o: ReplicaObservation) => void): void {
    this.listeners.push(listener);
  }

  protected note(line: string): void {
    this.log?.line('runtime', line);
  }

  protected emit(): void {
    const o = this.observe();
    for (const listener of this.listeners) listener(o);
  }

  protected setPhase(phase: ReplicaPhase): void {
    if (this.phase === phase) return;
    this.phase = phase;
    this.emit();
  }

  protected setDetail(detail: string | null): void {
    if (this.detail === detail) return;
    this.detail = detail;
    this.emit();
  }

  /**
   * A readiness probe's verdict applied: ready at the first pass (the crash backoff starts
   * over), out of routing after `failuresToUnready` failures in a row. True when it just
   * became ready.
   */
  protected probeVerdict(ok: boolean, failuresToUnready: number): boolean {
    if (ok) {
      this.failedProbes = 0;
      if (this.phase === 'ready') return false;
      this.crashesInARow = 0;
      this.note('readiness probe passed: ready');
      this.setPhase('ready');
      return true;
    }
    if (this.phase === 'ready' && ++this.failedProbes >= failuresToUnready) {
      this.note(`readiness probe failed ${this.failedProbes} times: not ready`);
      this.setPhase('starting');
    }
    return false;
  }

  protected clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
