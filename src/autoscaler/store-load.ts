// Owns the autoscaler's view of load when gateways run in other processes: every gateway
// publishes its load to the store once a second (gateway/load-publisher.ts); before each tick
// the autoscaler reads every live report and sums them with what the gateway in its own
// process measures, if it has one (read directly, not through the store: the fast path).
// If the store cannot be read, the last reports are used until they are older than their
// time to live, then only the local gateway counts.

import type { Logger } from 'pino';
import { LOAD_TOPIC, mergeLoad, parseLoadReport, sumSeries, type LoadReport, type MergedLoad } from '../domain/load-report.js';
import type { Store } from '../store/store.js';
import type { LoadSource } from './autoscaler.js';
import type { ConcurrencySample } from './decide.js';

const EMPTY: MergedLoad = { samples: new Map(), held: new Map(), inflight: new Map(), replicas: new Map() };

export interface LocalLoad extends LoadSource {
  /** In-flight requests at a replica, as the local gateway counts them. */
  inflight(replicaId: number): number;
}

export class StoreLoad implements LoadSource {
  private merged: MergedLoad = EMPTY;
  private readAt = 0;
  private failing = false;

  constructor(
    private readonly store: Store,
    /** The gateway in this process, if any; its own reports in the store are skipped. */
    private readonly local: { load: LocalLoad; publisher: string } | null,
    private readonly log: Logger,
    private readonly staleMs = 5000,
    private readonly now: () => number = Date.now,
  ) {}

  async refresh(): Promise<void> {
    try {
      const raw = await this.store.readReports(LOAD_TOPIC);
      const reports: LoadReport[] = [];
      for (const [publisher, text] of raw) {
        if (publisher === this.local?.publisher) continue;
        const report = parseLoadReport(text);
        if (report) reports.push(report);
      }
      this.merged = mergeLoad(reports);
      this.readAt = this.now();
      if (this.failing) this.log.info('load reports readable again');
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.log.warn({ err }, 'cannot read load reports from the store; the autoscaler sees only this process\'s gateway meanwhile');
      this.failing = true;
    }
  }

  private remote(): MergedLoad {
    return this.now() - this.readAt > this.staleMs ? EMPTY : this.merged;
  }

  samples(deploymentId: number): readonly ConcurrencySample[] {
    const remote = this.remote().samples.get(deploymentId) ?? [];
    const local = this.local?.load.samples(deploymentId) ?? [];
    return sumSeries([local, remote]);
  }

  held(deploymentId: number): number {
    return (this.local?.load.held(deploymentId) ?? 0) + (this.remote().held.get(deploymentId) ?? 0);
  }

  /** In-flight requests at a replica over every gateway (the drain waits for none). */
  inflight(replicaId: number): number {
    return (this.local?.load.inflight(replicaId) ?? 0) + (this.remote().replicas.get(replicaId) ?? 0);
  }
}
