import { describe, expect, it } from 'vitest';
import { PrefixAwareSelector, type ReplicaSignals } from './prefix-aware.js';
import { blockHashes, canonicalPrompt, promptBytes, requestBlocks } from './prompt-blocks.js';
import { topLevelMembers } from './json-scan.js';
import { PrefixIndex } from './prefix-index.js';
import { LatencyModel } from './latency-model.js';
import type { LoadView, ReplicaRef } from './selector.js';

const replicas = (...ids: number[]): ReplicaRef[] => ids.map((id) => ({ id, address: `10.0.0.${id}:8000` }));
const loads = (m: Record<number, number>): LoadView => ({ inflight: (id) => m[id] ?? 0 });
const words = (n: number, seed: string) => Array.from({ length: n }, (_, i) => `${seed}${i}`).join(' ');
const chat = (...turns: string[]) => ({ model: 'm', messages: turns.map((content, i) => ({ role: i === 0 ? 'system' : i % 2 ? 'user' : 'assistant', content })) });
const blocksOf = (body: unknown) => requestBlocks(Buffer.from(JSON.stringify(body)))!;

const SYSTEM = words(200, 'sys');
const turn1 = blocksOf(chat(SYSTEM, words(40, 'u1-')));
const turn2 = blocksOf(chat(SYSTEM, words(40, 'u1-'), words(60, 'a1-'), words(40, 'u2-')));
const other = blocksOf(chat(words(200, 'other'), words(40, 'x')));

/** A policy whose index says replica `holder` has served turn 1 (and nothing is owed). */
function warmed(holder: number, opts = {}) {
  const p = new PrefixAwareSelector({ random: () => 0, ...opts });
  p.dispatched({ id: holder, address: '' }, { session: null, blocks: turn1 }).end();
  return p;
}

describe('prompt bytes, found by a scan of the body', () => {
  const found = (json: string) => promptBytes(Buffer.from(json))?.toString() ?? null;
  it.each([
    ['the messages array, whatever comes before it', '{"model":"m","n":[1,{"a":"]"}],"messages":[{"role":"user","content":"hi"}],"stream":true}', '[{"role":"user","content":"hi"}]'],
    ['quotes, brackets and backslashes inside strings', '{"messages":[{"content":"a \\"]\\" b \\\\"}]}', '[{"content":"a \\"]\\" b \\\\"}]'],
    ['whitespace as Python writes it', '{ "model": "m", "messages": [ {"role": "user"} ] }', '[ {"role": "user"} ]'],
    ["a completion's prompt string", '{"model":"m","prompt":"once upon","max_tokens":5}', '"once upon"'],
    ['messages over a prompt, in either order', '{"prompt":"p","messages":[]}', '[]'],
  ])('finds %s', (_what, json, expected) => {
    expect(found(json)).toBe(expected);
  });
  it.each([
    ['no prompt at all', '{"input":"x"}'],
    ['a prompt that is not a string', '{"prompt":[1,2,3]}'],
    ['not an object', '[{"messages":[]}]'],
    ['broken JSON', '{"messages":[{"content":"unterminated'],
    ['a key without a value', '{"messages"}'],
  ])('finds nothing in %s', (_what, json) => {
    expect(found(json)).toBeNull();
  });
});

describe('prompt blocks', () => {
  it('makes the next turn of a conversation extend the hashes of the last', () => {
    expect(turn2.length).toBeGreaterThan(turn1.length);
    expect(turn2.slice(0, turn1.length)).toEqual(turn1);
  });
  it('chains: a different first block changes every later hash, even of equal text', () => {
    const a = blockHashes('A'.repeat(64) + 'same'.repeat(64), 64);
    const b = blockHashes('B'.repeat(64) + 'same'.repeat(64), 64);
    expect(a.length).toBe(5);
    a.forEach((h, i) => expect(h).not.toBe(b[i]));
  });
  it('hashes full blocks only, and reads messages, content parts and prompts', () => {
    expect(blockHashes('x'.repeat(127), 64)).toHaveLength(1);
    expect(canonicalPrompt({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] })).toContain('hi');
    expect(canonicalPrompt({ prompt: 'plain' })).toBe('plain');
    expect(canonicalPrompt({ input: 'x' })).toBeNull();
    expect(requestBlocks(Buffer.from('{not json'))).toBeNull();
  });
});

describe('prefix index', () => {
  it('matches leading blocks only, and keeps the most recently used — at least half its capacity, never more', () => {
    const index = new PrefixIndex(8);
    index.record(1, [10, 11, 12]);
    expect(index.match(1, [10, 11, 99, 12])).toBe(2);
    index.record(1, [20, 21, 22, 23, 24, 25, 26, 27, 28]);
    expect(index.size(1)).toBeLessThanOrEqual(8);
    expect(index.size(1)).toBeGreaterThanOrEqual(4);
    expect(index.match(1, [25, 26, 27, 28])).toBe(4); // the most recent stay
    expect(index.match(1, [10])).toBe(0); // the least recent went first
    index.record(1, [10]); // used again: recent once more
    expect(index.match(1, [10])).toBe(1);
  });
});

describe('prefix index on long prompts', () => {
  // Chained names, as blockHashes makes them: name k stands for the whole prefix up to k.
  const chain = (n: number, seed: number, from = 0, base: number[] = []) => [...base.slice(0, from), ...Array.from({ length: n - from }, (_, i) => seed * 1_000_000 + from + i)];
  it('matches a long prompt to within 16 blocks past its first 64, from far fewer entries', () => {
    const index = new PrefixIndex(100_000);
    const turn1 = chain(500, 1);
    index.record(1, turn1);
    expect(index.size(1)).toBeLessThan(100); // 64 one by one, then one in 16
    expect(index.match(1, turn1)).toBeGreaterThan(500 - 16);
    const turn2 = [...turn1, ...chain(100, 2)]; // the next turn extends it
    expect(index.match(1, turn2)).toBeGreaterThan(500 - 16);
    expect(index.match(1, turn2)).toBeLessThanOrEqual(500);
    const forked = chain(500, 3, 300, turn1); // the same first 300 blocks, then other text
    expect(index.match(1, forked)).toBeGreaterThan(300 - 16);
    expect(index.match(1, forked)).toBeLessThanOrEqual(300);
    expect(index.match(1, chain(40, 4))).toBe(0);
  });
});

describe('prefix-aware choice', () => {
  it.each([
    ['prefix locality wins when load is even', 3, {}, 3],
    ['prefix locality still wins over a little more load', 3, { 3: 2, 1: 1, 2: 1, 4: 1 }, 3],
    ['load wins when the holder is hot', 3, { 3: 30 }, 1],
  ])('%s', (_what, holder, inflight, expected) => {
    const p = warmed(holder);
    const { order } = p.choose(replicas(1, 2, 3, 4), loads(inflight), { session: null, blocks: turn2 });
    expect(order[0]!.id).toBe(expected);
    expect(new Set(order.map((r) => r.id)).size).toBe(4);
  });

  it('keeps away from a replica that says it is queueing, and from one owed a long prefill', () => {
    const queueing: Record<number, ReplicaSignals> = { 2: { running: 16, waiting: 3, kvUsage: 0.5 } };
    const p = new PrefixAwareSelector({ random: () => 0 }, { signals: (id) => queueing[id] ?? null });
    p.dispatched({ id: 2, address: '' }, { session: null, blocks: turn1 }).end();
    expect(p.choose(replicas(1, 2), loads({}), { session: null, blocks: turn2 }).order[0]!.id).toBe(1);

    const q = new PrefixAwareSelector({ random: () => 0 });
    const long = q.dispatched({ id: 1, address: '' }, { session: null, blocks: other });
    expect(q.owed(1)).toBe(other.length);
    expect(q.choose(replicas(1, 2), loads({}), { session: null, blocks: turn1 }).order[0]!.id).toBe(2);
    long.firstByte();
    long.end();
    expect(q.owed(1)).toBe(0);
  });

  it('puts a replica flow control says has no room after every one with room, cached or not, and keeps a session where all are full', () => {
    const p = warmed(3);
    const full = new Set([3]);
    const room = (id: number) => (full.has(id) ? 0 : 4);
    const { order } = p.choose(replicas(1, 2, 3, 4), loads({}), { session: null, blocks: turn2, room });
    expect(order[0]!.id).not.toBe(3);
    expect(order.at(-1)!.id).toBe(3);
    // Every replica full: the choice is by cost again, and a session stays where its cache is.
    p.dispatched({ id: 3, address: '' }, { session: 's', blocks: turn1 }).end();
    const none = () => 0;
    const all = p.choose(replicas(1, 2, 3, 4), loads({}), { session: 's', blocks: turn2, room: none });
    expect([all.session, all.order[0]!.id]).toEqual(['kept', 3]);
    // Its replica full and another with room: the session moves.
    const moved = p.choose(replicas(1, 2, 3, 4), loads({}), { session: 's', blocks: turn2, room });
    expect(moved.session).toBe('moved');
  });

  it('moves a session only when staying costs more than the margin', () => {
    const p = new PrefixAwareSelector({ random: () => 0 });
    p.dispatched({ id: 2, address: '' }, { session: 's', blocks: turn1 }).end();
    const ask = (inflight: Record<number, number>) => p.choose(replicas(1, 2), loads(inflight), { session: 's', blocks: turn2 });
    expect(ask({})).toMatchObject({ session: 'kept', order: [{ id: 2 }, { id: 1 }] });
    expect(ask({ 2: 6 })).toMatchObject({ session: 'kept' }); // its cache is worth more than 6 requests' load
    const moved = ask({ 2: 60 });
    expect(moved.session).toBe('moved');
    expect(moved.order[0]!.id).toBe(1);
    // The session hint holds even where the index knows nothing (a prompt the gateway did not read).
    const blind = new PrefixAwareSelector({ random: () => 0.99 });
    blind.dispatched({ id: 1, address: '' }, { session: 't', blocks: null }).end();
    const hinted = blind.choose(replicas(1, 2, 3), loads({ 1: 1 }), { session: 't', blocks: null });
    expect([hinted.session, hinted.order[0]!.id]).toEqual(['kept', 1]);
    expect(blind.choose(replicas(1, 2, 3), loads({}), { session: 'u', blocks: null }).session).toBe('new');
  });

  it('forgets a replica that left: its index, its debts and its sessions', () => {
    const p = warmed(2);
    p.dispatched({ id: 2, address: '' }, { session: 's', blocks: other });
    expect(p.index.size(2)).toBeGreaterThan(0);
    p.retain(new Set([1, 3]));
    expect(p.index.knows(2)).toBe(false);
    expect(p.owed(2)).toBe(0);
    expect(p.choose(replicas(1, 3), loads({}), { session: 's', blocks: turn2 }).session).toBe('new');
    // Back with the same id, it starts cold: no prefix credit.
    expect(p.cost(2, loads({}), turn2)).toBe(new PrefixAwareSelector().cost(2, loads({}), turn2));
    expect(p.tokensAhead(2, turn2)).toBe(p.tokens(turn2.length));
  });

  it('spreads prompts it knows nothing about by load', () => {
    const p = new PrefixAwareSelector();
    const counts = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const id = p.choose(replicas(1, 2, 3, 4), loads({ 1: 5 }), { session: null, blocks: null }).order[0]!.id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    expect(counts.get(1) ?? 0).toBe(0);
    for (const id of [2, 3, 4]) expect(counts.get(id)).toBeGreaterThan(60);
  });

  it('sizes a replica\'s index from its cache size in tokens, at the characters per token responses show', () => {
    const blocks = Array.from({ length: 12 }, (_, i) => 500 + i);
    const p = new PrefixAwareSelector();
    p.cacheSize(1, 64); // 64 tokens × 4 characters: 4 blocks of 64 characters
    p.dispatched({ id: 1, address: '' }, { session: null, blocks }).end();
    const small = p.index.size(1);
    expect(small).toBeLessThanOrEqual(4);
    expect(small).toBeGreaterThanOrEqual(2);
    // Prompts of 100 blocks (6,400 characters) were 800 tokens: 8 characters a token.
    for (let i = 0; i < 200; i++) p.promptTokens(100, 800);
    p.cacheSize(1, 64);
    p.dispatched({ id: 1, address: '' }, { session: null, blocks }).end();
    expect(p.index.size(1)).toBeLessThanOrEqual(8);
    expect(p.index.size(1)).toBeGreaterThanOrEqual(4);
    expect(p.index.size(1)).toBeGreaterThan(small);
  });
});

const SCOPE = 7;
/**
 * A latency model that has seen `n` first tokens from each replica: 40 ms + 0.2 ms a token +
 * 1.5 ms a request in flight, times the replica's slowness, never queueing.
 */
function taught(slowness: Record<number, number>, n = 60): LatencyModel {
  const model = new LatencyModel();
  for (let k = 0; k < n; k++) {
    for (const [id, factor] of Object.entries(slowness)) {
      const tokensAhead = (k * 397) % 3000;
      const inflight = k % 3;
      model.observe({ replicaId: Number(id), scope: SCOPE, tokensAhead, inflight, ttftMs: factor * (40 + 0.2 * tokensAhead + 1.5 * inflight) });
    }
  }
  return model;
}

describe('prefix-aware choice, costed by the latency model', () => {
  it('sends new requests away from a replica the model knows to be slow, though neither has a queue', () => {
    const model = taught({ 1: 1, 2: 3 });
    let seed = 0;
    const p = new PrefixAwareSelector({ model, random: () => (seed = (seed + 0.37) % 1) });
    const counts = new Map<number, number>();
    for (let i = 0; i < 100; i++) {
      const id = p.choose(replicas(2, 1), loads({ 1: 1, 2: 1 }), { session: null, blocks: other, scope: SCOPE }).order[0]!.id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    expect(counts.get(1)).toBe(100);
    // The same model, asked for another deployment, knows nothing of these replicas' speed there.
    expect(p.cost(2, loads({}), other, SCOPE + 1)).toBe(p.cost(1, loads({}), other, SCOPE + 1));
  });

  it('with no engine signals, the model alone keeps requests off a replica whose learnt limit is reached', () => {
    const model = taught({ 1: 1, 2: 1 });
    // Replica 1 queued twice with 4 in flight: its batch is full at 4.
    for (let i = 0; i < 2; i++) model.observe({ replicaId: 1, scope: SCOPE, tokensAhead: 0, inflight: 4, ttftMs: 2_000 });
    expect(model.limit(1)).toBe(4);
    const p = new PrefixAwareSelector({ model, random: () => 0 });
    p.dispatched({ id: 1, address: '' }, { session: null, blocks: turn1 }).end(); // its cache holds the prompt
    const ask = (inflight: Record<number, number>) => p.choose(replicas(1, 2), loads(inflight), { session: null, blocks: turn2, scope: SCOPE }).order[0]!.id;
    expect(ask({ 1: 3, 2: 3 })).toBe(1); // below its limit, its cache wins
    expect(ask({ 1: 4, 2: 4 })).toBe(2); // at it, the wait outweighs the prefill
  });

  it('learns the limit from an engine that says it queues, and counts its queue and KV pressure in queue turns', () => {
    const model = new LatencyModel();
    const said: Record<number, ReplicaSignals> = { 2: { running: 16, waiting: 3, kvUsage: 0.5 }, 3: { running: 4, waiting: 0, kvUsage: 1 } };
    const p = new PrefixAwareSelector({ model, random: () => 0 }, { signals: (id) => said[id] ?? null });
    const costs = [1, 2, 3].map((id) => p.cost(id, loads({}), turn1, SCOPE));
    expect(model.limit(2)).toBe(16);
    expect(costs[1]! - costs[0]!).toBeCloseTo(4 * model.queueTurnMs(2, SCOPE)); // three waiting, then a slot
    expect(costs[2]! - costs[0]!).toBeCloseTo(model.queueTurnMs(3, SCOPE)); // KV full: one turn
    // At 17 in flight the model's own count already says 2 ahead: the engine's 4 add only 2 more.
    expect(p.cost(2, loads({ 2: 17 }), turn1, SCOPE) - model.predict(2, SCOPE, p.tokensAhead(2, turn1), 17)).toBeCloseTo(2 * model.queueTurnMs(2, SCOPE));
  });

  it('says what prefill each attempt faced, asked before or after it started, and never feeds the model itself', () => {
    const model = new LatencyModel();
    const p = new PrefixAwareSelector({ model, random: () => 0 });
    p.dispatched({ id: 1, address: '' }, { session: null, blocks: turn1 }); // owed by 1, never answered
    p.dispatched({ id: 2, address: '' }, { session: null, blocks: turn1 }).end(); // cached at 2
    const body = Buffer.from(JSON.stringify(chat(SYSTEM, words(40, 'u1-'), words(60, 'a1-'), words(40, 'u2-'))));
    const placement = p.place(replicas(1, 2), loads({}), { scope: SCOPE, session: null, body });
    const [r1, r2] = replicas(1, 2) as [ReplicaRef, ReplicaRef];
    // At 1: turn 2's blocks past turn 1 (which it holds), and turn 1 (which it still owes).
    const facedAt1 = p.tokens(turn2.length - turn1.length + turn1.length);
    expect(facedAt1).toBeGreaterThan(0);
    expect(placement.tokensAhead!(r1)).toBeCloseTo(facedAt1);
    placement.hooks!.attemptStarted!(r1);
    expect(placement.tokensAhead!(r1)).toBeCloseTo(facedAt1);
    placement.hooks!.attemptStarted!(r2); // a retry: 2 owes nothing and holds turn 1
    expect(placement.tokensAhead!(r2)).toBeCloseTo(p.tokens(turn2.length - turn1.length));
    expect(placement.tokensAhead!(r1)).toBeCloseTo(facedAt1); // what it faced then
    placement.hooks!.firstByte!();
    expect(placement.tokensAhead!(r2)).toBeCloseTo(p.tokens(turn2.length - turn1.length)); // settled since, still what it faced
    placement.hooks!.end!();
    expect(model.describe(1)).toBeNull();
    expect(model.describe(2)).toBeNull();
  });
});

describe('top-level members, found by a scan', () => {
  const members = (json: string) => {
    const m = topLevelMembers(Buffer.from(json), ['stream', 'model']);
    return m === null ? null : Object.fromEntries(Object.entries(m).map(([k, v]) => [k, v!.toString()]));
  };
  it('finds the members asked for, values as sent, and nothing nested', () => {
    expect(members('{"model":"m","options":{"stream":false},"stream" : true}')).toEqual({ model: '"m"', stream: 'true' });
    expect(members('{"messages":[{"content":"\\"stream\\": true"}]}')).toEqual({});
    expect(members('{}')).toEqual({});
  });
  it('finds nothing in what is not one JSON object', () => {
    expect(members('[]')).toBeNull();
    expect(members('{"stream":tru')).toBeNull();
    expect(members('{"stream" true}')).toBeNull();
  });
});
