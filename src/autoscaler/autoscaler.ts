// Owns the autoscaler's loop (collect → decide → actuate): every tick (1 s), and at once when
// the activator pokes it, it reads each deployment's concurrency samples and held requests
// from the gateway and its replicas' readiness from the store, runs decide(), keeps the
// per-deployment state, and tells the controller when a desired count changed. The
// controller asks `desired()` for the figure it applies. Metrics: desired replicas, panic
// mode and decisions by reason; each tick's figures also go to the activity history, and each
// change of a desired count to the deployment's events (ScaledUp, ScaledDown, ScaledToZero).

import { scaledComponent } from '../domain/components.js';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { CoalescingRunner } from '../core/coalescing-runner.js';
import type { DeploymentRecord, ReplicaRecord } from '../domain/records.js';
import { StoreUnavailableError, type Store } from '../store/store.js';
import type { ActivityRecorder } from './activity.js';
import type { EventSink } from '../store/event-writer.js';
import { decide, initialState, type AutoscaleState, type AutoscaleWindows, type ConcurrencySample, type Decision } from './decide.js';
import { decisionEvent } from './decision-event.js';

/** What the gateway measures (in this process): the autoscaler's input. */
export interface LoadSource {
  samples(deploymentId: number): readonly ConcurrencySample[];
  held(deploymentId: number): number;
  /** Brings the figures up to date before a tick (load reported by other processes). */
  refresh?(): Promise<void>;
}

export interface AutoscalerOptions {
  store: Store;
  load: LoadSource;
  clock: Clock;
  windows: AutoscaleWindows;
  logger: Logger;
  registry: Registry;
  /** A desired count changed: the controller should reconcile now. */
  onChange: () => void;
  tickMs?: number;
  /** Where each tick's figures are kept for the console's Activity tab; none: not kept. */
  activity?: ActivityRecorder;
  /** Where a decision that changes a desired count is told (the controller's events: only its leader's are kept); none: not told. */
  events?: EventSink;
}

/** The component whose count the autoscaler moves (domain/components.ts). */
export { scaledComponent };

export class Autoscaler {
  private readonly states = new Map<number, AutoscaleState>();
  private readonly last = new Map<number, Decision>();
  private timer: NodeJS.Timeout | null = null;
  // An unreachable store is logged once by the store monitor; the next tick tries again.
  private readonly ticks = new CoalescingRunner(
    () => this.tick(),
    (err) => (err instanceof StoreUnavailableError ? this.opts.logger.debug({ err }, 'autoscaler tick skipped') : this.opts.logger.error({ err }, 'autoscaler tick failed')),
  );
  private readonly desiredGauge: Gauge<'deployment'>;
  private readonly panicGauge: Gauge<'deployment'>;
  private readonly decisions: Counter<'deployment' | 'reason'>;
  private readonly names = new Map<number, string>();

  constructor(private readonly opts: AutoscalerOptions) {
    this.desiredGauge = new Gauge({ name: 'infergate_autoscaler_desired_replicas', help: 'Replicas the autoscaler wants, per deployment', labelNames: ['deployment'], registers: [opts.registry] });
    this.panicGauge = new Gauge({ name: 'infergate_autoscaler_panic', help: '1 while the deployment is in panic mode', labelNames: ['deployment'], registers: [opts.registry] });
    this.decisions = new Counter({ name: 'infergate_autoscaler_decisions_total', help: 'Autoscaler decisions by reason (one per deployment and tick)', labelNames: ['deployment', 'reason'], registers: [opts.registry] });
  }

  start(): void {
    this.timer = setInterval(() => this.poke(), this.opts.tickMs ?? 1000);
    this.timer.unref();
    this.poke();
  }

  stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    return this.ticks.current();
  }

  /** The autoscaler's figure for a deployment, once it has decided; the controller applies it. */
  desired(deploymentId: number): number | undefined {
    return this.last.get(deploymentId)?.desired;
  }

  decision(deploymentId: number): Decision | undefined {
    return this.last.get(deploymentId);
  }

  /** Decide now (the activator holds a request, or the tick is due); coalesced. */
  poke(): void {
    this.ticks.trigger();
  }

  private async tick(): Promise<void> {
    const { store, load, clock, windows, logger } = this.opts;
    const [deployments, replicas] = await Promise.all([store.list('deployment'), store.list('replica'), load.refresh?.()]);
    const now = clock.now();
    const seen = new Set<number>();
    let changed = false;
    for (const { value: d } of deployments) {
      const component = scaledComponent(d);
      if (component === null) continue;
      seen.add(d.id);
      this.names.set(d.id, d.name);
      const mine = replicas.map((r) => r.value).filter((r: ReplicaRecord) => r.deployment_id === d.id && r.component === component);
      const ready = mine.filter((r) => r.state === 'ready').length;
      const samples = load.samples(d.id);
      const held = load.held(d.id);
      if (d.paused) {
        // A paused deployment runs nothing; on resume the decision starts again from min.
        this.states.delete(d.id);
        this.last.delete(d.id);
        this.opts.activity?.record(d.id, { samples, held, desired: null, ready }, now);
        continue;
      }
      const starting = mine.filter((r) => r.state === 'starting').length;
      const spec = { min: d.scaling.min_replicas, max: d.scaling.max_replicas, target: d.scaling.target_concurrency, cooldownMs: d.scaling.cooldown_period * 1000 };
      // A new deployment starts with at least one replica, even at min 0, so its revision is
      // seen to become ready (Knative's initial scale); it goes to zero when idle.
      const initial = d.desired_replicas?.[component] ?? Math.min(spec.max, Math.max(spec.min, 1));
      const state = this.states.get(d.id) ?? initialState(now, initial);
      const decision = decide(spec, windows, { samples, held, ready, starting }, state, now);
      this.states.set(d.id, decision.state);
      this.opts.activity?.record(d.id, { samples, held, desired: decision.desired, ready }, now);
      const before = this.last.get(d.id)?.desired;
      this.last.set(d.id, decision);
      this.desiredGauge.set({ deployment: d.name }, decision.desired);
      this.panicGauge.set({ deployment: d.name }, decision.panic ? 1 : 0);
      this.decisions.inc({ deployment: d.name, reason: decision.reason });
      if (before !== decision.desired) {
        changed = true;
        const from = before ?? state.desired;
        logger.info(
          { deployment: d.name, from, to: decision.desired, reason: decision.reason, stable: round(decision.stableConcurrency), panic: round(decision.panicConcurrency), held },
          'autoscaler decision',
        );
        const note = decisionEvent(from, decision, spec, windows, held, component);
        if (note !== null) this.opts.events?.(d.id, note);
      }
    }
    for (const id of [...this.states.keys()]) {
      if (seen.has(id)) continue;
      this.states.delete(id);
      this.last.delete(id);
      const name = this.names.get(id);
      if (name !== undefined) {
        this.desiredGauge.remove({ deployment: name });
        this.panicGauge.remove({ deployment: name });
      }
    }
    this.opts.activity?.retain(seen);
    if (changed) this.opts.onChange();
  }
}

const round = (v: number) => Math.round(v * 100) / 100;
