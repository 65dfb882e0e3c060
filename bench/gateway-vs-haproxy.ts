// The gateway against HAProxy, against the leanest Node forwarder, and against nothing: same
// upstream, same load generator, loopback only, bounded in time. Requests/s, p50/p99 latency
// and each proxy process's CPU µs per request (median of interleaved rounds, since the two
// cores are shared and noisy), then 50 concurrent SSE streams of 50 chunks: time to headers,
// to first chunk, largest gap — over warm keep-alive connections and over new ones (medians
// of the per-round p50/p99 figures).
//   npm run bench:gateway [-- --duration 6 --rounds 3 --connections 50 --streams 50 --generator autocannon|wrk --method POST|GET]
// Prints a summary with the issue's targets as PASS/MISS and writes bench/results/*.json.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadOrCreateCa } from '../src/pki/ca.js';
import { measure, type Generator, type LoadResult, type LoadTarget } from './lib/load.js';
import { onCleanup, sleep, stopAll } from './lib/processes.js';
import { measureStreams, type StreamResult, type StreamTarget } from './lib/streams.js';
import { ensurePackage, HOST, startBareForwarder, startGateway, startHaproxy, TOKEN } from './lib/targets.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    streams: { type: 'string', default: '50' },
    generator: { type: 'string', default: 'autocannon' },
    method: { type: 'string', default: 'POST' },
  },
});
const seconds = Number(values.duration);
const rounds = Number(values.rounds);
const connections = Number(values.connections);
const streamCount = Number(values.streams);
const generator = values.generator as Generator;
const method = values.method === 'GET' ? 'GET' : 'POST';
if (generator !== 'autocannon' && generator !== 'wrk') throw new Error('--generator must be autocannon or wrk');
const round2 = (n: number) => Math.round(n * 100) / 100;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

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
  const runs = new Map<string, LoadResult[]>(targets.map((t) => [t.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const t of targets) runs.get(t.name)!.push(await measure(t, { seconds, warmupSeconds: 1, connections, generator }));
  }
  const load = targets.map((t) => {
    const rs = runs.get(t.name)!;
    const cpu = rs.map((x) => x.cpuUsPerRequest).filter((x): x is number => x !== null);
    return {
      target: t.name,
      requests: rs.reduce((a, x) => a + x.requests, 0),
      rps: round2(median(rs.map((x) => x.rps))),
      p50ms: median(rs.map((x) => x.p50ms)),
      p99ms: median(rs.map((x) => x.p99ms)),
      non2xx: rs.reduce((a, x) => a + x.non2xx, 0),
      errors: rs.reduce((a, x) => a + x.errors, 0),
      cpuUsPerRequest: cpu.length ? round2(median(cpu)) : null,
      cpuRounds: cpu.map(round2).join(' / '),
    };
  });
  console.table(load);
  // Figures of a run with failures mix in something else than what they name: none are printed.
  const failedLoad = load.filter((x) => x.non2xx > 0 || x.errors > 0);
  if (failedLoad.length > 0) throw new Error(`failed requests (${failedLoad.map((x) => `${x.target}: ${x.non2xx} non-2xx, ${x.errors} errors`).join('; ')}): no figures`);

  const streamTargets: StreamTarget[] = [
    { name: 'direct', port: upstreamPorts[0]!, tls: false },
    { name: 'haproxy', port: haproxy.port, tls: true, host: HOST, ca: ca.certPem, headers: auth },
    { name: 'gateway', port: gw.port, tls: true, host: HOST, ca: ca.certPem, headers: auth },
  ];
  // Rounds interleaved as for the load, and the median of each figure kept.
  const streamRuns = new Map<string, StreamResult[]>();
  for (let r = 0; r < rounds; r++) {
    for (const mode of ['warm', 'cold'] as const) {
      for (const t of streamTargets) {
        const result = await measureStreams(t, streamCount, mode);
        streamRuns.set(result.target, [...(streamRuns.get(result.target) ?? []), result]);
      }
    }
  }
  const streams: StreamResult[] = [...streamRuns.values()].map((rs) => {
    const m = (field: keyof Omit<StreamResult, 'target'>) => round2(median(rs.map((x) => x[field])));
    return {
      target: rs[0]!.target,
      streams: rs.reduce((a, x) => a + x.streams, 0),
      failed: rs.reduce((a, x) => a + x.failed, 0),
      headersP50: m('headersP50'),
      headersP99: m('headersP99'),
      firstChunkP50: m('firstChunkP50'),
      firstChunkP99: m('firstChunkP99'),
      maxGapP50: m('maxGapP50'),
      maxGapP99: m('maxGapP99'),
    };
  });
  console.table(streams);
  const failedStreams = streams.filter((x) => x.failed > 0);
  if (failedStreams.length > 0) throw new Error(`failed streams (${failedStreams.map((x) => `${x.target}: ${x.failed}`).join('; ')}): no figures`);

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
  for (const [text, ok] of verdicts) console.log(`${ok ? 'PASS' : 'MISS'}  ${text}`);
  await mkdir(path.join(root, 'bench/results'), { recursive: true });
  const file = path.join(root, 'bench/results', `gateway-vs-haproxy-${summary.date.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, JSON.stringify({ ...summary, targets: verdicts.map(([text, pass]) => ({ text, pass })) }, null, 2));
  console.log(`bench: results in ${path.relative(root, file)}`);
}

main()
  .catch((err: Error) => {
    console.error(`bench: ${err.message}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
