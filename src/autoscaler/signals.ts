// Owns turning what the autoscaler reads each tick into the figures decide() scales on, for
// the metrics other than concurrency, per unit (a deployment, or one revision of a split):
// one reading a second of the gauges — the engines' waiting requests plus the gateway's
// flow-control queue (queue_depth), the engines' KV cache in use (kv_cache) — kept as the
// unit's own short history, and their means over the stable and panic windows; for ttft, the
// p90 of the gateway's 5-second steps over each window. Pure: the autoscaler keeps the history.

import type { AutoscalingMetric } from '../domain/autoscaling-signal.js';
import { STATS_STEP_MS, ttftQuantile, windowStats, type RevisionStep } from '../domain/revision-stats.js';
import type { AutoscaleWindows, SignalFigures, SignalWindow } from './decide.js';

/** The quantile of time to first token the ttft metric's target is an objective for. */
export const TTFT_QUANTILE = 0.9;

/** One second of a unit's gauge: its ready replicas, and the metric summed over them (null: none reported). */
export interface SignalReading {
  /** Start of the second (ms). */
  second: number;
  ready: number;
  /** queue_depth: requests waiting in all; kv_cache: percent × replicas (the mean of those reporting, times ready). */
  total: number | null;
}

/** What one ready replica's engine said at its last scrape (null fields: it does not say). */
export interface EngineReading {
  waiting: number | null;
  kvCachePercent: number | null;
}

/**
 * The reading of one second for `metric`: `engines` are the unit's ready replicas (null: nothing
 * known of one), `queued` the unit's share of the gateway's flow-control queue. Without a
 * ready replica the reading has no total: per replica means nothing then.
 */
export function readingOf(metric: AutoscalingMetric, engines: readonly (EngineReading | null)[], queued: number, now: number): SignalReading {
  const second = now - (now % 1000);
  const ready = engines.length;
  if (ready === 0) return { second, ready, total: null };
  if (metric === 'queue_depth') return { second, ready, total: engines.reduce((s, e) => s + (e?.waiting ?? 0), 0) + queued };
  if (metric === 'kv_cache') {
    const reported = engines.map((e) => e?.kvCachePercent ?? null).filter((p): p is number => p !== null);
    if (reported.length === 0) return { second, ready, total: null };
    return { second, ready, total: (reported.reduce((s, p) => s + p, 0) / reported.length) * ready };
  }
  return { second, ready, total: null };
}

/** `history` with `reading` in (replacing one of the same second), keeping `keepMs` of it. */
export function remember(history: readonly SignalReading[], reading: SignalReading, keepMs: number): SignalReading[] {
  const kept = history.filter((r) => r.second !== reading.second && r.second >= reading.second - keepMs);
  kept.push(reading);
  return kept;
}

function gaugeWindow(history: readonly SignalReading[], now: number, windowMs: number): SignalWindow {
  let total = 0;
  let replicas = 0;
  let n = 0;
  for (const r of history) {
    if (r.second < now - windowMs || r.total === null || r.ready === 0) continue;
    total += r.total;
    replicas += r.ready;
    n++;
  }
  // The mean per replica is weighted by replica-seconds: a second with more replicas spreads the same load thinner.
  return n === 0 ? { value: null, replicas: 0 } : { value: total / replicas, replicas: replicas / n };
}

function meanReady(history: readonly SignalReading[], now: number, windowMs: number, readyNow: number): number {
  const within = history.filter((r) => r.second >= now - windowMs);
  return within.length === 0 ? readyNow : within.reduce((s, r) => s + r.ready, 0) / within.length;
}

function ttftWindow(steps: readonly RevisionStep[], history: readonly SignalReading[], now: number, windowMs: number, readyNow: number): SignalWindow {
  // A window takes whole steps, so it reaches back up to a step further: so do its replicas.
  return { value: ttftQuantile(windowStats(steps, now, windowMs).ttft, TTFT_QUANTILE), replicas: meanReady(history, now, windowMs + STATS_STEP_MS, readyNow) };
}

/**
 * The metric over the stable and the panic window: the mean per ready replica of the gauge's
 * readings (queue_depth, kv_cache), or the p90 time to first token of the unit's steps (ttft).
 */
export function signalFigures(
  metric: Exclude<AutoscalingMetric, 'concurrency'>,
  history: readonly SignalReading[],
  steps: readonly RevisionStep[],
  now: number,
  windows: Pick<AutoscaleWindows, 'stableMs' | 'panicMs'>,
  readyNow: number,
): SignalFigures {
  if (metric === 'ttft') {
    return { stable: ttftWindow(steps, history, now, windows.stableMs, readyNow), panic: ttftWindow(steps, history, now, windows.panicMs, readyNow) };
  }
  return { stable: gaugeWindow(history, now, windows.stableMs), panic: gaugeWindow(history, now, windows.panicMs) };
}
