// Owns the behavioural contract every Store implementation must meet (ids, compare-and-set,
// unique keys, deletes, the change feed, durability across reopen, modify() under
// contention, deployments' events: folded, capped, fenced, kept and deleted with the
// deployment, values handed out that no caller can change in the store). Implementation test
// files call describeStoreContract with a factory.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { generalSpec } from '../../test/helpers/spec-fixtures.js';
import type { DeploymentRecord, NewDeploymentEvent, ReplicaRecord, ServiceAccountRecord, TokenRecord } from '../domain/records.js';
import {
  ConflictError,
  FencedError,
  NotFoundError,
  VersionConflictError,
  modify,
  type ChangeEvent,
  type Store,
  type Versioned,
} from './store.js';
import { fencedStore } from './fenced-store.js';
import { EVENT_FOLD_WINDOW, EVENTS_PER_DEPLOYMENT } from './events.js';

export interface StoreHarness {
  /** An opened store on fresh, empty state. */
  store: Store;
  /** A new, opened instance on the same state (same dir / same Redis prefix). */
  reopen: () => Promise<Store>;
  /** Closes every instance it handed out and removes the state. */
  cleanup: () => Promise<void>;
  /**
   * Resolves once `ms` have passed on the clock the store expires leases and reports by: a
   * store on an injected clock steps it; one on its server's clock waits for that clock.
   */
  elapse: (ms: number) => Promise<void>;
}

const CREATED_AT = '2025-01-01T00:00:00.000Z';
const TOKEN_HASH = 'token-hash';

export function tokenRecord(id: number, name: string, hash = `hash-${name}`): TokenRecord {
  return { id, name, hash, hint: hash.slice(-4), created_at: CREATED_AT };
}

export function serviceAccountRecord(id: number, name: string): ServiceAccountRecord {
  return { id, name, role: 'member', key_hash: `key-${name}`, hint: name.slice(-4), created_at: CREATED_AT };
}

export function replicaRecord(id: number, restarts = 0): ReplicaRecord {
  return {
    id,
    deployment_id: 1,
    revision: 1,
    component: 'worker',
    name: `d1-r1-${id}`,
    address: '127.0.0.1:9000',
    state: 'starting',
    restarts,
    pid: null,
    metrics_target: null,
    updated_at: CREATED_AT,
  };
}

/** A general deployment with empty arrays and maps, which JSON round trips must keep as such. */
export function deploymentRecord(id: number, name: string): DeploymentRecord {
  const spec = generalSpec({ image: 'nginx', tag: 'latest', container_port: 8080, health_check_path: '/healthz', enable_logging: false });
  return {
    id,
    family: 'general',
    name,
    cluster_id: 1,
    spec,
    scaling: { min_replicas: 0, max_replicas: 1, target_concurrency: null, cooldown_period: 300, pools: null },
    auth: { token_id: null, client_certificate_id: null, private_endpoint: false },
    revision: 1,
    revisions: [{ revision: 1, created_at: CREATED_AT, reason: 'create', source_revision: null, status: 'pending', spec }],
    paused: false,
    status: 'pending',
    created_at: CREATED_AT,
    updated_at: CREATED_AT,
  };
}

/** Creates a token whose hash is claimed in the token-hash index. */
export function createToken(store: Store, name: string, hash = `hash-${name}`): Promise<Versioned<TokenRecord>> {
  return store.create('token', (id) => tokenRecord(id, name, hash), { unique: [{ index: TOKEN_HASH, key: hash }] });
}

export function describeStoreContract(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`Store contract: ${name}`, () => {
    let harness: StoreHarness;
    let store: Store;

    beforeEach(async () => {
      harness = await makeStore();
      store = harness.store;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    describe('ids', () => {
      it('assigns 1, 2, 3 per kind independently', async () => {
        const tokens = [await createToken(store, 'a'), await createToken(store, 'b'), await createToken(store, 'c')];
        expect(tokens.map((t) => t.value.id)).toEqual([1, 2, 3]);
        const account = await store.create('service_account', (id) => serviceAccountRecord(id, 'ops'));
        expect(account.value.id).toBe(1);
        expect((await createToken(store, 'd')).value.id).toBe(4);
      });

      it('never reuses an id after delete', async () => {
        await createToken(store, 'a');
        await createToken(store, 'b');
        expect(await store.delete('token', 2)).toBe(true);
        expect((await createToken(store, 'c')).value.id).toBe(3);
        expect(await store.delete('token', 3)).toBe(true);
        expect(await store.delete('token', 1)).toBe(true);
        expect((await createToken(store, 'd')).value.id).toBe(4);
      });
    });

    describe('get and list', () => {
      it('return the value with its version', async () => {
        const created = await createToken(store, 'a');
        expect(created).toEqual({ value: tokenRecord(1, 'a'), version: 1 });
        expect(await store.get('token', 1)).toEqual({ value: tokenRecord(1, 'a'), version: 1 });
        expect(await store.get('token', 2)).toBeUndefined();
      });

      it('list returns every record of the kind, in id order', async () => {
        await createToken(store, 'a');
        await createToken(store, 'b');
        await store.create('service_account', (id) => serviceAccountRecord(id, 'ops'));
        await store.update('token', 1, 1, tokenRecord(1, 'a2', 'hash-a'));
        expect(await store.list('token')).toEqual([
          { value: tokenRecord(1, 'a2', 'hash-a'), version: 2 },
          { value: tokenRecord(2, 'b'), version: 1 },
        ]);
        expect(await store.list('deployment')).toEqual([]);
      });

      it('hands out values whose change never reaches what is stored (copies, or frozen values that refuse it)', async () => {
        const change = (value: { name: string }, name: string) => {
          try {
            value.name = name;
          } catch (err) {
            expect(err).toBeInstanceOf(TypeError); // frozen
          }
        };
        const built = tokenRecord(1, 'a');
        const created = await store.create('token', () => built, { unique: [{ index: TOKEN_HASH, key: 'hash-a' }] });
        change(built, 'changed after the create');
        change(created.value, 'mutated');
        const read = await store.get('token', 1);
        if (read) change(read.value, 'mutated too');
        const [listed] = await store.list('token');
        if (listed) change(listed.value, 'mutated as well');
        const value = tokenRecord(1, 'b');
        await store.update('token', 1, 1, value);
        change(value, 'changed after the update');
        expect((await store.get('token', 1))?.value.name).toBe('b');
        expect((await store.list('token'))[0]?.value.name).toBe('b');
      });
    });

    describe('update (compare-and-set)', () => {
      it('succeeds with the current version and bumps it', async () => {
        await createToken(store, 'a');
        const updated = await store.update('token', 1, 1, tokenRecord(1, 'renamed', 'hash-a'));
        expect(updated).toEqual({ value: tokenRecord(1, 'renamed', 'hash-a'), version: 2 });
        expect(await store.get('token', 1)).toEqual(updated);
        expect((await store.update('token', 1, 2, tokenRecord(1, 'again', 'hash-a'))).version).toBe(3);
      });

      it('fails with VersionConflictError on a stale version and changes nothing', async () => {
        await createToken(store, 'a');
        await store.update('token', 1, 1, tokenRecord(1, 'first', 'hash-a'));
        await expect(store.update('token', 1, 1, tokenRecord(1, 'second', 'hash-a'))).rejects.toBeInstanceOf(
          VersionConflictError,
        );
        expect(await store.get('token', 1)).toEqual({ value: tokenRecord(1, 'first', 'hash-a'), version: 2 });
      });

      it('lets exactly one of many concurrent updates from the same version through', async () => {
        await createToken(store, 'a');
        const racing = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => store.update('token', 1, 1, tokenRecord(1, `writer-${i}`, 'hash-a'))));
        const won = racing.filter((r) => r.status === 'fulfilled');
        expect(won).toHaveLength(1);
        for (const r of racing) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(VersionConflictError);
        expect(await store.get('token', 1)).toEqual(won[0]!.value);
      });

      it('fails with NotFoundError when the record is missing', async () => {
        await expect(store.update('token', 7, 1, tokenRecord(7, 'ghost'))).rejects.toBeInstanceOf(NotFoundError);
        expect(await store.get('token', 7)).toBeUndefined();
      });

      it('keeps empty arrays and objects intact through updates', async () => {
        const created = await store.create('deployment', (id) => deploymentRecord(id, 'empty'));
        const changed = { ...created.value, paused: true };
        await store.update('deployment', 1, 1, changed);
        expect(await store.get('deployment', 1)).toEqual({ value: changed, version: 2 });
      });
    });

    describe('unique keys', () => {
      it('refuse a second create with the same key and write nothing', async () => {
        await createToken(store, 'a', 'same');
        const err = await createToken(store, 'b', 'same').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ConflictError);
        expect(err).toMatchObject({ index: TOKEN_HASH, key: 'same' });
        expect((await store.list('token')).map((t) => t.value.name)).toEqual(['a']);
        expect(await store.lookup(TOKEN_HASH, 'same')).toEqual({ kind: 'token', id: 1 });
      });

      it('claim all keys or none', async () => {
        await createToken(store, 'a', 'taken');
        const both = [
          { index: 'token-name', key: 'fresh' },
          { index: TOKEN_HASH, key: 'taken' },
        ];
        await expect(store.create('token', (id) => tokenRecord(id, 'fresh', 'taken'), { unique: both })).rejects.toBeInstanceOf(
          ConflictError,
        );
        expect(await store.lookup('token-name', 'fresh')).toBeUndefined();
      });

      it('lookup finds the kind and id; delete releases the key', async () => {
        await createToken(store, 'a');
        await createToken(store, 'b');
        expect(await store.lookup(TOKEN_HASH, 'hash-b')).toEqual({ kind: 'token', id: 2 });
        expect(await store.lookup(TOKEN_HASH, 'nope')).toBeUndefined();
        expect(await store.lookup('other-index', 'hash-b')).toBeUndefined();
        await store.delete('token', 2);
        expect(await store.lookup(TOKEN_HASH, 'hash-b')).toBeUndefined();
        const again = await createToken(store, 'b');
        expect(await store.lookup(TOKEN_HASH, 'hash-b')).toEqual({ kind: 'token', id: again.value.id });
      });

      it('go to exactly one of many creates racing for them, while distinct ones all land', async () => {
        const racing = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => createToken(store, `racer-${i}`, 'contested')));
        expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        for (const r of racing) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ConflictError);
        const distinct = await Promise.all(Array.from({ length: 10 }, (_, i) => createToken(store, `own-${i}`)));
        expect(new Set(distinct.map((t) => t.value.id)).size).toBe(10);
        expect(await store.list('token')).toHaveLength(11);
      });

      it('survive updates', async () => {
        await createToken(store, 'a');
        await store.update('token', 1, 1, tokenRecord(1, 'renamed', 'hash-a'));
        await expect(createToken(store, 'b', 'hash-a')).rejects.toBeInstanceOf(ConflictError);
        await store.delete('token', 1);
        expect(await store.lookup(TOKEN_HASH, 'hash-a')).toBeUndefined();
      });
    });

    describe('delete', () => {
      it('with a stale expectedVersion does not delete', async () => {
        await createToken(store, 'a');
        await store.update('token', 1, 1, tokenRecord(1, 'a2', 'hash-a'));
        await expect(store.delete('token', 1, 1)).rejects.toBeInstanceOf(VersionConflictError);
        expect((await store.get('token', 1))?.version).toBe(2);
        expect(await store.lookup(TOKEN_HASH, 'hash-a')).toEqual({ kind: 'token', id: 1 });
        expect(await store.delete('token', 1, 2)).toBe(true);
        expect(await store.get('token', 1)).toBeUndefined();
      });

      it('of a missing id returns false', async () => {
        expect(await store.delete('token', 42)).toBe(false);
        expect(await store.delete('token', 42, 1)).toBe(false);
        await createToken(store, 'a');
        expect(await store.delete('token', 1)).toBe(true);
        expect(await store.delete('token', 1)).toBe(false);
      });
    });

    describe('watch', () => {
      it('receives put and delete events in order', async () => {
        const events: ChangeEvent[] = [];
        const stop = store.watch((e) => events.push(e));
        await createToken(store, 'a');
        await store.update('token', 1, 1, tokenRecord(1, 'a2', 'hash-a'));
        await store.create('service_account', (id) => serviceAccountRecord(id, 'ops'));
        await store.delete('token', 1);
        await vi.waitFor(() => expect(events).toHaveLength(4), { timeout: 5_000 });
        expect(events).toEqual([
          { kind: 'token', id: 1, op: 'put', version: 1 },
          { kind: 'token', id: 1, op: 'put', version: 2 },
          { kind: 'service_account', id: 1, op: 'put', version: 1 },
          { kind: 'token', id: 1, op: 'delete', version: 2 },
        ]);
        stop();
      });

      it('announces nothing for writes that failed', async () => {
        const events: ChangeEvent[] = [];
        const stop = store.watch((e) => events.push(e));
        await createToken(store, 'a');
        await createToken(store, 'b', 'hash-a').catch(() => undefined);
        await store.update('token', 1, 5, tokenRecord(1, 'x')).catch(() => undefined);
        await store.delete('token', 9);
        await store.delete('token', 1);
        await vi.waitFor(() => expect(events).toHaveLength(2), { timeout: 5_000 });
        expect(events.map((e) => `${e.op} ${e.kind} ${e.id}`)).toEqual(['put token 1', 'delete token 1']);
        stop();
      });

      it('stops delivering after unsubscribe', async () => {
        const stopped: ChangeEvent[] = [];
        const still: ChangeEvent[] = [];
        const stop = store.watch((e) => stopped.push(e));
        const keep = store.watch((e) => still.push(e));
        await createToken(store, 'a');
        await vi.waitFor(() => expect(stopped).toHaveLength(1), { timeout: 5_000 });
        stop();
        await createToken(store, 'b');
        // Once the remaining listener has seen the second event, the removed one would have too.
        await vi.waitFor(() => expect(still).toHaveLength(2), { timeout: 5_000 });
        expect(stopped).toHaveLength(1);
        keep();
      });
    });

    describe('durability', () => {
      it('keeps records, versions, unique keys and id counters across close and reopen', async () => {
        await createToken(store, 'a');
        await createToken(store, 'b');
        await createToken(store, 'c');
        await store.update('token', 1, 1, tokenRecord(1, 'a2', 'hash-a'));
        await store.delete('token', 3);
        await store.create('replica', (id) => replicaRecord(id, 5));
        const before = { tokens: await store.list('token'), replicas: await store.list('replica') };
        await store.close();

        const reopened = await harness.reopen();
        expect(await reopened.list('token')).toEqual(before.tokens);
        expect(await reopened.list('replica')).toEqual(before.replicas);
        expect(await reopened.lookup(TOKEN_HASH, 'hash-b')).toEqual({ kind: 'token', id: 2 });
        expect(await reopened.lookup(TOKEN_HASH, 'hash-c')).toBeUndefined();
        await expect(createToken(reopened, 'x', 'hash-a')).rejects.toBeInstanceOf(ConflictError);
        expect((await createToken(reopened, 'd')).value.id).toBeGreaterThanOrEqual(4);
        await reopened.ping();
      });
    });

    describe('leases', () => {
      it('one holder at a time: renewed by its holder, refused to others, free again after release or expiry', async () => {
        expect(await store.holdLease('controller', 'a', 10_000)).toBe(1);
        expect(await store.holdLease('controller', 'a', 10_000)).toBe(1); // renewed: same epoch
        expect(await store.holdLease('controller', 'b', 10_000)).toBe(0);
        expect(await store.holdLease('other', 'b', 10_000)).toBe(1);
        await store.releaseLease('controller', 'b'); // not b's: nothing happens
        expect(await store.holdLease('controller', 'b', 10_000)).toBe(0);
        await store.releaseLease('controller', 'a');
        expect(await store.holdLease('controller', 'b', 150)).toBe(2);
        await harness.elapse(250);
        expect(await store.holdLease('controller', 'a', 150)).toBe(3); // expired, taken: a new epoch
        await harness.elapse(250);
        expect(await store.holdLease('controller', 'a', 10_000)).toBe(4); // even by the same holder
      });

      it('fenced writes land only while their holder has the lease; a deposed holder\'s are refused and leave no trace', async () => {
        const a = fencedStore(store, { lease: 'controller', holder: 'a' });
        const b = fencedStore(store, { lease: 'controller', holder: 'b' });
        await expect(createToken(a, 'nobody-holds')).rejects.toBeInstanceOf(FencedError);
        expect(await store.holdLease('controller', 'a', 150)).toBe(1);
        const made = await store.create('token', (id) => tokenRecord(id, 'x'), { unique: [{ index: TOKEN_HASH, key: 'hash-x' }] });
        expect((await a.update('token', made.value.id, 1, tokenRecord(made.value.id, 'by-a', 'hash-x'))).version).toBe(2);
        await expect(b.update('token', made.value.id, 2, tokenRecord(made.value.id, 'by-b', 'hash-x'))).rejects.toBeInstanceOf(FencedError);
        await harness.elapse(250); // a stalls past its lease: refused even before anyone takes it
        await expect(createToken(a, 'expired')).rejects.toBeInstanceOf(FencedError);
        expect(await store.holdLease('controller', 'b', 10_000)).toBe(2); // b takes over
        const deposed = [
          () => createToken(a, 'late'),
          () => a.update('token', made.value.id, 2, tokenRecord(made.value.id, 'late', 'hash-x')),
          () => modify(a, 'token', made.value.id, (t) => ({ ...t, name: 'late' })),
          () => a.delete('token', made.value.id),
        ];
        for (const write of deposed) await expect(write()).rejects.toBeInstanceOf(FencedError);
        expect(await store.get('token', made.value.id)).toMatchObject({ version: 2, value: { name: 'by-a' } });
        expect(await store.lookup(TOKEN_HASH, 'hash-late')).toBeUndefined();
        expect((await b.update('token', made.value.id, 2, tokenRecord(made.value.id, 'by-b', 'hash-x'))).version).toBe(3);
        expect(await b.delete('token', made.value.id)).toBe(true);
        // Unfenced writes (the control API's) do not depend on any lease.
        expect((await createToken(store, 'api')).version).toBe(1);
      });
    });

    describe('reports', () => {
      it('keeps each publisher\'s latest report until its time to live runs out', async () => {
        await store.publishReport('load', 'gw-a', '{"n":1}', 10_000);
        await store.publishReport('load', 'gw-a', '{"n":2}', 10_000); // replaces its own
        await store.publishReport('load', 'gw-b', '{"n":3}', 400);
        await store.publishReport('other', 'gw-a', 'x', 10_000);
        expect(Object.fromEntries(await store.readReports('load'))).toEqual({ 'gw-a': '{"n":2}', 'gw-b': '{"n":3}' });
        await harness.elapse(100);
        expect(Object.fromEntries(await store.readReports('load'))).toEqual({ 'gw-a': '{"n":2}', 'gw-b': '{"n":3}' }); // not yet
        await harness.elapse(350);
        expect(Object.fromEntries(await store.readReports('load'))).toEqual({ 'gw-a': '{"n":2}' });
        expect(await store.readReports('none')).toEqual(new Map());
      });
    });

    describe('events', () => {
      const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, second)).toISOString();
      const event = (second: number, message: string, reason = 'ScaledUp', type: NewDeploymentEvent['type'] = 'normal'): NewDeploymentEvent => ({ time: at(second), type, reason, message });
      const deployment = async (name: string) => (await store.create('deployment', (id) => deploymentRecord(id, name))).value.id;

      it('are kept per deployment, oldest first, each with a count of one', async () => {
        const web = await deployment('web');
        const api = await deployment('api');
        expect(await store.listEvents(web)).toEqual([]);
        expect(await store.appendEvent(web, event(1, 'desired replicas 1 → 2'))).toBe(true);
        expect(await store.appendEvent(api, event(2, 'revision 1 rolling out', 'RolloutStarted'))).toBe(true);
        expect(await store.appendEvent(web, event(3, 'replica web-r1-4 exited with code 1', 'ReplicaRestarted', 'warning'))).toBe(true);
        expect(await store.listEvents(web)).toEqual([
          { time: at(1), first_time: at(1), type: 'normal', reason: 'ScaledUp', message: 'desired replicas 1 → 2', count: 1 },
          { time: at(3), first_time: at(3), type: 'warning', reason: 'ReplicaRestarted', message: 'replica web-r1-4 exited with code 1', count: 1 },
        ]);
        expect((await store.listEvents(api)).map((e) => e.reason)).toEqual(['RolloutStarted']);
      });

      it('fold a repeat of a recent event into it: counted, moved to the newest, first time kept', async () => {
        const id = await deployment('web');
        await store.appendEvent(id, event(1, 'pulling img', 'ImagePulling'));
        await store.appendEvent(id, event(2, 'cannot pull img', 'PullFailed', 'warning'));
        await store.appendEvent(id, event(3, 'pulling img', 'ImagePulling'));
        await store.appendEvent(id, event(4, 'cannot pull img', 'PullFailed', 'warning'));
        await store.appendEvent(id, event(5, 'cannot pull img', 'PullFailed', 'normal')); // another type: not the same event
        expect(await store.listEvents(id)).toEqual([
          { time: at(3), first_time: at(1), type: 'normal', reason: 'ImagePulling', message: 'pulling img', count: 2 },
          { time: at(4), first_time: at(2), type: 'warning', reason: 'PullFailed', message: 'cannot pull img', count: 2 },
          { time: at(5), first_time: at(5), type: 'normal', reason: 'PullFailed', message: 'cannot pull img', count: 1 },
        ]);
        // Beyond the fold window a repeat is news again.
        for (let i = 0; i < EVENT_FOLD_WINDOW; i++) await store.appendEvent(id, event(10 + i, `step ${i}`, 'RolloutStep'));
        await store.appendEvent(id, event(30, 'pulling img', 'ImagePulling'));
        const events = await store.listEvents(id);
        expect(events.filter((e) => e.reason === 'ImagePulling').map((e) => e.count)).toEqual([2, 1]);
      });

      it(`keep the newest ${EVENTS_PER_DEPLOYMENT} and drop the oldest`, async () => {
        const id = await deployment('web');
        for (let i = 0; i < EVENTS_PER_DEPLOYMENT + 5; i++) await store.appendEvent(id, event(i % 60, `event ${i}`));
        const events = await store.listEvents(id);
        expect(events).toHaveLength(EVENTS_PER_DEPLOYMENT);
        expect(events[0]!.message).toBe('event 5');
        expect(events.at(-1)!.message).toBe(`event ${EVENTS_PER_DEPLOYMENT + 4}`);
      });

      it('go with their deployment: none for a missing one, none written after the delete', async () => {
        const id = await deployment('web');
        expect(await store.appendEvent(99, event(1, 'nobody'))).toBe(false);
        expect(await store.listEvents(99)).toEqual([]);
        await store.appendEvent(id, event(1, 'desired replicas 1 → 2'));
        expect(await store.delete('deployment', id)).toBe(true);
        expect(await store.listEvents(id)).toEqual([]);
        expect(await store.appendEvent(id, event(2, 'late writer'))).toBe(false);
        expect(await store.listEvents(id)).toEqual([]);
        // Deleting another kind with the same id leaves a deployment's events alone.
        const other = await deployment('api');
        await store.appendEvent(other, event(3, 'kept'));
        await store.create('replica', (rid) => replicaRecord(rid));
        await store.delete('replica', other);
        expect(await store.listEvents(other)).toHaveLength(1);
      });

      it('are no change on the feed, are fenced like records, and survive a reopen', async () => {
        const id = await deployment('web');
        const changes: ChangeEvent[] = [];
        const stop = store.watch((e) => changes.push(e));
        await store.appendEvent(id, event(1, 'unfenced'));
        const a = fencedStore(store, { lease: 'controller', holder: 'a' });
        await expect(a.appendEvent(id, event(2, 'nobody holds the lease'))).rejects.toBeInstanceOf(FencedError);
        expect(await store.holdLease('controller', 'a', 10_000)).toBe(1);
        expect(await a.appendEvent(id, event(3, 'by the holder'))).toBe(true);
        await createToken(store, 'marker');
        await vi.waitFor(() => expect(changes).toHaveLength(1), { timeout: 5_000 });
        expect(changes[0]).toMatchObject({ kind: 'token' });
        stop();
        const before = await store.listEvents(id);
        expect(before.map((e) => e.message)).toEqual(['unfenced', 'by the holder']);
        await store.close();
        const reopened = await harness.reopen();
        expect(await reopened.listEvents(id)).toEqual(before);
      });
    });

    describe('modify()', () => {
      it('retries under concurrent writers so that every increment lands', async () => {
        await store.create('replica', (id) => replicaRecord(id));
        const writers = 20;
        // The default retry budget with its jittered pauses must be enough for 20 writers.
        const bump = () => modify(store, 'replica', 1, (r) => ({ ...r, restarts: r.restarts + 1 }));
        await Promise.all(Array.from({ length: writers }, bump));
        expect(await store.get('replica', 1)).toMatchObject({ value: { restarts: writers }, version: writers + 1 });
      });

      it('leaves the record alone when the change returns undefined', async () => {
        await store.create('replica', (id) => replicaRecord(id));
        const result = await modify(store, 'replica', 1, () => undefined);
        expect(result.version).toBe(1);
        await expect(modify(store, 'replica', 2, (r) => r)).rejects.toBeInstanceOf(NotFoundError);
      });
    });
  });
}
