// Bench helper: the streaming case — N concurrent SSE streams through a target, each timed
// from the request to its response headers, to its first body chunk, and by the largest gap
// between two chunks. Two variants: warm (N keep-alive connections opened and used once
// before measuring, so the figures are the proxy's forwarding work, as the earlier measurements had it)
// and cold (a new connection per stream, so they include N concurrent TLS handshakes).

import http from 'node:http';
import https from 'node:https';

export interface StreamTarget {
  name: string;
  port: number;
  tls: boolean;
  host?: string;
  ca?: string;
  headers?: Record<string, string>;
}

export interface StreamResult {
  target: string;
  streams: number;
  failed: number;
  headersP50: number;
  headersP99: number;
  firstChunkP50: number;
  firstChunkP99: number;
  maxGapP50: number;
  maxGapP99: number;
}

interface OneStream {
  headers: number;
  firstChunk: number;
  maxGap: number;
}

function one(t: StreamTarget, agent: http.Agent | false): Promise<OneStream> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const options: https.RequestOptions = {
      host: '127.0.0.1',
      port: t.port,
      method: 'POST',
      path: '/stream',
      agent,
      headers: { 'content-type': 'application/json', ...(t.host ? { host: t.host } : {}), 'x-session-id': `s-${Math.random()}`, ...(t.headers ?? {}) },
      ...(t.tls ? { servername: t.host, ca: t.ca } : {}),
    };
    const req = (t.tls ? https : http).request(options, (res) => {
      const headers = performance.now() - started;
      let first = -1;
      let last = 0;
      let maxGap = 0;
      res.on('data', () => {
        const now = performance.now();
        if (first < 0) first = now - started;
        else maxGap = Math.max(maxGap, now - last);
        last = now;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve({ headers, firstChunk: first, maxGap }) : reject(new Error(`status ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end('{"stream":true}');
  });
}

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

export async function measureStreams(t: StreamTarget, count: number, mode: 'warm' | 'cold'): Promise<StreamResult> {
  let agent: http.Agent | false = false;
  if (mode === 'warm') {
    const options = { keepAlive: true, maxSockets: count, ...(t.tls ? { ca: t.ca } : {}) };
    agent = t.tls ? new https.Agent(options) : new http.Agent(options);
    await Promise.allSettled(Array.from({ length: count }, () => one(t, agent))); // opens the connections
  } else {
    await Promise.allSettled(Array.from({ length: 5 }, () => one(t, false)));
  }
  const settled = await Promise.allSettled(Array.from({ length: count }, () => one(t, agent)));
  if (agent) agent.destroy();
  const ok = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    target: `${t.name} (${mode})`,
    streams: count,
    failed: count - ok.length,
    headersP50: round(pct(ok.map((s) => s.headers), 50)),
    headersP99: round(pct(ok.map((s) => s.headers), 99)),
    firstChunkP50: round(pct(ok.map((s) => s.firstChunk), 50)),
    firstChunkP99: round(pct(ok.map((s) => s.firstChunk), 99)),
    maxGapP50: round(pct(ok.map((s) => s.maxGap), 50)),
    maxGapP99: round(pct(ok.map((s) => s.maxGap), 99)),
  };
}
