// The abuse probe, rerun after the hardening: what a hostile client can hold and how much a
// flood of bad credentials costs a valid client. One `infergate serve` (built, default
// limits except where a flag says) with a reference-engine deployment:
//   1. held connections: N raw TCP connections that never send a ClientHello, from one
//      address (127.0.0.2), and M authenticated-then-idle HTTP/2 sessions; how many the
//      gateway accepted, and how many are still open after the handshake timeout and after
//      the HTTP/2 idle timeout;
//   2. 401s per second from a flood of invalid bearer tokens (autocannon), with a valid
//      client's p50/p99 beside it, and the same valid client alone as the baseline.
//   npm run bench:abuse [-- --raw 2000 --h2 50 --duration 10 --flood-connections 100 --h2-idle 20]
// Writes bench/results/abuse-probe.json.

import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type autocannon from 'autocannon';
import { sleep, stopAll } from './lib/processes.js';
import { startService } from './lib/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    raw: { type: 'string', default: '2000' },
    h2: { type: 'string', default: '50' },
    duration: { type: 'string', default: '10' },
    'flood-connections': { type: 'string', default: '100' },
    'h2-idle': { type: 'string', default: '20' },
  },
});
const RAW = Number(values.raw);
const H2 = Number(values.h2);
const SECONDS = Number(values.duration);
const FLOOD = Number(values['flood-connections']);
const H2_IDLE_S = Number(values['h2-idle']);
const TOKEN = 'bench-abuse-token-0123456789';
const HOST = 'probe.endpoints.localhost';

/** One series of the service's metrics, summed over its label sets that match `labels`. */
async function metric(metricsPort: number, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

interface RawFloodResult {
  opened: number;
  /** The gateway's own count of open connections (infergate_open_connections), 1 s in. */
  heldAt1s: number;
  refusedByCap: number;
  heldAfterHandshakeTimeout: number;
}

/**
 * Connections that never send a ClientHello, counted where they are held: by the gateway
 * (its open-connections gauge). A client-side count would also include connects still
 * waiting in the kernel's listen queue, which the gateway never accepted.
 */
async function rawFlood(port: number, metricsPort: number): Promise<RawFloodResult> {
  const open = () => metric(metricsPort, 'infergate_open_connections', 'listener="gateway"');
  const refusedBefore = await metric(metricsPort, 'infergate_connections_refused_total', 'listener="gateway"');
  const sockets: net.Socket[] = [];
  for (let i = 0; i < RAW; i++) {
    const s = net.connect({ host: '127.0.0.1', port, localAddress: '127.0.0.2' });
    s.on('error', () => undefined);
    sockets.push(s);
  }
  await sleep(1000);
  const heldAt1s = await open();
  await sleep(12_000); // default --tls-handshake-timeout is 10 s
  const heldAfter = await open();
  const refused = (await metric(metricsPort, 'infergate_connections_refused_total', 'listener="gateway"')) - refusedBefore;
  for (const s of sockets) s.destroy();
  return { opened: RAW, heldAt1s, refusedByCap: refused, heldAfterHandshakeTimeout: heldAfter };
}

async function idleSessions(port: number, ca: string): Promise<{ sessions: number; openAfterIdleTimeout: number }> {
  const sessions: http2.ClientHttp2Session[] = [];
  for (let i = 0; i < H2; i++) {
    const s = http2.connect(`https://127.0.0.1:${port}`, { ca, servername: HOST });
    s.on('error', () => undefined);
    // One authenticated request, then nothing: the session is idle from here.
    await new Promise<void>((resolve) => {
      const req = s.request({ ':path': '/v1/models', ':authority': HOST, authorization: `Bearer ${TOKEN}` });
      req.on('response', (h) => {
        if (h[':status'] !== 200) throw new Error(`probe session ${i}: status ${String(h[':status'])}, expected 200`);
      });
      req.resume();
      req.on('close', () => resolve());
    });
    sessions.push(s);
  }
  await sleep((H2_IDLE_S + 3) * 1000);
  const open = sessions.filter((s) => !s.closed && !s.destroyed).length;
  for (const s of sessions) s.destroy();
  return { sessions: H2, openAfterIdleTimeout: open };
}

/** One autocannon run in its own process (bench/lib/autocannon-child.ts). */
function load(port: number, connections: number, token: string, seconds: number): Promise<autocannon.Result> {
  const options = {
    url: `https://127.0.0.1:${port}/v1/models`,
    connections,
    duration: seconds,
    servername: HOST,
    headers: { host: HOST, authorization: `Bearer ${token}` },
  };
  const child = path.join(root, 'bench/lib/autocannon-child.ts');
  return new Promise((resolve, reject) => {
    execFile(path.join(root, 'node_modules/.bin/tsx'), [child, JSON.stringify(options)], { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`autocannon failed: ${stderr || err.message}`));
      resolve(JSON.parse(stdout) as autocannon.Result);
    });
  });
}

async function main(): Promise<void> {
  const service = await startService('abuse', ['--h2-idle-timeout', String(H2_IDLE_S)]);
  const port = service.ports.gateway;
  const ca = await service.caPem();
  const id = await service.createGeneral({
    name: 'probe',
    image: 'infergate/reference-engine',
    tag: 'openai',
    container_port: 8000,
    health_check_path: '/health',
    command: ['--startup-ms', '200'],
    min_replicas: 1,
    max_replicas: 1,
    endpoint_bearer_token: TOKEN,
  });
  for (let i = 0; ; i++) {
    const d = await service.deployment<{ status: string; components: { Replica: { ready: number } } }>(id);
    if (d.status === 'ready' && d.components.Replica.ready === 1) break;
    if (i > 300) throw new Error('the probe deployment did not become ready');
    await sleep(100);
  }

  console.log(`held connections: ${RAW} raw connections with no ClientHello from 127.0.0.2, ${H2} idle HTTP/2 sessions (idle timeout ${H2_IDLE_S} s)`);
  const [raw, h2] = await Promise.all([rawFlood(port, service.ports.metrics), idleSessions(port, ca)]);
  console.log(JSON.stringify({ raw, h2 }));

  console.log(`valid client alone: 10 connections, ${SECONDS} s`);
  const baseline = await load(port, 10, TOKEN, SECONDS);
  console.log(`valid client beside a flood of invalid tokens: ${FLOOD} connections`);
  const [flood, valid] = await Promise.all([load(port, FLOOD, 'not-a-valid-token-0000000000', SECONDS), load(port, 10, TOKEN, SECONDS)]);

  // The figures mean something only if every answer is the one measured.
  const floodOthers = Object.entries(flood.statusCodeStats ?? {}).filter(([code]) => code !== '401');
  const problems = [
    baseline.non2xx + baseline.errors > 0 ? `baseline: ${baseline.non2xx} non-2xx, ${baseline.errors} errors` : null,
    valid.non2xx + valid.errors > 0 ? `valid client under flood: ${valid.non2xx} non-2xx, ${valid.errors} errors` : null,
    floodOthers.length > 0 || flood.errors > 0 ? `flood: statuses other than 401 ${JSON.stringify(floodOthers)}, ${flood.errors} errors` : null,
    // What is left open then is the h2 probe sessions' own connections, at most H2.
    raw.heldAfterHandshakeTimeout > H2 ? `${raw.heldAfterHandshakeTimeout} connections still open after the handshake timeout` : null,
  ].filter(Boolean);
  const d = await service.deployment<{ components: { Replica: { ready: number; desired: number } } }>(id);
  if (d.components.Replica.ready !== 1 || d.components.Replica.desired !== 1) problems.push(`stray replicas: ${JSON.stringify(d.components)}`);

  const result = {
    date: new Date().toISOString(),
    held: { raw, h2 },
    flood: { connections: FLOOD, unauthorizedPerSecond: Math.round(flood.requests.average) },
    validAlone: { rps: Math.round(baseline.requests.average), p50ms: baseline.latency.p50, p99ms: baseline.latency.p99 },
    validUnderFlood: { rps: Math.round(valid.requests.average), p50ms: valid.latency.p50, p99ms: valid.latency.p99 },
    p99Ratio: Math.round((valid.latency.p99 / Math.max(1, baseline.latency.p99)) * 100) / 100,
    problems,
  };
  await mkdir(path.join(root, 'bench/results'), { recursive: true });
  await writeFile(path.join(root, 'bench/results/abuse-probe.json'), JSON.stringify(result, null, 2));
  console.table([
    { what: `connections the gateway holds 1 s into ${RAW} without a ClientHello (per-client cap 256, plus ${H2} probe sessions)`, value: raw.heldAt1s },
    { what: 'of those connections refused by a cap', value: raw.refusedByCap },
    { what: `connections it holds after the handshake timeout (only the ${H2} probe sessions may remain)`, value: raw.heldAfterHandshakeTimeout },
    { what: `idle HTTP/2 sessions open after ${H2_IDLE_S + 3} s (of ${H2})`, value: h2.openAfterIdleTimeout },
    { what: `401/s from ${FLOOD} flooding connections`, value: result.flood.unauthorizedPerSecond },
    { what: 'valid client alone: req/s, p99 ms', value: `${result.validAlone.rps}, ${result.validAlone.p99ms}` },
    { what: 'valid client under the flood: req/s, p99 ms', value: `${result.validUnderFlood.rps}, ${result.validUnderFlood.p99ms}` },
  ]);
  if (problems.length > 0) {
    console.error(`INVALID RUN: ${problems.join('; ')}`);
    process.exitCode = 1;
  }
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
