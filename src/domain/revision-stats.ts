// Owns the shape of what the gateways measure per revision for comparing them and for the
// `ttft` signal: requests, errors (5xx), completion tokens and a histogram of time to first
// token, in fixed 5-second steps; summing and quantiles over a window. Pure and Node-free: the
// gateway fills it, the load report carries it, the autoscaler and the control API read it.

/** Upper bounds of the time-to-first-token histogram, in ms; the last bucket is everything above. */
export const TTFT_BUCKETS_MS: readonly number[] = Object.freeze([10, 25, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10_000, 30_000, 60_000]);

/** The length of one step of the per-revision history, in ms (the Activity tab's step too). */
export const STATS_STEP_MS = 5000;
/** Steps kept: five minutes, the console's comparison window. */
export const STATS_STEPS = 60;

/** What one revision did in one window (a step, or the sum of steps). */
export interface RevisionStats {
  requests: number;
  /** Answered with a 5xx status (by the gateway or the replica). */
  errors: number;
  completion_tokens: number;
  /** Counts per TTFT_BUCKETS_MS bucket, plus one for above the last bound (length TTFT_BUCKETS_MS.length + 1). */
  ttft: number[];
}

/** One step of a revision's history: its start (ms since the epoch, a multiple of STATS_STEP_MS) and figures. */
export interface RevisionStep extends RevisionStats {
  start: number;
}

export function emptyStats(): RevisionStats {
  return { requests: 0, errors: 0, completion_tokens: 0, ttft: new Array<number>(TTFT_BUCKETS_MS.length + 1).fill(0) };
}

/** The bucket a first-token time falls in. */
export function ttftBucket(ms: number): number {
  const i = TTFT_BUCKETS_MS.findIndex((bound) => ms <= bound);
  return i === -1 ? TTFT_BUCKETS_MS.length : i;
}

/** Adds `b` into `a` (in place) and returns `a`. */
export function addStats(a: RevisionStats, b: RevisionStats): RevisionStats {
  a.requests += b.requests;
  a.errors += b.errors;
  a.completion_tokens += b.completion_tokens;
  for (let i = 0; i < a.ttft.length; i++) a.ttft[i]! += b.ttft[i] ?? 0;
  return a;
}

/** The sum of the steps that started within `windowMs` before `now`. */
export function windowStats(steps: readonly RevisionStep[], now: number, windowMs: number): RevisionStats {
  const from = now - windowMs;
  const sum = emptyStats();
  for (const s of steps) if (s.start >= from - STATS_STEP_MS && s.start + STATS_STEP_MS > from) addStats(sum, s);
  return sum;
}

/**
 * The q-quantile (0–1) of the histogram in ms, interpolated linearly inside its bucket
 * (Prometheus's histogram_quantile); null without samples. Above the last bound: that bound.
 */
export function ttftQuantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((s, c) => s + c, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i]!;
    if (seen + c >= rank && c > 0) {
      if (i >= TTFT_BUCKETS_MS.length) return TTFT_BUCKETS_MS[TTFT_BUCKETS_MS.length - 1]!;
      const lower = i === 0 ? 0 : TTFT_BUCKETS_MS[i - 1]!;
      const upper = TTFT_BUCKETS_MS[i]!;
      return lower + (upper - lower) * ((rank - seen) / c);
    }
    seen += c;
  }
  return TTFT_BUCKETS_MS[TTFT_BUCKETS_MS.length - 1]!;
}
