// Micro-benchmark of the hot path's replica choice: nanoseconds per select() for both
// policies at a few replica counts, random session keys, light random load.
//   npm run bench:selectors

import { ConsistentHashSelector } from '../../src/balancer/consistent-hash.js';
import { PowerOfTwoSelector } from '../../src/balancer/power-of-two.js';
import type { LoadView, ReplicaRef, Selector } from '../../src/balancer/selector.js';
import { DEFAULTS } from '../../src/config/defaults.js';
const C = { loadFactor: DEFAULTS.gateway.loadFactor };

const ITERATIONS = 500_000;
const keys = Array.from({ length: 4096 }, (_, i) => `session-${i}-${Math.random().toString(36).slice(2)}`);
const loads = new Map<number, number>();
const load: LoadView = { inflight: (id) => loads.get(id) ?? 0 };

function time(selector: Selector, replicas: readonly ReplicaRef[], withKey: boolean): number {
  let sink = 0;
  for (let i = 0; i < 50_000; i++) sink += selector.select(replicas, load, withKey ? keys[i & 4095]! : null).length; // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) sink += selector.select(replicas, load, withKey ? keys[i & 4095]! : null).length;
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
  };
});
console.table(rows);
