// Micro-benchmark of the control API's create and list paths alone, in one process: no
// controller, no gateway, no replicas. A file store in a temp dir, a catalog large enough for
// every deployment, and real HTTP on loopback. It creates N general deployments at min 0
// and prints, for the last 50 creates, p50 and p99, then the time of a full list and of a
// page of 100 (median of 9), so what grows with the number of deployments shows apart from
// what replicas and key generation elsewhere in `infergate serve` cost.
//
//   npx tsx bench/micro/control-create.ts 10 1000      # one line per N
//   REDIS_URL=redis://127.0.0.1:PORT npx tsx bench/micro/control-create.ts 10 1000   # on Redis (a key prefix of its own)
//   npx tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/micro/control-create.ts 1000

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildControlApp } from '../../src/control/app.js';
import { Credentials } from '../../src/control/credentials.js';
import { systemClock } from '../../src/core/clock.js';
import { Sealer } from '../../src/core/secrets.js';
import { parseCatalog } from '../../src/domain/catalog.js';
import { DEFAULT_IMAGE_MAP } from '../../src/domain/image-map.js';
import { loadOrCreateCa } from '../../src/pki/ca.js';
import { FileStore } from '../../src/store/file-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Store } from '../../src/store/store.js';

const KEY = 'igk_bench-admin-key-0123456789abcdef';
const sizes = process.argv.slice(2).map(Number);
if (sizes.length === 0) sizes.push(10, 1000);

const catalog = parseCatalog({ clusters: [{ id: 1, name: 'big', orchestration_enabled: true, hardware: [{ id: 1, name: 'g1', gpus_per_instance: 1, instances: 5000 }] }] });

async function run(n: number): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-bench-create-'));
  const store: Store = process.env.REDIS_URL
    ? new RedisStore({ url: process.env.REDIS_URL, prefix: `bench-create-${randomBytes(4).toString('hex')}` })
    : new FileStore({ dir: path.join(dir, 'data') });
  await store.open();
  await new Credentials(store, systemClock).ensureAdmin(KEY);
  const app = await buildControlApp({
    store,
    catalog,
    images: DEFAULT_IMAGE_MAP,
    logs: null,
    gpuQuota: 100_000,
    sealer: new Sealer(randomBytes(32)),
    clock: systemClock,
    endpoint: { domain: 'endpoints.test', port: 443 },
    ca: await loadOrCreateCa(path.join(dir, 'certs')),
    consoleDir: null,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const api = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const body = {
      cluster_id: 1, hardware_instance_id: 1, name: `d-${i}`, image: 'infergate/reference-engine', tag: 'openai', container_port: 8000,
      min_replicas: 0, max_replicas: 1, max_concurrency: 4, endpoint_bearer_token: `bench-token-${i}-abcdefghijklmnop`,
      ...(process.env.PRIVATE && i % 10 === 0 ? { private_endpoint: true } : {}),
    };
    const t0 = performance.now();
    const res = await fetch(`${api}/deployments/general`, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    if (res.status !== 201) throw new Error(text);
    times.push(performance.now() - t0);
  }
  const median = async (p: string, k: number) => {
    const ts: number[] = [];
    for (let i = 0; i < k; i++) {
      const t0 = performance.now();
      const res = await fetch(`${api}${p}`, { headers });
      await res.text();
      if (res.status !== 200) throw new Error(`${p}: ${res.status}`);
      ts.push(performance.now() - t0);
    }
    return ts.sort((a, b) => a - b)[Math.floor(k / 2)]!;
  };
  const last = times.slice(-50).sort((a, b) => a - b);
  const list = await median('/deployments/general', Number(process.env.LIST_REPEAT ?? 5));
  const page = await median('/deployments/general?limit=100', Number(process.env.PAGE_REPEAT ?? 9));
  console.log(JSON.stringify({
    n,
    store: process.env.REDIS_URL ? 'redis' : 'file',
    create_p50_ms: last[Math.floor(last.length / 2)]!.toFixed(1),
    create_p99_ms: last[Math.floor(last.length * 0.99)]!.toFixed(1),
    list_all_ms: list.toFixed(1),
    list_page_100_ms: page.toFixed(1),
  }));
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
}

for (const n of sizes) await run(n);
