// Owns telling the autoscaler this gateway's load through the store, wherever the autoscaler
// runs: once a second, the recent one-second concurrency buckets, held, in-flight and queued
// requests of every deployment it has seen, per revision its concurrency and 5-second steps,
// the in-flight count of each replica holding requests and what each routed replica's engine
// last said of its queue and KV cache (domain/load-report.ts), published under this gateway's
// own name with a short time to live, so a gateway that stops counts for nothing a few seconds
// later. A failed publish is logged once until one succeeds again; the gateway serves on
// regardless.

import type { Logger } from 'pino';
import { LOAD_TOPIC, type EngineReport, type LoadReport, type RevisionLoad } from '../domain/load-report.js';
import type { Store } from '../store/store.js';
import type { Activator } from './activator.js';
import type { InflightTracker } from './inflight.js';
import type { RevisionHistory } from './revision-history.js';
import type { RoutingTable } from './routing-table.js';

/** What a report is made of: the gateway's books (gateway.ts: Gateway has them all). */
export interface LoadPublisherSource {
  inflight: Pick<InflightTracker, 'deploymentIds' | 'concurrency' | 'deploymentInflight' | 'busyReplicas' | 'revisionIds' | 'revisionConcurrency'>;
  activator: Pick<Activator, 'held' | 'heldDeployments'>;
  table: Pick<RoutingTable, 'servingRoutes'>;
  revisionHistory: Pick<RevisionHistory, 'deploymentIds' | 'revisions' | 'steps'>;
  queued(deploymentId: number): number;
  /** Deployments with requests waiting in flow control now. */
  queuedDeployments(): Iterable<number>;
  engineSignals(replicaId: number): EngineReport | null;
}

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
    private readonly source: LoadPublisherSource,
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
    const { inflight, activator, table, revisionHistory } = this.source;
    const deployments: LoadReport['deployments'] = {};
    // Those the gateway has figures of: a deployment idle at zero is in none of these and costs nothing here.
    const ids = new Set([...inflight.deploymentIds(), ...revisionHistory.deploymentIds(), ...activator.heldDeployments(), ...this.source.queuedDeployments()]);
    for (const id of ids) {
      const revisions: Record<string, RevisionLoad> = {};
      for (const revision of new Set([...inflight.revisionIds(id), ...revisionHistory.revisions(id)])) {
        revisions[revision] = { samples: inflight.revisionConcurrency(id, revision).slice(-this.opts.windowSeconds), steps: revisionHistory.steps(id, revision) };
      }
      deployments[id] = {
        samples: inflight.concurrency(id).slice(-this.opts.windowSeconds),
        held: activator.held(id),
        inflight: inflight.deploymentInflight(id),
        queued: this.source.queued(id),
        revisions,
      };
    }
    // From the tracker, not the routing table: a draining replica has left the table while its
    // streams still run, and the drain waits for exactly those.
    const replicas: LoadReport['replicas'] = {};
    for (const [id, n] of inflight.busyReplicas()) replicas[id] = n;
    const engines: Record<string, EngineReport> = {};
    for (const route of table.servingRoutes()) {
      for (const r of route.replicas) {
        const e = this.source.engineSignals(r.id);
        if (e !== null) engines[r.id] = e;
      }
    }
    return { at: now, deployments, replicas, engines };
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
