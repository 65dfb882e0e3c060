// Benchmark of the embedded file store's write and read cost against the number of records:
// bytes written per create (the process's write(2) bytes, /proc/self/io `wchar`), create
// latency (p50, p99; one create at a time, each acknowledged once durable), 100 concurrent
// creates (group commit), list() of every deployment, and open() — at 10 and 1,000
// deployments, on a temp dir on the same disk as the data dir would be. Alongside, the write
// pattern of the other layout considered, one file per record (tmp write, fsync, rename,
// fsync of the directory per write), timed without a store around it.
//   npm run bench:store                                   # src/store/file-store.ts, 10 and 1,000
//   npm run bench:store -- --sizes 10,100,1000 --creates 100
//   npm run bench:store -- --module /path/to/older/dist/store/file-store.js   # another build

import { mkdtemp, open, rename, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { DeploymentRecord } from '../src/domain/records.js';
import type { Store } from '../src/store/store.js';
import { generalSpec } from '../test/helpers/spec-fixtures.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10,1000' },
    creates: { type: 'string', default: '50' },
    module: { type: 'string' },
    dir: { type: 'string', default: os.tmpdir() },
  },
});
const SIZES = args.sizes.split(',').map(Number);
const CREATES = Number(args.creates);

type StoreClass = new (options: { dir: string }) => Store;
const modulePath = args.module ? pathToFileURL(path.resolve(args.module)).href : '../src/store/file-store.js';
const { FileStore } = (await import(modulePath)) as { FileStore: StoreClass };

function wchar(): number {
  return Number(/^wchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1]);
}

/** A deployment as the control API makes one: spec, one revision, a few settings (~1.9 KB of JSON). */
function deployment(id: number): DeploymentRecord {
  const spec = generalSpec({ image: 'infergate/reference-engine', command: ['--startup-ms', '300'], env: { MODE: 'fast', LOG_LEVEL: 'info' } });
  const at = new Date(Date.UTC(2026, 0, 1, 0, 0, id % 60)).toISOString();
  return {
    id,
    family: 'general',
    name: `deployment-${id}`,
    cluster_id: 1,
    spec,
    scaling: { min_replicas: 0, max_replicas: 2, target_concurrency: null, cooldown_period: 300, pools: null },
    auth: { token_id: id, client_certificate_id: null, private_endpoint: false },
    revision: 1,
    revisions: [{ revision: 1, created_at: at, reason: 'create', source_revision: null, status: 'pending', spec }],
    paused: false,
    status: 'pending',
    created_at: at,
    updated_at: at,
  };
}

const create = (store: Store) => store.create('deployment', deployment, { unique: [{ index: 'deployment-name', key: `n-${Math.random()}` }] });

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const ms = (ns: bigint) => Number(ns) / 1e6;

async function measure(size: number): Promise<Record<string, number>> {
  const dir = await mkdtemp(path.join(args.dir, 'infergate-bench-store-'));
  try {
    let store = new FileStore({ dir });
    await store.open();
    // Seeded in groups of 50 at a time: a store that commits groups seeds faster; either way
    // the state is the same.
    for (let made = 0; made < size; made += 50) await Promise.all(Array.from({ length: Math.min(50, size - made) }, () => create(store)));
    const latencies: number[] = [];
    const bytes: number[] = [];
    for (let i = 0; i < CREATES; i++) {
      const w = wchar();
      const t = process.hrtime.bigint();
      await create(store);
      latencies.push(ms(process.hrtime.bigint() - t));
      bytes.push(wchar() - w);
    }
    latencies.sort((a, b) => a - b);
    bytes.sort((a, b) => a - b);
    const t100 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: 100 }, () => create(store)));
    const concurrent = ms(process.hrtime.bigint() - t100);
    const lists: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = process.hrtime.bigint();
      await store.list('deployment');
      lists.push(ms(process.hrtime.bigint() - t));
    }
    lists.sort((a, b) => a - b);
    await store.close();
    const t = process.hrtime.bigint();
    store = new FileStore({ dir });
    await store.open();
    const opened = ms(process.hrtime.bigint() - t);
    await store.close();
    return {
      records: size,
      bytes_per_create: quantile(bytes, 0.5),
      create_p50_ms: quantile(latencies, 0.5),
      create_p99_ms: quantile(latencies, 0.99),
      concurrent_100_creates_ms: concurrent,
      list_p50_ms: quantile(lists, 0.5),
      open_ms: opened,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** One file per record, write pattern only: what each create would cost on disk. */
async function filePerRecord(): Promise<Record<string, number>> {
  const dir = await mkdtemp(path.join(args.dir, 'infergate-bench-files-'));
  try {
    const latencies: number[] = [];
    const bytes: number[] = [];
    for (let i = 1; i <= CREATES; i++) {
      const w = wchar();
      const t = process.hrtime.bigint();
      const text = JSON.stringify({ version: 1, unique: [{ index: 'deployment-name', key: `deployment-${i}` }], value: deployment(i) });
      const tmp = path.join(dir, `deployment-${i}.json.tmp`);
      const file = await open(tmp, 'w', 0o600);
      await file.writeFile(text);
      await file.sync();
      await file.close();
      await rename(tmp, path.join(dir, `deployment-${i}.json`));
      const d = await open(dir, 'r');
      await d.sync();
      await d.close();
      latencies.push(ms(process.hrtime.bigint() - t));
      bytes.push(wchar() - w);
    }
    latencies.sort((a, b) => a - b);
    bytes.sort((a, b) => a - b);
    return { bytes_per_create: quantile(bytes, 0.5), create_p50_ms: quantile(latencies, 0.5), create_p99_ms: quantile(latencies, 0.99) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const rows: Record<string, Record<string, number>> = {};
for (const size of SIZES) rows[`file store at ${size}`] = await measure(size);
rows['one file per record (write pattern)'] = await filePerRecord();
console.log(`file store: ${args.module ?? 'src/store/file-store.ts'}; ${CREATES} creates one at a time per size`);
console.table(Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, Object.fromEntries(Object.entries(v).map(([f, n]) => [f, Math.round(n * 100) / 100]))])));
