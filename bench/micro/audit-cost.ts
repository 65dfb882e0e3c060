// Micro-benchmark of what the audit log adds to a mutating call of the control API: the same
// PATCH (a vault token's priority cap, flipped each time) answered by two control APIs over the
// same kind of store, one that writes every audit entry and one whose store drops audit
// entries unwritten, so the difference is the entry alone — one more journal line (file store)
// or one more command (Redis) before the answer leaves. Real HTTP on loopback, one call at a
// time; prints p50 and p99 of each, after checking that every PATCH answered 200 and that the
// writing API's store holds exactly one entry per PATCH.
//
//   npx tsx bench/micro/audit-cost.ts [calls=2000]
//   REDIS_URL=redis://127.0.0.1:6379 npx tsx bench/micro/audit-cost.ts

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildControlApp } from '../../src/control/app.js';
import { Credentials } from '../../src/control/credentials.js';
import { systemClock } from '../../src/core/clock.js';
import { Sealer } from '../../src/core/secrets.js';
import { DEFAULT_CATALOG } from '../../src/domain/catalog.js';
import { DEFAULT_IMAGE_MAP } from '../../src/domain/image-map.js';
import type { Kind, RecordMap } from '../../src/domain/records.js';
import { loadOrCreateCa } from '../../src/pki/ca.js';
import { FileStore } from '../../src/store/file-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Store, Versioned } from '../../src/store/store.js';

const KEY = 'igk_bench-admin-key-0123456789abcdef';
const calls = Number(process.argv[2] ?? 2000);

/** The store with audit entries dropped: create('audit') answers as if written. */
function withoutAudit(store: Store): Store {
  let next = 1_000_000_000;
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'create') {
        return <K extends Kind>(kind: K, build: (id: number) => RecordMap[K], options?: Parameters<Store['create']>[2]): Promise<Versioned<RecordMap[K]>> =>
          kind === 'audit' ? Promise.resolve({ value: build(next++), version: 1 }) : target.create(kind, build, options);
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function measure(label: string, audit: boolean): Promise<{ label: string; p50: number; p99: number; entries: number }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-bench-audit-'));
  const raw: Store = process.env.REDIS_URL
    ? new RedisStore({ url: process.env.REDIS_URL, prefix: `bench-audit-${randomBytes(4).toString('hex')}` })
    : new FileStore({ dir: path.join(dir, 'data') });
  await raw.open();
  await new Credentials(raw, systemClock).ensureAdmin(KEY);
  const store = audit ? raw : withoutAudit(raw);
  const app = await buildControlApp({
    store, catalog: DEFAULT_CATALOG, images: DEFAULT_IMAGE_MAP, logs: null, gpuQuota: 1000, sealer: new Sealer(randomBytes(32)),
    clock: systemClock, endpoint: { domain: 'endpoints.test', port: 443 }, ca: await loadOrCreateCa(path.join(dir, 'certs')), consoleDir: null,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const api = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const created = await fetch(`${api}/vault/tokens`, { method: 'POST', headers, body: JSON.stringify({ name: 'bench' }) });
  const { id } = (await created.json()) as { id: number };
  const before = (await raw.list('audit')).length;
  const times: number[] = [];
  for (let i = 0; i < calls + 100; i++) {
    const t0 = performance.now();
    const res = await fetch(`${api}/vault/tokens/${id}`, { method: 'PATCH', headers, body: JSON.stringify({ max_priority: i % 2 === 0 ? 'standard' : null }) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`PATCH answered ${res.status}: ${text}`);
    if (i >= 100) times.push(performance.now() - t0); // the first 100 warm up
  }
  const entries = (await raw.list('audit')).length - before;
  await app.close();
  await raw.close();
  await rm(dir, { recursive: true, force: true });
  times.sort((a, b) => a - b);
  return { label, p50: times[Math.floor(times.length / 2)]!, p99: times[Math.floor(times.length * 0.99)]!, entries };
}

const without = await measure('without audit entries', false);
const withEntries = await measure('with audit entries', true);
if (without.entries !== 0) throw new Error(`the API without audit wrote ${without.entries} entries`);
if (withEntries.entries !== calls + 100) throw new Error(`expected ${calls + 100} audit entries, found ${withEntries.entries}`);
for (const r of [without, withEntries]) console.log(`${r.label.padEnd(24)} PATCH p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (${calls} calls, store ${process.env.REDIS_URL ? 'redis' : 'file'})`);
console.log(`the entry adds ${(withEntries.p50 - without.p50).toFixed(2)} ms at p50 (${(withEntries.p50 / without.p50).toFixed(2)}×)`);
