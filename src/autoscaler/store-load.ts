// Owns the autoscaler's view of load when gateways run in other processes: every gateway
// publishes its load to the store once a second (gateway/load-publisher.ts); before each tick
// the autoscaler reads every live report and sums them with what the gateway in its own
// process measures, if it has one (read directly, not through the store: the fast path) —
// concurrency per deployment and per revision, held and queued requests, in-flight requests
// per replica, the revisions' 5-second steps; of the replicas' engine figures it keeps the
// freshest. The same steps answer the control API's comparison of revisions
// (RevisionMetricsSource). If the store cannot be read, the last reports are used until they
// are older than their time to live, then only the local gateway counts.

import type { Logger } from 'pino';
import { emptyMergedLoad, LOAD_TOPIC, mergeLoad, parseLoadReport, sumSeries, sumSteps, type LoadReport, type MergedLoad } from '../domain/load-report.js';
import type { RevisionMetrics, RevisionMetricsSource } from '../domain/ports.js';
import { STATS_STEP_MS, STATS_STEPS, ttftQuantile, windowStats, type RevisionStep } from '../domain/revision-stats.js';
import type { Store } from '../store/store.js';
import type { LoadSource, ReplicaEngineSignals } from './autoscaler.js';
import type { ConcurrencySample } from './decide.js';

const EMPTY: MergedLoad = emptyMergedLoad();

/** Engine figures with when they were scraped (ms since the epoch), so the freshest of several wins. */
export interface TimedEngineSignals extends ReplicaEngineSignals {
  at: number;
}

/** What the gateway in this process measures, read directly. */
export interface LocalLoad extends Omit<LoadSource, 'replicaSignals' | 'refresh'> {
  /** In-flight requests at a replica, as the local gateway counts them. */
  inflight(replicaId: number): number;
  /** A replica's engine as the local gateway last scraped it (fresh figures only). */
  replicaSignals(replicaId: number): TimedEngineSignals | null;
  /** Revisions of a deployment the local gateway has figures of (concurrency or steps). */
  revisions(deploymentId: number): readonly number[];
  /** Deployments with any load at the local gateway (LoadSource.busy). */
  busy(): Iterable<number>;
}

export class StoreLoad implements LoadSource, RevisionMetricsSource {
  private merged: MergedLoad = EMPTY;
  private readAt = 0;
  private failing = false;

  constructor(
    private readonly store: Store,
    /** The gateway in this process, if any; its own reports in the store are skipped. */
    private readonly local: { load: LocalLoad; publisher: string } | null,
    private readonly log: Logger,
    /** How long reports count without a newer read; engine figures older than this do not count either. */
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

  /**
   * Deployments with any load here or in a fresh report: a sample above zero, requests held,
   * queued or in flight. What other gateways report of a deployment idle there is zeros.
   */
  busy(): Set<number> {
    const out = new Set<number>(this.local?.load.busy() ?? []);
    const remote = this.remote();
    const above = (samples: readonly ConcurrencySample[]) => samples.some((s) => s.average > 0);
    for (const counts of [remote.held, remote.queued, remote.inflight]) for (const [id, n] of counts) if (n > 0) out.add(id);
    for (const [id, samples] of remote.samples) if (above(samples)) out.add(id);
    for (const [id, byRevision] of remote.revisionSamples) for (const samples of byRevision.values()) if (above(samples)) out.add(id);
    return out;
  }

  /** In-flight requests at a replica over every gateway (the drain waits for none). */
  inflight(replicaId: number): number {
    return (this.local?.load.inflight(replicaId) ?? 0) + (this.remote().replicas.get(replicaId) ?? 0);
  }

  revisionSamples(deploymentId: number, revision: number): readonly ConcurrencySample[] {
    const remote = this.remote().revisionSamples.get(deploymentId)?.get(revision) ?? [];
    const local = this.local?.load.revisionSamples(deploymentId, revision) ?? [];
    return sumSeries([local, remote]);
  }

  queued(deploymentId: number): number {
    return (this.local?.load.queued(deploymentId) ?? 0) + (this.remote().queued.get(deploymentId) ?? 0);
  }

  /** The freshest figures any gateway has of the replica's engine, if not older than staleMs. */
  replicaSignals(replicaId: number): ReplicaEngineSignals | null {
    const local = this.local?.load.replicaSignals(replicaId) ?? null;
    const remote = this.remote().engines.get(replicaId) ?? null;
    const freshest = local === null ? remote : remote === null || local.at >= remote.at ? local : remote;
    if (freshest === null || this.now() - freshest.at > this.staleMs) return null;
    return { waiting: freshest.waiting, kvCachePercent: freshest.kvCachePercent };
  }

  revisionSteps(deploymentId: number, revision: number | null): readonly RevisionStep[] {
    const local = this.local?.load.revisionSteps(deploymentId, revision) ?? [];
    const remote = this.remote().revisionSteps.get(deploymentId);
    if (remote === undefined) return local;
    const remoteLists = revision === null ? [...remote.values()] : [remote.get(revision) ?? []];
    return sumSteps([local, ...remoteLists]);
  }

  /** Each revision with a request in the window (at most five minutes), oldest revision first. */
  revisions(deploymentId: number, windowSeconds: number): RevisionMetrics[] {
    const seconds = Math.min(STATS_STEPS * STATS_STEP_MS, Math.max(STATS_STEP_MS, windowSeconds * 1000)) / 1000;
    const numbers = new Set<number>([...(this.local?.load.revisions(deploymentId) ?? []), ...(this.remote().revisionSteps.get(deploymentId)?.keys() ?? [])]);
    const now = this.now();
    const out: RevisionMetrics[] = [];
    for (const revision of [...numbers].sort((a, b) => a - b)) {
      const sum = windowStats(this.revisionSteps(deploymentId, revision), now, seconds * 1000);
      if (sum.requests === 0) continue;
      out.push({
        revision,
        requests: sum.requests,
        errors: sum.errors,
        ttft_p50_ms: ttftQuantile(sum.ttft, 0.5),
        ttft_p99_ms: ttftQuantile(sum.ttft, 0.99),
        tokens_per_second: sum.completion_tokens / seconds,
      });
    }
    return out;
  }
}
