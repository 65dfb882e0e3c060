// Bench helper: one autocannon run against a target, with the same settings for every
// target, and the proxy process's CPU time per request measured over the run — closed loop,
// or at an offered rate; the small chat body, or a target's own bodies (long prompts).

import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { cpuMicros } from './processes.js';

/** autocannon (the default, in this process) or wrk (a C program, as the earlier measurements used). */
export type Generator = 'autocannon' | 'wrk';

export interface LoadTarget {
  name: string;
  url: string;
  /** SNI and Host for TLS targets. */
  host?: string;
  /** The platform CA, passed on although autocannon does not verify (see the script). */
  ca?: string;
  /** The process whose CPU is charged to the requests (none for direct). */
  pid?: number;
  /** Several processes whose CPU is charged to the requests (a gateway and its workers), read at each measurement. */
  pids?: () => number[];
  headers?: Record<string, string>;
  /** POST a small chat-completion body (default), or GET with none, as the earlier measurements did. */
  method?: 'POST' | 'GET';
  /** POST these bodies in turn instead, each with its X-Session-Id (autocannon only). */
  bodies?: ReadonlyArray<{ body: Buffer; session: string }>;
}

export interface RunOptions {
  seconds: number;
  connections: number;
  /** Requests per second offered over all connections (autocannon's overallRate); none: closed loop. */
  rate?: number;
  /**
   * Percentiles from every 2xx answer's own time, to the microsecond, instead of autocannon's
   * histogram, which keeps whole milliseconds (too coarse for a 5 ms budget).
   */
  exactLatency?: boolean;
}

export interface LoadResult {
  target: string;
  requests: number;
  rps: number;
  p50ms: number;
  p99ms: number;
  non2xx: number;
  errors: number;
  cpuUsPerRequest: number | null;
  /** The measured processes' CPU over the run's wall time, in cores (1 = one core busy). */
  cpuCores?: number | null;
}

const BODY = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'Say something about foxes.' }], max_tokens: 16 });
const SESSIONS = Array.from({ length: 1000 }, (_, i) => `session-${i}`);

/** The p-th percentile of sorted values (nearest rank). */
const percentile = (sorted: number[], p: number): number => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);

function run(target: LoadTarget, opts: RunOptions, latencies: number[] | null): Promise<autocannon.Result> {
  let next = 0;
  const bodies = target.bodies;
  const instance = autocannon({
    url: target.url,
    connections: opts.connections,
    duration: opts.seconds,
    ...(opts.rate ? { overallRate: opts.rate } : {}),
    // autocannon verifies no certificate (it sets rejectUnauthorized: false); the gateway
    // and HAProxy still do the full TLS work, which is what is measured.
    servername: target.host,
    tlsOptions: target.ca ? { ca: target.ca } : undefined,
    requests: [
      {
        method: bodies ? 'POST' : (target.method ?? 'POST'),
        path: '/v1/chat/completions',
        setupRequest: (req) => {
          if (bodies) {
            const r = bodies[next++ % bodies.length]!;
            return { ...req, body: r.body, headers: { ...(req.headers ?? {}), 'x-session-id': r.session } };
          }
          const headers = { ...(req.headers ?? {}), 'x-session-id': SESSIONS[next++ % SESSIONS.length]! };
          return { ...req, headers };
        },
      },
    ],
    headers: {
      'content-type': 'application/json',
      ...(target.host ? { host: target.host } : {}),
      ...(target.headers ?? {}),
    },
    body: bodies ? undefined : (target.method ?? 'POST') === 'POST' ? BODY : undefined,
  } as autocannon.Options) as unknown as autocannon.Instance & Promise<autocannon.Result>;
  if (latencies) {
    (instance as autocannon.Instance).on('response', (_client: autocannon.Client, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) latencies.push(ms);
    });
  }
  return instance;
}

type Raw = Omit<LoadResult, 'target' | 'cpuUsPerRequest'>;

async function runAutocannon(target: LoadTarget, opts: RunOptions): Promise<Raw> {
  const latencies = opts.exactLatency ? [] : null;
  const r = await run(target, opts, latencies);
  const raw = { requests: r.requests.total, rps: r.requests.average, p50ms: r.latency.p50, p99ms: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts };
  if (!latencies) return raw;
  latencies.sort((a, b) => a - b);
  const ms = (p: number) => Math.round(percentile(latencies, p) * 1000) / 1000;
  return { ...raw, p50ms: ms(50), p99ms: ms(99) };
}

/** The same request for wrk: one thread, session ids rotating over the same 1,000. */
const wrkScript = (method: 'POST' | 'GET') => `
local i = 0
wrk.method = "${method}"
${method === 'POST' ? `wrk.body = '${BODY}'` : ''}
request = function()
  i = (i + 1) % 1000
  wrk.headers["X-Session-Id"] = "session-" .. i
  return wrk.format(nil, "/v1/chat/completions")
end
`;

function runWrk(target: LoadTarget, opts: RunOptions): Promise<Raw> {
  const { seconds, connections } = opts;
  if (target.bodies || opts.rate || opts.exactLatency) throw new Error(`wrk runs here send one small body, closed loop: ${target.name} needs autocannon`);
  const script = path.join(os.tmpdir(), `infergate-bench-${process.pid}.lua`);
  writeFileSync(script, wrkScript(target.method ?? 'POST'));
  // "Host" capitalised: wrk adds its own Host header unless it finds exactly that name.
  const headers = { 'content-type': 'application/json', ...(target.host ? { Host: target.host } : {}), ...(target.headers ?? {}) };
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), target.url];
  return new Promise((resolve, reject) => {
    execFile('wrk', args, (err, stdout) => {
      if (err) return reject(new Error(`wrk failed: ${err.message}`));
      const ms = (label: string) => {
        const m = new RegExp(`\\s${label}%\\s+([\\d.]+)(us|ms|s)`).exec(stdout);
        if (!m) return NaN;
        const v = Number(m[1]);
        return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
      };
      const requests = Number(/(\d+) requests in/.exec(stdout)?.[1] ?? 0);
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0);
      const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
      resolve({
        requests,
        rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? 0),
        p50ms: ms('50'),
        p99ms: ms('99'),
        non2xx,
        errors: socketErrors ? socketErrors.slice(1).reduce((a, x) => a + Number(x), 0) : 0,
      });
    });
  });
}

export async function measure(target: LoadTarget, opts: RunOptions & { warmupSeconds: number; generator?: Generator }): Promise<LoadResult> {
  const go = opts.generator === 'wrk' ? runWrk : runAutocannon;
  await go(target, { ...opts, seconds: opts.warmupSeconds, exactLatency: false });
  const pids = target.pids?.() ?? (target.pid ? [target.pid] : []);
  const cpu = () => pids.reduce((sum, pid) => sum + cpuMicros(pid), 0);
  const cpuBefore = cpu();
  const started = process.hrtime.bigint();
  const r = await go(target, opts);
  const wallUs = Number(process.hrtime.bigint() - started) / 1000;
  const used = cpu() - cpuBefore;
  return {
    target: target.name,
    ...r,
    cpuUsPerRequest: pids.length > 0 && r.requests > 0 ? used / r.requests : null,
    cpuCores: pids.length > 0 && wallUs > 0 ? used / wallUs : null,
  };
}
