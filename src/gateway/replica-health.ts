// Owns passive health of replicas as the gateway sees it: consecutive connection failures
// per replica, and ejection — a replica that failed `threshold` times in a row is left out of
// replica choice for a while, twice as long each time it is ejected again (capped), and is
// back as soon as the period ends (the next request is its probe). A success resets it.
// This is outlier detection in the style of Envoy's consecutive-5xx/gateway-failure ejection,
// kept apart from the routing table on purpose: the table says what the store believes,
// this says what the gateway just saw.

import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { DEFAULTS } from '../config/defaults.js';

export interface EjectionOptions {
  /** Consecutive failures that eject a replica. */
  threshold: number;
  /** First ejection period in ms, doubled on each repeat up to `maxMs`. */
  baseMs: number;
  maxMs: number;
}

interface State {
  failures: number;
  ejections: number;
  until: number;
}

export class ReplicaHealth {
  private readonly states = new Map<number, State>();

  constructor(
    private readonly opts: EjectionOptions = DEFAULTS.gateway.ejection,
    private readonly clock: Clock = systemClock,
  ) {}

  isEjected(replicaId: number): boolean {
    const s = this.states.get(replicaId);
    return s !== undefined && s.until > this.clock.now();
  }

  /** Records a failure; true when it ejected the replica just now. */
  failure(replicaId: number): boolean {
    const s = this.states.get(replicaId) ?? { failures: 0, ejections: 0, until: 0 };
    s.failures += 1;
    this.states.set(replicaId, s);
    if (s.failures < this.opts.threshold) return false;
    s.failures = 0;
    s.until = this.clock.now() + Math.min(this.opts.baseMs * 2 ** s.ejections, this.opts.maxMs);
    s.ejections += 1;
    return true;
  }

  success(replicaId: number): void {
    if (this.states.size === 0) return; // the common case costs one size check
    this.states.delete(replicaId);
  }

  /** Drops state of replicas that no longer exist. */
  retain(ids: ReadonlySet<number>): void {
    for (const id of this.states.keys()) if (!ids.has(id)) this.states.delete(id);
  }
}
