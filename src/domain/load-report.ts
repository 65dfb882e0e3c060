// Owns the shape of what a gateway tells the autoscaler through the store, once a second (the
// `load` topic of Store.publishReport): per deployment, the time-weighted concurrency of its
// recent one-second buckets, the requests held for it at zero and those in flight; per
// replica, its requests in flight. Any number of gateways (and gateway workers) publish;
// the autoscaler sums them (mergeLoad). A publisher that stops counts for nothing once its
// report expires. Pure: encoding, checked decoding, merging.

export const LOAD_TOPIC = 'load';

/** One second of a deployment's concurrency: its start (ms since the epoch) and average. */
export interface LoadSample {
  second: number;
  average: number;
}

export interface DeploymentLoad {
  samples: LoadSample[];
  held: number;
  inflight: number;
}

export interface LoadReport {
  /** When it was made (ms since the epoch, the publisher's clock). */
  at: number;
  deployments: Record<string, DeploymentLoad>;
  replicas: Record<string, number>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const count = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

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
  for (const [id, d] of Object.entries(body.deployments)) {
    if (!isRecord(d) || !Array.isArray(d.samples) || !count(d.held) || !count(d.inflight)) return null;
    const samples: LoadSample[] = [];
    for (const s of d.samples as unknown[]) {
      if (!isRecord(s) || !count(s.second) || !count(s.average)) return null;
      samples.push({ second: s.second, average: s.average });
    }
    deployments[id] = { samples, held: d.held, inflight: d.inflight };
  }
  const replicas: Record<string, number> = {};
  for (const [id, n] of Object.entries(body.replicas)) {
    if (!count(n)) return null;
    replicas[id] = n;
  }
  return { at: body.at, deployments, replicas };
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

/** What all publishers together report. */
export interface MergedLoad {
  /** Per deployment, the sum over publishers of each second's average, oldest first. */
  samples: Map<number, LoadSample[]>;
  held: Map<number, number>;
  inflight: Map<number, number>;
  replicas: Map<number, number>;
}

/** Sums the reports: each deployment's series with sumSeries, counts by addition. */
export function mergeLoad(reports: Iterable<LoadReport>): MergedLoad {
  const series = new Map<number, LoadSample[][]>();
  const merged: MergedLoad = { samples: new Map(), held: new Map(), inflight: new Map(), replicas: new Map() };
  const add = (m: Map<number, number>, k: number, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const r of reports) {
    for (const [key, d] of Object.entries(r.deployments)) {
      const id = Number(key);
      series.set(id, [...(series.get(id) ?? []), d.samples]);
      add(merged.held, id, d.held);
      add(merged.inflight, id, d.inflight);
    }
    for (const [key, n] of Object.entries(r.replicas)) add(merged.replicas, Number(key), n);
  }
  for (const [id, s] of series) merged.samples.set(id, sumSeries(s));
  return merged;
}
