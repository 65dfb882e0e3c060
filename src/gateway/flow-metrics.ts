// Owns the Prometheus metrics of flow control (docs/operations.md#metrics): how many requests
// wait per deployment and class and each replica's concurrency limit (both read at scrape
// time, so they cost the request path nothing), how long requests waited, and how many were
// refused, by class and reason.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { PRIORITIES, type Priority } from '../domain/priority.js';
import type { FlowMeters, ShedReason } from './flow-control.js';
import type { Route } from './routing-table.js';

export class FlowMetrics implements FlowMeters {
  private readonly wait: Histogram<'deployment' | 'priority'>;
  private readonly shedTotal: Counter<'deployment' | 'priority' | 'reason'>;

  constructor(
    registry: Registry,
    routes: () => Iterable<Route>,
    waiting: (deploymentId: number) => Record<Priority, number> | null,
    /** The in-flight count at which a replica counts as saturated; Infinity: not known. */
    limit: (replicaId: number) => number,
  ) {
    const registers = [registry];
    this.wait = new Histogram({
      name: 'infergate_flow_wait_seconds',
      help: "Time requests waited in a deployment's flow-control queue before dispatch or refusal, by class (X-Priority)",
      labelNames: ['deployment', 'priority'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.shedTotal = new Counter({
      name: 'infergate_flow_shed_total',
      help: 'Requests refused by flow control, by class and reason: wait_timeout, queue_full, displaced (429), unavailable (503)',
      labelNames: ['deployment', 'priority', 'reason'],
      registers,
    });
    new Gauge({
      name: 'infergate_flow_queue_length',
      help: "Requests waiting in a deployment's flow-control queue, by class",
      labelNames: ['deployment', 'priority'],
      registers,
      collect() {
        this.reset();
        for (const route of routes()) {
          const counts = waiting(route.deploymentId);
          for (const p of PRIORITIES) this.set({ deployment: route.name, priority: p }, counts?.[p] ?? 0);
        }
      },
    });
    new Gauge({
      name: 'infergate_replica_concurrency_limit',
      help: "In-flight requests at which flow control counts a replica as saturated: the latency model's learnt limit or the engine's batch when it queued, whichever is lower; absent while neither is known",
      labelNames: ['deployment', 'replica'],
      registers,
      collect() {
        this.reset();
        for (const route of routes()) {
          for (const r of route.replicas) {
            const n = limit(r.id);
            if (Number.isFinite(n)) this.set({ deployment: route.name, replica: String(r.id) }, n);
          }
        }
      },
    });
  }

  waited(deployment: string, priority: Priority, seconds: number): void {
    this.wait.labels(deployment, priority).observe(seconds);
  }

  shed(deployment: string, priority: Priority, reason: ShedReason): void {
    this.shedTotal.labels(deployment, priority, reason).inc();
  }
}
