// Gateway workers on this machine: one `--role gateway` process with 1 gateway worker (the
// gateway in the process itself) against one with 2 (`--gateway-workers 2`, node:cluster),
// in front of the same two upstreams, fed by one control process through Redis. Requests/s and
// CPU µs per request (the primary and its workers together) under the same autocannon load,
// then 50 concurrent SSE streams: time to first chunk over direct, beside HAProxy's — the
// method of `bench:gateway`, interleaved rounds, medians.
//   npm run bench:workers [-- --duration 6 --rounds 3 --connections 50 --streams 50 --generator autocannon|wrk --method POST|GET]
// Prints PASS/MISS against the targets and writes bench/results/gateway-workers-*.json.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrCreateCa } from '../src/pki/ca.js';
import type { LoadTarget } from './lib/load.js';
import { assertNoFailedRequests, loadRounds, round2, reportVerdicts, roundOptions, streamRounds } from './lib/rounds.js';
import { cpuMicros, onCleanup, stopAll } from './lib/processes.js';
import type { StreamTarget } from './lib/streams.js';
import { ensurePackage, HOST, startGateway, startHaproxy, TOKEN, type ExtraGateway } from './lib/targets.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { seconds, rounds, connections, streamCount, generator, method } = roundOptions();

/** Fails the run unless the gateway routes the bench endpoint to exactly the bench upstreams. */
async function checkRouted(g: ExtraGateway, expected: number, when: string): Promise<void> {
  const routed = await g.routedReplicas();
  if (routed !== expected) throw new Error(`${when}, the ${g.workers}-worker gateway routes the bench endpoint to ${routed} replicas, not the ${expected} bench upstreams: figures would mix targets`);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-bench-workers-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  const base = await startGateway(root, dir, 2);
  const upstreams = base.upstreams;
  // The base gateway stays idle; the two measured ones are started alike, differing only in workers.
  const one = await base.addGateway(1);
  const two = await base.addGateway(2);
  const ca = await loadOrCreateCa(path.join(dir, 'certs'));
  const haproxy = await startHaproxy(dir, ca, upstreams);
  await new Promise((r) => setTimeout(r, 1500)); // both gateways have read the routing table
  await checkRouted(one, upstreams.length, 'before the run');
  await checkRouted(two, upstreams.length, 'before the run');
  const workerPids = two.pids().slice(1);
  if (workerPids.length !== 2) throw new Error(`the 2-worker gateway runs ${workerPids.length} worker processes, not 2`);
  if (one.pids().length !== 1) throw new Error('the 1-worker gateway runs worker processes: it must run its gateway itself');
  console.log(`bench: ${haproxy.version}; upstreams ${upstreams.join(', ')}; 1-worker gateway pid ${one.proc.pid}; 2-worker gateway pid ${two.proc.pid} with workers ${workerPids.join(', ')}`);
  if (generator === 'wrk') ensurePackage('wrk');
  console.log(`bench: ${generator}, ${method}, ${connections} connections; ${rounds} interleaved rounds of ${seconds} s per target after 1 s warm-ups; ${os.cpus().length} cores shared by everything`);

  const auth = { authorization: `Bearer ${TOKEN}` };
  const tls = { host: HOST, headers: auth, ca: ca.certPem, method } as const;
  const targets: LoadTarget[] = [
    { name: 'gateway-1-worker', url: `https://127.0.0.1:${one.port}`, pids: () => one.pids(), ...tls },
    { name: 'gateway-2-workers', url: `https://127.0.0.1:${two.port}`, pids: () => two.pids(), ...tls },
  ];
  const workerCpuBefore = workerPids.map(cpuMicros);
  const load = await loadRounds(targets, rounds, { seconds, connections, generator });
  const workerCpu = workerPids.map((pid, i) => cpuMicros(pid) - workerCpuBefore[i]!);
  console.table(load);
  assertNoFailedRequests(load);
  // Both workers must have served: a 2-worker figure made by one worker would name the wrong thing.
  const workerShare = workerCpu.map((c) => c / workerCpu.reduce((a, x) => a + x, 0));
  if (workerShare.some((s) => s < 0.25)) throw new Error(`one gateway worker did almost nothing (CPU shares ${workerShare.map(round2).join(' / ')}): the 2-worker figures are of one worker`);

  const streamTargets: StreamTarget[] = [
    { name: 'direct', port: upstreams[0]!, tls: false },
    { name: 'haproxy', port: haproxy.port, tls: true, host: HOST, ca: ca.certPem, headers: auth },
    { name: 'gateway-1-worker', port: one.port, tls: true, host: HOST, ca: ca.certPem, headers: auth },
    { name: 'gateway-2-workers', port: two.port, tls: true, host: HOST, ca: ca.certPem, headers: auth },
  ];
  const streams = await streamRounds(streamTargets, rounds, streamCount);
  console.table(streams);
  await checkRouted(one, upstreams.length, 'after the run');
  await checkRouted(two, upstreams.length, 'after the run');
  if (two.pids().slice(1).join() !== workerPids.join()) throw new Error('a gateway worker was replaced during the run: figures include a restart');

  const [g1, g2] = load as [(typeof load)[0], (typeof load)[0]];
  const s = (name: string) => streams.find((x) => x.target === name)!;
  const over = (name: string, mode: 'warm' | 'cold') => round2(s(`${name} (${mode})`).firstChunkP50 - s(`direct (${mode})`).firstChunkP50);
  const rpsRatio = round2(g2.rps / g1.rps);
  const cpuRatio = round2((g2.cpuUsPerRequest ?? NaN) / (g1.cpuUsPerRequest ?? NaN));
  const overhead = {
    warm: { haproxy: over('haproxy', 'warm'), oneWorker: over('gateway-1-worker', 'warm'), twoWorkers: over('gateway-2-workers', 'warm') },
    cold: { haproxy: over('haproxy', 'cold'), oneWorker: over('gateway-1-worker', 'cold'), twoWorkers: over('gateway-2-workers', 'cold') },
  };
  const ttfcLimit = round2(1.5 * overhead.warm.haproxy);
  const verdicts: Array<[string, boolean]> = [
    [`2 workers ${g2.rps} req/s = ${rpsRatio}× 1 worker's ${g1.rps} (target ≥ 1.5×)`, rpsRatio >= 1.5],
    [`CPU per request with 2 workers ${g2.cpuUsPerRequest} µs = ${cpuRatio}× 1 worker's ${g1.cpuUsPerRequest} µs (target: the same, taken as ≤ 1.1×)`, cpuRatio <= 1.1],
    [`${streamCount}-stream time-to-first-chunk overhead over direct, 2 workers ${overhead.warm.twoWorkers} ms vs HAProxy ${overhead.warm.haproxy} ms, warm (target ≤ 1.5× = ${ttfcLimit} ms)`, overhead.warm.twoWorkers <= ttfcLimit],
  ];
  const summary = {
    date: new Date().toISOString(),
    machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), shared by load generator, gateways, HAProxy and upstreams; load average ${os.loadavg().map(round2).join(' ')}`,
    haproxy: haproxy.version,
    settings: { generator, seconds, rounds, connections, streams: streamCount, chunks: 50, chunkDelayMs: 5 },
    load,
    workerCpuShares: workerShare.map(round2),
    streams,
    firstChunkOverheadOverDirectMs: overhead,
    ratios: { rpsTwoOverOne: rpsRatio, cpuPerRequestTwoOverOne: cpuRatio },
  };
  console.log(JSON.stringify(summary.firstChunkOverheadOverDirectMs));
  await reportVerdicts(root, 'gateway-workers', summary, verdicts);
}

main()
  .catch((err: Error) => {
    console.error(`bench: ${err.message}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
