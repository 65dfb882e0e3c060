import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileStore } from './file-store.js';
import { StoreUnavailableError, type Store } from './store.js';
import { hourOf, UsageLedger } from './usage-ledger.js';
import { deploymentRecord } from './store.contract.js';

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

  it('names the project of the deployment: as the caller says, else as the deployment record says', async () => {
    const told = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), project: 'team-a' }));
    const untold = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), project: 'team-b' }));
    const older = await store.create('deployment', (id) => deploymentRecord(id, 'embed'));
    const ledger = new UsageLedger(store);
    // The gateway says its route's project; the controller's replica seconds say none.
    ledger.add(told.value.id, H, { requests: 1 }, 'team-a');
    ledger.addLifetime(untold.value.id, 'Replica', 1, H, H + 1000);
    ledger.addLifetime(older.value.id, 'Replica', 1, H, H + 1000);
    // A deployment deleted before its hour's record is made: nothing to name (its rows are removed as leftovers).
    ledger.addLifetime(999, 'Replica', 1, H, H + 1000);
    await ledger.stop();
    const byDeployment = new Map((await store.list('usage')).map((u) => [u.value.deployment_id, u.value]));
    expect(byDeployment.get(told.value.id)?.project).toBe('team-a');
    expect(byDeployment.get(untold.value.id)?.project).toBe('team-b');
    expect(byDeployment.get(older.value.id)?.project).toBe('default');
    expect(byDeployment.get(999)).not.toHaveProperty('project');
  });

  it('keeps the project it was told for a batch the store did not take', async () => {
    let down = true;
    const ledger = new UsageLedger(faulty(store, () => (down ? 'before' : 'none')));
    // No deployment record to read it from: only what the gateway said names the project.
    ledger.add(41, H, { requests: 1 }, 'team-a');
    await ledger.flush();
    down = false;
    await ledger.flush();
    expect((await store.list('usage'))[0]?.value).toMatchObject({ deployment_id: 41, project: 'team-a', requests: 1 });
  });

  it('splits a replica lifetime at hour boundaries, GPU-seconds = seconds × GPUs', async () => {
    const ledger = new UsageLedger(store);
    ledger.addLifetime(2, 'Replica', 8, H + 3_570_000, H + 3_630_000); // 16:59:30 → 17:00:30
    await ledger.stop();
    const byHour = Object.fromEntries((await store.list('usage')).map((u) => [u.value.hour, u.value]));
    expect(byHour[hourOf(H)]).toMatchObject({ gpu_seconds: 240, replica_seconds: { Replica: 30 } });
    expect(byHour[hourOf(H + 3_600_000)]).toMatchObject({ gpu_seconds: 240, replica_seconds: { Replica: 30 } });
  });

  it('keeps what it counts while the store fails, and writes it all once it answers', async () => {
    let down = true;
    const flaky = faulty(store, () => (down ? 'before' : 'none'));
    const ledger = new UsageLedger(flaky);
    for (let i = 0; i < 5; i++) {
      ledger.add(3, H, { requests: 1, prompt_tokens: 2 });
      await ledger.flush();
    }
    expect(await store.list('usage')).toHaveLength(0);
    expect(ledger.unflushed).toBe(1);
    down = false;
    await ledger.flush();
    await ledger.flush();
    expect((await store.list('usage'))[0]?.value).toMatchObject({ requests: 5, prompt_tokens: 10 });
    expect(ledger.unflushed).toBe(0);
  });

  it('counts a write applied but unanswered once, when it is retried', async () => {
    // The first create and the first update are applied, then their answers are lost.
    const lost = new Set(['create', 'update']);
    const flaky = faulty(store, (op) => (lost.delete(op) ? 'after' : 'none'));
    const ledger = new UsageLedger(flaky);
    ledger.add(4, H, { requests: 1 });
    await ledger.flush(); // created, answer lost
    ledger.add(4, H, { requests: 10 });
    await ledger.flush(); // the first batch again: recognised, not added; the 10 wait for it
    await ledger.flush(); // the 10 added, answer lost
    ledger.add(4, H, { requests: 100 });
    await ledger.flush(); // the 10 again: recognised
    await ledger.flush(); // the 100
    expect((await store.list('usage')).map((u) => u.value.requests)).toEqual([111]);
    expect(ledger.unflushed).toBe(0);
  });

  describe('per revision', () => {
    it('sums what two ledgers count under each revision exactly, beside the deployment\'s figures', async () => {
      const gateway = new UsageLedger(store);
      const controller = new UsageLedger(store);
      for (let round = 0; round < 3; round++) {
        gateway.add(5, H + round, { requests: 1, errors: 1, prompt_tokens: 10, completion_tokens: 2, revision: 3 });
        gateway.add(5, H + round, { requests: 1, prompt_tokens: 20, completion_tokens: 4, revision: 4 });
        // Refused by the rate limit, and held then given up: no replica, no revision.
        gateway.add(5, H + round, { requests: 1, rate_limited: 1 });
        gateway.add(5, H + round, { requests: 1, errors: 1 });
        controller.addLifetime(5, 'Replica', 2, H + round * 10_000, H + round * 10_000 + 5_000, 3);
        controller.addLifetime(5, 'Replica', 2, H + round * 10_000, H + round * 10_000 + 1_000, 4);
        await Promise.all([gateway.flush(), controller.flush()]);
      }
      const [u, ...more] = (await store.list('usage')).map((r) => r.value);
      expect(more).toEqual([]);
      expect(u).toMatchObject({ requests: 12, errors: 6, prompt_tokens: 90, completion_tokens: 18, rate_limited: 3, gpu_seconds: 36, replica_seconds: { Replica: 18 } });
      expect(u!.revisions).toEqual({
        '3': { requests: 3, errors: 3, prompt_tokens: 30, completion_tokens: 6, gpu_seconds: 30 },
        '4': { requests: 3, errors: 0, prompt_tokens: 60, completion_tokens: 12, gpu_seconds: 6 },
      });
    });

    it('splits a revision\'s lifetime at hour boundaries like the deployment\'s', async () => {
      const ledger = new UsageLedger(store);
      ledger.addLifetime(6, 'Worker', 4, H + 3_590_000, H + 3_620_000, 2); // 16:59:50 → 17:00:20
      await ledger.stop();
      const byHour = Object.fromEntries((await store.list('usage')).map((u) => [u.value.hour, u.value]));
      expect(byHour[hourOf(H)]?.revisions).toEqual({ '2': { requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, gpu_seconds: 40 } });
      expect(byHour[hourOf(H + 3_600_000)]?.revisions).toEqual({ '2': { requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, gpu_seconds: 80 } });
    });

    it('counts a retried batch once under its revision too', async () => {
      const lost = new Set(['create', 'update']);
      const flaky = faulty(store, (op) => (lost.delete(op) ? 'after' : 'none'));
      const ledger = new UsageLedger(flaky);
      ledger.add(7, H, { requests: 1, completion_tokens: 5, revision: 2 });
      await ledger.flush(); // created, answer lost
      ledger.add(7, H, { requests: 10, completion_tokens: 50, revision: 3 });
      await ledger.flush(); // the first batch again: recognised
      await ledger.flush(); // revision 3's batch added, answer lost
      await ledger.flush(); // recognised again
      expect(ledger.unflushed).toBe(0);
      const u = (await store.list('usage'))[0]!.value;
      expect([u.requests, u.completion_tokens]).toEqual([11, 55]);
      expect(u.revisions).toEqual({
        '2': { requests: 1, errors: 0, prompt_tokens: 0, completion_tokens: 5, gpu_seconds: 0 },
        '3': { requests: 10, errors: 0, prompt_tokens: 0, completion_tokens: 50, gpu_seconds: 0 },
      });
    });

    it('adds to a record written before revisions were counted, and writes none while no figure names one', async () => {
      const ledger = new UsageLedger(store);
      ledger.add(8, H, { requests: 2 });
      await ledger.flush();
      expect((await store.list('usage'))[0]!.value.revisions).toBeUndefined();
      ledger.add(8, H, { requests: 1, prompt_tokens: 4, revision: 1 });
      await ledger.flush();
      expect((await store.list('usage'))[0]!.value).toMatchObject({ requests: 3, prompt_tokens: 4, revisions: { '1': { requests: 1, prompt_tokens: 4 } } });
    });
  });
});

/**
 * The real store with failures injected on writes: 'before' fails without writing (Redis
 * down), 'after' writes and then fails (the answer lost with the connection).
 */
function faulty(real: Store, fail: (op: 'create' | 'update' | 'none') => 'before' | 'after' | 'none'): Store {
  const wrap =
    <A extends unknown[], R>(op: 'create' | 'update', call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const mode = fail(op);
      if (mode === 'before') throw new StoreUnavailableError('the store (Redis) is unreachable: Connection is closed.');
      const result = await call(...args);
      if (mode === 'after') throw new StoreUnavailableError('the store (Redis) is unreachable: Connection is closed.');
      return result;
    };
  return Object.assign(Object.create(real) as Store, {
    create: wrap('create', real.create.bind(real) as Store['create']),
    update: wrap('update', real.update.bind(real) as Store['update']),
    lookup: async (index: string, key: string) => {
      if (fail('none') === 'before') throw new StoreUnavailableError('the store (Redis) is unreachable: Connection is closed.');
      return real.lookup(index, key);
    },
  });
}
