// Tests for the file store: the shared Store contract, plus what only a file store has — one
// journal line per change, a write's cost that does not grow with the state, compaction, a
// torn last write ignored and anything else unreadable refused, a failed write cut back,
// the LOCK file, and the upgrade in place from the first format (one state.json).

import { spawn } from 'node:child_process';
import { appendFile, copyFile, mkdir, mkdtemp, open, readFile, readdir, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino, type Logger } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { waitFor } from '../../test/helpers/wait.js';
import { ManualClock } from '../core/clock.js';
import type { Kind } from '../domain/records.js';
import { KINDS } from '../domain/records.js';
import { FileStore } from './file-store.js';
import { StoreError, type ChangeEvent, type Store } from './store.js';
import { createToken, deploymentRecord, describeStoreContract, replicaRecord, tokenRecord } from './store.contract.js';

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

/** A logger whose lines the test reads. */
function capturedLogger(): { logger: Logger; lines: Array<{ level: number; msg: string } & Record<string, unknown>> } {
  const lines: Array<{ level: number; msg: string } & Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) });
  return { logger, lines };
}

const JOURNAL_1 = 'state-00000001.journal';
const SNAPSHOT_1 = 'state-00000001.snapshot';
const FIXTURE_V1 = fileURLToPath(new URL('../../test/fixtures/state-v1/state.json', import.meta.url));

async function journalLines(dir: string, name = JOURNAL_1): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(path.join(dir, name), 'utf8');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function stateFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.startsWith('state')).sort();
}

/** Everything a store can read back, to compare two opens of the same state. */
async function everything(store: Store, deployments: number[] = []): Promise<unknown> {
  const records: Record<string, unknown> = {};
  for (const kind of KINDS) records[kind] = await store.list(kind);
  const events: Record<number, unknown> = {};
  for (const id of deployments) events[id] = await store.listEvents(id);
  return { records, events };
}

/** The FileHandle prototype, to make one of its calls fail as a full or broken disk would. */
async function fileHandlePrototype(): Promise<FileHandle> {
  const handle = await open(FIXTURE_V1, 'r');
  await handle.close();
  return Object.getPrototypeOf(handle) as FileHandle;
}

/** Bytes this process has handed to write(2) so far (every thread, libuv's pool included). */
async function bytesWritten(): Promise<number> {
  return Number(/^wchar: (\d+)$/m.exec(await readFile('/proc/self/io', 'utf8'))?.[1]);
}

describe('FileStore on disk', () => {
  let dir: string;
  let store: FileStore;

  beforeEach(async () => {
    dir = await tempDir();
    store = new FileStore({ dir });
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('creates a missing data dir and starts empty, with an empty journal', async () => {
    const nested = new FileStore({ dir: path.join(dir, 'a', 'b') });
    await nested.open();
    expect(await nested.list('token')).toEqual([]);
    expect(await stateFiles(path.join(dir, 'a', 'b'))).toEqual([JOURNAL_1]);
    expect(await journalLines(path.join(dir, 'a', 'b'))).toEqual([{ format: 2, journal: 1 }]);
    await nested.close();
  });

  it('appends one JSON line per change, and nothing for a write that changes nothing', async () => {
    await store.open();
    await createToken(store, 'a');
    await store.update('token', 1, 1, tokenRecord(1, 'b', 'hash-a'));
    await store.create('deployment', (id) => deploymentRecord(id, 'web'), { unique: [{ index: 'deployment-name', key: 'web' }] });
    await store.appendEvent(1, { time: '2026-01-01T00:00:00.000Z', type: 'normal', reason: 'ScaledUp', message: 'desired replicas 0 → 1' });
    expect(await store.delete('token', 9)).toBe(false);
    expect(await store.appendEvent(9, { time: '2026-01-01T00:00:00.000Z', type: 'normal', reason: 'ScaledUp', message: 'x' })).toBe(false);
    await store.delete('token', 1);
    expect(await journalLines(dir)).toEqual([
      { format: 2, journal: 1 },
      { op: 'put', kind: 'token', id: 1, version: 1, unique: [{ index: 'token-hash', key: 'hash-a' }], value: tokenRecord(1, 'a') },
      { op: 'put', kind: 'token', id: 1, version: 2, unique: [{ index: 'token-hash', key: 'hash-a' }], value: tokenRecord(1, 'b', 'hash-a') },
      { op: 'put', kind: 'deployment', id: 1, version: 1, unique: [{ index: 'deployment-name', key: 'web' }], value: deploymentRecord(1, 'web') },
      { op: 'event', deployment: 1, event: { time: '2026-01-01T00:00:00.000Z', type: 'normal', reason: 'ScaledUp', message: 'desired replicas 0 → 1' } },
      { op: 'delete', kind: 'token', id: 1 },
    ]);
    expect(await stateFiles(dir)).toEqual([JOURNAL_1]);
  });

  it('writes about the same bytes for a create at 1,000 records as at 10', async () => {
    await store.open();
    const create = () => store.create('deployment', (id) => deploymentRecord(id, `d-${id}`), { unique: [{ index: 'deployment-name', key: `d-${Math.random()}` }] });
    /** Median bytes written by one create, over 15 of them one at a time. */
    const perCreate = async () => {
      const sizes: number[] = [];
      for (let i = 0; i < 15; i++) {
        const before = await bytesWritten();
        await create();
        sizes.push((await bytesWritten()) - before);
      }
      return sizes.sort((a, b) => a - b)[7]!;
    };
    for (let i = 0; i < 10; i++) await create();
    const at10 = await perCreate();
    while ((await store.list('deployment')).length < 1_000) await Promise.all(Array.from({ length: 100 }, create));
    const at1000 = await perCreate();
    // One line of about a record's size; the first format rewrote every record per write (~100× here).
    expect(at10).toBeGreaterThan(JSON.stringify(deploymentRecord(1, 'd')).length);
    expect(at1000, `bytes per create: ${at10} at 10 records, ${at1000} at 1,000`).toBeLessThan(2 * at10);
  }, 120_000);

  it('ignores and removes temp files left by an interrupted snapshot or an older release', async () => {
    await store.open();
    await createToken(store, 'a');
    await store.close();
    await writeFile(path.join(dir, 'state-00000002.snapshot.tmp'), '{"format": 2, "snap');
    await writeFile(path.join(dir, 'state.json.tmp'), '{"half": ');
    store = new FileStore({ dir });
    await store.open();
    expect((await store.list('token')).map((t) => t.value.name)).toEqual(['a']);
    expect(await stateFiles(dir)).toEqual([JOURNAL_1]);
  });

  it('refuses a second store on the same dir while the first is open', async () => {
    await store.open();
    const second = new FileStore({ dir });
    const err = await second.open().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as Error).message).toBe(
      `data dir ${dir} is in use by process ${process.pid} (lock file ${path.join(dir, 'LOCK')}); stop that process or use another --data-dir`,
    );
    await store.close();
    await second.open();
    await second.close();
  });

  it('holds the LOCK file with its pid and removes it on close', async () => {
    await store.open();
    expect((await readFile(path.join(dir, 'LOCK'), 'utf8')).trim()).toBe(String(process.pid));
    await store.close();
    expect(await readdir(dir)).not.toContain('LOCK');
  });

  it('takes over a stale LOCK left by a dead process', async () => {
    await writeFile(path.join(dir, 'LOCK'), `${await deadPid()}\n`);
    await store.open();
    expect((await readFile(path.join(dir, 'LOCK'), 'utf8')).trim()).toBe(String(process.pid));
  });

  it('takes over an empty LOCK file', async () => {
    await writeFile(path.join(dir, 'LOCK'), '');
    await store.open();
    expect((await readFile(path.join(dir, 'LOCK'), 'utf8')).trim()).toBe(String(process.pid));
  });

  it('takes over a LOCK with our own pid that no store in this process holds (pid reuse)', async () => {
    await writeFile(path.join(dir, 'LOCK'), `${process.pid}\n`);
    await store.open();
    await createToken(store, 'a');
  });

  it('refuses calls after close', async () => {
    await store.open();
    await store.close();
    await expect(store.get('token', 1)).rejects.toBeInstanceOf(StoreError);
    await expect(createToken(store, 'a')).rejects.toBeInstanceOf(StoreError);
  });

  it('hands out frozen values, the same object to every reader', async () => {
    await store.open();
    const created = await createToken(store, 'a');
    const read = await store.get('token', 1);
    expect(Object.isFrozen(created.value)).toBe(true);
    expect(read?.value).toBe(created.value);
    expect((await store.list('token'))[0]?.value).toBe(created.value);
    const d = await store.create('deployment', (id) => deploymentRecord(id, 'web'));
    expect(() => (d.value.revisions as unknown[]).push({})).toThrow(TypeError);
  });

  describe('a write that cannot be made durable', () => {
    it('is refused, cut back off the journal, and leaves memory and the feed as they were', async () => {
      await store.open();
      await createToken(store, 'a');
      const before = await readFile(path.join(dir, JOURNAL_1));
      const events: ChangeEvent[] = [];
      store.watch((e) => events.push(e));
      const proto = await fileHandlePrototype();
      const write = proto.write;
      // Half the line reaches the file, then the disk is full.
      vi.spyOn(proto, 'write').mockImplementation(async function (this: FileHandle, ...args: unknown[]) {
        const [buf, offset, length, position] = args as [Buffer, number, number, number];
        await (write as (...a: unknown[]) => Promise<unknown>).call(this, buf, offset, Math.floor(length / 2), position);
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      });

      await expect(createToken(store, 'b')).rejects.toThrow(/^cannot write the journal .*state-00000001\.journal: ENOSPC: no space left on device, write; the change was not applied$/);
      await expect(store.update('token', 1, 1, tokenRecord(1, 'renamed', 'hash-a'))).rejects.toBeInstanceOf(StoreError);
      await expect(store.delete('token', 1)).rejects.toBeInstanceOf(StoreError);
      expect(await readFile(path.join(dir, JOURNAL_1))).toEqual(before);
      expect(await store.list('token')).toEqual([{ value: tokenRecord(1, 'a'), version: 1 }]);
      expect(await store.lookup('token-hash', 'hash-b')).toBeUndefined();
      expect(events).toEqual([]);

      vi.restoreAllMocks();
      expect((await createToken(store, 'b')).value.id).toBe(2);
      await store.close();
      store = new FileStore({ dir });
      await store.open();
      expect((await store.list('token')).map((t) => t.value.name)).toEqual(['a', 'b']);
    });

    it('refuses the writes planned on top of it too', async () => {
      await store.open();
      const proto = await fileHandlePrototype();
      vi.spyOn(proto, 'datasync').mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
      // Same turn: one batch, the second create's id and the update's version drawn from the first.
      const results = await Promise.allSettled([createToken(store, 'a'), createToken(store, 'b'), store.update('token', 1, 1, tokenRecord(1, 'a2', 'hash-a'))]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(await store.list('token')).toEqual([]);
      expect((await createToken(store, 'c')).value.id).toBe(1);
    });

    it('when the journal cannot even be cut back, every later write is refused until the store is reopened', async () => {
      await store.open();
      await createToken(store, 'a');
      const proto = await fileHandlePrototype();
      vi.spyOn(proto, 'write').mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }));
      vi.spyOn(proto, 'truncate').mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error, ftruncate'), { code: 'EIO' }));
      await expect(createToken(store, 'b')).rejects.toThrow(/EIO: i\/o error, write/);
      vi.restoreAllMocks();
      await expect(createToken(store, 'c')).rejects.toThrow(/no change is accepted until the service restarts$/);
      await expect(store.ping()).rejects.toThrow(/cannot be written/);
      expect((await store.list('token')).map((t) => t.value.name)).toEqual(['a']);
      await store.close();
      store = new FileStore({ dir });
      await store.open();
      expect((await store.list('token')).map((t) => t.value.name)).toEqual(['a']);
      await createToken(store, 'c');
    });
  });

  describe('reading the journal back', () => {
    async function written(): Promise<unknown> {
      await store.open();
      await createToken(store, 'a');
      await store.create('deployment', (id) => deploymentRecord(id, 'web'));
      await store.appendEvent(1, { time: '2026-01-01T00:00:00.000Z', type: 'normal', reason: 'ScaledUp', message: 'up' });
      await store.update('token', 1, 1, tokenRecord(1, 'a2', 'hash-a'));
      const all = await everything(store, [1]);
      await store.close();
      return all;
    }

    it.each([
      ['a line cut short', '{"op":"put","kind":"token","id":2,"version":1,"uniq'],
      ['zeros where the data should be', '\0'.repeat(600)],
      ['a line that is JSON but no entry', '{"op":"put"}\n'],
    ])('ignores a torn last write (%s): every acknowledged write is there, the cut is said once, and the next writes follow', async (_what, tail) => {
      const all = await written();
      const size = (await stat(path.join(dir, JOURNAL_1))).size;
      await appendFile(path.join(dir, JOURNAL_1), tail);
      const { logger, lines } = capturedLogger();
      store = new FileStore({ dir, logger });
      await store.open();
      expect(await everything(store, [1])).toEqual(all);
      expect((await stat(path.join(dir, JOURNAL_1))).size).toBe(size);
      expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
        `file store: ignored a torn last write (${Buffer.byteLength(tail)} bytes at the end of ${JOURNAL_1}, never acknowledged)`,
      ]);
      await createToken(store, 'b');
      await store.close();
      store = new FileStore({ dir });
      await store.open();
      expect((await store.list('token')).map((t) => t.value.name)).toEqual(['a2', 'b']);
      expect(await stateFiles(dir)).toEqual([JOURNAL_1]);
    });

    it('keeps a copy of the journal when complete lines follow the unreadable one', async () => {
      const all = await written();
      const original = await readFile(path.join(dir, JOURNAL_1));
      await appendFile(path.join(dir, JOURNAL_1), '\0\0\0garbled\n{"op":"delete","kind":"token","id":1}\n');
      const { logger, lines } = capturedLogger();
      store = new FileStore({ dir, logger });
      await store.open();
      expect(await everything(store, [1])).toEqual(all);
      expect(await readFile(path.join(dir, JOURNAL_1))).toEqual(original);
      expect(lines.find((l) => l.level === 40)?.msg).toMatch(/ignored a torn last write .*; the journal as it was is kept in .*state-00000001\.journal\.torn$/);
      expect((await readFile(path.join(dir, `${JOURNAL_1}.torn`), 'utf8')).endsWith('"id":1}\n')).toBe(true);
    });

    const corrupt = (file: string, why: RegExp) =>
      new RegExp(`^state file ${escapeRegExp(file)} ${why.source}; the state-\\* files were left untouched — restore them from a backup \\(all from one\\), or move them away to start empty$`);

    it('refuses a journal whose header is garbled, and leaves it untouched', async () => {
      await written();
      const text = (await readFile(path.join(dir, JOURNAL_1), 'utf8')).replace('{"format":2,"journal":1}', '{"format":2,"journ');
      await writeFile(path.join(dir, JOURNAL_1), text);
      const err = await store.open().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect((err as Error).message).toMatch(corrupt(path.join(dir, JOURNAL_1), /does not begin with a valid header line/));
      expect(await readFile(path.join(dir, JOURNAL_1), 'utf8')).toBe(text);
      expect(await readdir(dir)).not.toContain('LOCK');
    });

    it('refuses an entry that contradicts the state before it', async () => {
      await written();
      const lines = (await readFile(path.join(dir, JOURNAL_1), 'utf8')).split('\n');
      lines.splice(2, 0, '{"op":"delete","kind":"token","id":7}');
      await writeFile(path.join(dir, JOURNAL_1), lines.join('\n'));
      await expect(store.open()).rejects.toThrow(corrupt(path.join(dir, JOURNAL_1), /entry at byte \d+ deletes token 7, which does not exist/));
    });

    it('refuses unreadable bytes in a journal that a newer one follows', async () => {
      await written();
      await appendFile(path.join(dir, JOURNAL_1), '{"op":"put","kind":"tok');
      await writeFile(path.join(dir, 'state-00000002.journal'), '{"format":2,"journal":2}\n');
      await expect(store.open()).rejects.toThrow(corrupt(path.join(dir, JOURNAL_1), /has \d+ unreadable bytes at byte \d+, and a newer journal follows it/));
    });

    it('refuses a snapshot without its journal, or a gap between journals', async () => {
      await written();
      store = new FileStore({ dir, compactBytes: 1 });
      await store.open();
      await store.compact();
      await store.close();
      expect(await stateFiles(dir)).toEqual(['state-00000002.journal', 'state-00000002.snapshot']);
      await writeFile(path.join(dir, 'state-00000004.journal'), '{"format":2,"journal":4}\n');
      await expect(store.open()).rejects.toThrow(`data dir ${dir} lacks state-00000003.journal (it has state-00000002.snapshot): its state-* files are incomplete — restore all of them from one backup`);
      await rm(path.join(dir, 'state-00000004.journal'));
      await rm(path.join(dir, 'state-00000002.journal'));
      await expect(store.open()).rejects.toThrow(/lacks state-00000002\.journal/);
    });

    it('refuses a snapshot cut short', async () => {
      await written();
      store = new FileStore({ dir });
      await store.open();
      await store.compact();
      await store.close();
      const file = path.join(dir, 'state-00000002.snapshot');
      const text = await readFile(file, 'utf8');
      await writeFile(file, text.slice(0, text.lastIndexOf('{"end"')));
      await expect(store.open()).rejects.toThrow(corrupt(file, /has no end line: it is cut short/));
    });
  });

  describe('compaction', () => {
    it('starts once the journal outgrows the state, keeps everything, and leaves a smaller journal', async () => {
      const { logger, lines } = capturedLogger();
      store = new FileStore({ dir, logger, compactBytes: 16 * 1024, compactRatio: 2 });
      await store.open();
      for (let i = 0; i < 10; i++) await store.create('deployment', (id) => deploymentRecord(id, `d${i}`), { unique: [{ index: 'deployment-name', key: `d${i}` }] });
      await store.create('replica', (id) => replicaRecord(id));
      let journalBytes = 0;
      for (let i = 0; i < 200; i++) {
        const r = (await store.get('replica', 1))!;
        await store.update('replica', 1, r.version, { ...r.value, restarts: i + 1 });
        journalBytes += 400;
      }
      for (let i = 0; i < 30; i++) await store.appendEvent(3, { time: `2026-01-01T00:00:${String(i).padStart(2, '0')}.000Z`, type: 'normal', reason: 'ScaledUp', message: `step ${i}` });
      await store.delete('deployment', 2);
      await createToken(store, 'kept');
      await waitFor(async () => lines.some((l) => l.msg === 'file store: journal compacted into a snapshot') && (await stateFiles(dir)).length === 2, 10_000, 'a compaction');
      const files = await stateFiles(dir);
      expect(files).toEqual([expect.stringMatching(/^state-\d{8}\.journal$/), expect.stringMatching(/^state-\d{8}\.snapshot$/)]);
      expect(files[0]!.slice(0, 14)).toBe(files[1]!.slice(0, 14));
      expect((await stat(path.join(dir, files[0]!))).size).toBeLessThan(journalBytes / 2);
      const all = await everything(store, [1, 2, 3]);
      await store.close();

      store = new FileStore({ dir });
      await store.open();
      expect(await everything(store, [1, 2, 3])).toEqual(all);
      expect((await store.get('replica', 1))?.value.restarts).toBe(200);
      expect(await store.lookup('deployment-name', 'd0')).toEqual({ kind: 'deployment', id: 1 });
      expect(await store.lookup('deployment-name', 'd1')).toBeUndefined(); // deployment 2, deleted
      expect(await store.lookup('deployment-name', 'd9')).toEqual({ kind: 'deployment', id: 10 });
      expect(await store.listEvents(2)).toEqual([]);
      expect((await store.listEvents(3)).map((e) => e.message).slice(-1)).toEqual(['step 29']);
      // Ids go on from where they were, never reused.
      expect((await store.create('deployment', (id) => deploymentRecord(id, 'new'))).value.id).toBe(11);
    });

    it('goes on taking writes while the snapshot is written, and loses none of them', async () => {
      store = new FileStore({ dir, compactBytes: 1 });
      await store.open();
      for (let i = 0; i < 200; i++) await store.create('deployment', (id) => deploymentRecord(id, `d${i}`));
      const during = Promise.all(Array.from({ length: 100 }, (_, i) => createToken(store, `t${i}`)));
      await Promise.all([store.compact(), during]);
      const all = await everything(store);
      await store.close();
      store = new FileStore({ dir });
      await store.open();
      expect(await everything(store)).toEqual(all);
      expect(await store.list('token')).toHaveLength(100);
    });

    it('on request, leaves no replaced or deleted value anywhere in the state files', async () => {
      await store.open();
      await createToken(store, 'plain-secret-one', 'hash-1');
      await store.update('token', 1, 1, tokenRecord(1, 'sealed', 'hash-1'));
      await createToken(store, 'plain-secret-two', 'hash-2');
      await store.delete('token', 2);
      const text = async () => (await Promise.all((await stateFiles(dir)).map((f) => readFile(path.join(dir, f), 'utf8')))).join('');
      expect(await text()).toContain('plain-secret-one');
      await store.compact();
      expect(await text()).not.toContain('plain-secret');
      expect(await text()).toContain('sealed');
    });
  });

  describe('upgrading a data dir of the first format (state.json)', () => {
    type V1 = { next: Record<string, number>; records: Record<string, Record<string, { version: number; value: unknown }>>; indexes: Record<string, Record<string, unknown>>; events: Record<string, unknown[]> };
    let fixture: V1;

    beforeEach(async () => {
      fixture = JSON.parse(await readFile(FIXTURE_V1, 'utf8')) as V1;
      await copyFile(FIXTURE_V1, path.join(dir, 'state.json'));
    });

    /** Every record, index entry, event list and next id of the fixture, read through `s`. */
    async function expectFixture(s: Store): Promise<void> {
      for (const kind of KINDS) {
        const want = Object.entries(fixture.records[kind] ?? {}).map(([, e]) => ({ value: e.value, version: e.version }));
        expect(await s.list(kind), kind).toEqual(want);
      }
      for (const [index, keys] of Object.entries(fixture.indexes)) for (const [key, ref] of Object.entries(keys)) expect(await s.lookup(index, key)).toEqual(ref);
      for (const id of [1, 2, 3]) expect(await s.listEvents(id)).toEqual(fixture.events[String(id)] ?? []);
      expect(await s.lookup('token-hash', 'hash-beta')).toBeUndefined(); // deleted before the upgrade
      expect((await s.listEvents(1)).map((e) => e.count)).toEqual([1, 2]);
    }

    it('opens with every record, index, event and id counter, says so once, and is in the new format from then on', async () => {
      const { logger, lines } = capturedLogger();
      store = new FileStore({ dir, logger });
      await store.open();
      await expectFixture(store);
      expect(lines.map((l) => l.msg)).toEqual([
        `file store upgraded in place: state.json (format 1, rewritten whole on every write) is now ${SNAPSHOT_1} and the journal ${JOURNAL_1}; the old file is kept as state.json.migrated and no longer read`,
      ]);
      expect(await stateFiles(dir)).toEqual(['state-00000001.journal', 'state-00000001.snapshot', 'state.json.migrated']);
      expect(await readFile(path.join(dir, 'state.json.migrated'), 'utf8')).toBe(await readFile(FIXTURE_V1, 'utf8'));
      await store.close();

      const second = capturedLogger();
      store = new FileStore({ dir, logger: second.logger });
      await store.open();
      await expectFixture(store);
      expect(second.lines).toEqual([]);
      for (const kind of Object.keys(fixture.next) as Kind[]) {
        const made = await store.create(kind, (id) => ({ ...tokenRecord(id, `new-${kind}`) }) as never);
        expect(made.value.id, kind).toBe(fixture.next[kind]);
      }
    });

    it.each([
      ['its snapshot was written', [SNAPSHOT_1]],
      ['its journal was made too', [SNAPSHOT_1, JOURNAL_1]],
    ])('finishes an upgrade that stopped after %s', async (_when, keep) => {
      const scratch = path.join(dir, 'scratch');
      await mkdir(scratch);
      await copyFile(FIXTURE_V1, path.join(scratch, 'state.json'));
      const upgrader = new FileStore({ dir: scratch });
      await upgrader.open();
      await upgrader.close();
      for (const f of keep) await copyFile(path.join(scratch, f), path.join(dir, f));
      const { logger, lines } = capturedLogger();
      store = new FileStore({ dir, logger });
      await store.open();
      await expectFixture(store);
      expect(await stateFiles(dir)).toEqual(['state-00000001.journal', 'state-00000001.snapshot', 'state.json.migrated']);
      expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/^file store upgraded in place: /)]);
    });

    it('refuses to choose between state.json and state-* files that have changes of their own', async () => {
      await rm(path.join(dir, 'state.json'));
      await store.open();
      await createToken(store, 'made-after-the-upgrade');
      await store.close();
      await copyFile(FIXTURE_V1, path.join(dir, 'state.json'));
      await expect(store.open()).rejects.toThrow(
        `data dir ${dir} holds both state.json (the format of releases before the journal) and state-* files: which is current cannot be told; move state.json away to open the state-* files, or move them away to upgrade from state.json`,
      );
      expect(await readFile(path.join(dir, 'state.json'), 'utf8')).toBe(await readFile(FIXTURE_V1, 'utf8'));
    });

    it.each([
      ['truncated JSON', '{"format": 1, "next": {'],
      ['an empty file', ''],
      ['a wrong format version', '{"format": 99, "next": {}, "records": {}, "indexes": {}}'],
      ['a wrong shape', '{"format": 1, "next": {"token": "two"}, "records": {}, "indexes": {}}'],
      ['an unknown kind', '{"format": 1, "next": {}, "records": {"widget": {}}, "indexes": {}}'],
      ['an index pointing nowhere', '{"format": 1, "next": {"token": 2}, "records": {}, "indexes": {"token-hash": {"h": {"kind": "token", "id": 1}}}}'],
      ['events of a deployment that does not exist', '{"format": 1, "next": {}, "records": {}, "indexes": {}, "events": {"3": []}}'],
      ['an event without a count', '{"format": 1, "next": {}, "records": {}, "indexes": {}, "events": {"3": [{"time": "t", "first_time": "t", "type": "normal", "reason": "R", "message": "m"}]}}'],
    ])('refuses a corrupt state.json (%s), leaves it untouched and writes nothing', async (_what, text) => {
      const statePath = path.join(dir, 'state.json');
      await writeFile(statePath, text);
      const err = await store.open().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect((err as Error).message).toMatch(
        new RegExp(`^state file ${escapeRegExp(statePath)} is corrupt \\(.+\\); it was left untouched — restore it from a backup or move it away to start empty$`),
      );
      expect(await readFile(statePath, 'utf8')).toBe(text);
      expect(await readdir(dir)).toEqual(['state.json']);
    });

    it('upgrades a state.json written before events existed: no deployment has any yet', async () => {
      await writeFile(path.join(dir, 'state.json'), '{"format": 1, "next": {"token": 2}, "records": {"token": {"1": {"version": 1, "unique": [], "value": {"id": 1}}}}, "indexes": {}}');
      await store.open();
      expect(await store.listEvents(1)).toEqual([]);
      expect(await store.list('token')).toHaveLength(1);
    });
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
