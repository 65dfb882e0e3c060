// Micro-benchmark of the hot path's replica choice: nanoseconds per request for each policy at
// a few replica counts, random session keys, light random load. prefix_aware is timed as the
// gateway runs it per request: place() on a chat body held in whole (the prompt's blocks
// hashed, every replica's TTFT predicted), then its attempt hooks (dispatch, first byte, end)
// and the latency model's sample of the first token; and its cost function alone, choose() on
// blocks hashed beforehand, with a model that has learnt every replica.
//   npm run bench:selectors

import { ConsistentHashSelector } from '../../src/balancer/consistent-hash.js';
import { LatencyModel } from '../../src/balancer/latency-model.js';
import { PowerOfTwoSelector } from '../../src/balancer/power-of-two.js';
import { PrefixAwareSelector } from '../../src/balancer/prefix-aware.js';
import { requestBlocks } from '../../src/balancer/prompt-blocks.js';
import type { LoadView, ReplicaRef, Selector } from '../../src/balancer/selector.js';
import { DEFAULTS } from '../../src/config/defaults.js';
const C = { loadFactor: DEFAULTS.gateway.loadFactor };

const ITERATIONS = 500_000;
const PREFIX_ITERATIONS = 100_000;
const keys = Array.from({ length: 4096 }, (_, i) => `session-${i}-${Math.random().toString(36).slice(2)}`);
const loads = new Map<number, number>();
const load: LoadView = { inflight: (id) => loads.get(id) ?? 0 };

// 256 conversations at turns 1–8 over one shared system prompt: 2–5 KB bodies, as a chat
// client sends them (each turn's bytes extend the last's).
const words = (n: number, seed: string): string => Array.from({ length: n }, (_, i) => `${seed}${i}`).join(' ');
const SYSTEM = words(250, 'sys');
const bodies = Array.from({ length: 2048 }, (_, i) => {
  const conversation = i & 255;
  const turns = 1 + (i >> 8);
  const messages = [{ role: 'system', content: SYSTEM }];
  for (let t = 0; t < turns; t++) messages.push({ role: t % 2 ? 'assistant' : 'user', content: words(30, `c${conversation}t${t}-`) });
  return { session: keys[conversation]!, body: Buffer.from(JSON.stringify({ model: 'm', messages, stream: true })) };
});

function time(selector: Selector, replicas: readonly ReplicaRef[], withKey: boolean): number {
  let sink = 0;
  for (let i = 0; i < 50_000; i++) sink += selector.select(replicas, load, withKey ? keys[i & 4095]! : null).length; // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) sink += selector.select(replicas, load, withKey ? keys[i & 4095]! : null).length;
  const ns = Number(process.hrtime.bigint() - start) / ITERATIONS;
  if (sink === -1) console.log(sink);
  return Math.round(ns);
}

function timePrefix(replicas: readonly ReplicaRef[]): number {
  const model = new LatencyModel();
  const policy = new PrefixAwareSelector({ model });
  const once = (i: number): number => {
    const { session, body } = bodies[i & 2047]!;
    const placement = policy.place(replicas, load, { scope: 1, session, body });
    const first = placement.order[0]!;
    const tokensAhead = placement.tokensAhead?.(first) ?? 0;
    const inflight = load.inflight(first.id);
    placement.hooks?.attemptStarted?.(first);
    placement.hooks?.firstByte?.();
    model.observe({ replicaId: first.id, scope: 1, tokensAhead, inflight, ttftMs: 40 + 0.1 * tokensAhead + (i % 7) });
    placement.hooks?.end?.();
    return first.id;
  };
  let sink = 0;
  for (let i = 0; i < 20_000; i++) sink += once(i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < PREFIX_ITERATIONS; i++) sink += once(i);
  const ns = Number(process.hrtime.bigint() - start) / PREFIX_ITERATIONS;
  if (sink === -1) console.log(sink);
  return Math.round(ns);
}

/** The cost function alone: choose() on blocks hashed beforehand, nothing dispatched. */
function timeChoose(replicas: readonly ReplicaRef[]): number {
  const model = new LatencyModel();
  for (let i = 0; i < 1000; i++) model.observe({ replicaId: replicas[i % replicas.length]!.id, scope: 1, tokensAhead: (i * 397) % 3000, inflight: i % 4, ttftMs: 40 + 0.1 * ((i * 397) % 3000) });
  const policy = new PrefixAwareSelector({ model });
  const prompts = bodies.map(({ session, body }) => ({ session, blocks: requestBlocks(body), scope: 1 }));
  for (let i = 0; i < 256; i++) policy.dispatched(replicas[i % replicas.length]!, prompts[i]!).end();
  let sink = 0;
  for (let i = 0; i < 50_000; i++) sink += policy.choose(replicas, load, prompts[i & 2047]!).order.length; // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) sink += policy.choose(replicas, load, prompts[i & 2047]!).order.length;
  const ns = Number(process.hrtime.bigint() - start) / ITERATIONS;
  if (sink === -1) console.log(sink);
  return Math.round(ns);
}

const rows = [2, 4, 16].map((n) => {
  const replicas = Array.from({ length: n }, (_, i) => ({ id: i + 1, address: `10.0.0.${i + 1}:8000` }));
  for (const r of replicas) loads.set(r.id, Math.floor(Math.random() * 4));
  return {
    replicas: n,
    'consistent-hash ns/select': time(new ConsistentHashSelector(C), replicas, true),
    'power-of-two ns/select': time(new PowerOfTwoSelector(), replicas, false),
    'prefix_aware ns/request': timePrefix(replicas),
    'prefix_aware choose() ns': timeChoose(replicas),
  };
});
console.table(rows);
