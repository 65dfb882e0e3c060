// Bench helper: the overload phase of bench/llm-routing.ts. One prefix_aware deployment on
// fresh reference-engine replicas with three credentials — its bearer token, flooding with
// `X-Priority: sheddable`, and two client certificates issued for it, interactive, one sending
// `critical` and one `standard` — each an open-loop stream of independent single-turn chats.
// First the two interactive credentials alone (their unloaded TTFT), then all three at a
// multiple of the measured saturation. Per credential: what was sent, served (200 and a
// complete stream), refused (429/503, with Retry-After, within its class's wait limit) or
// failed, TTFT of the served, tokens served against tokens asked for; then the flow-control
// targets. Optionally the same overload through HAProxy leastconn, which has no classes.

import { setMaxListeners } from 'node:events';
import type { Dispatcher } from 'undici';
import { clientFor, streamChat, type ChatOutcome, type ChatTarget } from './llm-client.js';
import { startInfergate, type InfergateTarget } from './llm-targets.js';
import type { Phase, ScheduledTurn, Workload } from './llm-workload.js';

export type PriorityClass = 'critical' | 'standard' | 'sheddable';

/** The gateway's default longest wait per class, seconds, when the deployment reports none. */
export const DEFAULT_WAIT_LIMITS_S: Readonly<Record<PriorityClass, number>> = { critical: 60, standard: 30, sheddable: 5 };

const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const pct = (xs: readonly number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};
/** How late past the window's end a measured arrival may leave and still count as sent inside it. */
const SEND_GRACE_MS = 100;
const sleepUntil = (t: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, t - performance.now())));

/** One credential's stream of requests. */
export interface CredentialLoad {
  /** How the report names it: `flood`, `interactive-critical`, … */
  name: string;
  /** What it authenticates with, for the reader (`bearer token`, `certificate #3, bound`). */
  credential: string;
  priority: PriorityClass;
  target: ChatTarget;
  rate: number;
  schedule: ScheduledTurn[];
}

export interface RequestResult extends ChatOutcome {
  credential: string;
  phase: Phase;
  /** ms from the run's start. */
  sentAt: number;
  maxTokens: number;
}

export interface LoadRun {
  results: RequestResult[];
  /** Per credential: measured requests sent inside the window, and those not finished by the drain limit. */
  sentInWindow: Record<string, number>;
  unfinished: Record<string, number>;
  maxDriverLagMs: number;
}

/**
 * Every credential's schedule at once, open loop: each request leaves at its instant whatever
 * the answers do (no request waits for another). One undici agent per credential, so a
 * certificate is presented on its own connections only. After the window, the tail's arrivals
 * keep the load on until every request due in the window has ended, or the drain limit; then
 * whatever is still running is aborted and counted as unfinished.
 */
export async function runCredentials(loads: readonly CredentialLoad[], workload: Workload, o: { warmupMs: number; durationMs: number; drainLimitMs: number }): Promise<LoadRun> {
  const dispatchers = new Map<string, Dispatcher>(loads.map((l) => [l.name, clientFor(l.target)]));
  const abort = new AbortController();
  setMaxListeners(0, abort.signal); // one listener per request in flight
  const arrivals = loads.flatMap((load) => load.schedule.map((turn) => ({ load, turn }))).sort((a, b) => a.turn.at - b.turn.at);
  const pending = new Map<string, number>(loads.map((l) => [l.name, l.schedule.filter((t) => t.phase === 'measured').length]));
  let measuredLeft = [...pending.values()].reduce((a, b) => a + b, 0);
  let allDone: () => void = () => undefined;
  const finished = new Promise<void>((r) => (allDone = r));
  if (measuredLeft === 0) allDone();
  const results: RequestResult[] = [];
  const sentInWindow: Record<string, number> = Object.fromEntries(loads.map((l) => [l.name, 0]));
  const t0 = performance.now() + 100;
  const windowStart = t0 + o.warmupMs;
  const windowEnd = windowStart + o.durationMs;
  let stopped = false;
  let maxDriverLagMs = 0;

  const send = (load: CredentialLoad, turn: ScheduledTurn): void => {
    const sentAt = performance.now();
    // A timer fires a few ms late: an arrival due just before the window's end still counts as sent in it.
    if (turn.phase === 'measured' && sentAt >= windowStart && sentAt < windowEnd + SEND_GRACE_MS) sentInWindow[load.name]!++;
    const messages = workload.messages(turn, []);
    void streamChat(load.target, dispatchers.get(load.name)!, turn.session, messages, turn.maxTokens, abort.signal).then((outcome) => {
      if (stopped) return;
      results.push({ ...outcome, credential: load.name, phase: turn.phase, sentAt: sentAt - t0, maxTokens: turn.maxTokens });
      if (turn.phase !== 'measured') return;
      pending.set(load.name, pending.get(load.name)! - 1);
      if (--measuredLeft === 0) allDone();
    });
  };

  const driver = (async () => {
    for (const { load, turn } of arrivals) {
      await sleepUntil(t0 + turn.at);
      if (stopped) return;
      maxDriverLagMs = Math.max(maxDriverLagMs, performance.now() - (t0 + turn.at));
      send(load, turn);
    }
  })();

  await sleepUntil(windowEnd);
  let drainTimer: NodeJS.Timeout | undefined;
  await Promise.race([finished, new Promise<void>((r) => (drainTimer = setTimeout(r, o.drainLimitMs)))]);
  clearTimeout(drainTimer);
  stopped = true;
  abort.abort();
  await driver;
  await Promise.all([...dispatchers.values()].map((d) => d.destroy().catch(() => undefined)));
  return { results, sentInWindow, unfinished: Object.fromEntries(pending), maxDriverLagMs };
}

/** A Retry-After value as RFC 9110 allows it: delay-seconds or an HTTP-date. */
export function validRetryAfter(value: string | null): boolean {
  if (value === null) return false;
  const v = value.trim();
  return /^\d+$/.test(v) || (/[A-Za-z]/.test(v) && Number.isFinite(Date.parse(v)));
}

export interface CredentialReport {
  name: string;
  credential: string;
  priority: PriorityClass;
  rate: number;
  achievedRate: number;
  sent: number;
  served: number;
  refused429: number;
  refused503: number;
  /** Neither served nor refused: another status, a broken stream, a connection error. */
  otherFailures: number;
  /** Still running at the drain limit (time-outs). */
  unfinished: number;
  refusedWithRetryAfter: number;
  /** Refused with a Retry-After within the class's wait limit plus the slack. */
  refusedInTime: number;
  refusedSlowestMs: number;
  waitLimitS: number;
  ttftP50Ms: number;
  ttftP99Ms: number;
  servedTokens: number;
  /** Output tokens asked for by the requests due in the window (max_tokens, with ignore_eos). */
  demandTokens: number;
  strays: string[];
  failureSamples: string[];
  retryAfterSamples: string[];
  /** The slowest 2 % of first tokens (at least 3), with when they were sent (s from the window's start), to see what the tail is made of (JSON only). */
  slowest: Array<{ ttftMs: number; sentAtS: number; promptTokens: number | null; cachedTokens: number | null; replica: string | null }>;
}

export function credentialReport(load: CredentialLoad, run: LoadRun, warmupS: number, durationS: number, waitLimitS: number, slackS: number, replicas: readonly string[]): CredentialReport {
  const mine = run.results.filter((r) => r.credential === load.name && r.phase === 'measured');
  const served = mine.filter((r) => r.status === 200 && r.error === null);
  const refused = mine.filter((r) => r.status === 429 || r.status === 503);
  const other = mine.filter((r) => !served.includes(r) && !refused.includes(r));
  const withRetryAfter = refused.filter((r) => validRetryAfter(r.retryAfter));
  const inTime = withRetryAfter.filter((r) => r.e2eMs <= (waitLimitS + slackS) * 1000);
  const strays = [...new Set(served.map((r) => r.replica ?? '(none)').filter((r) => !replicas.includes(r)))];
  const ttft = served.map((r) => r.ttftMs ?? NaN);
  return {
    name: load.name,
    credential: load.credential,
    priority: load.priority,
    rate: load.rate,
    achievedRate: round(run.sentInWindow[load.name]! / durationS, 2),
    sent: mine.length + run.unfinished[load.name]!,
    served: served.length,
    refused429: refused.filter((r) => r.status === 429).length,
    refused503: refused.filter((r) => r.status === 503).length,
    otherFailures: other.length,
    unfinished: run.unfinished[load.name]!,
    refusedWithRetryAfter: withRetryAfter.length,
    refusedInTime: inTime.length,
    refusedSlowestMs: round(Math.max(0, ...refused.map((r) => r.e2eMs)), 0),
    waitLimitS,
    ttftP50Ms: round(pct(ttft, 50)),
    ttftP99Ms: round(pct(ttft, 99)),
    servedTokens: served.reduce((a, r) => a + r.outputTokens, 0),
    demandTokens: load.schedule.filter((t) => t.phase === 'measured').reduce((a, t) => a + t.maxTokens, 0),
    strays,
    failureSamples: [...new Set(other.map((r) => r.error ?? `status ${r.status}`))].slice(0, 5),
    retryAfterSamples: [...new Set(refused.map((r) => String(r.retryAfter)))].slice(0, 5),
    slowest: [...served]
      .sort((a, b) => (b.ttftMs ?? 0) - (a.ttftMs ?? 0))
      .slice(0, Math.max(3, Math.ceil(served.length / 50)))
      .map((r) => ({ ttftMs: round(r.ttftMs ?? NaN), sentAtS: round(r.sentAt / 1000 - warmupS, 2), promptTokens: r.promptTokens, cachedTokens: r.cachedTokens, replica: r.replica })),
  };
}

/** Requests of a credential that were neither served nor refused as the contract says. */
export const violations = (r: CredentialReport): number => r.otherFailures + r.unfinished + (r.refused429 + r.refused503 - r.refusedInTime);

export function printCredentialTable(reports: readonly CredentialReport[], valid: boolean): void {
  const header = ['credential', 'class', 'rate req/s', 'sent', 'served', '429', '503', 'other failures', 'TTFT p50 ms', 'TTFT p99 ms', 'served tokens', 'asked tokens', 'refused with Retry-After', 'refused within limit', 'req/s achieved'];
  console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
  for (const r of reports) {
    const figures = valid
      ? [r.ttftP50Ms, r.ttftP99Ms, r.servedTokens, r.demandTokens]
      : ['—', '—', '—', '—'];
    const refused = r.refused429 + r.refused503;
    console.log(
      `| ${[`${r.name} (${r.credential})`, r.priority, r.rate, r.sent, r.served, r.refused429, r.refused503, r.otherFailures + r.unfinished, ...figures, `${r.refusedWithRetryAfter}/${refused}`, `${r.refusedInTime}/${refused} (≤ ${r.waitLimitS} s)`, r.achievedRate].join(' | ')} |`,
    );
  }
}

export interface Verdict {
  text: string;
  result: 'PASS' | 'MISS' | 'n/a';
}

export interface PhaseReport {
  valid: boolean;
  reasons: string[];
  credentials: CredentialReport[];
  maxDriverLagMs: number;
}

export interface OverloadReport {
  valid: boolean;
  reasons: string[];
  saturation: number;
  rates: Record<string, number>;
  waitLimitsS: Record<PriorityClass, number>;
  waitLimitsFrom: 'deployment' | 'defaults';
  replicas: string[];
  authChecks: Array<{ credential: string; status: number; error: string | null }>;
  unloaded: PhaseReport | null;
  overload: PhaseReport | null;
  /** The gateway's series for the deployment after the overload (requests by status, refusals, queue, learnt limits), as text lines. */
  gatewaySeries: string[];
  verdicts: Verdict[];
  contrast: PhaseReport | null;
}

export interface HaproxyContrast {
  target: ChatTarget;
  replicas: string[];
  stop(): Promise<void>;
}

export interface OverloadOptions {
  /** Saturation throughput, requests/s. */
  saturation: number;
  /** Offered load of all three credentials together, × saturation (1.5). */
  factor: number;
  /** Each interactive credential's rate, × saturation (0.25). */
  interactiveShare: number;
  warmupS: number;
  durationS: number;
  unloadedS: number;
  drainS: number;
  /** Added to a class's wait limit before a refusal counts as late. */
  slackS: number;
  replicas: number;
  engineArgs: string[];
  token: string;
  workload: Workload;
  /** The same overload through HAProxy leastconn on fresh engines, for contrast; null: not run. */
  contrast: (() => Promise<HaproxyContrast>) | null;
}

const SEED_STREAMS = { flood: 11, critical: 12, standard: 13 } as const;

/**
 * The deployment, its credentials, the unloaded and the overloaded runs, the verdicts; prints
 * as it goes. Never throws for what the gateway does (a certificate that does not
 * authenticate makes the phase INVALID, with the reason); the caller stops every process.
 */
export async function overloadPhase(o: OverloadOptions): Promise<OverloadReport> {
  const interactiveRate = round(o.saturation * o.interactiveShare, 2);
  const floodRate = round(o.saturation * o.factor - 2 * interactiveRate, 2);
  const report: OverloadReport = {
    valid: false,
    reasons: [],
    saturation: o.saturation,
    rates: { flood: floodRate, 'interactive-critical': interactiveRate, 'interactive-standard': interactiveRate },
    waitLimitsS: { ...DEFAULT_WAIT_LIMITS_S },
    waitLimitsFrom: 'defaults',
    replicas: [],
    authChecks: [],
    unloaded: null,
    overload: null,
    gatewaySeries: [],
    verdicts: [],
    contrast: null,
  };
  console.log(
    `\nbench: overload phase: one prefix_aware deployment, ${o.replicas} fresh replicas; flood (bearer token, sheddable) ${floodRate} req/s + interactive-critical and interactive-standard (client certificates) ${interactiveRate} req/s each = ${o.factor} × saturation ${round(o.saturation, 2)} req/s; single-turn chats, open loop`,
  );
  const name = 'llm-overload';
  const g = await startInfergate(name, 'prefix_aware', o.replicas, o.engineArgs, o.token, { private_endpoint: true });
  try {
    const setup = await credentials(g, name);
    report.replicas = await g.replicaNames();
    const limits = setup.waitLimits;
    if (limits !== null) {
      report.waitLimitsS = limits;
      report.waitLimitsFrom = 'deployment';
    }
    const base = { origin: `https://${g.host}:${g.port}`, ca: g.caPem, model: 'sim/model' };
    const targets: Record<'flood' | 'critical' | 'standard', ChatTarget> = {
      flood: { ...base, name: 'flood', headers: { authorization: `Bearer ${o.token}`, 'x-priority': 'sheddable' } },
      critical: { ...base, name: 'interactive-critical', headers: { 'x-priority': 'critical' }, clientPem: setup.criticalPem },
      standard: { ...base, name: 'interactive-standard', headers: { 'x-priority': 'standard' }, clientPem: setup.standardPem },
    };
    const labels = { flood: 'bearer token', critical: `certificate #${setup.criticalId}, bound`, standard: `certificate #${setup.standardId}, issued for it` };

    // Each credential must authenticate on its own before any load: one short request each.
    for (const key of ['flood', 'critical', 'standard'] as const) {
      const dispatcher = clientFor(targets[key]);
      const out = await streamChat(targets[key], dispatcher, `auth-check-${key}`, [{ role: 'user', content: 'hello' }], 1, AbortSignal.timeout(30_000));
      await dispatcher.destroy().catch(() => undefined);
      report.authChecks.push({ credential: targets[key].name, status: out.status, error: out.error });
      if (out.status !== 200 || out.error !== null) {
        report.reasons.push(`${targets[key].name} (${labels[key]}) does not authenticate: ${out.error ?? `status ${out.status}`}${key === 'standard' ? ' — the gateway does not (yet) accept every unrevoked certificate issued for a deployment' : ''}`);
      }
    }
    if (report.reasons.length > 0) {
      console.log(`bench: overload: INVALID (${report.reasons.join('; ')}); no load sent`);
      report.verdicts = naVerdicts('the overload phase is INVALID');
      return report;
    }

    const routedBefore = await g.routedReplicas();
    if (routedBefore !== o.replicas) report.reasons.push(`the gateway routed to ${routedBefore} replicas, not ${o.replicas}`);
    const phases = (measured: number) => [
      { phase: 'warmup' as const, seconds: o.warmupS },
      { phase: 'measured' as const, seconds: measured },
      { phase: 'tail' as const, seconds: o.drainS },
    ];
    const loadOf = (key: 'flood' | 'critical' | 'standard', rate: number, measured: number, tag: string): CredentialLoad => ({
      name: targets[key].name,
      credential: labels[key],
      priority: key === 'flood' ? 'sheddable' : key,
      target: targets[key],
      rate,
      schedule: o.workload.singleTurns(`${tag}-${key}`, SEED_STREAMS[key] + (tag === 'unloaded' ? 100 : 0), rate, phases(measured)),
    });
    const runPhase = async (label: string, loads: CredentialLoad[], measuredS: number, replicas: readonly string[], strict: boolean): Promise<PhaseReport> => {
      console.log(`bench: overload: ${label}: ${loads.map((l) => `${l.name} ${l.rate} req/s`).join(', ')}; ${o.warmupS} s warm-up, ${measuredS} s measured`);
      const run = await runCredentials(loads, o.workload, { warmupMs: o.warmupS * 1000, durationMs: measuredS * 1000, drainLimitMs: o.drainS * 1000 });
      const credentials = loads.map((l) => credentialReport(l, run, o.warmupS, measuredS, report.waitLimitsS[l.priority], o.slackS, replicas));
      const reasons: string[] = [];
      for (const c of credentials) {
        if (Math.abs(c.achievedRate - c.rate) > 0.1 * c.rate) reasons.push(`${c.name}: achieved ${c.achievedRate} req/s against ${c.rate} (±10%)`);
        if (c.strays.length > 0) reasons.push(`${c.name}: responses from replicas outside the deployment's ${replicas.length}: ${c.strays.join(', ')}`);
        // Unloaded, every request must be served: its TTFT is the reference the overload is judged by.
        if (strict && c.served !== c.sent) reasons.push(`${c.name}: ${c.sent - c.served} of ${c.sent} requests not served unloaded (${c.failureSamples.join(' | ') || `${c.refused429} 429, ${c.refused503} 503`})`);
      }
      return { valid: reasons.length === 0, reasons, credentials, maxDriverLagMs: round(run.maxDriverLagMs) };
    };

    report.unloaded = await runPhase('unloaded', [loadOf('critical', interactiveRate, o.unloadedS, 'unloaded'), loadOf('standard', interactiveRate, o.unloadedS, 'unloaded')], o.unloadedS, report.replicas, true);
    printCredentialTable(report.unloaded.credentials, report.unloaded.valid);
    if (!report.unloaded.valid) console.log(`bench: overload: unloaded run INVALID (${report.unloaded.reasons.join('; ')})`);

    const overloadLoads = [loadOf('flood', floodRate, o.durationS, 'overload'), loadOf('critical', interactiveRate, o.durationS, 'overload'), loadOf('standard', interactiveRate, o.durationS, 'overload')];
    report.overload = await runPhase('overload', overloadLoads, o.durationS, report.replicas, false);
    const routedAfter = await g.routedReplicas();
    if (routedAfter !== o.replicas) report.overload.reasons.push(`the gateway routed to ${routedAfter} replicas by the end, not ${o.replicas}`);
    report.overload.valid = report.overload.reasons.length === 0;
    report.gatewaySeries = (await g.metricsText())
      .split('\n')
      .filter((l) => l.includes(`deployment="${name}"`) && /^infergate_(requests_total|rate_limited_total|flow_\w+|replica_concurrency_limit)\{/.test(l) && !/^\S+_bucket\{/.test(l));
    printCredentialTable(report.overload.credentials, report.overload.valid);
    if (!report.overload.valid) console.log(`bench: overload: INVALID (${report.overload.reasons.join('; ')})`);
    report.reasons.push(...(report.unloaded.valid ? [] : report.unloaded.reasons.map((r) => `unloaded: ${r}`)), ...report.overload.reasons.map((r) => `overload: ${r}`));
    report.valid = report.reasons.length === 0;
    report.verdicts = overloadVerdicts(report.unloaded, report.overload);
    const refusedAll = report.overload.credentials.reduce((a, c) => a + c.refused429 + c.refused503, 0);
    if (refusedAll === 0) {
      const shed = report.gatewaySeries.filter((l) => l.startsWith('infergate_flow_shed_total{')).reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      console.log(
        `bench: overload: NOTE: no request due in the window was refused at 429/503 although the offered load is ${o.factor} × saturation: the gateway queued or forwarded them all (its infergate_flow_shed_total for the deployment, warm-up and tail included: ${shed}${shed === 0 ? '; no flow control, or a window too short for a queue to build' : ''})`,
      );
    }

    if (o.contrast !== null) {
      await g.serve.proc.stop();
      const h = await o.contrast();
      try {
        const loads = overloadLoads.map((l) => ({ ...l, target: { ...h.target, name: l.target.name, headers: { 'x-priority': l.priority } } }));
        report.contrast = await runPhase('contrast through HAProxy leastconn (no classes, no queue of its own)', loads, o.durationS, h.replicas, false);
        printCredentialTable(report.contrast.credentials, report.contrast.valid);
        if (!report.contrast.valid) console.log(`bench: overload contrast: INVALID (${report.contrast.reasons.join('; ')})`);
        else {
          const crit = (p: PhaseReport) => p.credentials.find((c) => c.name === 'interactive-critical')!;
          console.log(`bench: overload contrast: interactive-critical p99 TTFT ${crit(report.contrast).ttftP99Ms} ms through HAProxy leastconn, ${crit(report.overload).ttftP99Ms} ms through the gateway, ${report.unloaded.valid ? `${crit(report.unloaded).ttftP99Ms} ms unloaded` : 'unloaded INVALID'} (no target)`);
        }
      } finally {
        await h.stop();
      }
    }
    return report;
  } finally {
    await g.serve.proc.stop();
  }
}

/** The deployment's two client certificates (the bound one, and one more issued for it) and its wait limits. */
async function credentials(g: InfergateTarget, name: string): Promise<{ criticalId: number; criticalPem: string; standardId: number; standardPem: string; waitLimits: Record<PriorityClass, number> | null }> {
  const d = await g.serve.deployment<{ client_certificate_id: number | null; flow_control?: { max_wait_seconds?: Partial<Record<PriorityClass, number>> } | null }>(g.deploymentId);
  if (d.client_certificate_id === null) throw new Error(`the ${name} deployment was created with private_endpoint but has no client certificate`);
  const json = { ...g.adminHeaders, 'content-type': 'application/json' };
  const created = await fetch(`${g.api}/certificates`, { method: 'POST', headers: json, body: JSON.stringify({ name: `${name}-standard`, deployment_id: g.deploymentId }) });
  const second = (await created.json()) as { id: number };
  if (created.status !== 201) throw new Error(`POST /certificates for ${name}: ${created.status} ${JSON.stringify(second)}`);
  const pem = async (id: number) => {
    const res = await fetch(`${g.api}/certificates/${id}/pem`, { headers: g.adminHeaders });
    if (res.status !== 200) throw new Error(`GET /certificates/${id}/pem: ${res.status} ${await res.text()}`);
    return res.text();
  };
  const w = d.flow_control?.max_wait_seconds;
  const waitLimits = w && typeof w.critical === 'number' && typeof w.standard === 'number' && typeof w.sheddable === 'number' ? { critical: w.critical, standard: w.standard, sheddable: w.sheddable } : null;
  return { criticalId: d.client_certificate_id, criticalPem: await pem(d.client_certificate_id), standardId: second.id, standardPem: await pem(second.id), waitLimits };
}

const TARGET_TEXTS = {
  critical: 'critical p99 TTFT overloaded ≤ 2 × its unloaded p99',
  contract: 'every request served, or answered 429/503 with Retry-After within its class limit',
  fair: "each interactive credential's served tokens ≥ min(its demand, capacity/3)",
};

function naVerdicts(why: string): Verdict[] {
  return Object.values(TARGET_TEXTS).map((t) => ({ text: `${t} — ${why}`, result: 'n/a' as const }));
}

export function overloadVerdicts(unloaded: PhaseReport, overload: PhaseReport): Verdict[] {
  if (!overload.valid) return naVerdicts('the overload run is INVALID');
  const by = (p: PhaseReport, n: string) => p.credentials.find((c) => c.name === n)!;
  const verdicts: Verdict[] = [];
  const crit = by(overload, 'interactive-critical');
  if (!unloaded.valid) verdicts.push({ text: `${TARGET_TEXTS.critical} — the unloaded run is INVALID`, result: 'n/a' });
  else {
    const ref = by(unloaded, 'interactive-critical').ttftP99Ms;
    verdicts.push({ text: `critical p99 TTFT overloaded ${crit.ttftP99Ms} ms ≤ 2 × its unloaded p99 ${ref} ms (${round(2 * ref)} ms)`, result: crit.ttftP99Ms <= 2 * ref ? 'PASS' : 'MISS' });
  }
  const parts = overload.credentials.map((c) => `${c.name} ${violations(c)} of ${c.sent} (${c.otherFailures} failed, ${c.unfinished} timed out, ${c.refused429 + c.refused503 - c.refusedWithRetryAfter} refused without Retry-After, ${c.refusedWithRetryAfter - c.refusedInTime} refused late)`);
  const total = overload.credentials.reduce((a, c) => a + violations(c), 0);
  verdicts.push({ text: `${TARGET_TEXTS.contract}: requests outside it: ${parts.join('; ')}`, result: total === 0 ? 'PASS' : 'MISS' });
  const capacity = overload.credentials.reduce((a, c) => a + c.servedTokens, 0);
  for (const n of ['interactive-critical', 'interactive-standard']) {
    const c = by(overload, n);
    const share = Math.min(c.demandTokens, capacity / 3);
    verdicts.push({ text: `${n} served ${c.servedTokens} tokens ≥ fair share min(demand ${c.demandTokens}, capacity ${capacity}/3) = ${Math.round(share)}`, result: c.servedTokens >= share ? 'PASS' : 'MISS' });
  }
  return verdicts;
}
