// Bench helper: the client side of bench/llm-routing.ts — one streamed chat completion over
// TLS keep-alive (undici), timed to its first content chunk and to its end, with the replica
// that answered (system_fingerprint) and the usage of its final chunk; the open-loop run of a
// schedule (llm-workload.ts) with one conversation at a time per session slot; and the
// closed-loop probe that finds the throughput at which the replicas saturate. A target may
// present a client certificate (mTLS) instead of, or beside, its headers.

import { setMaxListeners } from 'node:events';
import type { LookupFunction } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { Workload, type ChatMessage, type Phase, type ScheduledTurn } from './llm-workload.js';

export interface ChatTarget {
  name: string;
  /** https://<endpoint host>:<port>; the host name is resolved to 127.0.0.1 (SNI and Host stay). */
  origin: string;
  ca: string;
  headers: Record<string, string>;
  model: string;
  /** A client certificate and its key in one PEM (GET /certificates/{id}/pem), presented in the TLS handshake. */
  clientPem?: string;
}

export interface ChatOutcome {
  status: number;
  error: string | null;
  ttftMs: number | null;
  e2eMs: number;
  replica: string | null;
  text: string;
  outputTokens: number;
  promptTokens: number | null;
  cachedTokens: number | null;
  /** The Retry-After header of a non-200 answer, as sent; null when absent. */
  retryAfter: string | null;
}

export interface TurnResult extends ChatOutcome {
  index: number;
  phase: Phase;
  slot: number;
  session: string;
  turn: number;
  /** ms from the run's start. */
  scheduledAt: number;
  sentAt: number;
  /** How long the turn waited for its session's previous turn (and think time). */
  heldMs: number;
  expectedPromptTokens: number;
  maxTokens: number;
}

const loopback = ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) =>
  options.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)) as unknown as LookupFunction;

export function clientFor(target: ChatTarget): Agent {
  const identity = target.clientPem !== undefined ? { cert: target.clientPem, key: target.clientPem } : {};
  return new Agent({ connect: { ca: target.ca, lookup: loopback, ...identity }, connections: 1024, pipelining: 1, keepAliveTimeout: 60_000, bodyTimeout: 300_000, headersTimeout: 300_000 });
}

interface StreamChunk {
  system_fingerprint?: string;
  choices?: Array<{ delta?: { content?: string } }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null } | null;
}

/** One streamed chat completion; never throws (an abort, too, is an outcome with an error). */
export async function streamChat(target: ChatTarget, dispatcher: Dispatcher, session: string, messages: ChatMessage[], maxTokens: number, signal: AbortSignal, onToken?: () => void): Promise<ChatOutcome> {
  const started = performance.now();
  const outcome: ChatOutcome = { status: 0, error: null, ttftMs: null, e2eMs: 0, replica: null, text: '', outputTokens: 0, promptTokens: null, cachedTokens: null, retryAfter: null };
  try {
    const res = await request(`${target.origin}/v1/chat/completions`, {
      method: 'POST',
      dispatcher,
      signal,
      headers: { ...target.headers, 'content-type': 'application/json', 'x-session-id': session },
      body: JSON.stringify({ model: target.model, messages, max_tokens: maxTokens, ignore_eos: true, stream: true, stream_options: { include_usage: true } }),
    });
    outcome.status = res.statusCode;
    if (res.statusCode !== 200) {
      const retryAfter = res.headers['retry-after'];
      outcome.retryAfter = retryAfter === undefined ? null : String(retryAfter);
      outcome.error = `status ${res.statusCode}: ${(await res.body.text()).slice(0, 160)}`;
      return outcome;
    }
    let buffer = '';
    let done = false;
    let usage = false;
    const decoder = new TextDecoder();
    for await (const piece of res.body) {
      buffer += decoder.decode(piece as Buffer, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (!event.startsWith('data: ')) continue;
        const data = event.slice(6);
        if (data === '[DONE]') {
          done = true;
          continue;
        }
        const chunk = JSON.parse(data) as StreamChunk;
        if (chunk.system_fingerprint) outcome.replica = chunk.system_fingerprint;
        const content = chunk.choices?.[0]?.delta?.content;
        if (typeof content === 'string' && content !== '') {
          if (outcome.ttftMs === null) outcome.ttftMs = performance.now() - started;
          outcome.text += content;
          onToken?.();
        }
        if (chunk.usage) {
          usage = true;
          outcome.outputTokens = chunk.usage.completion_tokens ?? 0;
          outcome.promptTokens = chunk.usage.prompt_tokens ?? null;
          outcome.cachedTokens = chunk.usage.prompt_tokens_details?.cached_tokens ?? null;
        }
      }
    }
    if (!done) outcome.error = 'stream ended without [DONE]';
    else if (!usage) outcome.error = 'no usage chunk';
    else if (outcome.ttftMs === null) outcome.error = 'no content chunk';
  } catch (err) {
    outcome.error = `${(err as Error).name}: ${(err as Error).message}`.slice(0, 160);
  } finally {
    outcome.e2eMs = performance.now() - started;
  }
  return outcome;
}

interface SlotState {
  session: string;
  history: ChatMessage[];
  busy: boolean;
  /** performance.now() of the end of its last turn. */
  freeAt: number;
  waiting: Array<{ turn: ScheduledTurn; arrivedAt: number }>;
}

export interface OpenLoopRun {
  results: TurnResult[];
  /** performance.now() at the measured window's start and end. */
  windowStart: number;
  windowEnd: number;
  /** Measured turns that had not finished when the run gave up waiting for them. */
  unfinished: number;
  /** The driver's largest lateness in firing an arrival (its own timer lag), ms. */
  maxDriverLagMs: number;
  /** Output tokens (content chunks) received during the window, from every turn in flight. */
  windowTokens: number;
}

export interface OpenLoopOptions {
  warmupMs: number;
  durationMs: number;
  thinkMs: number;
  /** After the window, how long to wait for its turns to finish (the tail's load keeps running). */
  drainLimitMs: number;
  onWindowStart(): void;
  onWindowEnd(): void;
}

const sleepUntil = (t: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, t - performance.now())));

/**
 * Runs a schedule open-loop: each turn is due at its instant whatever the replicas do. A
 * session slot runs one turn at a time; a turn due while its slot's previous turn is still
 * running (or within the think time after it) waits for it, and its wait is recorded. The
 * tail's arrivals keep the load on until every measured turn has finished; then whatever is
 * still running is aborted and not counted.
 */
export async function runOpenLoop(target: ChatTarget, workload: Workload, schedule: readonly ScheduledTurn[], o: OpenLoopOptions): Promise<OpenLoopRun> {
  const dispatcher = clientFor(target);
  const abort = new AbortController();
  setMaxListeners(0, abort.signal); // one listener per request in flight
  const slots = new Map<number, SlotState>();
  const results: TurnResult[] = [];
  const measuredTotal = schedule.filter((t) => t.phase === 'measured').length;
  let measuredDone = 0;
  let allMeasuredDone: () => void = () => undefined;
  const measuredFinished = new Promise<void>((r) => (allMeasuredDone = r));
  if (measuredTotal === 0) allMeasuredDone();
  const t0 = performance.now() + 100;
  const windowStart = t0 + o.warmupMs;
  const windowEnd = windowStart + o.durationMs;
  let inWindow = false;
  let windowTokens = 0;
  const countToken = () => {
    if (inWindow) windowTokens++;
  };
  const windowTimers = [
    setTimeout(() => {
      inWindow = true;
      o.onWindowStart();
    }, windowStart - performance.now()),
    setTimeout(() => {
      inWindow = false;
      o.onWindowEnd();
    }, windowEnd - performance.now()),
  ];
  let stopped = false;
  let maxDriverLagMs = 0;

  const slotOf = (turn: ScheduledTurn): SlotState => {
    let s = slots.get(turn.slot);
    if (!s) slots.set(turn.slot, (s = { session: turn.session, history: [], busy: false, freeAt: -Infinity, waiting: [] }));
    return s;
  };

  const send = (turn: ScheduledTurn, arrivedAt: number): void => {
    if (stopped) return;
    const slot = slotOf(turn);
    if (slot.session !== turn.session || turn.turn === 0) {
      slot.session = turn.session;
      slot.history = [];
    }
    slot.busy = true;
    const messages = workload.messages(turn, slot.history);
    const sentAt = performance.now();
    void streamChat(target, dispatcher, turn.session, messages, turn.maxTokens, abort.signal, countToken).then((outcome) => {
      slot.busy = false;
      slot.freeAt = performance.now();
      if (stopped) return;
      // The reply as received; if the request failed, the reply the engine would have given,
      // so the conversation (and so every later prompt) is the same on every target.
      const reply = outcome.error === null ? outcome.text : Workload.expectedReply(messages, turn.maxTokens);
      slot.history.push({ role: 'user', content: turn.userText }, { role: 'assistant', content: reply });
      results.push({ ...outcome, index: turn.index, phase: turn.phase, slot: turn.slot, session: turn.session, turn: turn.turn, scheduledAt: turn.at, sentAt: sentAt - t0, heldMs: sentAt - arrivedAt, expectedPromptTokens: turn.promptTokens, maxTokens: turn.maxTokens });
      if (turn.phase === 'measured' && ++measuredDone === measuredTotal) allMeasuredDone();
      const next = slot.waiting.shift();
      if (next) {
        slot.busy = true; // held for it through the think time
        setTimeout(() => send(next.turn, next.arrivedAt), o.thinkMs);
      }
    });
  };

  const arrive = (turn: ScheduledTurn): void => {
    const slot = slotOf(turn);
    const now = performance.now();
    if (slot.busy || slot.waiting.length > 0) slot.waiting.push({ turn, arrivedAt: now });
    else if (now < slot.freeAt + o.thinkMs) {
      slot.busy = true; // reserved until the think time is over
      setTimeout(() => {
        slot.busy = false;
        send(turn, now);
      }, slot.freeAt + o.thinkMs - now);
    } else send(turn, now);
  };

  const driver = (async () => {
    for (const turn of schedule) {
      await sleepUntil(t0 + turn.at);
      if (stopped) return;
      maxDriverLagMs = Math.max(maxDriverLagMs, performance.now() - (t0 + turn.at));
      arrive(turn);
    }
  })();

  await sleepUntil(windowEnd);
  let unfinished = 0;
  let drainTimer: NodeJS.Timeout | undefined;
  const gaveUp = await Promise.race([measuredFinished.then(() => false), new Promise<boolean>((r) => (drainTimer = setTimeout(() => r(true), o.drainLimitMs)))]);
  clearTimeout(drainTimer);
  if (gaveUp) unfinished = measuredTotal - measuredDone;
  stopped = true;
  abort.abort();
  await driver;
  for (const t of windowTimers) clearTimeout(t);
  await dispatcher.destroy().catch(() => undefined);
  return { results, windowStart, windowEnd, unfinished, maxDriverLagMs, windowTokens };
}

export interface ProbeResult {
  concurrency: number;
  seconds: number;
  completed: number;
  errors: number;
  requestsPerSecond: number;
  outputTokensPerSecond: number;
}

/**
 * Closed loop: `concurrency` conversations at once, each sending its next turn as soon as the
 * last one ends (no think time), turns taken in the schedule's order (a turn whose slot is
 * busy waits for a later pick). Counts the turns that finish inside the measured seconds.
 */
export async function probeSaturation(target: ChatTarget, workload: Workload, turns: readonly ScheduledTurn[], concurrency: number, warmupMs: number, measureMs: number): Promise<ProbeResult> {
  const dispatcher = clientFor(target);
  const abort = new AbortController();
  setMaxListeners(0, abort.signal); // one listener per request in flight
  const taken = new Uint8Array(turns.length);
  const busy = new Set<number>();
  const histories = new Map<number, { session: string; history: ChatMessage[] }>();
  const start = performance.now();
  const from = start + warmupMs;
  const until = from + measureMs;
  let completed = 0;
  let errors = 0;
  let tokens = 0;
  let cursor = 0;
  const next = (): ScheduledTurn | null => {
    while (cursor < turns.length && taken[cursor]) cursor++;
    for (let i = cursor; i < turns.length; i++) {
      const t = turns[i]!;
      if (taken[i] || busy.has(t.slot)) continue;
      taken[i] = 1;
      return t;
    }
    return null;
  };
  const worker = async () => {
    while (performance.now() < until) {
      const turn = next();
      if (!turn) return;
      busy.add(turn.slot);
      let h = histories.get(turn.slot);
      if (!h || h.session !== turn.session || turn.turn === 0) histories.set(turn.slot, (h = { session: turn.session, history: [] }));
      const messages = workload.messages(turn, h.history);
      const outcome = await streamChat(target, dispatcher, turn.session, messages, turn.maxTokens, abort.signal);
      busy.delete(turn.slot);
      const reply = outcome.error === null ? outcome.text : Workload.expectedReply(messages, turn.maxTokens);
      h.history.push({ role: 'user', content: turn.userText }, { role: 'assistant', content: reply });
      const now = performance.now();
      if (now >= from && now < until) {
        if (outcome.error === null) {
          completed++;
          tokens += outcome.outputTokens;
        } else errors++;
      }
    }
  };
  const workers = Array.from({ length: concurrency }, () => worker());
  await sleepUntil(until);
  abort.abort();
  await Promise.all(workers);
  await dispatcher.destroy().catch(() => undefined);
  return { concurrency, seconds: measureMs / 1000, completed, errors, requestsPerSecond: completed / (measureMs / 1000), outputTokensPerSecond: tokens / (measureMs / 1000) };
}
