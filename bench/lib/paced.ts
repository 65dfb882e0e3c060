// Bench helper: an open-loop load at a steady rate — one request every 1/rate s, spread evenly,
// over a pool of keep-alive connections — for latency at a given load. autocannon's own rate
// limit sends each connection's quota for the second back to back at the start of the second
// and then waits, so its "500 req/s" is a burst every second and its p99 measures the burst.
// Latency runs from the moment the request is handed to the pool (a wait for a free connection
// counts) to the last byte of the answer; the certificate chain is verified (unlike autocannon).

import { Pool } from 'undici';
import { cpuMicros } from './processes.js';

export interface PacedTarget {
  name: string;
  url: string;
  /** SNI and Host for TLS targets. */
  host?: string;
  ca?: string;
  headers?: Record<string, string>;
  /** The process whose CPU is charged to the requests. */
  pid?: number;
  bodies: ReadonlyArray<{ body: Buffer; session: string }>;
}

export interface PacedResult {
  target: string;
  /** Offered requests per second. */
  rate: number;
  /** Answered within the run, per second of it (sending plus draining). */
  rps: number;
  requests: number;
  p50ms: number;
  p99ms: number;
  non2xx: number;
  errors: number;
  /** Requests still unanswered when the run gave up waiting (the target could not keep up). */
  abandoned: number;
  /**
   * How far behind its schedule the generator sent, ms: p99 and worst over the requests. A busy
   * machine delays the bench process's timer, and the late requests then leave together.
   */
  lagP99Ms: number;
  maxLagMs: number;
  cpuUsPerRequest: number | null;
  cpuCores: number | null;
}

const percentile = (sorted: number[], p: number): number => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);

interface Run {
  requests: number;
  latencies: number[];
  non2xx: number;
  errors: number;
  abandoned: number;
  lags: number[];
  elapsedMs: number;
}

function runFor(pool: Pool, target: PacedTarget, rate: number, seconds: number, startAt: number): Promise<Run> {
  const total = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const run: Run = { requests: 0, latencies: [], non2xx: 0, errors: 0, abandoned: 0, lags: [], elapsedMs: 0 };
  const pending = new Set<Promise<void>>();
  let abandoning = false;
  const headers = { 'content-type': 'application/json', ...(target.host ? { host: target.host } : {}), ...(target.headers ?? {}) };
  const send = (i: number) => {
    const r = target.bodies[(startAt + i) % target.bodies.length]!;
    const t0 = performance.now();
    const p = pool
      .request({ path: '/v1/chat/completions', method: 'POST', headers: { ...headers, 'x-session-id': r.session }, body: r.body })
      .then(async (res) => {
        await res.body.arrayBuffer();
        run.requests++;
        if (res.statusCode >= 200 && res.statusCode < 300) run.latencies.push(performance.now() - t0);
        else run.non2xx++;
      })
      .catch(() => {
        if (abandoning) run.abandoned++;
        else run.errors++;
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  };
  const started = performance.now();
  return new Promise<void>((sent) => {
    let next = 0;
    // A 1 ms tick sends whatever is due by now, so a late tick catches up instead of drifting.
    const timer = setInterval(() => {
      const now = performance.now();
      while (next < total && started + next * interval <= now) {
        run.lags.push(now - (started + next * interval));
        send(next++);
      }
      if (next >= total) {
        clearInterval(timer);
        sent();
      }
    }, 1);
  }).then(async () => {
    // A target that cannot keep up would drain for long: give it as long again as the run, at most.
    const deadline = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), Math.max(5_000, seconds * 1000)).unref());
    const outcome = await Promise.race([Promise.all([...pending]).then(() => 'done' as const), deadline]);
    if (outcome === 'late') {
      abandoning = true;
      await pool.destroy();
      await Promise.all([...pending]);
    }
    run.elapsedMs = performance.now() - started;
    run.latencies.sort((a, b) => a - b);
    run.lags.sort((a, b) => a - b);
    return run;
  });
}

/** One warm-up second, then `seconds` at `rate` requests/s, with the target process's CPU over the measured part. */
export async function measurePaced(target: PacedTarget, opts: { rate: number; seconds: number; connections: number }): Promise<PacedResult> {
  const url = new URL(target.url);
  const pool = new Pool(url.origin, {
    connections: opts.connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    ...(url.protocol === 'https:' ? { connect: { ca: target.ca, servername: target.host } } : {}),
  });
  try {
    const warm = await runFor(pool, target, opts.rate, 1, 0);
    if (warm.abandoned > 0) {
      return { target: target.name, rate: opts.rate, rps: 0, requests: 0, p50ms: NaN, p99ms: NaN, non2xx: warm.non2xx, errors: warm.errors, abandoned: warm.abandoned, lagP99Ms: NaN, maxLagMs: NaN, cpuUsPerRequest: null, cpuCores: null };
    }
    const cpuBefore = target.pid ? cpuMicros(target.pid) : 0;
    const r = await runFor(pool, target, opts.rate, opts.seconds, Math.round(opts.rate));
    const used = target.pid ? cpuMicros(target.pid) - cpuBefore : 0;
    const ms = (p: number, xs = r.latencies) => Math.round(percentile(xs, p) * 1000) / 1000;
    return {
      target: target.name,
      rate: opts.rate,
      rps: Math.round((r.requests / (r.elapsedMs / 1000)) * 100) / 100,
      requests: r.requests,
      p50ms: ms(50),
      p99ms: ms(99),
      non2xx: r.non2xx,
      errors: r.errors,
      abandoned: r.abandoned,
      lagP99Ms: ms(99, r.lags),
      maxLagMs: ms(100, r.lags),
      cpuUsPerRequest: target.pid && r.requests > 0 ? Math.round((used / r.requests) * 100) / 100 : null,
      cpuCores: target.pid ? Math.round((used / (r.elapsedMs * 1000)) * 100) / 100 : null,
    };
  } finally {
    if (!pool.destroyed) await pool.close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Every target once per round, in turn; per target, the totals and the medians of its rounds. */
export async function pacedRounds(targets: PacedTarget[], rounds: number, opts: { rate: number; seconds: number; connections: number }): Promise<PacedResult[]> {
  const runs = new Map<string, PacedResult[]>(targets.map((t) => [t.name, []]));
  for (let r = 0; r < rounds; r++) for (const t of targets) runs.get(t.name)!.push(await measurePaced(t, opts));
  return targets.map((t) => {
    const rs = runs.get(t.name)!;
    const m = (f: (x: PacedResult) => number | null) => {
      const xs = rs.map(f).filter((x): x is number => x !== null && !Number.isNaN(x));
      return xs.length ? median(xs) : null;
    };
    return {
      target: t.name,
      rate: opts.rate,
      rps: m((x) => x.rps) ?? 0,
      requests: rs.reduce((a, x) => a + x.requests, 0),
      p50ms: m((x) => x.p50ms) ?? NaN,
      p99ms: m((x) => x.p99ms) ?? NaN,
      non2xx: rs.reduce((a, x) => a + x.non2xx, 0),
      errors: rs.reduce((a, x) => a + x.errors, 0),
      abandoned: rs.reduce((a, x) => a + x.abandoned, 0),
      lagP99Ms: Math.max(0, ...rs.map((x) => x.lagP99Ms).filter((x) => !Number.isNaN(x))),
      maxLagMs: Math.max(0, ...rs.map((x) => x.maxLagMs).filter((x) => !Number.isNaN(x))),
      cpuUsPerRequest: m((x) => x.cpuUsPerRequest),
      cpuCores: m((x) => x.cpuCores),
    };
  });
}
