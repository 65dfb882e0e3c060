// Owns reconciliation: for each deployment something happened to, it compares its desired
// replicas with the ones it runs and acts through the runtime — starts the missing, drains and
// stops the extra and those of superseded revisions or deleted deployments — and writes
// observed state (replica records, deployment status, component desired counts, per revision
// while traffic splits between revisions, revision status) back to the store, with the
// deployment's events (replicas started, ready, restarted, pulling; rollout steps; traffic
// shifted and revisions drained; a deployment failing, and the autoscaler's decisions it is
// handed) written beside it without waiting for them. A deployment whose traffic names one
// revision runs it alone, replaced by a rolling update; a split runs each of its revisions
// side by side (plan.ts).
//
// Work follows change, not size (reconcile-queue.ts): a deployment is reconciled when it is
// marked dirty — a change-feed event of its record, a change of one of its replicas (or one
// retired), the autoscaler's figure for it moving (`poke(id)`), a timer it set (a rollout's
// deadline, a split's drain delay) coming due — and every deployment at once when the lease is
// taken, when the change feed comes back after a cut, and on `poke()`. A dirty deployment is
// read alone (`get`), never by listing them all. The tick (every second) only moves due timers
// and retries into the dirty set and keeps each running replica's books (usage, record writes
// that failed); a deployment at zero with no traffic costs nothing there. Passes give the event
// loop back in slices, so the lease (lease.ts), renewed on its own timer, never waits on them.
//
// It removes what a deleted deployment left (directories, usage rows) once none of its
// replicas runs, whatever state it was deleted in: a deletion is seen from its change-feed
// event (or, after a cut, from the full pass), directories are listed only when the lease is
// taken, and the store's usage rows are scanned at their own slow interval. After a restart it
// takes back what the previous run left running (reaping the rest) and brings every deployment
// back. A clean stop drains every replica, or, with `keepOnStop` and a runtime whose replicas
// outlive the service (containers), releases them running with their records, so gateways
// keep routing to them and the next start takes them back. It acts only while it holds the
// store's `controller` lease, so a second control process on a shared store stands by.
//
// This class wires the parts, each in its own module: the replicas run and their books
// (replicas.ts), what each is asked to run (replica-requests.ts), one deployment's reconcile
// (deployment-reconcile.ts, pass-plan.ts, deployment-state.ts), deleted deployments' leftovers
// (deleted-deployments.ts), and taking back an earlier run's replicas (take-back.ts).

import { DEFAULTS } from '../config/defaults.js';
import { CoalescingRunner } from '../core/coalescing-runner.js';
import { TimeSlices } from '../core/time-slices.js';
import type { DeploymentRecord } from '../domain/records.js';
import { EventWriter, type EventNote } from '../store/event-writer.js';
import { fencedStore } from '../store/fenced-store.js';
import { FencedError, StoreUnavailableError, type Store } from '../store/store.js';
import { ControllerLease, renewalInterval } from './lease.js';
import { ReconcileQueue } from './reconcile-queue.js';
import { WorkersFiles } from './workers-file.js';
import { ReplicaRequests } from './replica-requests.js';
import { Replicas } from './replicas.js';
import type { ControllerOptions, ShellTarget, StopOutcome } from './controller-options.js';
import { DeletedDeployments } from './deleted-deployments.js';
import { takeBackLeftovers } from './take-back.js';
import { DeploymentReconciler } from './deployment-reconcile.js';

export type { ReplicaLoad } from './replicas.js';
export type { ControllerOptions, ShellTarget, StopOutcome } from './controller-options.js';

export class Controller {
  /** The replicas this controller runs, and their books. */
  private readonly replicas: Replicas;
  /** The orchestrated Frontends' workers files; null: orchestrated deployments do not run here. */
  private readonly workersFiles: WorkersFiles | null;
  private timer: NodeJS.Timeout | null = null;
  private unwatch: (() => void) | null = null;
  private unresync: (() => void) | null = null;
  // An unreachable store is logged once by the store monitor: replicas keep running as they
  // are, and what the pass did not get to is tried again at the next tick.
  private readonly passes = new CoalescingRunner(
    () => this.reconcile(),
    (err) => {
      if (err instanceof StoreUnavailableError) this.opts.logger.debug({ err }, 'reconcile skipped');
      else if (err instanceof FencedError) this.opts.logger.warn('reconcile stopped: a write was refused, the controller lease is checked at once');
      else this.opts.logger.error({ err }, 'reconcile failed');
    },
  );
  /** The deployments to reconcile, the timers they set, and whether all are due. */
  private readonly queue = new ReconcileQueue();
  private stopped = false;
  private readonly lease: ControllerLease;
  /** What each replica is asked to run. */
  private readonly requests: ReplicaRequests;
  /** The store, every write fenced by the lease: refused once another controller took over. */
  private readonly store: Store;
  /** What deleted deployments left, and the ids known to exist. */
  private readonly deletions: DeletedDeployments;
  /** The lease was just taken: reap what an earlier leader left before anything else. */
  private takeBackDue = false;
  /** Deployments' events, through the fenced store: a deposed controller's are refused. */
  private readonly events: EventWriter;
  /** One deployment's reconcile, and what it keeps of each deployment between passes. */
  private readonly deployments: DeploymentReconciler;
  /** What this controller has done so far, for tests and diagnostics: ticks, passes, and deployments reconciled. */
  readonly counters = { ticks: 0, passes: 0, reconciled: 0 };

  constructor(private readonly opts: ControllerOptions) {
    this.lease = new ControllerLease(opts.store, opts.logger, opts.leaseTtlMs ?? DEFAULTS.controller.leaseTtlMs);
    this.store = fencedStore(opts.store, this.lease.fence);
    this.events = new EventWriter(this.store, opts.clock, opts.logger);
    this.workersFiles = opts.workersDir ? new WorkersFiles(opts.workersDir) : null;
    this.replicas = new Replicas(
      opts,
      this.store,
      (id) => this.mark(id),
      () => void this.lease.renew(),
      (id, note) => this.recordEvent(id, note),
    );
    this.deletions = new DeletedDeployments(opts, this.store);
    this.requests = new ReplicaRequests(opts, this.store, (id, note) => this.recordEvent(id, note));
    this.deployments = new DeploymentReconciler(opts, this.store, this.replicas, this.requests, this.workersFiles, this.queue, this.deletions, (id, note) =>
      this.recordEvent(id, note),
    );
  }

  /**
   * Records an event of a deployment (the autoscaler's decisions come through here), while
   * this controller acts: a standby's autoscaler decides too, but only the leader's decisions
   * are applied, so only they are told. Never waits, never throws.
   */
  recordEvent(deploymentId: number, note: EventNote): void {
    if (this.stopped || !this.lease.isHeld) return;
    this.events.record(deploymentId, note);
  }

  async start(): Promise<void> {
    this.unwatch = this.store.watch((event) => {
      // A deletion is a change like any: the pass finds the record gone and retires what it ran.
      if (event.kind === 'deployment') this.mark(event.id);
    });
    this.unresync = this.opts.store.onResync(() => this.resync());
    const tickMs = this.opts.tickMs ?? DEFAULTS.controller.tickMs;
    this.timer = setInterval(() => this.tick(), tickMs);
    this.timer.unref();
    await this.lease.start(
      {
        gained: () => this.gained(),
        lost: () => this.replicas.abandon(),
        retaken: () => this.retaken(),
      },
      this.opts.leaseRenewMs ?? renewalInterval(tickMs, this.lease.ttlMs),
    );
    this.schedule();
    await this.passes.current();
  }

  /** Why shells may not open in replicas on this node (the runtime has no sandbox), or null. */
  shellRefusal(): string | null {
    return this.opts.runtime.shellRefusal();
  }

  /**
   * A ready replica of the deployment to open a shell in (the named one, or the first ready),
   * with the process to spawn there, and a way to learn when it stops.
   */
  shellTarget(deploymentId: number, replica?: string): ShellTarget | null {
    const candidates = [...this.replicas.owned.values()].filter(
      (o) => o.deploymentId === deploymentId && !o.retiring && o.handle.observe().phase === 'ready' && (replica === undefined || o.handle.name === replica),
    );
    for (const o of candidates.sort((a, b) => a.recordId - b.recordId)) {
      const context = o.handle.shellContext();
      if (context === null) continue;
      return {
        replica: o.handle.name,
        ...context,
        // Once: when the controller is about to stop it, or when it stopped on its own.
        onGone: (listener) => {
          let told = false;
          const once = () => {
            if (told) return;
            told = true;
            listener();
          };
          o.goneListeners.push(once);
          o.handle.onChange((obs) => obs.phase === 'stopped' && once());
        },
      };
    }
    return null;
  }

  /**
   * Reconcile now: one deployment (the autoscaler changed its desired count), or, without an
   * id, every deployment (a full pass, which lists them all).
   */
  poke(deploymentId?: number): void {
    if (deploymentId === undefined) {
      this.queue.markAll();
      this.schedule();
    } else {
      this.mark(deploymentId);
    }
  }

  /**
   * Resolves once the lease has been renewed and a pass begun after this call has run, with
   * nothing left due (no dirty deployment, no replica still being retired) — a settled point,
   * so a test checks that something never happens after the pass that would have done it,
   * instead of sleeping.
   */
  async settled(): Promise<void> {
    await this.lease.renew();
    this.schedule();
    for (;;) {
      await this.passes.settled();
      if (this.replicas.retirements.size > 0) {
        await Promise.all([...this.replicas.retirements]);
        continue;
      }
      if (!this.queue.pending || this.stopped || !this.lease.isHeld) return;
      this.schedule();
    }
  }

  /** Whether this controller holds the lease and acts. */
  get isLeader(): boolean {
    return this.lease.isHeld;
  }

  /**
   * Drains and stops every replica this controller runs and removes their records — or, with
   * keepOnStop on a runtime whose replicas outlive the service, leaves them running with their
   * records as they are (the gateways keep routing to them; the next start takes them back).
   * Replicas already draining (a scale-down, a rollout, a deletion) finish draining either way.
   * The lease is released at the end, so the next control process acts at once.
   */
  async stop(): Promise<StopOutcome> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.unwatch?.();
    this.unresync?.();
    await this.passes.current();
    const keep = this.opts.keepOnStop === true && this.opts.runtime.replicasOutliveService && this.lease.isHeld;
    const running = [...this.replicas.owned.values()].filter((o) => !o.retiring);
    const kept = keep ? running.filter((o) => o.handle.release !== undefined) : [];
    // The lease keeps being renewed while the replicas drain: their record writes are fenced.
    for (const o of running) if (!kept.includes(o)) this.replicas.retire(o, 'the service is stopping');
    await Promise.all(kept.map((o) => this.replicas.release(o)));
    await Promise.all([...this.replicas.retirements]);
    await this.events.flush();
    await this.lease.release();
    return { kept: kept.length, drained: running.length - kept.length };
  }

  /**
   * The store is back after its change feed was cut: replica record writes that failed
   * meanwhile are not retried by anything else, so every replica's current observation is
   * written again; and changes to deployments were missed, so every deployment is reconciled.
   */
  private resync(): void {
    if (this.stopped) return;
    for (const o of this.replicas.owned.values()) this.replicas.persist(o, o.handle.observe(), o.retiring ? 'draining' : undefined);
    this.queue.markAll();
    this.schedule();
  }

  /** Marks a deployment dirty and runs a pass (or folds it into the one running). */
  private mark(deploymentId: number): void {
    this.queue.mark(deploymentId);
    this.schedule();
  }

  /** One pass at a time, plus one more if anything asked meanwhile. */
  private schedule(): void {
    if (!this.stopped) this.passes.trigger();
  }

  /** Leadership starts: what an earlier leader left is reaped, then every deployment reconciled. */
  private gained(): void {
    this.takeBackDue = true;
    this.deletions.leftoversDue = true;
    this.queue.markAll();
    this.schedule();
  }

  /** The lease ran out and was taken back: what was refused meanwhile is written again now. */
  private retaken(): void {
    for (const o of this.replicas.owned.values()) if (o.unsaved) this.replicas.persist(o, o.handle.observe(), o.retiring ? 'draining' : undefined);
    this.queue.retryNow();
    this.schedule();
  }

  /**
   * Every tick: due timers and failed deployments become dirty, and each running replica's
   * books are kept (its lifetime counted, its record written again if that failed). Nothing
   * here reads or writes a deployment that nothing happened to.
   */
  private tick(): void {
    if (this.stopped) return;
    this.counters.ticks++;
    if (!this.lease.isHeld) return;
    const now = this.opts.clock.now();
    for (const o of this.replicas.owned.values()) {
      this.replicas.account(o);
      if (o.unsaved) this.replicas.persist(o, o.handle.observe(), o.retiring ? 'draining' : undefined);
    }
    const due = this.queue.tick(now);
    if (due || this.replicas.undeleted.size > 0 || this.deletions.gone.size > 0 || now >= this.deletions.nextStoreScan) this.schedule();
  }

  /**
   * One pass: after taking the lease, reap what was left first; then every deployment due —
   * all of them (listed once) when everything is, else the dirty ones, each read on its own —
   * in slices that give the event loop back; then what deleted deployments left. A deployment
   * whose reconcile failed is tried again at the next tick; a refused write asks the lease at
   * once, and the pass stops there (the lease taken back, what is left is done).
   */
  private async reconcile(): Promise<void> {
    if (!this.lease.isHeld) return;
    this.counters.passes++;
    if (this.takeBackDue) {
      this.takeBackDue = false;
      try {
        await takeBackLeftovers(this.store, this.opts, this.requests, this.replicas);
      } catch (err) {
        this.takeBackDue = true;
        throw err;
      }
    }
    for (const id of this.replicas.undeleted) if ((await this.store.delete('replica', id).catch(() => null)) !== null) this.replicas.undeleted.delete(id);
    const work = this.queue.take();
    let listed: Map<number, DeploymentRecord> | null = null;
    try {
      if (work.all) listed = await this.listAll();
      else if (this.opts.clock.now() >= this.deletions.nextStoreScan) await this.deletions.scanStoreLeftovers((id) => this.mark(id));
    } catch (err) {
      if (work.all) this.queue.markAll();
      for (const id of work.ids) this.queue.retry(id);
      throw err;
    }
    const ids = listed === null ? work.ids : [...new Set([...listed.keys(), ...work.ids])];
    const slices = new TimeSlices();
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      if (this.stopped || !this.lease.isHeld) {
        for (const rest of ids.slice(i)) this.queue.mark(rest);
        return;
      }
      try {
        const d = listed?.get(id) ?? (await this.store.get('deployment', id))?.value;
        if (d === undefined) this.deleted(id);
        else await this.deployments.reconcile(d);
        this.counters.reconciled++;
      } catch (err) {
        if (!(err instanceof FencedError) && !(err instanceof StoreUnavailableError)) {
          this.opts.logger.error({ err, deployment_id: id }, 'reconciling a deployment failed; trying again at the next tick');
          this.queue.retry(id);
          continue;
        }
        // The lease ran out or the store is gone: nothing more gets written this pass.
        for (const rest of ids.slice(i)) this.queue.retry(rest);
        if (err instanceof FencedError) void this.lease.renew();
        throw err;
      }
      await slices.yield();
    }
    if (this.deletions.gone.size > 0) {
      await this.deletions.removeLeftovers(
        () => this.stopped,
        (id) => [...this.replicas.owned.values()].some((o) => o.deploymentId === id),
        (id) => this.workersFiles?.forget(id),
      );
    }
  }

  /**
   * Every deployment, for a full pass; ids this controller knew, ran replicas of or found
   * leftovers of that are not among them were deleted (while the change feed was cut, or
   * before this controller ran). Leftovers are read at each taking of the lease only, and
   * before the deployments: an id found there and missing from the list read after is surely
   * deleted, since ids are never reused.
   */
  private async listAll(): Promise<Map<number, DeploymentRecord>> {
    const leftovers = this.deletions.leftoversDue ? await this.deletions.findLeftovers() : new Set<number>();
    this.deletions.leftoversDue = false;
    const deployments = new Map((await this.store.list('deployment')).map((d) => [d.value.id, d.value]));
    const seen = [...this.deletions.known, ...leftovers, ...[...this.replicas.owned.values()].map((o) => o.deploymentId), ...this.deployments.rolloutSteps.keys(), ...this.deployments.trafficSeen.keys()];
    for (const id of seen) if (!deployments.has(id)) this.deleted(id);
    this.deletions.known = new Set(deployments.keys());
    return deployments;
  }

  /** A deployment found deleted: its replicas drain, what it left goes once they stopped, and its bookkeeping is forgotten. */
  private deleted(id: number): void {
    for (const o of this.replicas.owned.values()) {
      if (o.deploymentId === id && !o.retiring) this.replicas.retire(o, 'its deployment was deleted');
    }
    this.deletions.known.delete(id);
    this.deployments.rolloutSteps.delete(id);
    this.deployments.trafficSeen.delete(id);
    this.queue.forget(id);
    this.deletions.gone.add(id);
  }
}
