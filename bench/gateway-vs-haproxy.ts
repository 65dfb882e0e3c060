// The gateway against HAProxy, against the leanest Node forwarder, and against nothing: same
// upstream, same load generator, loopback only, bounded in time. Four parts, each optional:
//   cpu      requests/s, p50/p99 and each proxy process's CPU µs per request (median of
//            interleaved rounds, since the two cores are shared and noisy); the gateway's CPU
//            per request over the bare forwarder's and over HAProxy's;
//   streams  50 concurrent SSE streams of 50 chunks: time to headers, to first chunk, largest
//            gap — over warm keep-alive connections and over new ones;
//   tracing  the gateway with OpenTelemetry tracing off, at 1 % and at 100 % (gateway processes
//            started with the OTEL_* variables, spans sent to OTLP/HTTP sinks in this process):
//            CPU per request of each and the cost of 1 % over off — figures only for
//            configurations the sinks confirm;
//   prefix   ~200 KB chat prompts to a routing_policy prefix_aware deployment through one
//            gateway process, against the same load straight to its upstream: requests/s
//            closed loop, then p99 at an even offered rate (open loop), the gateway's added p99.
//   npm run bench:gateway [-- --only cpu,streams,tracing,prefix --duration 4 --rounds 3 --connections 50 --streams 50
//                             --generator autocannon|wrk --method POST|GET --tracing-rounds N
//                             --prefix-rate 500 --prefix-connections 16 --prefix-kb 200 --prefix-groups 32]
// Prints a summary with the targets as PASS/MISS (or why a row has no figure) and writes
// bench/results/*.json.

import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrCreateCa } from '../src/pki/ca.js';
import type { LoadTarget } from './lib/load.js';
import { startOtlpSink, type OtlpSink, type SinkCounts } from './lib/otlp-sink.js';
import { pacedRounds, type PacedResult, type PacedTarget } from './lib/paced.js';
import { longPrompts } from './lib/prompts.js';
import { assertNoFailedRequests, byRounds, loadRounds, round2, reportVerdicts, roundOptions, streamRounds, type LoadSummary, type Verdict } from './lib/rounds.js';
import { onCleanup, sleep, stopAll } from './lib/processes.js';
import type { StreamTarget } from './lib/streams.js';
import { ensurePackage, HOST, requestsAnswered, startBareForwarder, startGateway, startHaproxy, TOKEN, type ExtraGateway, type GatewayTarget } from './lib/targets.js';

const PARTS = ['cpu', 'streams', 'tracing', 'prefix'] as const;
type Part = (typeof PARTS)[number];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const options = roundOptions(process.argv.slice(2), {
  // Short rounds keep all four parts under about four minutes on two cores.
  defaults: { duration: '4' },
  extra: { only: PARTS.join(','), 'tracing-rounds': '', 'prefix-rate': '500', 'prefix-connections': '16', 'prefix-kb': '200', 'prefix-groups': '32' },
});
const { seconds, rounds, connections, streamCount, generator, method } = options;
const parts = new Set(options.extra.only.split(',').map((p) => p.trim()).filter(Boolean));
const runs = (part: Part) => parts.has(part);

/** How far behind schedule the paced generator may fall (p99) before its load no longer counts as even. */
const MAX_GENERATOR_LAG_MS = 5;
const TARGETS = { cpuOverFloor: 1.15, cpuOverHaproxy: 3.5, tracingOnePercentCost: 0.03, prefixRps: 500, prefixAddedP99Ms: 5 };
const PREFIX_ENDPOINT = 'bench-prefix';
const PREFIX_TOKEN = 'igt_bench_prefix_token_0123456789abcdefAB';
/** The OTLP/HTTP port an SDK exports to when it is given no endpoint. */
const OTLP_DEFAULT_PORT = 4318;

/** What every part adds to: its figures for the JSON, its verdicts, its rows without a figure. */
interface Report {
  summary: Record<string, unknown>;
  verdicts: Verdict[];
  withheld: Array<{ row: string; why: string }>;
}

/** One request through a TLS target that verifies its certificate chain and expects 200. */
function verifiedRequest(port: number, ca: string, host: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, servername: host, ca, method: 'POST', path: '/v1/chat/completions', agent: false, headers: { host, authorization: `Bearer ${token}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

async function until200(port: number, ca: string, what: string, host = HOST, token = TOKEN): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const status = await verifiedRequest(port, ca, host, token).catch(() => 0);
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`${what} did not answer 200 with a verified certificate (last status ${status})`);
    await sleep(100);
  }
}

/** Fails the run unless the gateway routes the endpoint to exactly its bench upstreams. */
async function checkRouted(routed: () => Promise<number>, expected: number, what: string): Promise<void> {
  const n = await routed();
  if (n !== expected) throw new Error(`${what} routes to ${n} replicas, not the ${expected} bench upstreams: figures would mix targets`);
}

/** The columns worth reading of a load summary (the JSON keeps them all). */
const table = (load: LoadSummary[]) =>
  load.map((x) => ({ target: x.target, requests: x.requests, 'req/s': x.rps, 'p50 ms': x.p50ms, 'p99 ms': x.p99ms, 'CPU µs/req': x.cpuUsPerRequest, 'CPU rounds': x.cpuRounds, cores: x.cpuCores }));

/** Each round's ratio of two targets' CPU per request (the two ran back to back in that round). */
const roundRatios = (a: LoadSummary, b: LoadSummary): number[] =>
  a.cpuByRound.flatMap((x, i) => {
    const y = b.cpuByRound[i];
    return x !== null && y !== null && y !== undefined && y > 0 ? [x / y] : [];
  });

const pct = (fraction: number, digits = 1) => `${(fraction * 100).toFixed(digits)} %`;

async function cpuPart(report: Report, gw: GatewayTarget, haproxy: { port: number; pid: number }, floor: { port: number; pid: number }, ca: string): Promise<void> {
  const auth = { authorization: `Bearer ${TOKEN}` };
  const tls = { host: HOST, headers: auth, ca, method } as const;
  const targets: LoadTarget[] = [
    { name: 'direct', url: `http://127.0.0.1:${gw.upstreams[0]}`, method },
    { name: 'haproxy', url: `https://127.0.0.1:${haproxy.port}`, pid: haproxy.pid, ...tls },
    { name: 'node-floor', url: `https://127.0.0.1:${floor.port}`, pid: floor.pid, ...tls },
    { name: 'gateway', url: `https://127.0.0.1:${gw.port}`, pid: gw.gateway.pid, ...tls },
  ];
  console.log(`bench [cpu]: ${generator}, ${method} requests, ${connections} connections, ${rounds} interleaved rounds of ${seconds} s per target after 1 s warm-ups; the gateway with Bearer auth, affinity (X-Session-Id), metrics, tracing off`);
  const load = await loadRounds(targets, rounds, { seconds, connections, generator });
  assertNoFailedRequests(load);
  console.table(table(load));
  const [, hap, bare, gate] = load as [LoadSummary, LoadSummary, LoadSummary, LoadSummary];
  const overFloor = (gate.cpuUsPerRequest ?? NaN) / (bare.cpuUsPerRequest ?? NaN);
  const overHaproxy = (gate.cpuUsPerRequest ?? NaN) / (hap.cpuUsPerRequest ?? NaN);
  const floorRounds = roundRatios(gate, bare);
  const ratios = {
    gatewayCpuPerRequestOverNodeFloor: round2(overFloor),
    gatewayCpuPerRequestOverNodeFloorByRound: floorRounds.map(round2),
    gatewayCpuPerRequestOverHaproxy: round2(overHaproxy),
    nodeFloorCpuPerRequestOverHaproxy: round2((bare.cpuUsPerRequest ?? NaN) / (hap.cpuUsPerRequest ?? NaN)),
    gatewayRpsOverHaproxy: round2(gate.rps / hap.rps),
  };
  console.log(JSON.stringify(ratios));
  report.summary.cpu = { load, ratios };
  report.verdicts.push(
    [
      `gateway CPU per request ${gate.cpuUsPerRequest} µs = ${round2(overFloor)}× the bare forwarder's ${bare.cpuUsPerRequest} µs (each round: ${floorRounds.map(round2).join(' / ')}; auth, affinity, metrics on, tracing off; target ≤ ${TARGETS.cpuOverFloor}×, decided when every round agrees)`,
      byRounds(floorRounds, (r) => r <= TARGETS.cpuOverFloor),
    ],
    [`gateway CPU per request ${round2(overHaproxy)}× HAProxy's (target ≤ ${TARGETS.cpuOverHaproxy}×)`, overHaproxy <= TARGETS.cpuOverHaproxy],
  );
}

async function streamsPart(report: Report, gw: GatewayTarget, haproxy: { port: number }, ca: string): Promise<void> {
  const auth = { authorization: `Bearer ${TOKEN}` };
  const targets: StreamTarget[] = [
    { name: 'direct', port: gw.upstreams[0]!, tls: false },
    { name: 'haproxy', port: haproxy.port, tls: true, host: HOST, ca, headers: auth },
    { name: 'gateway', port: gw.port, tls: true, host: HOST, ca, headers: auth },
  ];
  console.log(`bench [streams]: ${streamCount} concurrent SSE streams of 50 chunks 5 ms apart, warm and cold, ${rounds} interleaved rounds`);
  // Rounds interleaved as for the load, and the median of each figure kept; any failed stream stops the run.
  const streams = await streamRounds(targets, rounds, streamCount);
  console.table(streams);
  const s = (name: string) => streams.find((x) => x.target === name)!;
  const over = (name: string, base: string, field: 'firstChunkP50' | 'headersP50') => round2(s(name)[field] - s(base)[field]);
  const overhead = {
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
  };
  console.log(JSON.stringify(overhead));
  report.summary.streams = { streams, overheadOverDirectMs: overhead };
  const warm = overhead.warm;
  report.verdicts.push(
    [
      `gateway streaming p50 time-to-first-chunk overhead ${warm.gatewayFirstChunkP50} ms vs HAProxy's ${warm.haproxyFirstChunkP50} ms, warm connections (target ≤ HAProxy's)`,
      warm.gatewayFirstChunkP50 <= warm.haproxyFirstChunkP50,
    ],
    [`gateway p50 time-to-headers ${warm.gatewayHeadersP50} ms over direct, warm connections (target ≤ 1 ms)`, warm.gatewayHeadersP50 <= 1],
  );
}

/** Waits until no sink has received anything for longer than a batch exporter waits (5 s by default). */
async function settle(sinks: OtlpSink[]): Promise<void> {
  const quietMs = 6_000;
  const snapshot = () => JSON.stringify(sinks.map((s) => s.counts()));
  let last = snapshot();
  let since = Date.now();
  const deadline = Date.now() + 30_000;
  while (Date.now() - since < quietMs && Date.now() < deadline) {
    await sleep(250);
    const now = snapshot();
    if (now !== last) {
      last = now;
      since = Date.now();
    }
  }
}

/** What a sink got, in one line. */
const received = (c: SinkCounts) =>
  `${c.posts} POSTs, ${c.bytes} bytes, ${c.spans} spans in ${c.traces} traces${c.undecoded ? ` (${c.undecoded} POSTs neither OTLP JSON nor protobuf)` : ''}${c.contentTypes.length ? `, ${c.contentTypes.join(', ')}` : ''}${Object.keys(c.other).length ? `; other requests ${JSON.stringify(c.other)}` : ''}`;

async function tracingPart(report: Report, gw: GatewayTarget, ca: string): Promise<void> {
  const tracingRounds = Number(options.extra['tracing-rounds'] || rounds);
  // One sink per traced gateway, so what arrives is attributed by port, whenever it arrives.
  const ratioSink = await startOtlpSink();
  const fullSink = await startOtlpSink();
  // A gateway or control process without an endpoint that exported anyway would go to the default.
  const defaultSink = await startOtlpSink(OTLP_DEFAULT_PORT).catch(() => null);
  const extras: ExtraGateway[] = [];
  try {
    // Three gateway processes started alike, differing only in their environment; the first
    // one (the cpu part's) stays idle, as it has a different history.
    const none = await gw.addGateway(1);
    extras.push(none);
    const one = await gw.addGateway(1, { OTEL_EXPORTER_OTLP_ENDPOINT: ratioSink.endpoint, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' });
    extras.push(one);
    const all = await gw.addGateway(1, { OTEL_EXPORTER_OTLP_ENDPOINT: fullSink.endpoint, OTEL_TRACES_SAMPLER: 'always_on' });
    extras.push(all);
    for (const [g, what] of [
      [none, 'the tracing-off gateway'],
      [one, 'the 1 % gateway'],
      [all, 'the 100 % gateway'],
    ] as const) {
      const deadline = Date.now() + 10_000;
      while ((await g.routedReplicas()) !== gw.upstreams.length && Date.now() < deadline) await sleep(100);
      await checkRouted(() => g.routedReplicas(), gw.upstreams.length, what);
      await until200(g.port, ca, what);
    }
    console.log(
      `bench [tracing]: gateways (1 worker each) pids: off ${none.proc.pid} (no OTEL_* variables), 1 % ${one.proc.pid} (traceidratio 0.01 → ${ratioSink.endpoint}), 100 % ${all.proc.pid} (always_on → ${fullSink.endpoint}); ` +
        `${defaultSink ? `a sink on the default OTLP port ${OTLP_DEFAULT_PORT} catches exports without an endpoint` : `port ${OTLP_DEFAULT_PORT} is taken: exports without an endpoint would not be seen`}; ` +
        `${generator}, ${connections} connections, an unmeasured round, then ${tracingRounds} rounds of ${seconds} s after 1 s warm-ups, order rotated each round`,
    );
    // What each process was started with, read back from the kernel rather than assumed.
    const otel = (pid: number) =>
      readFileSync(`/proc/${pid}/environ`, 'latin1')
        .split('\0')
        .filter((kv) => kv.startsWith('OTEL_'));
    const offEnv = otel(none.proc.pid);
    if (offEnv.length > 0) throw new Error(`the off gateway runs with ${offEnv.join(' ')}: it would not be off`);
    for (const [g, want] of [
      [one, 'OTEL_TRACES_SAMPLER_ARG=0.01'],
      [all, 'OTEL_TRACES_SAMPLER=always_on'],
    ] as const) {
      if (!otel(g.proc.pid).includes(want)) throw new Error(`gateway ${g.proc.pid} runs without ${want} (${otel(g.proc.pid).join(' ') || 'no OTEL_* variables'})`);
    }
    const auth = { authorization: `Bearer ${TOKEN}` };
    const tls = { host: HOST, headers: auth, ca, method } as const;
    const targets: LoadTarget[] = [
      { name: 'tracing off', url: `https://127.0.0.1:${none.port}`, pid: none.proc.pid, ...tls },
      { name: 'tracing 1 %', url: `https://127.0.0.1:${one.port}`, pid: one.proc.pid, ...tls },
      { name: 'tracing 100 %', url: `https://127.0.0.1:${all.port}`, pid: all.proc.pid, ...tls },
    ];
    // The three processes are new: one unmeasured round first, so no round measures JIT warm-up.
    await loadRounds(targets, 1, { seconds: 2, connections, generator });
    const load = await loadRounds(targets, tracingRounds, { seconds, connections, generator, rotate: true });
    assertNoFailedRequests(load);
    await settle(defaultSink ? [ratioSink, fullSink, defaultSink] : [ratioSink, fullSink]);
    const answered = {
      off: requestsAnswered(await none.metrics()),
      one: requestsAnswered(await one.metrics()),
      all: requestsAnswered(await all.metrics()),
    };
    const sinks = { one: ratioSink.counts(), all: fullSink.counts(), default: defaultSink?.counts() ?? null };
    const [off, onePct, full] = load as [LoadSummary, LoadSummary, LoadSummary];

    // Which rows measured what they name.
    const why: { off: string | null; one: string | null; all: string | null } = { off: null, one: null, all: null };
    const notes: string[] = [];
    const stray = sinks.default === null ? 0 : sinks.default.posts + Object.values(sinks.default.other).reduce((a, x) => a + x, 0);
    if (stray > 0) why.off = `the default OTLP endpoint 127.0.0.1:${OTLP_DEFAULT_PORT} received ${received(sinks.default!)} while the only processes without an endpoint were the off gateway, the idle first gateway and the control process: tracing was not off`;
    const decodable = (c: SinkCounts) => c.posts > 0 && c.undecoded < c.posts;
    if (sinks.all.posts === 0) {
      why.all = `tracing not active in this gateway build: the sink received nothing from the 100 % gateway (OTEL_EXPORTER_OTLP_ENDPOINT=${fullSink.endpoint}, OTEL_TRACES_SAMPLER=always_on) for the ${answered.all} requests it answered`;
      why.one = 'tracing not active in this gateway build (see the 100 % row)';
    } else if (decodable(sinks.all) && sinks.all.spans === 0) {
      why.all = `the sink received ${received(sinks.all)} from the 100 % gateway, but no span in them, for ${answered.all} requests`;
      why.one = 'no spans from the 100 % gateway to compare with (see that row)';
    } else {
      const perRequestAll = decodable(sinks.all) ? sinks.all.traces / answered.all : NaN;
      if (decodable(sinks.all) && perRequestAll < 0.9) notes.push(`the 100 % gateway's spans cover ${pct(perRequestAll)} of its requests: its exporter dropped some, or not every request starts a trace`);
      if (decodable(sinks.one)) {
        // traceidratio is a coin per trace: within four standard deviations of 1 % is "about 1 %".
        const expected = 0.01 * answered.one;
        const slack = 4 * Math.sqrt(expected) + 3;
        if (Math.abs(sinks.one.traces - expected) > slack)
          why.one = `the 1 % gateway sent ${sinks.one.traces} traces for ${answered.one} requests (${pct(sinks.one.traces / answered.one, 2)}), not about 1 % (${Math.round(expected)} ± ${Math.round(slack)}): OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG not honoured as asked`;
      } else if (sinks.one.posts === 0) {
        if (answered.one >= 2_000) why.one = `the 1 % gateway sent nothing for ${answered.one} requests (about ${Math.round(0.01 * answered.one)} traces expected)`;
        else why.one = `too few requests (${answered.one}) to tell 1 % sampling from none`;
      } else {
        // Not OTLP as this sink reads it: compare bytes per request with the 100 % gateway's.
        const share = sinks.one.bytes / answered.one / (sinks.all.bytes / answered.all);
        if (share < 0.003 || share > 0.03) why.one = `the 1 % gateway sent ${pct(share, 2)} of the 100 % gateway's bytes per request (bodies not decoded), not about 1 %`;
        else notes.push(`the 1 % share is judged by bytes per request (${pct(share, 2)} of the 100 % gateway's): the bodies did not decode as OTLP`);
      }
    }

    const valid = { off: why.off === null, one: why.one === null, all: why.all === null };
    const cost = (row: LoadSummary) => (row.cpuUsPerRequest ?? NaN) / (off.cpuUsPerRequest ?? NaN) - 1;
    const costRounds = (row: LoadSummary) => roundRatios(row, off).map((r) => `${r >= 1 ? '+' : ''}${((r - 1) * 100).toFixed(1)} %`);
    const traced = (c: SinkCounts, n: number) => (decodable(c) ? `${c.spans} spans, ${c.traces} traces / ${n} requests = ${pct(c.traces / n, 2)}` : `${c.posts} POSTs, ${c.bytes} bytes / ${n} requests`);
    const rows = [
      { label: 'off', load: off, ok: valid.off, sink: sinks.default ? `default-port sink: ${sinks.default.posts} POSTs / ${answered.off} requests` : 'no sink (port taken)' },
      { label: '1 %', load: onePct, ok: valid.one, sink: traced(sinks.one, answered.one) },
      { label: '100 %', load: full, ok: valid.all, sink: traced(sinks.all, answered.all) },
    ];
    console.table(
      rows.map((r) => ({
        tracing: r.label,
        requests: r.load.requests,
        'req/s': r.ok ? r.load.rps : '—',
        'p99 ms': r.ok ? r.load.p99ms : '—',
        'CPU µs/req': r.ok ? r.load.cpuUsPerRequest : '—',
        'CPU rounds': r.ok ? r.load.cpuRounds : '—',
        'over off': r.ok && valid.off && r.label !== 'off' ? `${cost(r.load) >= 0 ? '+' : ''}${pct(cost(r.load))} (rounds ${costRounds(r.load).join(' / ')})` : '—',
        'sink received': r.sink,
      })),
    );
    console.log(`bench [tracing]: 1 % sink: ${received(sinks.one)}`);
    console.log(`bench [tracing]: 100 % sink: ${received(sinks.all)}`);
    if (sinks.default) console.log(`bench [tracing]: default-port sink: ${received(sinks.default)}`);
    for (const n of notes) console.log(`bench [tracing]: note: ${n}`);

    const rowsJson = Object.fromEntries(
      rows.map((r) => [r.label, r.ok ? { ...r.load, overOffPercent: r.label === 'off' || !valid.off ? null : round2(cost(r.load) * 100) } : { target: r.load.target, requests: r.load.requests, noFigure: true }]),
    );
    report.summary.tracing = { requestsAnswered: answered, sinks, rows: rowsJson, why, notes };
    const labels = { off: 'tracing off', one: 'tracing 1 %', all: 'tracing 100 %' } as const;
    for (const key of ['off', 'one', 'all'] as const) if (why[key]) report.withheld.push({ row: labels[key], why: why[key] });
    if (valid.off && valid.one) {
      const c = cost(onePct);
      report.verdicts.push([
        `tracing at 1 % costs ${c >= 0 ? '+' : ''}${pct(c)} CPU per request over off (${onePct.cpuUsPerRequest} vs ${off.cpuUsPerRequest} µs; each round: ${costRounds(onePct).join(' / ')}; target ≤ ${pct(TARGETS.tracingOnePercentCost, 0)}, decided when every round agrees)`,
        byRounds(
          roundRatios(onePct, off).map((r) => r - 1),
          (x) => x <= TARGETS.tracingOnePercentCost,
        ),
      ]);
    } else report.withheld.push({ row: 'tracing 1 % cost over off', why: why.off ?? why.one ?? '' });
    if (valid.off && valid.all) console.log(`bench [tracing]: 100 % costs ${pct(cost(full))} CPU per request over off (no target)`);
  } finally {
    for (const g of extras) await g.proc.stop();
    await Promise.all([ratioSink.close(), fullSink.close(), defaultSink?.close()]);
  }
}

async function prefixPart(report: Report, gw: GatewayTarget, ca: string): Promise<void> {
  const rate = Number(options.extra['prefix-rate']);
  const prefixConnections = Number(options.extra['prefix-connections']);
  const dep = await gw.addDeployment({ name: PREFIX_ENDPOINT, token: PREFIX_TOKEN, replicas: 2, spec: { routing_policy: 'prefix_aware' } });
  await until200(gw.port, ca, `the gateway for ${dep.host}`, dep.host, dep.token);
  const prompts = longPrompts({ groups: Number(options.extra['prefix-groups']), variants: 8, bodyBytes: Number(options.extra['prefix-kb']) * 1000 });
  const kb = Math.round(prompts.meanBodyBytes / 1000);
  console.log(
    `bench [prefix]: ${PREFIX_ENDPOINT} (routing_policy prefix_aware, affinity on) on upstreams ${dep.upstreams.join(', ')}, through the gateway (pid ${gw.gateway.pid}, 1 gateway worker); ` +
      `${prompts.requests.length} bodies of ~${kb} KB, ${prompts.groups} shared system prompts, X-Session-Id per user; ${prefixConnections} connections, ${rounds} rounds of ${seconds} s: ` +
      `autocannon closed loop, then an even ${rate} req/s; direct: the same load to upstream ${dep.upstreams[0]}`,
  );
  const direct: LoadTarget & PacedTarget = { name: 'prefix direct', url: `http://127.0.0.1:${dep.upstreams[0]}`, bodies: prompts.requests };
  const gateway: LoadTarget & PacedTarget = {
    name: 'prefix gateway',
    url: `https://127.0.0.1:${gw.port}`,
    host: dep.host,
    ca,
    headers: { authorization: `Bearer ${dep.token}` },
    pid: gw.gateway.pid,
    bodies: prompts.requests,
  };
  const closed = await loadRounds([direct, gateway], rounds, { seconds, connections: prefixConnections, exactLatency: true });
  assertNoFailedRequests(closed);
  const [closedDirect, closedGate] = closed as [LoadSummary, LoadSummary];
  // Latency is compared at the target rate when the gateway sustains it with room to spare;
  // otherwise at half what it sustained, as a figure of its own (not the target's row).
  const atTarget = closedGate.rps >= 1.1 * rate;
  const pacedRate = atTarget ? rate : Math.max(10, Math.floor((closedGate.rps * 0.5) / 10) * 10);
  const paced = await pacedRounds(
    [direct, gateway].map((t) => ({ ...t, name: `${t.name} @${pacedRate}/s` })),
    rounds,
    { rate: pacedRate, seconds, connections: prefixConnections },
  );
  const failed = paced.filter((x) => x.non2xx > 0 || x.errors > 0);
  if (failed.length > 0) throw new Error(`failed requests (${failed.map((x) => `${x.target}: ${x.non2xx} non-2xx, ${x.errors} errors`).join('; ')}): no figures`);
  await checkRouted(() => gw.routedReplicas(PREFIX_ENDPOINT), 2, `after the prefix run, the gateway's ${PREFIX_ENDPOINT}`);
  console.table(table(closed));
  console.table(
    paced.map((x) => ({ target: x.target, requests: x.requests, 'req/s': x.rps, 'p50 ms': x.p50ms, 'p99 ms': x.p99ms, 'CPU µs/req': x.cpuUsPerRequest, cores: x.cpuCores, abandoned: x.abandoned, 'sent late p99/max ms': `${x.lagP99Ms} / ${x.maxLagMs}` })),
  );
  const [pacedDirect, pacedGate] = paced as [PacedResult, PacedResult];
  const kept = paced.every((x) => x.abandoned === 0 && Math.abs(x.rps - pacedRate) <= 0.05 * pacedRate);
  const even = paced.every((x) => x.lagP99Ms <= MAX_GENERATOR_LAG_MS);
  const added = round2(pacedGate.p99ms - pacedDirect.p99ms);
  report.summary.prefix = {
    settings: { rate, pacedRate, connections: prefixConnections, bodies: prompts.requests.length, meanBodyBytes: prompts.meanBodyBytes, groups: prompts.groups },
    closed,
    paced,
    addedP99Ms: kept && even ? added : null,
  };
  report.verdicts.push([
    `prefix_aware, ~${kb} KB prompts: gateway ${closedGate.rps} req/s closed loop on one process (${closedGate.cpuCores ?? '?'} cores busy, ${closedGate.cpuUsPerRequest} µs CPU/request; direct ${closedDirect.rps} req/s; target ≥ ${TARGETS.prefixRps})`,
    closedGate.rps >= TARGETS.prefixRps,
  ]);
  const notKept = !kept
    ? `the offered ${pacedRate} req/s was not kept (direct ${pacedDirect.rps}, gateway ${pacedGate.rps} req/s answered, ${pacedDirect.abandoned + pacedGate.abandoned} abandoned): the p99s are not of that load`
    : `the bench process sent late (p99 ${Math.max(pacedDirect.lagP99Ms, pacedGate.lagP99Ms)} ms behind schedule, over ${MAX_GENERATOR_LAG_MS} ms; load average ${os.loadavg().map(round2).join(' ')}): the late requests left in bunches, so the load was not even and the p99s measure the bunching`;
  if (atTarget && kept && even) {
    report.verdicts.push([
      `prefix_aware, ~${kb} KB prompts at an even ${rate} req/s: gateway p99 ${pacedGate.p99ms} ms − direct p99 ${pacedDirect.p99ms} ms = ${added} ms added (target ≤ ${TARGETS.prefixAddedP99Ms} ms)`,
      added <= TARGETS.prefixAddedP99Ms,
    ]);
  } else if (atTarget) {
    report.withheld.push({ row: `prefix added p99 at ${rate} req/s`, why: notKept });
  } else {
    report.withheld.push({ row: `prefix added p99 at ${rate} req/s`, why: `the gateway answered ${closedGate.rps} req/s closed loop, below 1.1 × ${rate}: it cannot be offered ${rate} req/s` });
    if (kept && even) console.log(`bench [prefix]: at ${pacedRate} req/s instead (half what the gateway sustained; no target): gateway p99 ${pacedGate.p99ms} ms − direct p99 ${pacedDirect.p99ms} ms = ${added} ms added`);
    else console.log(`bench [prefix]: at ${pacedRate} req/s instead: ${notKept}`);
  }
}

async function main(): Promise<void> {
  const began = Date.now();
  for (const p of parts) if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--only: unknown part ${p} (parts: ${PARTS.join(', ')})`);
  if (parts.size === 0) throw new Error(`--only: no part named (parts: ${PARTS.join(', ')})`);
  // Only the traced gateways may see OTEL variables: inherited ones would trace the "off" rows.
  const inherited = Object.keys(process.env).filter((k) => k.startsWith('OTEL_'));
  for (const k of inherited) delete process.env[k];
  if (inherited.length > 0) console.log(`bench: removed ${inherited.join(', ')} from the environment of every process the bench starts`);
  console.log(`bench: parts ${[...parts].join(', ')}; ${os.cpus().length} cores shared by everything; load average ${os.loadavg().map(round2).join(' ')}`);

  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-bench-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  // Two upstreams: the bench deployment's own replicas (bench/upstream.ts as their command).
  const gw = await startGateway(root, dir, 2);
  const upstreamPorts = gw.upstreams;
  const ca = await loadOrCreateCa(path.join(dir, 'certs'));
  const haproxy = runs('cpu') || runs('streams') ? await startHaproxy(dir, ca, upstreamPorts) : null;
  const bare = runs('cpu') ? await startBareForwarder(root, dir, ca, upstreamPorts[0]!) : null;
  // autocannon never verifies certificates (it forces rejectUnauthorized: false), so every TLS
  // target first answers one request whose chain is verified against the platform CA.
  await until200(gw.port, ca.certPem, 'the gateway');
  if (haproxy) await until200(haproxy.port, ca.certPem, 'HAProxy');
  if (bare) await until200(bare.port, ca.certPem, 'the bare forwarder');
  console.log(
    `bench: ${haproxy?.version ?? 'no HAProxy'}; upstream replicas on ports ${upstreamPorts.join(', ')}; pids: ${haproxy ? `haproxy ${haproxy.proc.pid}, ` : ''}${bare ? `node-floor ${bare.proc.pid}, ` : ''}gateway ${gw.gateway.pid}`,
  );
  if (generator === 'wrk' && (runs('cpu') || runs('tracing'))) ensurePackage('wrk');
  // The gateway must route to the two bench upstream ports and nothing else.
  await checkRouted(() => gw.routedReplicas(), upstreamPorts.length, 'the gateway');

  const report: Report = {
    summary: {
      date: new Date().toISOString(),
      machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), shared by load generator, proxies and upstream; load average at the start ${os.loadavg().map(round2).join(' ')}`,
      haproxy: haproxy?.version ?? null,
      parts: [...parts],
      settings: { generator, method, seconds, rounds, connections, streams: streamCount, chunks: 50, chunkDelayMs: 5, ...options.extra },
      goals: TARGETS,
    },
    verdicts: [],
    withheld: [],
  };
  if (runs('cpu')) await cpuPart(report, gw, { port: haproxy!.port, pid: haproxy!.proc.pid }, { port: bare!.port, pid: bare!.proc.pid }, ca.certPem);
  if (runs('streams')) await streamsPart(report, gw, haproxy!, ca.certPem);
  if (runs('tracing')) await tracingPart(report, gw, ca.certPem);
  if (runs('prefix')) await prefixPart(report, gw, ca.certPem);

  await checkRouted(() => gw.routedReplicas(), upstreamPorts.length, 'by the end, the gateway');
  report.summary.withheld = report.withheld;
  report.summary.seconds = Math.round((Date.now() - began) / 1000);
  // Every part stopped the run on a failed request or stream before printing a figure.
  report.verdicts.push(['no failed requests or streams in any part (each part stops the run on the first)', true]);
  for (const w of report.withheld) console.log(`NO FIGURE  ${w.row}: ${w.why}`);
  await reportVerdicts(root, 'gateway-vs-haproxy', report.summary as { date: string }, report.verdicts);
  console.log(`bench: ${report.summary.seconds} s in all; load average at the end ${os.loadavg().map(round2).join(' ')} (other programs on these cores make the figures noisier)`);
}

main()
  .catch((err: Error) => {
    console.error(`bench: ${err.message}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
