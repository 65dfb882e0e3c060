// Owns the replicas this controller runs, and their books: each one's handle and record
// (observations written to it in order; a write that failed is written again), its lifetime
// counted in the usage ledger, its events (ready, restarted, pulling), and its way out —
// retired (drained, stopped, its record removed), abandoned to a controller that took over,
// or released running for the next start to take back.

import { COMPONENT, FRONTEND_WORKERS_POLL_MS } from '../domain/components.js';
import { DEFAULTS } from '../config/defaults.js';
import type { Logger } from 'pino';
import { isoNow, type Clock } from '../core/clock.js';
import type { DeploymentRecord, ReplicaRecord, ReplicaState } from '../domain/records.js';
import type { ReplicaHandle, ReplicaObservation } from '../runtime/runtime.js';
import { lastOutputLine } from '../runtime/last-output.js';
import type { EventNote } from '../store/event-writer.js';
import { FencedError, modify, NotFoundError, type Store } from '../store/store.js';
import type { UsageLedger } from '../store/usage-ledger.js';
import type { ReplicaHealth } from './desired.js';
import { replicaEvents } from './replica-events.js';
import type { ComponentPlan } from './replica-requests.js';

/** In-flight requests per replica, as the gateway counts them (drain waits for zero). */
export interface ReplicaLoad {
  inflight(replicaId: number): number;
}

/** What the books are kept with: the controller's options of them. */
export interface ReplicaOptions {
  clock: Clock;
  logger: Logger;
  drainTimeoutMs: number;
  stopGraceMs: number;
  load: ReplicaLoad | null;
  drainSettleMs?: number;
  usage?: UsageLedger;
  logsDir?: string;
}

export interface Owned {
  recordId: number;
  deploymentId: number;
  revision: number;
  component: string;
  handle: ReplicaHandle;
  retiring: boolean;
  /** Taken over by another controller: stopped without a drain, and nothing of it is written any more. */
  abandoned: boolean;
  /** GPUs it holds, and up to when its lifetime has been counted in the usage ledger. */
  gpus: number;
  accountedAt: number;
  /** Serializes this replica's record writes. */
  writes: Promise<void>;
  /** Its last record write failed (the store unreachable, the fence refused it): written again next pass. */
  unsaved: boolean;
  /** The observation its events were last told from. */
  seen: ReplicaObservation;
  /** Its restart count when it was last ready (or taken on): restarts since then make a crash loop. */
  restartsAtReady: number;
  /** How its last image pull ended, kept while a retry runs (a failed pull stays failing while it is tried again). */
  pullOutcome: ReplicaObservation['pull'];
  /** Its terminals, told it is going before it is stopped (not after its shells died with it). */
  goneListeners: Array<() => void>;
}

export class Replicas {
  /** By record id. */
  readonly owned = new Map<number, Owned>();
  /** Replicas being retired (or abandoned): each settles once it stopped. */
  readonly retirements = new Set<Promise<void>>();
  /** Records of replicas stopped while the store was unreachable: removed once it answers. */
  readonly undeleted = new Set<number>();

  constructor(
    private readonly opts: ReplicaOptions,
    /** The fenced store. */
    private readonly store: Store,
    /** A replica of this deployment changed (its record written, or it stopped): reconcile it. */
    private readonly changed: (deploymentId: number) => void,
    /** A write was refused: the lease is checked at once. */
    private readonly checkLease: () => void,
    /** Records an event of a deployment. */
    private readonly recordEvent: (deploymentId: number, note: EventNote) => void,
  ) {}

  /**
   * Leaves a replica running for the next start: its lifetime is counted up to now, its last
   * record write lands (the record is what the next start takes it back under, and what the
   * gateways route by meanwhile), then the runtime lets it go.
   */
  async release(o: Owned): Promise<void> {
    this.account(o);
    await o.writes;
    // The start that takes it back counts its lifetime on from here: the time between the two
    // processes is counted too (it held its GPUs), and nothing twice.
    const until = new Date(o.accountedAt).toISOString();
    await modify(this.store, 'replica', o.recordId, (r) => ({ ...r, counted_until: until })).catch((err: Error) =>
      this.opts.logger.warn({ err, replica: o.handle.name }, 'could not record up to when a replica left running was counted; the next start counts it from its own start'),
    );
    await o.handle.release?.().catch((err: Error) => this.opts.logger.warn({ err, replica: o.handle.name }, 'releasing a replica failed'));
    this.owned.delete(o.recordId);
  }

  /** A replica as the failing rule sees it. */
  health(o: Owned): ReplicaHealth {
    const seen = o.handle.observe();
    return {
      name: o.handle.name,
      ready: seen.phase === 'ready',
      restartsSinceReady: seen.restarts - o.restartsAtReady,
      lastExit: seen.lastExit ?? null,
      pull: o.pullOutcome ?? null,
      detail: seen.detail,
    };
  }

  /** What a replica's process last wrote, when its log is kept on this node. */
  async lastLine(o: Owned): Promise<string | null> {
    const { logsDir } = this.opts;
    if (logsDir === undefined) return null;
    return lastOutputLine(logsDir, { deploymentId: o.deploymentId, revision: o.revision, component: o.component, replica: o.handle.name });
  }

  /** Runs `handle` as the replica of record `recordId`: its observations are written to the record from now on. */
  own(d: DeploymentRecord, plan: ComponentPlan, revision: number, recordId: number, handle: ReplicaHandle, countedFrom?: number): void {
    const first = handle.observe();
    const owned: Owned = {
      recordId,
      deploymentId: d.id,
      revision,
      component: plan.component,
      handle,
      retiring: false,
      abandoned: false,
      gpus: plan.gpus,
      accountedAt: countedFrom ?? this.opts.clock.now(),
      writes: Promise.resolve(),
      unsaved: false,
      seen: first,
      restartsAtReady: first.restarts,
      pullOutcome: first.pull?.state === 'pulling' ? null : (first.pull ?? null),
      goneListeners: [],
    };
    this.owned.set(owned.recordId, owned);
    handle.onChange((o) => {
      this.notice(owned, o);
      this.persist(owned, o);
    });
    this.persist(owned, first);
  }

  /** Tells a replica's events (ready, restarted, its pull) and keeps its count of restarts since ready. */
  private notice(owned: Owned, o: ReplicaObservation): void {
    if (o.phase === 'ready') owned.restartsAtReady = o.restarts;
    if (o.pull && o.pull.state !== 'pulling') owned.pullOutcome = o.pull;
    if (!owned.retiring) for (const note of replicaEvents(owned.handle.name, owned.seen, o)) this.recordEvent(owned.deploymentId, note);
    owned.seen = o;
  }

  /** Writes what the runtime observed to the replica's record, in order, then reconciles its deployment. */
  persist(owned: Owned, o: ReplicaObservation, state?: ReplicaState): void {
    if (owned.abandoned) return;
    // A record that already says all this is left as it is (a replica taken back, a write made
    // again after the feed or the lease came back): no write, no change event for the gateways.
    const next = (current: ReplicaRecord): ReplicaRecord | undefined => {
      const observed = {
        address: o.address ?? '',
        state: state ?? (owned.retiring ? 'draining' : o.phase === 'stopped' ? 'stopped' : o.phase),
        restarts: o.restarts,
        pid: o.pid,
        metrics_target: o.metricsTarget,
        detail: o.detail,
      };
      const same =
        current.address === observed.address &&
        current.state === observed.state &&
        current.restarts === observed.restarts &&
        current.pid === observed.pid &&
        JSON.stringify(current.metrics_target) === JSON.stringify(observed.metrics_target) &&
        (current.detail ?? null) === observed.detail &&
        // A replica taken back after a clean stop: its counting mark goes once this run counts it.
        (current.counted_until ?? null) === null;
      if (same) return undefined;
      const { counted_until: _counted, ...rest } = current;
      return { ...rest, ...observed, updated_at: isoNow(this.opts.clock) };
    };
    owned.writes = owned.writes
      .then(() => modify(this.store, 'replica', owned.recordId, next))
      .then(
        () => {
          owned.unsaved = false;
          this.changed(owned.deploymentId);
        },
        (err: Error) => {
          if (err instanceof NotFoundError) return;
          owned.unsaved = true;
          if (err instanceof FencedError) {
            this.opts.logger.warn({ replica: owned.handle.name }, 'replica record write refused: this controller may no longer hold the lease; it is checked at once');
            // The only control process may have stalled past its lease: taken back at once, the write is made again then.
            this.checkLease();
          } else {
            this.opts.logger.warn({ err, replica: owned.handle.name }, 'replica record write failed; written again at the next tick');
          }
        },
      );
  }

  /** Counts a replica's lifetime since the last count: it holds its GPUs from start to stop. */
  account(o: Owned): void {
    const now = this.opts.clock.now();
    if (now > o.accountedAt) this.opts.usage?.addLifetime(o.deploymentId, o.component, o.gpus, o.accountedAt, now, o.revision);
    o.accountedAt = now;
  }

  /** Drain (out of routing, in-flight finishes or times out), stop, remove the record. */
  retire(o: Owned, why: string): void {
    o.retiring = true;
    this.opts.logger.info({ replica: o.handle.name, why }, 'draining replica');
    const done = (async () => {
      this.persist(o, o.handle.observe(), 'draining');
      await o.writes;
      await this.waitDrained(o);
      // Its terminals close as "the replica stopped" before its processes (their shells too) are killed.
      for (const gone of o.goneListeners.splice(0)) gone();
      await o.handle.stop(this.opts.stopGraceMs);
      this.account(o);
      await o.writes;
      await this.store.delete('replica', o.recordId).catch(() => this.undeleted.add(o.recordId));
      this.owned.delete(o.recordId);
      this.opts.logger.info({ replica: o.handle.name }, 'replica stopped');
      // Its deployment re-plans without it (a rollout's next step; the last replica of a
      // deleted deployment gone: what it left is removed).
      this.changed(o.deploymentId);
    })().catch((err: Error) => this.opts.logger.error({ err, replica: o.handle.name }, 'retiring a replica failed'));
    this.retirements.add(done);
    void done.finally(() => this.retirements.delete(done));
  }

  /**
   * Another controller took over (this one stalled past its lease, or lost the store for
   * longer): it has removed these replicas' records and runs its own, so they are stopped
   * without a drain (no gateway routes to them any more) and without writing to the store.
   */
  abandon(): void {
    const abandoned = [...this.owned.values()].filter((o) => !o.retiring);
    for (const o of abandoned) {
      o.retiring = true;
      o.abandoned = true;
      this.account(o);
      const done = o.handle.stop(this.opts.stopGraceMs).catch((err: Error) => this.opts.logger.error({ err, replica: o.handle.name }, 'stopping an abandoned replica failed'));
      this.retirements.add(done);
      void done.finally(() => this.retirements.delete(done));
      this.owned.delete(o.recordId);
    }
    if (abandoned.length > 0) this.opts.logger.warn({ replicas: abandoned.map((o) => o.handle.name) }, 'stopped the replicas this controller ran: another controller has taken them over');
  }

  private async waitDrained(o: Owned): Promise<void> {
    // Waits are on the injected clock, like the deadline they count towards: tests step it.
    const { load, clock } = this.opts;
    // Gateways drop the replica when they see the draining record; give the change feed a moment.
    // An orchestrated worker is reached through its Frontends, which learn it left from the
    // workers file (already rewritten without it) at their next poll: give them two polls.
    const settle = this.opts.drainSettleMs ?? DEFAULTS.controller.drainSettleMs;
    const throughFrontend = o.component !== COMPONENT.Replica && o.component !== COMPONENT.Frontend;
    await clock.sleep(throughFrontend ? Math.max(settle, 2 * FRONTEND_WORKERS_POLL_MS) : settle);
    if (load === null) return;
    const deadline = clock.now() + this.opts.drainTimeoutMs;
    while (load.inflight(o.recordId) > 0 && clock.now() < deadline) await clock.sleep(100);
    if (load.inflight(o.recordId) > 0) this.opts.logger.warn({ replica: o.handle.name, inflight: load.inflight(o.recordId) }, 'drain timed out; stopping anyway');
  }
}
