// Owns /metrics for a process whose gateway runs in worker processes: on each scrape, the
// primary's own metrics and every worker's are merged into one exposition with prom-client's
// aggregation — counters and histograms summed, gauges summed unless the metric says
// otherwise (the store's health takes the minimum; ready replicas, which every worker routes
// to alike, the maximum) — so a scrape sees one gateway, as with a single process.

import { AggregatorRegistry, Gauge, type Registry } from 'prom-client';
import type { Exposition } from './registry.js';

export type MetricsJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/**
 * Where the workers' metrics come from: those that answered within the timeout, and the
 * counters and histograms of workers that have exited, carried on so that a merged counter
 * never goes down when a worker is replaced.
 */
export interface WorkerMetricsSource {
  collect(timeoutMs: number): Promise<{ answered: MetricsJson[]; carried: MetricsJson }>;
}

/** Several processes' metrics as one list, each metric merged by its aggregator (sum unless it says otherwise). */
export function mergeMetrics(parts: MetricsJson[]): Promise<MetricsJson> {
  return AggregatorRegistry.aggregate(parts).getMetricsAsJSON();
}

/** A worker that has not answered in this long is left out of the scrape (and the scraped count says so). */
const WORKER_ANSWER_TIMEOUT_MS = 2_000;

export function clusterExposition(own: Registry, workers: WorkerMetricsSource): Exposition {
  const scraped = new Gauge({
    name: 'infergate_gateway_workers_scraped',
    help: 'Gateway workers whose metrics this scrape includes; fewer than infergate_gateway_workers means some did not answer in time',
    registers: [own],
  });
  return {
    contentType: own.contentType,
    async metrics(): Promise<string> {
      const { answered, carried } = await workers.collect(WORKER_ANSWER_TIMEOUT_MS);
      scraped.set(answered.length);
      const mine = await own.getMetricsAsJSON();
      return AggregatorRegistry.aggregate([mine, ...answered, carried]).metrics();
    },
  };
}
