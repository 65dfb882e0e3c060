// Bench helper: one autocannon run against a target, with the same settings for every
// target, and the proxy process's CPU time per request measured over the run.

import autocannon from 'autocannon';
import { cpuMicros } from './processes.js';

export interface LoadTarget {
  name: string;
  url: string;
  /** SNI and Host for TLS targets. */
  host?: string;
  /** The platform CA, passed on although autocannon does not verify (see the script). */
  ca?: string;
  /** The process whose CPU is charged to the requests (none for direct). */
  pid?: number;
  headers?: Record<string, string>;
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
}

const BODY = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'Say something about foxes.' }], max_tokens: 16 });
const SESSIONS = Array.from({ length: 1000 }, (_, i) => `session-${i}`);

function run(target: LoadTarget, seconds: number, connections: number): Promise<autocannon.Result> {
  let next = 0;
  return autocannon({
    url: target.url,
    connections,
    duration: seconds,
    // autocannon verifies no certificate (it sets rejectUnauthorized: false); the gateway
    // and HAProxy still do the full TLS work, which is what is measured.
    servername: target.host,
    tlsOptions: target.ca ? { ca: target.ca } : undefined,
    requests: [
      {
        method: 'POST',
        path: '/v1/chat/completions',
        setupRequest: (req) => {
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
    body: BODY,
  } as autocannon.Options);
}

export async function measure(target: LoadTarget, opts: { seconds: number; warmupSeconds: number; connections: number }): Promise<LoadResult> {
  await run(target, opts.warmupSeconds, opts.connections);
  const cpuBefore = target.pid ? cpuMicros(target.pid) : 0;
  const r = await run(target, opts.seconds, opts.connections);
  const cpuAfter = target.pid ? cpuMicros(target.pid) : 0;
  const requests = r.requests.total;
  return {
    target: target.name,
    requests,
    rps: r.requests.average,
    p50ms: r.latency.p50,
    p99ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    cpuUsPerRequest: target.pid && requests > 0 ? (cpuAfter - cpuBefore) / requests : null,
  };
}
