// The record index over a real file store: loaded on first use, following other writers
// through the change feed, this process's writes seen at once (also where the feed lags),
// a reload after a resync that drops what was deleted meanwhile, no deleted record brought
// back by a late read, and holdings equal to the quota arithmetic over the records.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG } from '../domain/catalog.js';
import { footprint } from '../domain/quota.js';
import type { DeploymentRecord } from '../domain/records.js';
import { FileStore } from '../store/file-store.js';
import { deploymentRecord } from '../store/store.contract.js';
import { modify, type ChangeListener, type Store } from '../store/store.js';
import { indexedStore, RecordIndex } from './record-index.js';

let dir: string;
let store: FileStore;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-record-index-'));
  store = new FileStore({ dir });
  await store.open();
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const deployment = (name: string, maxReplicas = 1): ((id: number) => DeploymentRecord) => (id) => {
  const d = deploymentRecord(id, name);
  return { ...d, scaling: { ...d.scaling, max_replicas: maxReplicas } };
};

/** A store whose change feed says nothing until `resync()`: a shared store cut off from its feed. */
function deafStore(inner: Store): Store & { resync(): void } {
  const resyncs = new Set<() => void>();
  return {
    open: () => inner.open(),
    close: () => inner.close(),
    ping: () => inner.ping(),
    get: (kind, id) => inner.get(kind, id),
    list: (kind) => inner.list(kind),
    lookup: (index, key) => inner.lookup(index, key),
    create: (kind, build, options) => inner.create(kind, build, options),
    update: (kind, id, version, value, options) => inner.update(kind, id, version, value, options),
    delete: (kind, id, version, options) => inner.delete(kind, id, version, options),
    appendEvent: (id, event, options) => inner.appendEvent(id, event, options),
    listEvents: (id) => inner.listEvents(id),
    watch: (_listener: ChangeListener) => () => undefined,
    onResync: (listener) => {
      resyncs.add(listener);
      return () => resyncs.delete(listener);
    },
    holdLease: (name, holder, ttl) => inner.holdLease(name, holder, ttl),
    releaseLease: (name, holder) => inner.releaseLease(name, holder),
    publishReport: (topic, publisher, body, ttl) => inner.publishReport(topic, publisher, body, ttl),
    readReports: (topic) => inner.readReports(topic),
    resync: () => resyncs.forEach((l) => l()),
  };
}

describe('RecordIndex', () => {
  it('loads on first use and follows every writer through the change feed', async () => {
    await store.create('deployment', deployment('before'));
    const index = new RecordIndex(store, DEFAULT_CATALOG);
    expect((await index.current()).deployments().map((d) => d.name)).toEqual(['before']);

    const other = await store.create('deployment', deployment('other', 3));
    await store.create('token', (id) => ({ id, name: 't', hash: 'h1', created_at: '2026-01-01T00:00:00.000Z' }));
    let view = await index.current();
    expect(view.ids('deployment')).toEqual([1, other.value.id]);
    expect(view.ids('deployment', { family: 'orchestrated' })).toEqual([]);
    expect(view.tokenHashes().has('h1')).toBe(true);
    expect(view.deployment(other.value.id)?.footprint.gpus).toBe(3);

    await modify(store, 'deployment', other.value.id, (d) => ({ ...d, scaling: { ...d.scaling, max_replicas: 5 } }));
    view = await index.current();
    expect(view.deployment(other.value.id)?.footprint.gpus).toBe(5);

    await store.delete('deployment', other.value.id);
    view = await index.current();
    expect(view.ids('deployment')).toEqual([1]);
    // A read that started before the delete and ends after it brings nothing back.
    index.applyWritten('deployment', other.value.id, { value: other.value, version: 99 });
    expect((await index.current()).deployment(other.value.id)).toBeUndefined();
    index.close();
  });

  it('sees this process’s own writes at once, even when the feed brings nothing', async () => {
    const deaf = deafStore(store);
    const index = new RecordIndex(deaf, DEFAULT_CATALOG);
    const writes = indexedStore(deaf, index);
    await index.current();
    const created = await writes.create('deployment', deployment('mine', 2));
    await writes.create('service_account', (id) => ({ id, name: 'bot', role: 'member', key_hash: 'k1', created_at: '2026-01-01T00:00:00.000Z' }));
    let view = await index.current();
    expect(view.deployments().map((d) => d.name)).toEqual(['mine']);
    expect(view.platformKeyHashes().has('k1')).toBe(true);
    expect(view.holdings().gpus).toBe(2);
    expect(view.holdings(created.value.id).gpus).toBe(0);
    await writes.delete('deployment', created.value.id);
    view = await index.current();
    expect(view.deployments()).toEqual([]);
    index.close();
  });

  it('passes every member it does not wrap through to the store, compact() and any later one included', async () => {
    const index = new RecordIndex(store, DEFAULT_CATALOG);
    const wrapped = indexedStore(store, index);
    expect(typeof wrapped.compact).toBe(typeof store.compact);
    const later = Object.assign(deafStore(store), { later: function (this: unknown) { return this; } });
    const through = indexedStore(later, index) as typeof later;
    expect(through.later()).toBe(later);
    await expect(wrapped.ping()).resolves.toBeUndefined();
    index.close();
  });

  it('reloads after a resync: what others wrote meanwhile appears, what they deleted goes', async () => {
    const deaf = deafStore(store);
    const index = new RecordIndex(deaf, DEFAULT_CATALOG);
    const gone = await store.create('deployment', deployment('gone'));
    await index.current();
    await store.delete('deployment', gone.value.id);
    await store.create('deployment', deployment('new'));
    // The feed was cut: the index does not know yet.
    expect((await index.current()).deployments().map((d) => d.name)).toEqual(['gone']);
    deaf.resync();
    expect((await index.current()).deployments().map((d) => d.name)).toEqual(['new']);
    index.close();
  });

  it('holds what the quota arithmetic computes from the records themselves', async () => {
    const index = new RecordIndex(store, DEFAULT_CATALOG);
    for (const [name, n] of [['a', 1], ['b', 4], ['c', 2]] as const) await store.create('deployment', deployment(name, n));
    const records = (await store.list('deployment')).map((d) => d.value);
    const view = await index.current();
    const gpus = records.reduce((sum, d) => sum + footprint(d, DEFAULT_CATALOG).gpus, 0);
    expect(view.holdings().gpus).toBe(gpus);
    expect(view.holdings().instances.get(1)?.get(1)).toBe(7);
    expect(view.holdings(records[1]!.id).gpus).toBe(gpus - 4);
    index.close();
  });

  it("keeps each record's project (default when the record names none) and answers per project", async () => {
    const index = new RecordIndex(store, DEFAULT_CATALOG);
    const old = await store.create('deployment', deployment('old', 2));
    const a = await store.create('deployment', (id) => ({ ...deployment('a', 3)(id), project: 'team-a' }));
    const tokenA = await store.create('token', (id) => ({ id, project: 'team-a', name: 't', hash: 'h-a', created_at: '2026-01-01T00:00:00Z' }));
    await store.create('token', (id) => ({ id, name: 'old', hash: 'h-old', created_at: '2026-01-01T00:00:00Z' }));
    const admin = await store.create('service_account', (id) => ({ id, name: 'admin', role: 'admin', key_hash: 'k1', created_at: '2026-01-01T00:00:00Z' }));
    const member = await store.create('service_account', (id) => ({ id, name: 'm', role: 'member', key_hash: 'k2', created_at: '2026-01-01T00:00:00Z' }));
    const view = await index.current();
    expect(view.deployments('default').map((d) => d.id)).toEqual([old.value.id]);
    expect(view.ids('deployment', { project: 'team-a', family: 'general' })).toEqual([a.value.id]);
    expect([...view.tokenIds('team-a')]).toEqual([tokenA.value.id]);
    expect(view.tokenHashes()).toEqual(new Set(['h-a', 'h-old']));
    expect(view.holdings(undefined, 'team-a').gpus).toBe(3);
    expect(view.holdings(a.value.id, 'team-a').gpus).toBe(0);
    expect(view.ids('service_account', { project: 'default' })).toEqual([member.value.id]);
    expect(view.ids('service_account', { project: 'default', admins: true })).toEqual([admin.value.id, member.value.id]);
    index.close();
  });
});
