// Owns the activator: for a deployment scaled to zero (min 0, no ready replica), requests are
// held in a bounded FIFO queue instead of refused; the first held request pokes the
// autoscaler at once (not on its next tick), and when the routing table shows a ready
// replica every held request continues, in arrival order. A full queue, a wait past the
// timeout, a deleted or paused deployment end a held request with a clear error; a client
// that leaves is dropped from the queue. Knative's activator is the model.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import type { Rejection } from './phases.js';
import type { Route } from './routing-table.js';

export interface ActivatorOptions {
  /** Requests held per deployment at most; more get 503 at once. */
  queueSize: number;
  /** Longest a request waits for a replica. */
  timeoutMs: number;
}

export type HoldOutcome = { ok: true; route: Route } | { ok: false; rejection: Rejection | null };

interface Held {
  settle(outcome: HoldOutcome): void;
}

const RETRY_AFTER = { 'retry-after': '5' };

export class Activator {
  private readonly queues = new Map<number, Held[]>();
  private demand: (deploymentId: number) => void = () => {};
  private readonly waits: Histogram<'deployment' | 'outcome'>;

  constructor(
    private readonly opts: ActivatorOptions,
    private readonly clock: Clock,
    registry: Registry,
    /** A deployment's name, for the gauge's label (undefined: it left the table). */
    names: (deploymentId: number) => string | undefined,
  ) {
    const queues = this.queues;
    new Gauge({
      name: 'infergate_activator_queue_depth',
      help: 'Requests the activator holds for a deployment scaled to zero',
      labelNames: ['deployment'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [id, q] of queues) if (q.length > 0) this.set({ deployment: names(id) ?? String(id) }, q.length);
      },
    });
    this.waits = new Histogram({
      name: 'infergate_activator_wait_seconds',
      help: 'How long requests waited in the activator, by how the wait ended',
      labelNames: ['deployment', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    });
    this.rejections = new Counter({
      name: 'infergate_activator_rejections_total',
      help: 'Requests the activator refused: queue full or timed out',
      labelNames: ['deployment', 'reason'],
      registers: [registry],
    });
  }

  private readonly rejections: Counter<'deployment' | 'reason'>;

  /** Who to poke when a deployment at zero gets a request (the autoscaler). */
  onDemand(listener: (deploymentId: number) => void): void {
    this.demand = listener;
  }

  held(deploymentId: number): number {
    return this.queues.get(deploymentId)?.length ?? 0;
  }

  /**
   * Holds a request for `route` until a replica is ready. `onClientGone` registers the
   * callback for a client that leaves first (the outcome is then `{ok: false, rejection: null}`).
   */
  hold(route: Route, onClientGone: (cancel: () => void) => void): Promise<HoldOutcome> {
    const queue = this.queues.get(route.deploymentId) ?? [];
    if (queue.length >= this.opts.queueSize) {
      this.rejections.inc({ deployment: route.name, reason: 'queue_full' });
      return Promise.resolve({
        ok: false,
        rejection: {
          status: 503,
          code: 'unavailable',
          message: `deployment ${route.name} is scaling up from zero and its activator queue is full (${queue.length} requests waiting); retry shortly`,
          headers: RETRY_AFTER,
        },
      });
    }
    this.queues.set(route.deploymentId, queue);
    return new Promise<HoldOutcome>((resolve) => {
      const enqueuedAt = this.clock.now();
      let done = false;
      const finish = (outcome: HoldOutcome, how: string) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        const q = this.queues.get(route.deploymentId);
        const at = q ? q.indexOf(held) : -1;
        if (q && at !== -1) q.splice(at, 1);
        if (q && q.length === 0) this.queues.delete(route.deploymentId);
        this.waits.observe({ deployment: route.name, outcome: how }, (this.clock.now() - enqueuedAt) / 1000);
        resolve(outcome);
      };
      const timer = setTimeout(() => {
        this.rejections.inc({ deployment: route.name, reason: 'timeout' });
        const seconds = Math.round(this.opts.timeoutMs / 1000);
        const message = `deployment ${route.name} did not get a ready replica within ${seconds} s of this request; retry later`;
        finish({ ok: false, rejection: { status: 503, code: 'unavailable', message, headers: RETRY_AFTER } }, 'timeout');
      }, this.opts.timeoutMs);
      const held: Held = { settle: (outcome) => finish(outcome, outcome.ok ? 'forwarded' : 'refused') };
      queue.push(held);
      onClientGone(() => finish({ ok: false, rejection: null }, 'cancelled'));
      this.demand(route.deploymentId);
    });
  }

  /** Deployments with requests held now. */
  heldDeployments(): IterableIterator<number> {
    return this.queues.keys();
  }

  /** After every routing-table update: release what can go, refuse what cannot wait (routes by deployment id). */
  release(routes: Pick<ReadonlyMap<number, Route>, 'get'>): void {
    for (const [id, queue] of [...this.queues]) {
      const route = routes.get(id);
      let outcome: HoldOutcome | null = null;
      if (!route) outcome = { ok: false, rejection: { status: 404, code: 'not_found', message: 'the deployment was deleted while this request waited' } };
      else if (route.paused) outcome = { ok: false, rejection: { status: 503, code: 'unavailable', message: `deployment ${route.name} was paused while this request waited` } };
      else if (route.replicas.length > 0) outcome = { ok: true, route };
      if (outcome === null) continue;
      this.queues.delete(id);
      // Arrival order: the first held is the first forwarded.
      for (const held of queue) held.settle(outcome);
    }
  }

  /** Refuses everything still held (the gateway is closing). */
  close(): void {
    for (const [, queue] of [...this.queues]) {
      for (const held of [...queue]) held.settle({ ok: false, rejection: { status: 503, code: 'unavailable', message: 'the gateway is shutting down' } });
    }
    this.queues.clear();
  }
}
