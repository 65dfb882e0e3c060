// Owns the shape of what a gateway tells the autoscaler through the store, once a second (the
// `load` topic of Store.publishReport): per deployment, the time-weighted concurrency of its
// recent one-second buckets, the requests held for it at zero, those in flight and those
// waiting in flow control's queue, and per revision its own concurrency and its 5-second steps
// (requests, errors, tokens, time to first token: domain/revision-stats.ts); per replica, its
// requests in flight and what its engine last said of its queue and KV cache. Any number of
// gateways (and gateway workers) publish; the autoscaler sums them (mergeLoad). A publisher
// that stops counts for nothing once its report expires. Reports of gateways older than the
// per-revision and engine figures are read as having none. Pure: encoding, checked decoding,
// merging.

import { addStats, emptyStats, TTFT_BUCKETS_MS, type RevisionStep } from './revision-stats.js';

export const LOAD_TOPIC = 'load';

/** One second of a deployment's concurrency: its start (ms since the epoch) and average. */
export interface LoadSample {
  second: number;
  average: number;
}

/** One revision of a deployment, as one gateway measured it. */
export interface RevisionLoad {
  /** Time-weighted concurrency of the requests sent to its replicas. */
  samples: LoadSample[];
  /** Its 5-second steps of the last five minutes that have anything in them. */
  steps: RevisionStep[];
}

export interface DeploymentLoad {
  samples: LoadSample[];
  held: number;
  inflight: number;
  /** Requests waiting in the gateway's flow-control queue of the deployment (absent in older reports: 0). */
  queued?: number;
  /** By revision number (absent in older reports: none). */
  revisions?: Record<string, RevisionLoad>;
}

/** What a replica's engine said of its load at its last scrape (vLLM's gauges). */
export interface EngineReport {
  /** Requests waiting in the engine's queue; null: it does not say. */
  waiting: number | null;
  /** KV cache in use, 0–100; null: it does not say. */
  kvCachePercent: number | null;
  /** When it was scraped (ms since the epoch, the publisher's clock). */
  at: number;
}

export interface LoadReport {
  /** When it was made (ms since the epoch, the publisher's clock). */
  at: number;
  deployments: Record<string, DeploymentLoad>;
  replicas: Record<string, number>;
  /** By replica id: fresh engine figures only (absent in older reports: none). */
  engines?: Record<string, EngineReport>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const count = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const countOrNull = (v: unknown): v is number | null => v === null || count(v);

function parseSamples(raw: unknown): LoadSample[] | null {
  if (!Array.isArray(raw)) return null;
  const samples: LoadSample[] = [];
  for (const s of raw as unknown[]) {
    if (!isRecord(s) || !count(s.second) || !count(s.average)) return null;
    samples.push({ second: s.second, average: s.average });
  }
  return samples;
}

function parseSteps(raw: unknown): RevisionStep[] | null {
  if (!Array.isArray(raw)) return null;
  const steps: RevisionStep[] = [];
  for (const s of raw as unknown[]) {
    if (!isRecord(s) || !count(s.start) || !count(s.requests) || !count(s.errors) || !count(s.completion_tokens)) return null;
    if (!Array.isArray(s.ttft) || s.ttft.length !== TTFT_BUCKETS_MS.length + 1 || !(s.ttft as unknown[]).every(count)) return null;
    steps.push({ start: s.start, requests: s.requests, errors: s.errors, completion_tokens: s.completion_tokens, ttft: (s.ttft as number[]).slice() });
  }
  return steps;
}

function parseDeployment(d: unknown): DeploymentLoad | null {
  if (!isRecord(d) || !count(d.held) || !count(d.inflight)) return null;
  const samples = parseSamples(d.samples);
  if (samples === null) return null;
  const out: DeploymentLoad = { samples, held: d.held, inflight: d.inflight };
  if (d.queued !== undefined) {
    if (!count(d.queued)) return null;
    out.queued = d.queued;
  }
  if (d.revisions !== undefined) {
    if (!isRecord(d.revisions)) return null;
    const revisions: Record<string, RevisionLoad> = {};
    for (const [revision, r] of Object.entries(d.revisions)) {
      if (!/^\d+$/.test(revision) || !isRecord(r)) return null;
      const revisionSamples = parseSamples(r.samples);
      const steps = parseSteps(r.steps);
      if (revisionSamples === null || steps === null) return null;
      revisions[revision] = { samples: revisionSamples, steps };
    }
    out.revisions = revisions;
  }
  return out;
}

/** A report from the store, or null when it is not one (another version, a corrupt write). */
export function parseLoadReport(text: string): LoadReport | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isRecord(body) || !count(body.at) || !isRecord(body.deployments) || !isRecord(body.replicas)) return null;
  const deployments: Record<string, DeploymentLoad> = {};
  for (const [id, raw] of Object.entries(body.deployments)) {
    const d = parseDeployment(raw);
    if (d === null) return null;
    deployments[id] = d;
  }
  const replicas: Record<string, number> = {};
  for (const [id, n] of Object.entries(body.replicas)) {
    if (!count(n)) return null;
    replicas[id] = n;
  }
  const report: LoadReport = { at: body.at, deployments, replicas };
  if (body.engines !== undefined) {
    if (!isRecord(body.engines)) return null;
    const engines: Record<string, EngineReport> = {};
    for (const [id, e] of Object.entries(body.engines)) {
      if (!isRecord(e) || !countOrNull(e.waiting) || !countOrNull(e.kvCachePercent) || !count(e.at)) return null;
      engines[id] = { waiting: e.waiting, kvCachePercent: e.kvCachePercent, at: e.at };
    }
    report.engines = engines;
  }
  return report;
}

/**
 * The per-second sum of several series of one deployment, oldest first, ending at the
 * earliest last second among them: a second one series has not closed yet would read as a drop.
 */
export function sumSeries(series: readonly (readonly LoadSample[])[]): LoadSample[] {
  const live = series.filter((s) => s.length > 0);
  if (live.length === 0) return [];
  if (live.length === 1) return [...live[0]!];
  const cut = Math.min(...live.map((s) => s.at(-1)!.second));
  const sums = new Map<number, number>();
  for (const s of live) for (const { second, average } of s) if (second <= cut) sums.set(second, (sums.get(second) ?? 0) + average);
  return [...sums.entries()].sort(([a], [b]) => a - b).map(([second, average]) => ({ second, average }));
}

/**
 * The step-by-step sum of several lists of 5-second steps (publishers, or a deployment's
 * revisions), oldest first; new objects, the inputs are left as they are. Steps are aligned on
 * the epoch, so every publisher's step of the same start is the same five seconds (the one
 * being filled included: it is partial in each, and so is its sum).
 */
export function sumSteps(lists: readonly (readonly RevisionStep[])[]): RevisionStep[] {
  const byStart = new Map<number, RevisionStep>();
  for (const list of lists) {
    for (const s of list) {
      let sum = byStart.get(s.start);
      if (sum === undefined) {
        sum = { start: s.start, ...emptyStats() };
        byStart.set(s.start, sum);
      }
      addStats(sum, s);
    }
  }
  return [...byStart.values()].sort((a, b) => a.start - b.start);
}

/** What all publishers together report. */
export interface MergedLoad {
  /** Per deployment, the sum over publishers of each second's average, oldest first. */
  samples: Map<number, LoadSample[]>;
  held: Map<number, number>;
  inflight: Map<number, number>;
  queued: Map<number, number>;
  /** Per deployment, per revision: concurrency summed as `samples`. */
  revisionSamples: Map<number, Map<number, LoadSample[]>>;
  /** Per deployment, per revision: steps summed by start. */
  revisionSteps: Map<number, Map<number, RevisionStep[]>>;
  replicas: Map<number, number>;
  /** Per replica, the freshest engine figures any publisher had. */
  engines: Map<number, EngineReport>;
}

export function emptyMergedLoad(): MergedLoad {
  return { samples: new Map(), held: new Map(), inflight: new Map(), queued: new Map(), revisionSamples: new Map(), revisionSteps: new Map(), replicas: new Map(), engines: new Map() };
}

/** Sums the reports: each deployment's (and revision's) series with sumSeries, steps with sumSteps, counts by addition; engines: the freshest. */
export function mergeLoad(reports: Iterable<LoadReport>): MergedLoad {
  const series = new Map<number, LoadSample[][]>();
  const revisionSeries = new Map<number, Map<number, { samples: LoadSample[][]; steps: RevisionStep[][] }>>();
  const merged = emptyMergedLoad();
  const add = (m: Map<number, number>, k: number, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const r of reports) {
    for (const [key, d] of Object.entries(r.deployments)) {
      const id = Number(key);
      series.set(id, [...(series.get(id) ?? []), d.samples]);
      add(merged.held, id, d.held);
      add(merged.inflight, id, d.inflight);
      add(merged.queued, id, d.queued ?? 0);
      for (const [revisionKey, rl] of Object.entries(d.revisions ?? {})) {
        let byRevision = revisionSeries.get(id);
        if (!byRevision) revisionSeries.set(id, (byRevision = new Map()));
        const revision = Number(revisionKey);
        let lists = byRevision.get(revision);
        if (!lists) byRevision.set(revision, (lists = { samples: [], steps: [] }));
        lists.samples.push(rl.samples);
        lists.steps.push(rl.steps);
      }
    }
    for (const [key, n] of Object.entries(r.replicas)) add(merged.replicas, Number(key), n);
    for (const [key, e] of Object.entries(r.engines ?? {})) {
      const id = Number(key);
      const known = merged.engines.get(id);
      if (known === undefined || e.at > known.at) merged.engines.set(id, e);
    }
  }
  for (const [id, s] of series) merged.samples.set(id, sumSeries(s));
  for (const [id, byRevision] of revisionSeries) {
    const samples = new Map<number, LoadSample[]>();
    const steps = new Map<number, RevisionStep[]>();
    for (const [revision, lists] of byRevision) {
      samples.set(revision, sumSeries(lists.samples));
      steps.set(revision, sumSteps(lists.steps));
    }
    merged.revisionSamples.set(id, samples);
    merged.revisionSteps.set(id, steps);
  }
  return merged;
}
