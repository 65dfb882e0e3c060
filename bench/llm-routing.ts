// Owns `npm run bench:llm`: which replica an LLM chat request goes to, compared on one
// multi-turn chat workload across five targets, each on 4 fresh reference-engine replicas
// with prefix caching — HAProxy hashing X-Session-Id (consistent, bounded load), HAProxy
// least-connections, and infergate's gateway with routing_policy affinity and prefix_aware,
// the latter also on engines that export no metrics (so the gateway has no scraped signal).
// Loopback only, bounded in time, one run. Measures the saturation throughput first (closed
// loop through least-connections), then drives every target open-loop at a fraction of it
// with the same seeded schedule; reports TTFT percentiles, end-to-end p99, output tokens/s,
// the cached-token ratio, the busiest replica's share, errors and the proxy's CPU per request,
// refuses to print the figures of a run that fails its validity checks. Then, unless
// --skip-overload, the overload phase (lib/llm-overload.ts): three credentials with priority
// classes on one prefix_aware deployment at 1.5 × saturation. Writes
// bench/results/llm-routing-<date>.json.
//   npm run bench:llm [-- --duration 60 --warmup 20 --sessions 200 --seed 1 --targets haproxy-hash,infergate-prefix --skip-overload]

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadOrCreateCa } from '../src/pki/ca.js';
import { probeSaturation, runOpenLoop, type ChatTarget, type ProbeResult } from './lib/llm-client.js';
import { engineFlags, startEngines, startInfergate, type ReplicaMetricsProbe } from './lib/llm-targets.js';
import { overloadPhase, type OverloadReport } from './lib/llm-overload.js';
import { startBalancedHaproxy } from './lib/targets.js';
import { Workload, type EngineTiming, type ScheduledTurn, type WorkloadOptions } from './lib/llm-workload.js';
import { cpuMicros, onCleanup, stopAll } from './lib/processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TARGETS = ['haproxy-hash', 'haproxy-leastconn', 'infergate-affinity', 'infergate-prefix', 'infergate-prefix-nometrics'] as const;
type TargetName = (typeof TARGETS)[number];

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    warmup: { type: 'string', default: '20' },
    sessions: { type: 'string', default: '200' },
    seed: { type: 'string', default: '1' },
    rate: { type: 'string', default: '' },
    load: { type: 'string', default: '0.8' },
    probe: { type: 'string', default: '20' },
    'probe-warmup': { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '72' },
    think: { type: 'string', default: '1' },
    turns: { type: 'string', default: '8' },
    'kv-capacity-tokens': { type: 'string', default: '65536' },
    drain: { type: 'string', default: '120' },
    targets: { type: 'string', default: TARGETS.join(',') },
    'skip-overload': { type: 'boolean', default: false },
    'overload-factor': { type: 'string', default: '1.5' },
    'interactive-share': { type: 'string', default: '0.25' },
    'overload-duration': { type: 'string', default: '' },
    'overload-warmup': { type: 'string', default: '' },
    'unloaded-duration': { type: 'string', default: '' },
    'refusal-slack': { type: 'string', default: '2' },
    'overload-contrast': { type: 'boolean', default: false },
  },
});
const num = (flag: keyof typeof values, min: number): number => {
  const v = Number(values[flag]);
  if (!Number.isFinite(v) || v < min) throw new Error(`--${flag} must be a number ≥ ${min}, not "${String(values[flag])}"`);
  return v;
};
/** A number flag whose empty default means another figure (e.g. --overload-duration: --duration). */
const numOr = (flag: keyof typeof values, fallback: number, min: number): number => (values[flag] === '' ? fallback : num(flag, min));
const durationS = num('duration', 1);
const warmupS = num('warmup', 0);
const kvCapacity = Math.round(num('kv-capacity-tokens', 1024));
const targets = String(values.targets)
  .split(',')
  .map((t) => t.trim())
  .filter(Boolean) as TargetName[];
for (const t of targets) if (!TARGETS.includes(t)) throw new Error(`--targets: unknown target "${t}" (known: ${TARGETS.join(', ')})`);

const REPLICAS = 4;
const timing: EngineTiming = { ttftMs: 5, itlMs: 30, itlGrowth: 0.05, maxRunning: 16, prefillMsPerToken: 0.15 };
const workloadOptions: WorkloadOptions = {
  seed: Math.round(num('seed', 0)),
  sessions: Math.round(num('sessions', 1)),
  zipfS: 1.0,
  groups: 8,
  systemWords: 1500,
  turns: Math.round(num('turns', 1)),
  userWordsMin: 50,
  userWordsMax: 200,
  outputMedian: 100,
  outputSigma: 0.6,
  outputMin: 8,
  outputMax: 400,
  thinkMs: num('think', 0) * 1000,
};
const HOST = 'llm.bench.test';
const TOKEN = 'igt_bench_llm_token_0123456789abcdefABCDEF';
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const pct = (xs: readonly number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};

/** The engine's flags: the prefix-cache ones only when the built engine knows them. */
function engineArgs(known: Set<string>): { args: string[]; missing: string[] } {
  const args = ['--startup-ms', '0', '--ttft-ms', String(timing.ttftMs), '--itl-ms', String(timing.itlMs), '--itl-growth', String(timing.itlGrowth), '--max-running', String(timing.maxRunning), '--log-level', 'warn'];
  const wanted: Array<[string, string]> = [
    ['enable-prefix-caching', 'true'],
    ['prefill-ms-per-token', String(timing.prefillMsPerToken)],
    ['kv-capacity-tokens', String(kvCapacity)],
  ];
  const missing: string[] = [];
  for (const [flag, value] of wanted) {
    if (known.has(flag)) args.push(`--${flag}`, value);
    else missing.push(`--${flag}`);
  }
  return { args, missing };
}

interface TargetReport {
  target: TargetName;
  valid: boolean;
  reasons: string[];
  scheduled: number;
  measured: number;
  achievedRate: number;
  errors: number;
  errorSamples: string[];
  strays: string[];
  ttftP50Ms: number;
  ttftP90Ms: number;
  ttftP99Ms: number;
  e2eP50Ms: number;
  e2eP99Ms: number;
  outputTokensPerSecond: number;
  cachedTokenRatio: number;
  promptTokens: number;
  cachedTokens: number;
  usageWithoutCachedTokens: number;
  promptTokenMismatches: number;
  maxReplicaShare: number;
  perReplica: Record<string, number>;
  heldTurns: number;
  heldP99Ms: number;
  maxDriverLagMs: number;
  proxyPid: number;
  proxyCpuUsPerRequest: number;
  gatewayCounters?: Record<string, number>;
  /** prefix_aware targets: GET /metrics on each replica, at the gateway's scrape address, before and after the load. */
  replicaMetrics?: { before: ReplicaMetricsProbe[]; after: ReplicaMetricsProbe[] };
  /** The slowest 2 % of first tokens, to see what the tail is made of (JSON only). */
  slowest: Array<{ ttftMs: number; promptTokens: number | null; cachedTokens: number | null; turn: number; session: string; replica: string | null; heldMs: number }>;
}

function report(name: TargetName, run: Awaited<ReturnType<typeof runOpenLoop>>, scheduled: readonly ScheduledTurn[], expected: readonly string[], rate: number, cpuUs: number, pid: number): TargetReport {
  const measured = run.results.filter((r) => r.phase === 'measured');
  const ok = measured.filter((r) => r.error === null);
  const failed = measured.filter((r) => r.error !== null);
  const errors = failed.length + run.unfinished;
  const perReplica: Record<string, number> = {};
  for (const r of ok) perReplica[r.replica ?? '(none)'] = (perReplica[r.replica ?? '(none)'] ?? 0) + 1;
  const strays = Object.keys(perReplica).filter((r) => !expected.includes(r));
  const warmupMs = warmupS * 1000;
  const inWindow = measured.filter((r) => r.sentAt >= warmupMs && r.sentAt < warmupMs + durationS * 1000).length;
  const achievedRate = inWindow / durationS;
  const promptTokens = ok.reduce((a, r) => a + (r.promptTokens ?? 0), 0);
  const cachedTokens = ok.reduce((a, r) => a + (r.cachedTokens ?? 0), 0);
  const held = measured.filter((r) => r.heldMs > 1);
  const ttft = ok.map((r) => r.ttftMs ?? NaN);
  const reasons: string[] = [];
  if (errors > 0) reasons.push(`${errors} errors`);
  if (strays.length > 0) reasons.push(`responses from replicas outside the target's ${expected.length}: ${strays.join(', ')}`);
  if (expected.length !== REPLICAS) reasons.push(`${expected.length} replicas, not ${REPLICAS}`);
  if (measured.length + run.unfinished !== scheduled.length || run.unfinished > 0) reasons.push(`${measured.length} requests measured of ${scheduled.length} scheduled in the window`);
  if (Math.abs(achievedRate - rate) > 0.1 * rate) reasons.push(`achieved ${round(achievedRate)} req/s against the target ${round(rate)} (±10%)`);
  return {
    target: name,
    valid: reasons.length === 0,
    reasons,
    scheduled: scheduled.length,
    measured: measured.length,
    achievedRate: round(achievedRate),
    errors,
    errorSamples: [...new Set(failed.map((r) => r.error ?? ''))].slice(0, 5),
    strays,
    slowest: [...ok]
      .sort((a, b) => (b.ttftMs ?? 0) - (a.ttftMs ?? 0))
      .slice(0, Math.ceil(ok.length / 50))
      .map((r) => ({ ttftMs: round(r.ttftMs ?? NaN, 1), promptTokens: r.promptTokens, cachedTokens: r.cachedTokens, turn: r.turn, session: r.session, replica: r.replica, heldMs: round(r.heldMs, 0) })),
    ttftP50Ms: round(pct(ttft, 50), 1),
    ttftP90Ms: round(pct(ttft, 90), 1),
    ttftP99Ms: round(pct(ttft, 99), 1),
    e2eP50Ms: round(pct(ok.map((r) => r.e2eMs), 50), 0),
    e2eP99Ms: round(pct(ok.map((r) => r.e2eMs), 99), 0),
    outputTokensPerSecond: round(run.windowTokens / durationS, 1),
    cachedTokenRatio: promptTokens > 0 ? round(cachedTokens / promptTokens, 3) : 0,
    promptTokens,
    cachedTokens,
    usageWithoutCachedTokens: ok.filter((r) => r.cachedTokens === null).length,
    promptTokenMismatches: ok.filter((r) => r.promptTokens !== r.expectedPromptTokens).length,
    maxReplicaShare: ok.length > 0 ? round(Math.max(...Object.values(perReplica)) / ok.length, 3) : 0,
    perReplica,
    heldTurns: held.length,
    heldP99Ms: round(pct(measured.map((r) => r.heldMs), 99), 0),
    maxDriverLagMs: round(run.maxDriverLagMs, 1),
    proxyPid: pid,
    proxyCpuUsPerRequest: scheduled.length > 0 ? round(cpuUs / scheduled.length, 1) : NaN,
  };
}

function describeProbes(probes: readonly ReplicaMetricsProbe[]): string {
  return probes.map((p) => `${p.replica} ${p.status === 0 ? 'no answer' : p.status}${p.vllmSignals ? ' (vLLM signals)' : ''}`).join(', ') || 'no scrape target published';
}

/**
 * Why a prefix_aware run does not show what its name says: without metrics, every replica's
 * /metrics must answer 404 (the gateway's scrape then finds no signal); with them, every one
 * must expose vLLM's running-requests gauge.
 */
function signalReasons(noMetrics: boolean, probes: readonly ReplicaMetricsProbe[], when: string): string[] {
  if (probes.length !== REPLICAS) return [`${probes.length} scrape targets published for the deployment ${when}, not ${REPLICAS}`];
  const wrong = probes.filter((p) => (noMetrics ? p.status !== 404 : !p.vllmSignals));
  if (wrong.length === 0) return [];
  return [`${when}, ${noMetrics ? 'replicas export metrics the gateway can scrape' : 'replicas expose no vLLM signals'}: ${describeProbes(wrong)}`];
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-bench-llm-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  const ca = await loadOrCreateCa(path.join(dir, 'certs'));
  const known = engineFlags(root);
  const engine = engineArgs(known);
  if (engine.missing.length > 0) console.log(`bench: NOTE: the built engine has no ${engine.missing.join(', ')}: the replicas run without them, so cached-token figures and the verdicts below say nothing about prefix caching`);
  console.log(`bench: ${REPLICAS} reference-engine replicas per target, fresh for each: ${engine.args.join(' ')}`);
  const workload = new Workload(workloadOptions);

  /** HAProxy in front of 4 fresh engines; stop() stops both. */
  const haproxyTarget = async (name: string, balance: string[]) => {
    const engines = await startEngines(root, REPLICAS, name, engine.args);
    const hap = await startBalancedHaproxy(dir, name, ca, [HOST], engines.ports, balance);
    const target: ChatTarget = { name, origin: `https://${HOST}:${hap.port}`, ca: ca.certPem, headers: {}, model: 'sim/model' };
    const stop = async () => {
      await hap.proc.stop();
      await engines.stop();
    };
    return { target, engines, hap, stop };
  };

  // Saturation: a closed loop of `concurrency` conversations (more than the 4 × max-running
  // slots, so every batch stays full) through least-connections, on fresh replicas.
  let probe: ProbeResult | null = null;
  let rate: number;
  if (values.rate !== '') {
    rate = num('rate', 0.01);
    console.log(`bench: rate ${rate} req/s from --rate (no saturation probe)`);
  } else {
    const concurrency = Math.round(num('concurrency', 1));
    const probeWorkload = new Workload({ ...workloadOptions, seed: workloadOptions.seed + 1, sessions: Math.max(workloadOptions.sessions, 4 * concurrency) });
    const probeSeconds = num('probe-warmup', 0) + num('probe', 1);
    const probeTurns = probeWorkload.schedule(concurrency / 2, [{ phase: 'measured', seconds: probeSeconds * 4 }], timing);
    const lc = await haproxyTarget('probe', ['balance leastconn']);
    probe = await probeSaturation(lc.target, probeWorkload, probeTurns, concurrency, num('probe-warmup', 0) * 1000, num('probe', 1) * 1000);
    await lc.stop();
    rate = round(probe.requestsPerSecond * num('load', 0.01), 2);
    console.log(
      `bench: saturation ${round(probe.requestsPerSecond)} req/s (${round(probe.outputTokensPerSecond, 0)} output tokens/s; closed loop, ${concurrency} conversations, ${probe.seconds} s after ${values['probe-warmup']} s, HAProxy leastconn, fresh replicas; ${probe.errors} errors) → rate ${rate} req/s (× ${values.load})`,
    );
    if (probe.errors > 0 || probe.completed === 0) throw new Error('the saturation probe had errors or completed nothing: no rate to run at');
  }

  const schedule = workload.schedule(
    rate,
    [
      { phase: 'warmup', seconds: warmupS },
      { phase: 'measured', seconds: durationS },
      { phase: 'tail', seconds: num('drain', 1) },
    ],
    timing,
  );
  const overbooked = workload.overbooked;
  const window = schedule.filter((t) => t.phase === 'measured');
  const ws = workload.workingSetTokens(schedule, (warmupS + durationS) * 1000);
  const fits = ws.tokens > kvCapacity && ws.tokens <= REPLICAS * kvCapacity;
  console.log(
    `bench: workload: seed ${workloadOptions.seed}, ${workloadOptions.sessions} session slots (Zipf s=${workloadOptions.zipfS}), ${workloadOptions.groups} system prompts of ${workloadOptions.systemWords} words, ≤ ${workloadOptions.turns} turns per conversation, think ${workloadOptions.thinkMs} ms; ${window.length} requests in the ${durationS} s window after ${warmupS} s of warm-up (${schedule.filter((t) => t.phase === 'warmup').length})`,
  );
  if (overbooked > 0) console.log(`bench: NOTE: ${overbooked} scheduled turns found every session slot busy (by the schedule's estimate) and will wait for theirs: more --sessions would keep the arrivals open-loop`);
  console.log(
    `bench: KV capacity ${kvCapacity} tokens per replica; working set at the window's end ${ws.tokens} tokens (${ws.conversations} live conversations, ${ws.groups} system prompts): ${fits ? 'more than one replica holds, less than four do' : `NOTE: not between one replica's capacity and four's (${kvCapacity}–${REPLICAS * kvCapacity})`}`,
  );

  const reports: TargetReport[] = [];
  const versions: Record<string, string> = {};
  for (const name of targets) {
    let chat: ChatTarget;
    let expected: string[];
    let pid: number;
    let stop: () => Promise<unknown>;
    let after: (r: TargetReport) => Promise<void> = async () => undefined;
    if (name === 'haproxy-hash' || name === 'haproxy-leastconn') {
      const balance = name === 'haproxy-hash' ? ['balance hdr(X-Session-Id)', 'hash-type consistent', 'hash-balance-factor 150'] : ['balance leastconn'];
      const h = await haproxyTarget(name, balance);
      chat = h.target;
      expected = h.engines.ids;
      pid = h.hap.proc.pid;
      stop = h.stop;
      versions.haproxy = h.hap.version;
    } else {
      const policy = name === 'infergate-affinity' ? 'affinity' : 'prefix_aware';
      const noMetrics = name === 'infergate-prefix-nometrics';
      if (noMetrics && !known.has('metrics')) {
        console.log(`bench: ${name}: skipped: the built engine has no --metrics flag, so its replicas cannot run without metrics`);
        continue;
      }
      const g = await startInfergate('llm', policy, REPLICAS, noMetrics ? [...engine.args, '--metrics', 'false'] : engine.args, TOKEN);
      chat = { name, origin: `https://${g.host}:${g.port}`, ca: g.caPem, headers: { authorization: `Bearer ${TOKEN}` }, model: 'sim/model' };
      expected = await g.replicaNames();
      const routed = await g.routedReplicas();
      if (routed !== REPLICAS) throw new Error(`${name}: the gateway routes the endpoint to ${routed} replicas, not ${REPLICAS}`);
      pid = g.serve.proc.pid;
      stop = () => g.serve.proc.stop();
      // prefix_aware reads each replica's /metrics: prove what that scrape finds, before and after.
      const before = policy === 'prefix_aware' ? await g.replicaMetrics() : null;
      if (before) console.log(`bench: ${name}: GET /metrics on its replicas (the gateway's scrape targets): ${describeProbes(before)}`);
      after = async (r) => {
        r.gatewayCounters = await g.gatewayCounters();
        const sum = (series: string) => Object.entries(r.gatewayCounters ?? {}).reduce((a, [k, v]) => (k.startsWith(`${series}{`) ? a + v : a), 0);
        const waited = sum('infergate_flow_wait_seconds_count');
        if (waited > 0) console.log(`bench: ${name}: the gateway's flow-control queue held ${waited} requests (${Math.round((sum('infergate_flow_wait_seconds_sum') / waited) * 1000)} ms on average), refused ${sum('infergate_flow_shed_total')}`);
        const routedAfter = await g.routedReplicas();
        if (routedAfter !== REPLICAS) r.reasons.push(`the gateway routed to ${routedAfter} replicas by the end`);
        if (before) {
          const afterProbes = await g.replicaMetrics();
          r.replicaMetrics = { before, after: afterProbes };
          r.reasons.push(...signalReasons(noMetrics, before, 'before the load'), ...signalReasons(noMetrics, afterProbes, 'after the load'));
        }
        r.valid = r.reasons.length === 0;
      };
    }
    const proxy = name.startsWith('haproxy') ? versions.haproxy : 'infergate serve';
    console.log(`bench: ${name}: replicas ${expected.join(', ')}; proxy ${proxy}, pid ${pid}; ${warmupS} s warm-up, ${durationS} s measured`);
    let cpu0 = 0;
    let cpu1 = 0;
    const run = await runOpenLoop(chat, workload, schedule, {
      warmupMs: warmupS * 1000,
      durationMs: durationS * 1000,
      thinkMs: workloadOptions.thinkMs,
      drainLimitMs: num('drain', 1) * 1000,
      onWindowStart: () => (cpu0 = cpuMicros(pid)),
      onWindowEnd: () => (cpu1 = cpuMicros(pid)),
    });
    const r = report(name, run, window, expected, rate, cpu1 - cpu0, pid);
    await after(r);
    await stop();
    reports.push(r);
    console.log(`bench: ${name}: ${r.valid ? 'valid' : `INVALID (${r.reasons.join('; ')})`}${r.errorSamples.length ? `; errors: ${r.errorSamples.join(' | ')}` : ''}`);
  }

  // The table: figures only for runs that passed every validity check.
  const header = ['target', 'TTFT p50 ms', 'p90 ms', 'p99 ms', 'e2e p99 ms', 'output tok/s', 'cached ratio', 'max replica share', 'errors', 'proxy CPU µs/req', 'req/s achieved', 'validity'];
  const rows = reports.map((r) =>
    r.valid
      ? [r.target, r.ttftP50Ms, r.ttftP90Ms, r.ttftP99Ms, r.e2eP99Ms, r.outputTokensPerSecond, r.cachedTokenRatio, r.maxReplicaShare, r.errors, r.proxyCpuUsPerRequest, r.achievedRate, 'valid']
      : [r.target, '—', '—', '—', '—', '—', '—', '—', r.errors, '—', r.achievedRate, `INVALID: ${r.reasons.join('; ')}`],
  );
  console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  console.log(`\nrate ${rate} req/s${probe ? ` (${values.load} × saturation ${round(probe.requestsPerSecond)} req/s)` : ''}; proxy CPU: HAProxy's process, or the whole \`infergate serve\` process (gateway, control plane and replica runtime in one process) over the measured window, per request`);

  const by = (t: TargetName) => reports.find((r) => r.target === t);
  const usable = (t: TargetName) => {
    const r = by(t);
    return r && r.valid ? r : null;
  };
  const verdict = (text: string, needs: TargetName[], test: () => boolean): { text: string; result: 'PASS' | 'MISS' | 'n/a' } => {
    const missing = needs.filter((t) => !usable(t));
    if (missing.length > 0) return { text: `${text} — ${missing.join(', ')} not run or INVALID`, result: 'n/a' };
    return { text, result: test() ? 'PASS' : 'MISS' };
  };
  const pa = usable('infergate-prefix');
  const hash = usable('haproxy-hash');
  const lc = usable('haproxy-leastconn');
  const aff = usable('infergate-affinity');
  const allErrors = reports.reduce((a, r) => a + r.errors, 0);
  // The best peer of the same run, per figure: the lower of HAProxy's two.
  const bestPeer = (figure: 'ttftP50Ms' | 'ttftP99Ms'): { ms: number; by: string } | null =>
    hash && lc ? (hash[figure] <= lc[figure] ? { ms: hash[figure], by: 'HAProxy hash' } : { ms: lc[figure], by: 'HAProxy leastconn' }) : null;
  const p50 = bestPeer('ttftP50Ms');
  const p99 = bestPeer('ttftP99Ms');
  const peers: TargetName[] = ['haproxy-hash', 'haproxy-leastconn'];
  const prefixVerdicts = (
    [
      ['infergate-prefix', 'prefix_aware with engine metrics'],
      ['infergate-prefix-nometrics', 'prefix_aware without engine metrics'],
    ] as const
  ).flatMap(([t, label]) => {
    const r = usable(t);
    return [
      verdict(`infergate ${label} p50 TTFT ${r?.ttftP50Ms ?? '?'} ms ≤ best peer p50 ${p50 ? `${p50.ms} ms (${p50.by})` : '?'}`, [t, ...peers], () => r!.ttftP50Ms <= p50!.ms),
      verdict(`infergate ${label} p99 TTFT ${r?.ttftP99Ms ?? '?'} ms ≤ 0.7 × best peer p99 ${p99 ? `${p99.ms} ms (${p99.by}) = ${round(0.7 * p99.ms, 1)} ms` : '?'}`, [t, ...peers], () => r!.ttftP99Ms <= 0.7 * p99!.ms),
    ];
  });
  const verdicts = [
    ...prefixVerdicts,
    {
      text: `zero errors on every target run (${allErrors})${reports.length === 0 ? ' — no target run' : ''}`,
      result: reports.length === 0 ? ('n/a' as const) : allErrors === 0 ? ('PASS' as const) : ('MISS' as const),
    },
    verdict(`gateway CPU per request prefix_aware ${pa?.proxyCpuUsPerRequest ?? '?'} µs ≤ 1.3 × affinity ${aff?.proxyCpuUsPerRequest ?? '?'} µs (${aff ? round(1.3 * aff.proxyCpuUsPerRequest, 1) : '?'} µs)`, ['infergate-prefix', 'infergate-affinity'], () => pa!.proxyCpuUsPerRequest <= 1.3 * aff!.proxyCpuUsPerRequest),
  ];
  console.log('');
  for (const v of verdicts) console.log(`${v.result.padEnd(4)}  ${v.text}`);
  if (engine.missing.length > 0) console.log(`NOTE  the engine ran without ${engine.missing.join(', ')}: these verdicts are not about prefix caching`);

  // The overload phase: priorities and flow control past saturation, on its own deployment.
  let overload: OverloadReport | null = null;
  let overloadError: string | null = null;
  if (!values['skip-overload']) {
    const saturation = probe ? probe.requestsPerSecond : rate / num('load', 0.01);
    if (!probe) console.log(`\nbench: overload: saturation taken as --rate ÷ --load = ${round(saturation)} req/s (no probe ran)`);
    // A phase that cannot run still leaves the targets' results written, with the reason.
    overload = await overloadPhase({
      saturation,
      factor: num('overload-factor', 1),
      interactiveShare: num('interactive-share', 0.01),
      warmupS: numOr('overload-warmup', warmupS, 0),
      durationS: numOr('overload-duration', durationS, 1),
      unloadedS: numOr('unloaded-duration', durationS, 1),
      drainS: num('drain', 1),
      slackS: num('refusal-slack', 0),
      replicas: REPLICAS,
      engineArgs: engine.args,
      token: TOKEN,
      workload,
      contrast: values['overload-contrast']
        ? async () => {
            const h = await haproxyTarget('overload-contrast', ['balance leastconn']);
            return { target: h.target, replicas: h.engines.ids, stop: h.stop };
          }
        : null,
    }).catch((err: Error) => {
      overloadError = err.message;
      return null;
    });
    console.log('');
    if (overload === null) console.log(`INVALID  overload: the phase could not run: ${overloadError}`);
    else {
      for (const v of overload.verdicts) console.log(`${v.result.padEnd(4)}  overload: ${v.text}`);
      if (!overload.valid) console.log(`INVALID  overload: ${overload.reasons.join('; ')}`);
    }
  }

  const date = new Date().toISOString();
  await mkdir(path.join(root, 'bench/results'), { recursive: true });
  const file = path.join(root, 'bench/results', `llm-routing-${date.replace(/[:.]/g, '-')}.json`);
  await writeFile(
    file,
    JSON.stringify(
      {
        date,
        machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), shared by the client, the proxies and the engines`,
        versions,
        settings: {
          durationS,
          warmupS,
          replicas: REPLICAS,
          timing,
          kvCapacityTokens: kvCapacity,
          engineArgs: engine.args,
          engineFlagsMissing: engine.missing,
          workload: workloadOptions,
          targets,
          overload: values['skip-overload'] ? null : { factor: Number(values['overload-factor']), interactiveShare: Number(values['interactive-share']), refusalSlackS: Number(values['refusal-slack']), contrast: values['overload-contrast'] },
        },
        saturation: probe,
        rate,
        load: values.rate === '' ? Number(values.load) : null,
        scheduledInWindow: window.length,
        workingSet: ws,
        overbookedTurns: overbooked,
        reports,
        verdicts,
        overload,
        overloadError,
      },
      null,
      2,
    ),
  );
  console.log(`bench: results in ${path.relative(root, file)}`);
}

main()
  .catch((err: Error) => {
    console.error(`bench: ${err.stack ?? err.message}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
