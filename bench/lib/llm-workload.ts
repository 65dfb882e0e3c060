// Bench helper: the multi-turn chat workload of bench/llm-routing.ts, built in advance from a
// seed so every target gets the same one — group system prompts, Zipf-popular session slots,
// user turns, lognormal output lengths, and a Poisson arrival schedule with each arrival's
// session and turn fixed before anything runs; and independent single-turn chats for the
// overload phase. Pure: no I/O, no clock.
//
// Tokens are counted as the reference engine counts them: one word is one token, plus 4 per
// message (src/engine/text.ts).

import { generateCompletion, mulberry32, PER_MESSAGE_TOKENS, VOCABULARY } from '../../src/engine/text.js';

export interface WorkloadOptions {
  seed: number;
  /** Session slots; each runs one conversation at a time, a new one after `turns` turns. */
  sessions: number;
  /** Zipf exponent of the slots' popularity. */
  zipfS: number;
  groups: number;
  systemWords: number;
  turns: number;
  userWordsMin: number;
  userWordsMax: number;
  outputMedian: number;
  outputSigma: number;
  outputMin: number;
  outputMax: number;
  /** Minimum time between the end of a session's turn and its next one. */
  thinkMs: number;
}

export interface EngineTiming {
  ttftMs: number;
  itlMs: number;
  itlGrowth: number;
  maxRunning: number;
  prefillMsPerToken: number;
}

export type Phase = 'warmup' | 'measured' | 'tail';

/** One request of the schedule; its messages are assembled when it is sent (they need the replies before it). */
export interface ScheduledTurn {
  index: number;
  /** ms from the start of the run. */
  at: number;
  phase: Phase;
  slot: number;
  /** The conversation's id, sent as X-Session-Id: a new one after `turns` turns of the slot. */
  session: string;
  /** 0-based turn of the conversation; 0 means its history is empty. */
  turn: number;
  group: number;
  userText: string;
  maxTokens: number;
  /** Prompt tokens this turn will have (known in advance: replies are exactly maxTokens long). */
  promptTokens: number;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** mulberry32 (the engine's): small, fast and deterministic. */
export const prng = mulberry32;

/** Draws 0..n-1 with P(k) ∝ 1/(k+1)^s. */
export function zipf(n: number, s: number, random: () => number): () => number {
  const cdf: number[] = [];
  let sum = 0;
  for (let k = 0; k < n; k++) cdf.push((sum += 1 / Math.pow(k + 1, s)));
  return () => {
    const x = random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

function normal(random: () => number): number {
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

function words(random: () => number, n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(VOCABULARY[Math.floor(random() * VOCABULARY.length)] ?? 'token');
  return out.join(' ');
}

const wordCount = (text: string): number => text.split(' ').filter(Boolean).length;

export class Workload {
  readonly systemPrompts: string[];
  readonly systemTokens: number[];
  /** Each slot's group (Zipf over groups too, so one system prompt is the most common). */
  readonly slotGroup: number[];

  /** Warm-up and measured turns of the last schedule that found every slot busy (by the estimate): they wait for their slot. */
  overbooked = 0;

  constructor(readonly options: WorkloadOptions) {
    const random = prng(options.seed);
    this.systemPrompts = Array.from({ length: options.groups }, (_, g) => `You are assistant ${g} of the bench. ${words(random, options.systemWords - 6)}`);
    this.systemTokens = this.systemPrompts.map((p) => wordCount(p) + PER_MESSAGE_TOKENS);
    const pickGroup = zipf(options.groups, 1, random);
    this.slotGroup = Array.from({ length: options.sessions }, () => pickGroup());
  }

  /**
   * The arrival schedule: a Poisson process at `rate` per second, drawn as `round(rate × s)`
   * uniform instants per phase (a Poisson process given its count), so the measured window
   * holds exactly rate × duration arrivals. Each arrival takes a slot by Zipf; a slot whose
   * previous turn is, by a pessimistic estimate (full batch, no cache hit), still running or
   * in its think time is skipped and the slot drawn again (up to 64 draws, then the slot free
   * soonest). A turn that still finds its slot busy when sent waits for it (llm-client.ts).
   */
  schedule(rate: number, phases: Array<{ phase: Phase; seconds: number }>, timing: EngineTiming): ScheduledTurn[] {
    const o = this.options;
    const random = prng(o.seed ^ 0x5bd1e995);
    const pickSlot = zipf(o.sessions, o.zipfS, random);
    const busyUntil = new Array<number>(o.sessions).fill(0);
    const turnsDone = new Array<number>(o.sessions).fill(0);
    const history = new Array<number>(o.sessions).fill(0); // tokens of the conversation after its system prompt
    const fullBatchItl = timing.itlMs * (1 + timing.itlGrowth * (timing.maxRunning - 1));
    const out: ScheduledTurn[] = [];
    let offset = 0;
    this.overbooked = 0;
    for (const { phase, seconds } of phases) {
      const count = Math.round(rate * seconds);
      const instants = Array.from({ length: count }, () => offset + random() * seconds * 1000).sort((a, b) => a - b);
      for (const at of instants) {
        let slot = pickSlot();
        for (let draw = 0; draw < 64 && busyUntil[slot]! > at; draw++) slot = pickSlot();
        if (busyUntil[slot]! > at) {
          slot = busyUntil.indexOf(Math.min(...busyUntil));
          if (busyUntil[slot]! > at && phase !== 'tail') this.overbooked++;
        }
        const n = turnsDone[slot]!;
        const turn = n % o.turns;
        if (turn === 0) history[slot] = 0;
        const group = this.slotGroup[slot]!;
        const userWords = o.userWordsMin + Math.floor(random() * (o.userWordsMax - o.userWordsMin + 1));
        const userText = words(random, userWords);
        const drawn = Math.round(o.outputMedian * Math.exp(o.outputSigma * normal(random)));
        const maxTokens = Math.max(o.outputMin, Math.min(o.outputMax, drawn));
        const promptTokens = this.systemTokens[group]! + history[slot]! + userWords + PER_MESSAGE_TOKENS;
        out.push({ index: out.length, at, phase, slot, session: `s${slot}-c${Math.floor(n / o.turns)}`, turn, group, userText, maxTokens, promptTokens });
        history[slot] = history[slot]! + userWords + PER_MESSAGE_TOKENS + maxTokens + PER_MESSAGE_TOKENS;
        turnsDone[slot] = n + 1;
        const estimate = timing.ttftMs + promptTokens * timing.prefillMsPerToken + maxTokens * fullBatchItl;
        busyUntil[slot] = Math.max(busyUntil[slot]!, at) + estimate + o.thinkMs;
      }
      offset += seconds * 1000;
    }
    return out;
  }

  /**
   * Independent single-turn chats at `rate` per second (the overload phase): each arrival is
   * one request — a system prompt (groups drawn by Zipf, s = 1), a user turn, an output length
   * as in schedule() — with its own session id `<label>-<n>`, so no request ever waits for
   * another and the arrivals stay open-loop however slow the replicas get. Instants as in
   * schedule(): round(rate × s) uniform ones per phase. `stream` keeps the draws of one caller
   * apart from another's (a different stream, a different sequence).
   */
  singleTurns(label: string, stream: number, rate: number, phases: Array<{ phase: Phase; seconds: number }>): ScheduledTurn[] {
    const o = this.options;
    const random = prng((o.seed * 7919 + stream * 104729) ^ 0x2545f491);
    const pickGroup = zipf(o.groups, 1, random);
    const out: ScheduledTurn[] = [];
    let offset = 0;
    for (const { phase, seconds } of phases) {
      const count = Math.round(rate * seconds);
      const instants = Array.from({ length: count }, () => offset + random() * seconds * 1000).sort((a, b) => a - b);
      for (const at of instants) {
        const group = pickGroup();
        const userWords = o.userWordsMin + Math.floor(random() * (o.userWordsMax - o.userWordsMin + 1));
        const userText = words(random, userWords);
        const drawn = Math.round(o.outputMedian * Math.exp(o.outputSigma * normal(random)));
        const maxTokens = Math.max(o.outputMin, Math.min(o.outputMax, drawn));
        const promptTokens = this.systemTokens[group]! + userWords + PER_MESSAGE_TOKENS;
        out.push({ index: out.length, at, phase, slot: out.length, session: `${label}-${out.length}`, turn: 0, group, userText, maxTokens, promptTokens });
      }
      offset += seconds * 1000;
    }
    return out;
  }

  /**
   * Distinct prompt tokens a replica set would have to hold for every live conversation's
   * next turn to hit its cache, at instant `atMs` of the schedule: each used system prompt
   * once, plus each slot's current conversation (its last turn's prompt after the system
   * prompt, and the reply).
   */
  workingSetTokens(schedule: readonly ScheduledTurn[], atMs: number): { tokens: number; conversations: number; groups: number } {
    const last = new Map<number, ScheduledTurn>();
    for (const t of schedule) if (t.at < atMs) last.set(t.slot, t);
    const groups = new Set<number>();
    let tokens = 0;
    for (const t of last.values()) {
      groups.add(t.group);
      tokens += t.promptTokens - this.systemTokens[t.group]! + t.maxTokens;
    }
    for (const g of groups) tokens += this.systemTokens[g]!;
    return { tokens, conversations: last.size, groups: groups.size };
  }

  /** The messages of a turn: the group's system prompt, the conversation so far, the new user turn. */
  messages(turn: ScheduledTurn, history: readonly ChatMessage[]): ChatMessage[] {
    return [{ role: 'system', content: this.systemPrompts[turn.group]! }, ...history, { role: 'user', content: turn.userText }];
  }

  /** The reply the reference engine gives these messages (its text is deterministic per prompt). */
  static expectedReply(messages: readonly ChatMessage[], maxTokens: number): string {
    return generateCompletion(messages, 0, maxTokens, true).tokens.join('');
  }
}
