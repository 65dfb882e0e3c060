import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileStore } from './file-store.js';
import { hourOf, UsageLedger } from './usage-ledger.js';

let dir: string;
let store: FileStore;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-usage-'));
  store = new FileStore({ dir });
  await store.open();
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const H = Date.parse('2026-11-23T16:00:00.000Z');

describe('UsageLedger', () => {
  it('sums exactly what several ledgers add to the same deployment and hour', async () => {
    const ledgers = [new UsageLedger(store), new UsageLedger(store), new UsageLedger(store)];
    for (let round = 0; round < 5; round++) {
      ledgers.forEach((l, i) => l.add(1, H + 1000 * round, { requests: 1, errors: i === 0 ? 1 : 0, prompt_tokens: 10, completion_tokens: i + 1 }));
      await Promise.all(ledgers.map((l) => l.flush()));
    }
    const usage = (await store.list('usage')).map((u) => u.value);
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ deployment_id: 1, hour: '2026-11-23T16:00:00.000Z', requests: 15, errors: 5, prompt_tokens: 150, completion_tokens: 30 });
  });

  it('splits a replica lifetime at hour boundaries, GPU-seconds = seconds × GPUs', async () => {
    const ledger = new UsageLedger(store);
    ledger.addLifetime(2, 'Replica', 8, H + 3_570_000, H + 3_630_000); // 16:59:30 → 17:00:30
    await ledger.stop();
    const byHour = Object.fromEntries((await store.list('usage')).map((u) => [u.value.hour, u.value]));
    expect(byHour[hourOf(H)]).toMatchObject({ gpu_seconds: 240, replica_seconds: { Replica: 30 } });
    expect(byHour[hourOf(H + 3_600_000)]).toMatchObject({ gpu_seconds: 240, replica_seconds: { Replica: 30 } });
  });
});
