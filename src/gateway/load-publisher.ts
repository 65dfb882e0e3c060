// Owns telling the autoscaler this gateway's load through the store, wherever the autoscaler
// runs: once a second, the recent one-second concurrency buckets, held requests and in-flight
// counts of every deployment it has seen, and the in-flight count of each replica holding requests
// (domain/load-report.ts), published under this gateway's own name with a short time to live,
// so a gateway that stops counts for nothing a few seconds later. A failed publish is logged
// once until one succeeds again; the gateway serves on regardless.

import type { Logger } from 'pino';
import { LOAD_TOPIC, type LoadReport } from '../domain/load-report.js';
import type { Store } from '../store/store.js';
import type { Activator } from './activator.js';
import type { InflightTracker } from './inflight.js';
import type { RoutingTable } from './routing-table.js';

export interface LoadPublisherOptions {
  /** This gateway's name among publishers (unique per process). */
  publisher: string;
  intervalMs: number;
  /** How long a report counts without a newer one. */
  ttlMs: number;
  /** Seconds of history per deployment: the autoscaler's longest window. */
  windowSeconds: number;
}

export class LoadPublisher {
  private timer: NodeJS.Timeout | null = null;
  private failing = false;
  private publishing: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly inflight: Pick<InflightTracker, 'deploymentIds' | 'concurrency' | 'deploymentInflight' | 'busyReplicas'>,
    private readonly activator: Pick<Activator, 'held'>,
    private readonly table: Pick<RoutingTable, 'routes'>,
    private readonly log: Logger,
    readonly opts: LoadPublisherOptions,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.publish(), this.opts.intervalMs);
    this.timer.unref();
    void this.publish();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.publishing;
  }

  /** This gateway's load now. */
  report(now = Date.now()): LoadReport {
    const deployments: LoadReport['deployments'] = {};
    const ids = new Set(this.inflight.deploymentIds());
    for (const route of this.table.routes()) if (this.activator.held(route.deploymentId) > 0) ids.add(route.deploymentId);
    for (const id of ids) {
      deployments[id] = {
        samples: this.inflight.concurrency(id).slice(-this.opts.windowSeconds),
        held: this.activator.held(id),
        inflight: this.inflight.deploymentInflight(id),
      };
    }
    // From the tracker, not the routing table: a draining replica has left the table while its
    // streams still run, and the drain waits for exactly those.
    const replicas: LoadReport['replicas'] = {};
    for (const [id, n] of this.inflight.busyReplicas()) replicas[id] = n;
    return { at: now, deployments, replicas };
  }

  publish(): Promise<void> {
    if (this.publishing) return this.publishing;
    this.publishing = this.store
      .publishReport(LOAD_TOPIC, this.opts.publisher, JSON.stringify(this.report()), this.opts.ttlMs)
      .then(
        () => {
          if (this.failing) this.log.info('load reports to the store resumed');
          this.failing = false;
        },
        (err: unknown) => {
          if (!this.failing) this.log.warn({ err }, 'cannot report load to the store; the autoscaler does not see this gateway until it can');
          this.failing = true;
        },
      )
      .finally(() => {
        this.publishing = null;
      });
    return this.publishing;
  }
}
