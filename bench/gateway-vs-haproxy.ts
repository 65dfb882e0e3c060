// The gateway against HAProxy, against the leanest Node forwarder, and against nothing: same
// upstream, same load generator, loopback only, bounded in time. Requests/s, p50/p99 latency
// and each proxy process's CPU µs per request (median of interleaved rounds, since the two
// cores are shared and noisy), then 50 concurrent SSE streams of 50 chunks: time to headers,
// to first chunk, largest gap — over warm keep-alive connections and over new ones (medians
// of the per-round p50/p99 figures).
//   npm run bench:gateway [-- --duration 6 --rounds 3 --connections 50 --streams 50 --generator autocannon|wrk --method POST|GET]
// Prints a summary with the targets as PASS/MISS and writes bench/results/*.json.

import { mkdtemp, rm } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrCreateCa } from '../src/pki/ca.js';
import type { LoadTarget } from './lib/load.js';
import { assertNoFailedRequests, loadRounds, round2, reportVerdicts, roundOptions, streamRounds } from './lib/rounds.js';
import { onCleanup, sleep, stopAll } from './lib/processes.js';
import type { StreamTarget } from './lib/streams.js';
import { ensurePackage, HOST, startBareForwarder, startGateway, startHaproxy, TOKEN } from './lib/targets.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { seconds, rounds, connections, streamCount, generator, method } = roundOptions();

/** One request through a TLS target that verifies its certificate chain and expects 200. */
function verifiedRequest(port: number, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, servername: HOST, ca, method: 'POST', path: '/v1/chat/completions', agent: false, headers: { host: HOST, authorization: `Bearer ${TOKEN}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

async function until200(port: number, ca: string, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const status = await verifiedRequest(port, ca).catch(() => 0);
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`${what} did not answer 200 with a verified certificate (last status ${status})`);
    await sleep(100);
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-bench-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  // Two upstreams: the bench deployment's own replicas (bench/upstream.ts as their command).
  const gw = await startGateway(root, dir, 2);
  const upstreamPorts = gw.upstreams;
  const ca = await loadOrCreateCa(path.join(dir, 'certs'));
  const haproxy = await startHaproxy(dir, ca, upstreamPorts);
  const bare = await startBareForwarder(root, dir, ca, upstreamPorts[0]!);
  // autocannon never verifies certificates (it forces rejectUnauthorized: false), so every TLS
  // target first answers one request whose chain is verified against the platform CA.
  await until200(gw.port, ca.certPem, 'the gateway');
  await until200(haproxy.port, ca.certPem, 'HAProxy');
  await until200(bare.port, ca.certPem, 'the bare forwarder');
  console.log(`bench: ${haproxy.version}; upstream replicas on ports ${upstreamPorts.join(', ')}; pids: haproxy ${haproxy.proc.pid}, node-floor ${bare.proc.pid}, gateway ${gw.gateway.pid}`);
  if (generator === 'wrk') ensurePackage('wrk');
  console.log(`bench: ${generator}, ${method} requests, ${connections} connections; ${rounds} interleaved rounds of ${seconds} s per target after 1 s warm-ups; ${os.cpus().length} cores shared by everything`);

  const auth = { authorization: `Bearer ${TOKEN}` };
  const tls = { host: HOST, headers: auth, ca: ca.certPem, method } as const;
  const targets: LoadTarget[] = [
    { name: 'direct', url: `http://127.0.0.1:${upstreamPorts[0]}`, method },
    { name: 'haproxy', url: `https://127.0.0.1:${haproxy.port}`, pid: haproxy.proc.pid, ...tls },
    { name: 'node-floor', url: `https://127.0.0.1:${bare.port}`, pid: bare.proc.pid, ...tls },
    { name: 'gateway', url: `https://127.0.0.1:${gw.port}`, pid: gw.gateway.pid, ...tls },
  ];
  // The gateway must route to the two bench upstream ports and nothing else.
  const routed = await gw.routedReplicas();
  if (routed !== upstreamPorts.length) throw new Error(`the gateway routes the bench endpoint to ${routed} replicas, not the ${upstreamPorts.length} bench upstreams: figures would mix targets`);
  const load = await loadRounds(targets, rounds, { seconds, connections, generator });
  console.table(load);
  assertNoFailedRequests(load);

  const streamTargets: StreamTarget[] = [
    { name: 'direct', port: upstreamPorts[0]!, tls: false },
    { name: 'haproxy', port: haproxy.port, tls: true, host: HOST, ca: ca.certPem, headers: auth },
    { name: 'gateway', port: gw.port, tls: true, host: HOST, ca: ca.certPem, headers: auth },
  ];
  // Rounds interleaved as for the load, and the median of each figure kept.
  const streams = await streamRounds(streamTargets, rounds, streamCount);
  console.table(streams);

  const [, hap, floor, gate] = load as [(typeof load)[0], (typeof load)[0], (typeof load)[0], (typeof load)[0]];
  const s = (name: string) => streams.find((x) => x.target === name)!;
  const over = (name: string, base: string, field: 'firstChunkP50' | 'headersP50') => round2(s(name)[field] - s(base)[field]);
  const cpuRatio = (gate.cpuUsPerRequest ?? NaN) / (hap.cpuUsPerRequest ?? NaN);
  const summary = {
    date: new Date().toISOString(),
    machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), shared by load generator, proxies and upstream`,
    haproxy: haproxy.version,
    settings: { generator, method, seconds, rounds, connections, streams: streamCount, chunks: 50, chunkDelayMs: 5 },
    load,
    streams,
    ratios: {
      gatewayCpuPerRequestOverHaproxy: round2(cpuRatio),
      nodeFloorCpuPerRequestOverHaproxy: round2((floor.cpuUsPerRequest ?? NaN) / (hap.cpuUsPerRequest ?? NaN)),
      gatewayCpuPerRequestOverNodeFloor: round2((gate.cpuUsPerRequest ?? NaN) / (floor.cpuUsPerRequest ?? NaN)),
      gatewayRpsOverHaproxy: round2(gate.rps / hap.rps),
    },
    streamingOverheadOverDirectMs: {
      warm: {
        haproxyFirstChunkP50: over('haproxy (warm)', 'direct (warm)', 'firstChunkP50'),
        gatewayFirstChunkP50: over('gateway (warm)', 'direct (warm)', 'firstChunkP50'),
        haproxyHeadersP50: over('haproxy (warm)', 'direct (warm)', 'headersP50'),
        gatewayHeadersP50: over('gateway (warm)', 'direct (warm)', 'headersP50'),
      },
      cold: {
        haproxyFirstChunkP50: over('haproxy (cold)', 'direct (cold)', 'firstChunkP50'),
        gatewayFirstChunkP50: over('gateway (cold)', 'direct (cold)', 'firstChunkP50'),
      },
    },
  };
  const warm = summary.streamingOverheadOverDirectMs.warm;
  const routedAfter = await gw.routedReplicas();
  if (routedAfter !== upstreamPorts.length) throw new Error(`the gateway routed the bench endpoint to ${routedAfter} replicas by the end, not the ${upstreamPorts.length} bench upstreams: figures mix targets`);
  const failed = gate.errors + gate.non2xx + streams.filter((x) => x.target.startsWith('gateway')).reduce((a, x) => a + x.failed, 0);
  const verdicts: Array<[string, boolean]> = [
    [`gateway CPU per request ${round2(cpuRatio)}× HAProxy's (target ≤ 3.5×)`, cpuRatio <= 3.5],
    [`gateway streaming p50 time-to-first-chunk overhead ${warm.gatewayFirstChunkP50} ms vs HAProxy's ${warm.haproxyFirstChunkP50} ms, warm connections (target ≤ HAProxy's)`, warm.gatewayFirstChunkP50 <= warm.haproxyFirstChunkP50],
    [`gateway p50 time-to-headers ${warm.gatewayHeadersP50} ms over direct, warm connections (target ≤ 1 ms)`, warm.gatewayHeadersP50 <= 1],
    [`no failed requests or streams through the gateway (${failed})`, failed === 0],
  ];
  console.log(JSON.stringify(summary.ratios));
  console.log(JSON.stringify(summary.streamingOverheadOverDirectMs));
  await reportVerdicts(root, 'gateway-vs-haproxy', summary, verdicts);
}

main()
  .catch((err: Error) => {
    console.error(`bench: ${err.message}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
