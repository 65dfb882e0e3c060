// The file store killed with SIGKILL at random points: a child process (the compiled store,
// as `infergate serve` runs it) makes creates, updates, deletes and events from four
// writers at once — so batches share an fdatasync — and a journal small enough to be
// compacted several times a round, and says each write it got acknowledged. It is killed
// after a random number of acknowledgements, wherever it is: mid-batch, mid-fdatasync,
// mid-snapshot. Reopened, the store has every acknowledged write, its unique keys and ids
// never reused; a torn line appended to the journal afterwards is ignored.

import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { FileStore } from '../src/store/file-store.js';
import { killChildren } from './helpers/child-process.js';
import { ROOT } from './helpers/dist-build.js';
import { waitFor } from './helpers/wait.js';

const STORE_MODULE = pathToFileURL(path.join(ROOT, 'dist/store/file-store.js')).href;

/** The child: writes until killed, one stdout line per acknowledged write (and one before each delete). */
const WRITER = `
import { FileStore } from ${JSON.stringify(STORE_MODULE)};
const round = process.env.ROUND;
const store = new FileStore({ dir: process.env.DIR, compactBytes: 32 * 1024 });
await store.open();
const say = (line) => process.stdout.write(line + '\\n');
const at = '2026-01-01T00:00:00.000Z';
const d = await store.create('deployment', (id) => ({ id, name: 'crash-' + round, status: 'pending', revisions: [] }), { unique: [{ index: 'deployment-name', key: 'crash-' + round }] });
say('deployment ' + d.value.id);
let n = 0;
async function writer(w) {
  for (;;) {
    const i = n++;
    const name = 'r' + round + '-' + i;
    const t = await store.create('token', (id) => ({ id, name, hash: 'h-' + name, created_at: at }), { unique: [{ index: 'token-hash', key: 'h-' + name }] });
    say('create ' + t.value.id + ' ' + name);
    if (i % 3 === 0) {
      const u = await store.update('token', t.value.id, 1, { ...t.value, name: name + '-updated' });
      say('update ' + t.value.id + ' ' + u.version);
    }
    if (i % 5 === 0) {
      say('deleting ' + t.value.id);
      await store.delete('token', t.value.id);
      say('delete ' + t.value.id);
    }
    if (i < 60) {
      await store.appendEvent(d.value.id, { time: at, type: 'normal', reason: 'Written', message: name });
      say('event ' + d.value.id + ' ' + name);
    }
  }
}
say('writing');
await Promise.all([0, 1, 2, 3].map(writer));
`;

const children: ChildProcess[] = [];
let root: string | undefined;

afterAll(async () => {
  await killChildren(children);
  if (root) await rm(root, { recursive: true, force: true });
});

interface Acked {
  created: Map<number, string>;
  updated: Map<number, number>;
  deleting: Set<number>;
  deleted: Set<number>;
  events: Map<number, string[]>;
}

/** Runs the writer until it has `acks` acknowledgements, SIGKILLs it there, and returns what it said. */
async function killedAfter(dir: string, round: number, acks: number): Promise<string[]> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', WRITER], { env: { ...process.env, DIR: dir, ROUND: String(round) }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`the writer exited (${child.exitCode}): ${err}`);
      return out.split('\n').length > acks;
    },
    30_000,
    `${acks} acknowledged writes`,
    1,
  );
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  // Only whole lines: one cut by the kill was never fully said.
  return out.split('\n').slice(0, -1);
}

function record(lines: string[], acked: Acked): void {
  for (const line of lines) {
    const [what, a, b] = line.split(' ');
    const id = Number(a);
    if (what === 'create') acked.created.set(id, b!);
    else if (what === 'update') acked.updated.set(id, Number(b));
    else if (what === 'deleting') acked.deleting.add(id);
    else if (what === 'delete') acked.deleted.add(id);
    else if (what === 'event') acked.events.set(id, [...(acked.events.get(id) ?? []), b!]);
  }
}

/** Every acknowledged write is in the reopened store. */
async function expectAcknowledged(store: FileStore, acked: Acked): Promise<void> {
  for (const [id, name] of acked.created) {
    const found = await store.get('token', id);
    if (acked.deleted.has(id)) {
      expect(found, `token ${id} was deleted`).toBeUndefined();
      expect(await store.lookup('token-hash', `h-${name}`)).toBeUndefined();
      continue;
    }
    // A delete under way when the kill came may or may not have landed; nothing else may be lost.
    if (found === undefined && acked.deleting.has(id)) continue;
    expect(found, `token ${id} (${name}) was acknowledged`).toBeDefined();
    expect(found!.value.name.startsWith(name)).toBe(true);
    expect(found!.version).toBeGreaterThanOrEqual(acked.updated.get(id) ?? 1);
    expect(await store.lookup('token-hash', `h-${name}`)).toEqual({ kind: 'token', id });
  }
  for (const [deployment, messages] of acked.events) {
    const kept = new Set((await store.listEvents(deployment)).map((e) => e.message));
    for (const m of messages) expect(kept.has(m), `event ${m} of deployment ${deployment}`).toBe(true);
  }
}

describe('the file store killed with SIGKILL while it writes', () => {
  it('has every acknowledged write after each kill, ids never reused, and ignores a torn last line', async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-store-crash-'));
    const dir = path.join(root, 'data');
    const acked: Acked = { created: new Map(), updated: new Map(), deleting: new Set(), deleted: new Set(), events: new Map() };
    const ids: number[] = [];
    let compactions = 0;
    for (let round = 1; round <= 8; round++) {
      const lines = await killedAfter(dir, round, 20 + Math.floor(Math.random() * 400));
      for (const line of lines) if (line.startsWith('create ')) ids.push(Number(line.split(' ')[1]));
      record(lines, acked);
      if ((await readdir(dir)).some((f) => f.endsWith('.snapshot'))) compactions++;
      const store = new FileStore({ dir });
      await store.open();
      await expectAcknowledged(store, acked);
      await store.close();
    }
    expect(new Set(ids).size, 'ids handed out twice').toBe(ids.length);
    expect(compactions, 'rounds that had compacted').toBeGreaterThan(0);

    // A write torn by the last crash: the reopened store has everything acknowledged all the same.
    const journal = (await readdir(dir)).filter((f) => f.endsWith('.journal')).sort().at(-1)!;
    await appendFile(path.join(dir, journal), '{"op":"put","kind":"token","id":99999,"version":1,"unique":[],"val');
    const store = new FileStore({ dir });
    await store.open();
    await expectAcknowledged(store, acked);
    expect(await store.get('token', 99999)).toBeUndefined();
    const next = await store.create('token', (id) => ({ id, name: 'after', hash: 'h-after', created_at: 'x' }));
    expect(ids).not.toContain(next.value.id);
    await store.close();
  }, 180_000);
});
