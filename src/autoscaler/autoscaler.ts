// Owns the autoscaler's loop (collect → decide → actuate): every tick (1 s), and at once when
// the activator pokes it, it reads each active deployment's load from the gateways
// (concurrency samples, held requests, and for the LLM signals the engines' scraped gauges, the
// flow-control queue and the TTFT steps) and its replicas' readiness (kept from the store's
// change feed: scaling-records.ts), runs decide() per unit, keeps each unit's state, and tells
// the controller which deployments' desired counts changed. A unit is the deployment while its
// traffic names one revision, else each revision of its split (domain/traffic.ts), scaled on
// that revision's own figures. The controller asks `desiredFor()` for the figure it applies.
// Metrics: desired replicas, panic mode, decisions by reason and the signal's figure; each
// tick's figures also go to the activity history, and each change of a desired count to the
// deployment's events (ScaledUp, ScaledDown, ScaledToZero).
//
// Only active deployments are visited. A deployment leaves the active set when it is idle at
// zero: no replica of its scaled component, no load in any gateway (LoadSource.busy), and a
// decision that holds it at zero and would on every tick until something changes — decide()
// is then at a fixed point (its state only drops old recommendations, which were zeros), so
// skipping it changes no decision. It comes back with a change-feed event of its record or
// one of its replicas, with load (held requests poke a tick), or with the store's resync. An
// idle deployment's activity is kept as "idle since" (activity.ts) and its last decision
// stays what desiredFor() answers; its metrics keep their last values, and the decisions
// counter counts only decisions made. So a tick costs nothing per idle deployment.

import { scaledComponent } from '../domain/components.js';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { CoalescingRunner } from '../core/coalescing-runner.js';
import { autoscalingMetricOf, autoscalingTargetOf, type AutoscalingMetric } from '../domain/autoscaling-signal.js';
import type { DeploymentRecord } from '../domain/records.js';
import { appliedCount, splitOf } from '../domain/traffic.js';
import { initialReplicasOf } from '../domain/initial-scale.js';
import { StoreUnavailableError, type Store } from '../store/store.js';
import type { ActivityRecorder, IdlePoint } from './activity.js';
import type { EventSink } from '../store/event-writer.js';
import { decide, initialState, type AutoscaleSpec, type AutoscaleState, type AutoscaleWindows, type ConcurrencySample, type Decision, type SignalFigures } from './decide.js';
import { decisionEvent } from './decision-event.js';
import { STATS_STEP_MS, type RevisionStep } from '../domain/revision-stats.js';
import { readingOf, remember, signalFigures, type SignalReading } from './signals.js';
import { ScalingRecords, type ReplicaFacts } from './scaling-records.js';

/** What a replica's engine says of its load (vLLM's gauges), as the autoscaler reads it. */
export interface ReplicaEngineSignals {
  /** Requests waiting in the engine's queue; null: the engine does not say. */
  waiting: number | null;
  /** KV cache in use, 0–100; null: the engine does not say. */
  kvCachePercent: number | null;
}

/** What the gateway measures (in this process): the autoscaler's input. */
export interface LoadSource {
  samples(deploymentId: number): readonly ConcurrencySample[];
  held(deploymentId: number): number;
  /** Time-weighted concurrency of the requests sent to one revision's replicas (revisions split by traffic scale apart). */
  revisionSamples(deploymentId: number, revision: number): readonly ConcurrencySample[];
  /** Requests waiting in the gateways' flow-control queue of the deployment now. */
  queued(deploymentId: number): number;
  /** A replica's engine as the gateways last scraped it (fresh figures only); null: nothing known. */
  replicaSignals(replicaId: number): ReplicaEngineSignals | null;
  /** The 5-second steps of a revision's requests, errors, tokens and TTFT histogram (the last five minutes); null revision: all of the deployment's. */
  revisionSteps(deploymentId: number, revision: number | null): readonly RevisionStep[];
  /** Brings the figures up to date before a tick (load reported by other processes). */
  refresh?(): Promise<void>;
  /**
   * The deployments with any load now (after refresh): a concurrency sample above zero,
   * requests held, queued or in flight, anywhere. Every figure of every other deployment is
   * zero, so the autoscaler may leave those idle; without this method it decides for every
   * deployment on every tick.
   */
  busy?(): Iterable<number>;
}

export interface AutoscalerOptions {
  store: Store;
  load: LoadSource;
  clock: Clock;
  windows: AutoscaleWindows;
  logger: Logger;
  registry: Registry;
  /** Desired counts changed, of these deployments: the controller should reconcile them now. */
  onChange: (deploymentIds: ReadonlySet<number>) => void;
  tickMs?: number;
  /** Where each tick's figures are kept for the console's Activity tab; none: not kept. */
  activity?: ActivityRecorder;
  /** Where a decision that changes a desired count is told (the controller's events: only its leader's are kept); none: not told. */
  events?: EventSink;
}

/** The component whose count the autoscaler moves (domain/components.ts). */
export { scaledComponent };

/** What one decision state is for: a deployment (revision null: it runs one revision), or one revision of its split. */
interface Unit {
  deploymentId: number;
  revision: number | null;
}

/** Labels of one series of infergate_autoscaler_signal. */
type SignalLabels = { deployment: string; revision: string; metric: string };

const unitKey = (deploymentId: number, revision: number | null) => (revision === null ? `${deploymentId}` : `${deploymentId}/r${revision}`);

export class Autoscaler {
  private readonly units = new Map<string, Unit>();
  /** Per deployment, the keys of its units. */
  private readonly unitsOf = new Map<number, Set<string>>();
  private readonly states = new Map<string, AutoscaleState>();
  private readonly last = new Map<string, Decision>();
  /** Per unit, its gauge readings of the last stable window (the metric they were read for). */
  private readonly histories = new Map<string, { metric: AutoscalingMetric; readings: SignalReading[] }>();
  private readonly signalSeries = new Map<string, SignalLabels>();
  /** Deployments visited each tick; the others are idle at zero (see the header). */
  private readonly active = new Set<number>();
  private readonly records: ScalingRecords;
  private timer: NodeJS.Timeout | null = null;
  // An unreachable store is logged once by the store monitor; the next tick tries again.
  private readonly ticks = new CoalescingRunner(
    () => this.tick(),
    (err) => (err instanceof StoreUnavailableError ? this.opts.logger.debug({ err }, 'autoscaler tick skipped') : this.opts.logger.error({ err }, 'autoscaler tick failed')),
  );
  private readonly desiredGauge: Gauge<'deployment'>;
  private readonly panicGauge: Gauge<'deployment'>;
  private readonly signalGauge: Gauge<'deployment' | 'revision' | 'metric'>;
  private readonly decisions: Counter<'deployment' | 'reason'>;
  /** The name of every deployment decided for (the gauges' label), until it is deleted or no longer scaled. */
  private readonly names = new Map<number, string>();

  constructor(private readonly opts: AutoscalerOptions) {
    this.records = new ScalingRecords(opts.store);
    this.desiredGauge = new Gauge({ name: 'infergate_autoscaler_desired_replicas', help: 'Replicas the autoscaler wants, per deployment (every revision of a split summed)', labelNames: ['deployment'], registers: [opts.registry] });
    this.panicGauge = new Gauge({ name: 'infergate_autoscaler_panic', help: '1 while the deployment (any revision of a split) is in panic mode', labelNames: ['deployment'], registers: [opts.registry] });
    this.signalGauge = new Gauge({
      name: 'infergate_autoscaler_signal',
      help: "The autoscaling metric over the stable window, in its target's unit (in-flight or waiting requests per replica, KV cache percent, p90 TTFT ms); revision empty unless traffic splits",
      labelNames: ['deployment', 'revision', 'metric'],
      registers: [opts.registry],
    });
    this.decisions = new Counter({
      name: 'infergate_autoscaler_decisions_total',
      help: 'Autoscaler decisions by reason (one per deployment, or revision of a split, and tick; none while a deployment is idle at zero)',
      labelNames: ['deployment', 'reason'],
      registers: [opts.registry],
    });
  }

  start(): void {
    this.timer = setInterval(() => this.poke(), this.opts.tickMs ?? 1000);
    this.timer.unref();
    this.poke();
  }

  /** Stops ticking and following the change feed (a later tick reads the store whole again). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticks.current();
    this.records.close();
  }

  /** The autoscaler's figure for a deployment, once it has decided: every revision of a split summed. */
  desired(deploymentId: number): number | undefined {
    const whole = this.last.get(unitKey(deploymentId, null));
    if (whole) return whole.desired;
    const parts = this.revisionDecisions(deploymentId);
    return parts.length === 0 ? undefined : parts.reduce((s, [, d]) => s + d.desired, 0);
  }

  /**
   * The figure the controller applies: `revision` null for a deployment whose traffic names one
   * revision, else that revision of its split. Undefined until decided for exactly that unit.
   */
  desiredFor(deploymentId: number, revision: number | null): number | undefined {
    return this.last.get(unitKey(deploymentId, revision))?.desired;
  }

  /** The last decision for a deployment that runs one revision (undefined in a split: see decisionFor). */
  decision(deploymentId: number): Decision | undefined {
    return this.last.get(unitKey(deploymentId, null));
  }

  decisionFor(deploymentId: number, revision: number | null): Decision | undefined {
    return this.last.get(unitKey(deploymentId, revision));
  }

  /** Decide now (the activator holds a request, or the tick is due); coalesced. */
  poke(): void {
    this.ticks.trigger();
  }

  /** One tick now, resolved when it (and any folded after it) has ended: for tests. */
  async tickNow(): Promise<void> {
    this.ticks.trigger();
    await this.ticks.settled();
  }

  /** Deployments visited each tick now (tests and the benchmark read it). */
  activeDeployments(): ReadonlySet<number> {
    return this.active;
  }

  private revisionDecisions(deploymentId: number): [number, Decision][] {
    const out: [number, Decision][] = [];
    for (const key of this.unitsOf.get(deploymentId) ?? []) {
      const unit = this.units.get(key)!;
      if (unit.revision === null) continue;
      const d = this.last.get(key);
      if (d) out.push([unit.revision, d]);
    }
    return out;
  }

  private async tick(): Promise<void> {
    const { load, clock } = this.opts;
    this.records.open();
    const [found] = await Promise.all([this.records.sync(), load.refresh?.()]);
    // After a full read every deployment is decided once (a restart, a resync); those the
    // autoscaler knew that are gone are forgotten.
    if (found.all !== null) {
      const all = new Set(found.all);
      for (const id of [...this.names.keys(), ...this.active]) if (!all.has(id)) this.retire(id);
      for (const id of all) this.active.add(id);
    }
    for (const id of found.deleted) this.retire(id);
    for (const id of found.changed) this.active.add(id);
    const busy = load.busy === undefined ? null : new Set(load.busy());
    for (const id of busy ?? []) this.active.add(id);
    await this.records.ensure(this.active);
    const now = clock.now();
    const changed = new Set<number>();
    for (const id of [...this.active].sort((a, b) => a - b)) {
      const d = this.records.deployment(id);
      if (d === undefined) {
        // Load of a deployment that no longer exists (its gateway has not forgotten it yet).
        this.retire(id);
        continue;
      }
      const outcome = this.decideDeployment(d, now);
      if (outcome.changed) changed.add(id);
      if (busy !== null && outcome.idle !== null && !busy.has(id)) {
        this.active.delete(id);
        this.records.drop(id);
        this.compact(id);
        if (outcome.idle !== 'unscaled') this.opts.activity?.idle(id, outcome.idle, now);
      }
    }
    if (changed.size > 0) this.opts.onChange(changed);
  }

  /**
   * One deployment's tick: its units decided, its metrics and activity recorded. `idle`: what
   * every further tick would record while nothing changes and no load comes (it may leave the
   * active set), `unscaled` for a deployment the autoscaler does not scale; null: not idle.
   */
  private decideDeployment(d: DeploymentRecord, now: number): { changed: boolean; idle: IdlePoint | 'unscaled' | null } {
    const { load } = this.opts;
    const component = scaledComponent(d);
    if (component === null) {
      // Not scaled (a disaggregated pool): nothing of it is kept.
      this.forgetDeployment(d.id);
      return { changed: false, idle: 'unscaled' };
    }
    this.names.set(d.id, d.name);
    const mine = this.records.replicasOf(d.id).filter((r) => r.component === component);
    const ready = mine.filter((r) => r.state === 'ready').length;
    const samples = load.samples(d.id);
    const held = load.held(d.id);
    if (d.paused) {
      // A paused deployment runs nothing; on resume the decision starts again from min.
      this.forgetUnits(d.id, new Set());
      this.opts.activity?.record(d.id, { samples, held, desired: null, ready, signal: null }, now);
      return { changed: false, idle: mine.length === 0 && held === 0 ? { desired: null, signal: null } : null };
    }
    const split = splitOf(d);
    // Without a split the deployment's replicas of every revision are one unit (a rolling
    // update's old and new together); in a split each revision's are its own.
    const units = split === null ? [{ revision: null, share: 1 }] : split.map((s) => ({ revision: s.revision, share: s.percent / 100 }));
    let desired = 0;
    let panic = false;
    let signal: number | null = null;
    let changed = false;
    let atRest = mine.length === 0 && held === 0;
    const live = new Set<string>();
    for (const u of units) {
      const key = unitKey(d.id, u.revision);
      live.add(key);
      this.units.set(key, { deploymentId: d.id, revision: u.revision });
      let keys = this.unitsOf.get(d.id);
      if (!keys) this.unitsOf.set(d.id, (keys = new Set()));
      keys.add(key);
      const theirs = u.revision === null ? mine : mine.filter((r) => r.revision === u.revision);
      const decision = this.decideUnit(d, component, key, u.revision, u.share, theirs, u.revision === null ? samples : load.revisionSamples(d.id, u.revision), held, now);
      if (decision.changed) changed = true;
      desired += decision.desired;
      panic ||= decision.panic;
      if (decision.signal !== null) signal = Math.max(signal ?? decision.signal, decision.signal);
      // Held at zero (a steady or fixed figure, not a step down to it): the next tick, given no
      // replica and no load, decides the same.
      atRest &&= decision.desired === 0 && (decision.reason === 'steady' || decision.reason === 'fixed_size') && !this.hasReadyReadings(key);
    }
    this.forgetUnits(d.id, live);
    this.desiredGauge.set({ deployment: d.name }, desired);
    this.panicGauge.set({ deployment: d.name }, panic ? 1 : 0);
    this.opts.activity?.record(d.id, { samples, held, desired, ready, signal }, now);
    return { changed, idle: atRest ? { desired, signal } : null };
  }

  /**
   * An idle deployment's units keep only the recommendations above zero: decide() takes the
   * highest of them and the one it adds (never below zero), so the zeros change nothing, and an
   * idle deployment holds no window of them. Its gauge readings go too: at rest they are all
   * of no ready replica, which no window counts (signals.ts).
   */
  private compact(deploymentId: number): void {
    for (const key of this.unitsOf.get(deploymentId) ?? []) {
      this.histories.delete(key);
      const state = this.states.get(key);
      if (state === undefined || state.recommendations.every((r) => r.value > 0)) continue;
      const kept = { ...state, recommendations: state.recommendations.filter((r) => r.value > 0) };
      this.states.set(key, kept);
      const last = this.last.get(key);
      if (last !== undefined) this.last.set(key, { ...last, state: kept });
    }
  }

  /** A unit's gauge history still holds a reading of ready replicas: its signal figure may still move as it ages out. */
  private hasReadyReadings(key: string): boolean {
    return this.histories.get(key)?.readings.some((r) => r.ready > 0) ?? false;
  }

  /** Forgets the units of a deployment not in `live` (a split that ended, a paused deployment). */
  private forgetUnits(deploymentId: number, live: ReadonlySet<string>): void {
    const keys = this.unitsOf.get(deploymentId);
    if (!keys) return;
    for (const key of [...keys]) {
      if (live.has(key)) continue;
      this.forget(key);
      keys.delete(key);
    }
    if (keys.size === 0) this.unitsOf.delete(deploymentId);
  }

  /** A deployment that is no longer scaled: its units, gauges and activity go. */
  private forgetDeployment(deploymentId: number): void {
    this.forgetUnits(deploymentId, new Set());
    const name = this.names.get(deploymentId);
    if (name !== undefined) {
      this.desiredGauge.remove({ deployment: name });
      this.panicGauge.remove({ deployment: name });
    }
    this.names.delete(deploymentId);
    this.opts.activity?.forget(deploymentId);
  }

  /** A deployment that was deleted: nothing of it is kept. */
  private retire(deploymentId: number): void {
    this.forgetDeployment(deploymentId);
    this.active.delete(deploymentId);
    this.records.drop(deploymentId);
  }

  /** Decides for one unit, keeps its state and says so (metrics, log, event); `changed`: its figure moved. */
  private decideUnit(
    d: DeploymentRecord,
    component: string,
    key: string,
    revision: number | null,
    share: number,
    replicas: readonly ReplicaFacts[],
    samples: readonly ConcurrencySample[],
    deploymentHeld: number,
    now: number,
  ): Decision & { changed: boolean } {
    const { load, windows, logger } = this.opts;
    const readyReplicas = replicas.filter((r) => r.state === 'ready');
    const ready = readyReplicas.length;
    const starting = replicas.filter((r) => r.state === 'starting').length;
    const metric = autoscalingMetricOf(d.scaling);
    // A revision of a split never goes to zero: the gateway's split needs its replicas.
    const min = revision === null ? d.scaling.min_replicas : Math.max(1, d.scaling.min_replicas);
    const spec: AutoscaleSpec = { min, max: d.scaling.max_replicas, metric, target: autoscalingTargetOf(d.scaling), cooldownMs: d.scaling.cooldown_period * 1000 };
    // The activator's held requests are the deployment's; a revision's demand is its share of them.
    const held = revision === null ? deploymentHeld : share > 0 ? Math.ceil(deploymentHeld * share) : 0;

    let signal: SignalFigures | undefined;
    if (metric !== 'concurrency') {
      const engines = readyReplicas.map((r) => load.replicaSignals(r.id));
      const queued = metric === 'queue_depth' ? load.queued(d.id) * share : 0;
      const kept = this.histories.get(key);
      const readings = remember(kept?.metric === metric ? kept.readings : [], readingOf(metric, engines, queued, now), windows.stableMs + STATS_STEP_MS);
      this.histories.set(key, { metric, readings });
      signal = signalFigures(metric, readings, metric === 'ttft' ? load.revisionSteps(d.id, revision) : [], now, windows, ready);
    } else {
      this.histories.delete(key);
    }

    const state = this.states.get(key) ?? initialState(now, this.initialCount(d, component, revision, spec, replicas));
    const decision = decide(spec, windows, { samples, held, ready, starting, ...(signal ? { signal } : {}) }, state, now);
    this.states.set(key, decision.state);
    const before = this.last.get(key)?.desired;
    this.last.set(key, decision);
    this.decisions.inc({ deployment: d.name, reason: decision.reason });
    this.setSignal(key, { deployment: d.name, revision: revision === null ? '' : String(revision), metric }, decision.signal);
    if (before === decision.desired) return { ...decision, changed: false };
    const from = before ?? state.desired;
    const panic = decision.reason === 'panic';
    logger.info(
      {
        deployment: d.name,
        ...(revision === null ? {} : { revision }),
        from,
        to: decision.desired,
        reason: decision.reason,
        metric,
        value: roundOrNull(panic ? decision.panicValue : decision.stableValue),
        target: decision.target,
        stable: round(decision.stableConcurrency),
        panic: round(decision.panicConcurrency),
        held,
      },
      'autoscaler decision',
    );
    const note = decisionEvent(from, decision, spec, windows, held, component, revision);
    if (note !== null) this.opts.events?.(d.id, note);
    return { ...decision, changed: true };
  }

  /**
   * Where a new unit starts: the count last applied (the deployment's, or the revision's in a
   * split), else for a deployment its initial scale — by default at least one replica even at
   * min 0, so its revision is seen to become ready (Knative's initial scale; it goes to zero
   * when idle), none with initial_replicas 0 — and for a revision joining a split the replicas
   * it runs already (it served alone until now).
   */
  private initialCount(d: DeploymentRecord, component: string, revision: number | null, spec: AutoscaleSpec, replicas: readonly ReplicaFacts[]): number {
    const clamp = (v: number) => Math.min(spec.max, Math.max(spec.min, v));
    if (revision === null) return appliedCount(d, component) ?? clamp(initialReplicasOf(d.scaling));
    const applied = d.revision_desired?.[String(revision)]?.[component];
    if (applied !== undefined) return applied;
    return clamp(replicas.filter((r) => r.state === 'ready' || r.state === 'starting').length);
  }

  private setSignal(key: string, labels: SignalLabels, value: number | null): void {
    const previous = this.signalSeries.get(key);
    if (previous && (previous.metric !== labels.metric || previous.deployment !== labels.deployment || value === null)) {
      this.signalGauge.remove(previous);
      this.signalSeries.delete(key);
    }
    if (value === null) return;
    this.signalGauge.set(labels, Math.round(value * 1000) / 1000);
    this.signalSeries.set(key, labels);
  }

  private forget(key: string): void {
    this.units.delete(key);
    this.states.delete(key);
    this.last.delete(key);
    this.histories.delete(key);
    const series = this.signalSeries.get(key);
    if (series) this.signalGauge.remove(series);
    this.signalSeries.delete(key);
  }
}

const round = (v: number) => Math.round(v * 100) / 100;
const roundOrNull = (v: number | null) => (v === null ? null : round(v));
