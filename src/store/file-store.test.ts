// Tests for the file store: the shared Store contract, plus what only a file store has —
// atomic state file writes, the LOCK file, refusing corrupt state (events included), older
// state files without events, and rollback on a failed write.

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { FileStore } from './file-store.js';
import { StoreError, type ChangeEvent, type Store } from './store.js';
import { createToken, describeStoreContract, tokenRecord } from './store.contract.js';

async function tempDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'infergate-file-store-'));
}

describeStoreContract('FileStore', async () => {
  const dir = await tempDir();
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00.000Z'));
  const opened: Store[] = [];
  const openNew = async () => {
    const store = new FileStore({ dir, clock });
    await store.open();
    opened.push(store);
    return store;
  };
  return {
    store: await openNew(),
    reopen: openNew,
    cleanup: async () => {
      for (const store of opened) await store.close();
      await rm(dir, { recursive: true, force: true });
    },
    elapse: async (ms) => clock.advance(ms),
  };
});

/** The pid of a process that has certainly exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  if (child.pid === undefined) throw new Error('could not spawn node');
  return child.pid;
}

describe('FileStore on disk', () => {
  let dir: string;
  let store: FileStore;
  const statePath = () => path.join(dir, 'state.json');
  const lockPath = () => path.join(dir, 'LOCK');

  beforeEach(async () => {
    dir = await tempDir();
    store = new FileStore({ dir });
  });

  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('creates a missing data dir and starts empty', async () => {
    const nested = new FileStore({ dir: path.join(dir, 'a', 'b') });
    await nested.open();
    expect(await nested.list('token')).toEqual([]);
    await nested.close();
  });

  it('leaves valid JSON and no temp file after every write', async () => {
    await store.open();
    const check = async () => {
      const state = JSON.parse(await readFile(statePath(), 'utf8')) as Record<string, unknown>;
      expect(state).toMatchObject({ format: 1 });
      expect(await readdir(dir)).not.toContain('state.json.tmp');
      return state;
    };
    await createToken(store, 'a');
    expect(await check()).toMatchObject({
      next: { token: 2 },
      records: { token: { '1': { version: 1, unique: [{ index: 'token-hash', key: 'hash-a' }] } } },
      indexes: { 'token-hash': { 'hash-a': { kind: 'token', id: 1 } } },
    });
    await store.update('token', 1, 1, tokenRecord(1, 'b', 'hash-a'));
    expect(await check()).toMatchObject({ records: { token: { '1': { version: 2, value: { name: 'b' } } } } });
    await store.delete('token', 1);
    expect(await check()).toMatchObject({ next: { token: 2 }, records: { token: {} }, indexes: {} });
  });

  it('ignores and removes a leftover temp file', async () => {
    await store.open();
    await createToken(store, 'a');
    await store.close();
    await writeFile(path.join(dir, 'state.json.tmp'), '{"half": ');
    store = new FileStore({ dir });
    await store.open();
    expect((await store.list('token')).map((t) => t.value.name)).toEqual(['a']);
    expect(await readdir(dir)).not.toContain('state.json.tmp');
  });

  it('refuses a second store on the same dir while the first is open', async () => {
    await store.open();
    const second = new FileStore({ dir });
    const err = await second.open().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as Error).message).toBe(
      `data dir ${dir} is in use by process ${process.pid} (lock file ${lockPath()}); stop that process or use another --data-dir`,
    );
    await store.close();
    await second.open();
    await second.close();
  });

  it('holds the LOCK file with its pid and removes it on close', async () => {
    await store.open();
    expect((await readFile(lockPath(), 'utf8')).trim()).toBe(String(process.pid));
    await store.close();
    expect(await readdir(dir)).not.toContain('LOCK');
  });

  it('takes over a stale LOCK left by a dead process', async () => {
    await writeFile(lockPath(), `${await deadPid()}\n`);
    await store.open();
    expect((await readFile(lockPath(), 'utf8')).trim()).toBe(String(process.pid));
  });

  it('takes over an empty LOCK file', async () => {
    await writeFile(lockPath(), '');
    await store.open();
    expect((await readFile(lockPath(), 'utf8')).trim()).toBe(String(process.pid));
  });

  it('takes over a LOCK with our own pid that no store in this process holds (pid reuse)', async () => {
    await writeFile(lockPath(), `${process.pid}\n`);
    await store.open();
    await createToken(store, 'a');
  });

  it.each([
    ['truncated JSON', '{"format": 1, "next": {'],
    ['an empty file', ''],
    ['a wrong format version', '{"format": 99, "next": {}, "records": {}, "indexes": {}}'],
    ['a wrong shape', '{"format": 1, "next": {"token": "two"}, "records": {}, "indexes": {}}'],
    ['an unknown kind', '{"format": 1, "next": {}, "records": {"widget": {}}, "indexes": {}}'],
    [
      'an index pointing nowhere',
      '{"format": 1, "next": {"token": 2}, "records": {}, "indexes": {"token-hash": {"h": {"kind": "token", "id": 1}}}}',
    ],
    ['events of a deployment that does not exist', '{"format": 1, "next": {}, "records": {}, "indexes": {}, "events": {"3": []}}'],
    ['an event without a count', '{"format": 1, "next": {}, "records": {}, "indexes": {}, "events": {"3": [{"time": "t", "first_time": "t", "type": "normal", "reason": "R", "message": "m"}]}}'],
  ])('refuses a corrupt state file (%s) and leaves it untouched', async (_what, text) => {
    await writeFile(statePath(), text);
    const err = await store.open().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as Error).message).toMatch(
      new RegExp(`^state file ${escapeRegExp(statePath())} is corrupt \\(.+\\); it was left untouched — restore it from a backup or move it away to start empty$`),
    );
    expect(await readFile(statePath(), 'utf8')).toBe(text);
    expect(await readdir(dir)).not.toContain('LOCK');
  });

  it('loads a state file written before events existed: no deployment has any yet', async () => {
    await writeFile(statePath(), '{"format": 1, "next": {"token": 2}, "records": {"token": {"1": {"version": 1, "unique": [], "value": {"id": 1}}}}, "indexes": {}}');
    await store.open();
    expect(await store.listEvents(1)).toEqual([]);
    expect(await store.list('token')).toHaveLength(1);
  });

  it('rejects a write that cannot be made durable and keeps memory as it was', async () => {
    await store.open();
    await createToken(store, 'a');
    const before = await readFile(statePath(), 'utf8');
    const events: ChangeEvent[] = [];
    store.watch((e) => events.push(e));
    // A directory where the temp file goes makes opening it fail, even as root.
    await mkdir(path.join(dir, 'state.json.tmp'));

    await expect(createToken(store, 'b')).rejects.toThrow(/^cannot write state file .*state\.json: /);
    await expect(store.update('token', 1, 1, tokenRecord(1, 'renamed', 'hash-a'))).rejects.toBeInstanceOf(StoreError);
    await expect(store.delete('token', 1)).rejects.toBeInstanceOf(StoreError);

    expect(await store.list('token')).toEqual([{ value: tokenRecord(1, 'a'), version: 1 }]);
    expect(await store.lookup('token-hash', 'hash-b')).toBeUndefined();
    expect(await readFile(statePath(), 'utf8')).toBe(before);
    expect(events).toEqual([]);

    await rmdir(path.join(dir, 'state.json.tmp'));
    expect((await createToken(store, 'b')).value.id).toBe(2);
  });

  it('refuses calls after close', async () => {
    await store.open();
    await store.close();
    await expect(store.get('token', 1)).rejects.toBeInstanceOf(StoreError);
    await expect(createToken(store, 'a')).rejects.toBeInstanceOf(StoreError);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
