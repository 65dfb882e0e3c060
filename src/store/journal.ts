// Owns the file store's files: the journal — one JSON line per committed change, appended and
// made durable (fdatasync) before the change is acknowledged — and the snapshot that a
// compaction writes so the journal can start again empty. Both come in generations:
// `state-<G>.snapshot` is the whole state as it stood when journal `state-<G>.journal` began,
// and the state now is the newest snapshot followed by every journal from its generation on.
// Reading: a snapshot must be whole (header, lines, trailer with the count); a journal is
// read up to its first line that is not a complete, valid entry, which only the newest
// journal may have — a write torn by a crash, never acknowledged — and which is cut off.
// Databases with a log read theirs the same way (SQLite's WAL, PostgreSQL's WAL replay):
// everything after the first invalid record is the unfinished tail.

import { open, readdir, readFile, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { DeploymentEvent, Kind } from '../domain/records.js';
import { entryLine, isObject, parseEntry, parseNext, putLine, replay, type State, type Stored } from './file-state.js';

export const FORMAT = 2;

const NAME = /^state-(\d+)\.(snapshot|journal)$/;

export function journalName(gen: number): string {
  return `state-${String(gen).padStart(8, '0')}.journal`;
}

export function snapshotName(gen: number): string {
  return `state-${String(gen).padStart(8, '0')}.snapshot`;
}

/** What is in a data directory, by generation (ascending). */
export interface Generations {
  snapshots: number[];
  journals: number[];
  /** Left by a snapshot write that never reached its rename: never state. */
  temps: string[];
}

export async function listGenerations(dir: string): Promise<Generations> {
  const found: Generations = { snapshots: [], journals: [], temps: [] };
  for (const name of await readdir(dir)) {
    const m = NAME.exec(name);
    if (m) (m[2] === 'snapshot' ? found.snapshots : found.journals).push(Number(m[1]));
    else if (/^state-\d+\.snapshot\.tmp$/.test(name)) found.temps.push(name);
  }
  found.snapshots.sort((a, b) => a - b);
  found.journals.sort((a, b) => a - b);
  return found;
}

/** A file that cannot be read as state; the message says which and why. */
export class CorruptFileError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${file} ${reason}`);
  }
}

// ---- reading -------------------------------------------------------------------------------

interface Line {
  start: number;
  /** Past the newline; undefined for a last line without one. */
  end: number | undefined;
  value: unknown;
}

/** The lines of `buf`; a line that does not parse has value `undefined`. */
function* lines(buf: Buffer): Generator<Line> {
  let start = 0;
  while (start < buf.length) {
    const nl = buf.indexOf(0x0a, start);
    const stop = nl === -1 ? buf.length : nl;
    let value: unknown;
    try {
      value = JSON.parse(buf.toString('utf8', start, stop));
    } catch {
      value = undefined;
    }
    yield { start, end: nl === -1 ? undefined : nl + 1, value };
    if (nl === -1) return;
    start = nl + 1;
  }
}

/** Loads snapshot `gen` into `state` (empty); throws CorruptFileError unless it is whole. */
export async function loadSnapshot(dir: string, gen: number, state: State): Promise<number> {
  const file = path.join(dir, snapshotName(gen));
  const buf = await readFile(file);
  let count = -1;
  let ended = false;
  for (const line of lines(buf)) {
    const where = `line ${count + 2}`;
    if (ended) throw new CorruptFileError(file, `has data after its end line (${where})`);
    if (line.end === undefined || line.value === undefined) throw new CorruptFileError(file, `is cut short or garbled at ${where}: not a complete JSON line`);
    const value = line.value;
    if (count === -1) {
      if (!isObject(value) || value.format !== FORMAT || value.snapshot !== gen) throw new CorruptFileError(file, `does not begin with the header of format ${FORMAT}, snapshot ${gen}`);
      try {
        parseNext(value.next, state);
      } catch (err) {
        throw new CorruptFileError(file, `has a bad header: ${reason(err)}`);
      }
    } else if (isObject(value) && 'end' in value) {
      if (value.end !== gen || value.entries !== count) throw new CorruptFileError(file, `ends with ${JSON.stringify(value)}, expected {"end":${gen},"entries":${count}}`);
      ended = true;
      continue;
    } else {
      try {
        replay(state, parseEntry(value));
      } catch (err) {
        throw new CorruptFileError(file, `${where} ${reason(err)}`);
      }
    }
    count++;
  }
  if (!ended) throw new CorruptFileError(file, 'has no end line: it is cut short');
  return buf.length;
}

export interface JournalRead {
  /** Bytes of complete, valid lines (the header included): where the next append goes. */
  size: number;
  entries: number;
  /** Bytes after them: a torn last write, when this is the newest journal. */
  torn: number;
  /** Complete lines among the torn bytes that parsed (a write cut in its middle can leave some). */
  tornLines: number;
}

/**
 * Replays journal `gen` into `state`. Everything from the first line that is not a complete,
 * valid entry on is reported as torn; the caller decides whether a torn tail is allowed.
 * A journal cut inside its header counts as empty.
 */
export async function replayJournal(dir: string, gen: number, state: State): Promise<JournalRead> {
  const file = path.join(dir, journalName(gen));
  const buf = await readFile(file);
  const read: JournalRead = { size: 0, entries: 0, torn: 0, tornLines: 0 };
  let header = true;
  let torn = false;
  for (const line of lines(buf)) {
    if (torn) {
      if (line.value !== undefined && line.end !== undefined) read.tornLines++;
      continue;
    }
    if (line.end === undefined || line.value === undefined) {
      torn = true;
      read.torn = buf.length - line.start;
      continue;
    }
    if (header) {
      const value = line.value;
      if (!isObject(value) || value.format !== FORMAT || value.journal !== gen) throw new CorruptFileError(file, `does not begin with the header of format ${FORMAT}, journal ${gen}`);
      header = false;
    } else {
      let entry;
      try {
        entry = parseEntry(line.value);
      } catch {
        // Valid JSON but not an entry: as unreadable as a cut line.
        torn = true;
        read.torn = buf.length - line.start;
        continue;
      }
      try {
        replay(state, entry);
      } catch (err) {
        throw new CorruptFileError(file, `entry at byte ${line.start} ${reason(err)}`);
      }
      read.entries++;
    }
    read.size = line.end;
  }
  return read;
}

// ---- writing -------------------------------------------------------------------------------

/** The journal being appended to: one writer, positional writes, each made durable before it returns. */
export class JournalFile {
  private constructor(
    readonly gen: number,
    readonly file: string,
    private readonly handle: FileHandle,
    /** Bytes durable in the file: where the next write goes, and what a failed one is cut back to. */
    private length: number,
  ) {}

  get size(): number {
    return this.length;
  }

  /** A new, empty journal (its header only), durable together with its directory entry. */
  static async create(dir: string, gen: number): Promise<JournalFile> {
    const file = path.join(dir, journalName(gen));
    const handle = await open(file, 'wx', 0o600);
    try {
      const journal = new JournalFile(gen, file, handle, 0);
      await journal.append(headerLine(gen));
      await syncDir(dir);
      return journal;
    } catch (err) {
      await handle.close().catch(() => undefined);
      await rm(file, { force: true }).catch(() => undefined);
      throw err;
    }
  }

  /** The journal read at open, its torn tail (if any) cut off and the cut made durable. */
  static async reopen(dir: string, gen: number, size: number): Promise<JournalFile> {
    const file = path.join(dir, journalName(gen));
    const handle = await open(file, 'r+');
    try {
      const journal = new JournalFile(gen, file, handle, size);
      if ((await handle.stat()).size !== size) {
        await handle.truncate(size);
        await handle.datasync();
      }
      // A journal cut inside its header (a crash right after it was made) starts again.
      if (size === 0) await journal.append(headerLine(gen));
      return journal;
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Appends `text` and waits until it is on disk. When that fails, the file is cut back to
   * what it held, so that a later write never follows a half-written one; if even that
   * fails, JournalBrokenError: the file's end is unknown and nothing more may be appended.
   */
  async append(text: string): Promise<void> {
    const buf = Buffer.from(text, 'utf8');
    try {
      let done = 0;
      while (done < buf.length) {
        const { bytesWritten } = await this.handle.write(buf, done, buf.length - done, this.length + done);
        done += bytesWritten;
      }
      await this.handle.datasync();
    } catch (err) {
      try {
        await this.handle.truncate(this.length);
        await this.handle.datasync();
      } catch (cutErr) {
        throw new JournalBrokenError(this.file, err, cutErr);
      }
      throw err;
    }
    this.length += buf.length;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

export class JournalBrokenError extends Error {
  constructor(
    readonly file: string,
    readonly writeError: unknown,
    readonly cutError: unknown,
  ) {
    super(`${reason(writeError)}, and cutting ${file} back after it failed too: ${reason(cutError)}`);
  }
}

function headerLine(gen: number): string {
  return JSON.stringify({ format: FORMAT, journal: gen }) + '\n';
}

/** What a snapshot is made of: the state's maps as they were when its journal began. */
export type SnapshotSource = Pick<State, 'next' | 'records' | 'events'>;

/** Lines are written in chunks of about this much, the event loop free between them. */
const CHUNK_BYTES = 256 * 1024;

/**
 * Writes snapshot `gen` of `source` durably: to a temp file, synced, renamed into place, the
 * directory synced. Returns its size. Values are turned into JSON a chunk at a time, with a
 * write (and so a turn of the event loop) between chunks, so writes and reads go on meanwhile.
 */
export async function writeSnapshot(dir: string, gen: number, source: SnapshotSource): Promise<number> {
  const final = path.join(dir, snapshotName(gen));
  const tmp = `${final}.tmp`;
  const handle = await open(tmp, 'w', 0o600);
  let size = 0;
  try {
    let chunk = JSON.stringify({ format: FORMAT, snapshot: gen, next: Object.fromEntries(source.next) }) + '\n';
    let entries = 0;
    const flush = async () => {
      const buf = Buffer.from(chunk, 'utf8');
      chunk = '';
      let done = 0;
      while (done < buf.length) done += (await handle.write(buf, done, buf.length - done, size + done)).bytesWritten;
      size += buf.length;
    };
    const add = async (line: string) => {
      chunk += line;
      entries++;
      if (chunk.length >= CHUNK_BYTES) await flush();
    };
    for (const [kind, recs] of source.records) for (const [id, s] of recs) await add(recordLine(kind, id, s));
    for (const [deployment, events] of source.events) await add(entryLine({ op: 'events', deployment, events: events as DeploymentEvent[] }));
    chunk += JSON.stringify({ end: gen, entries }) + '\n';
    await flush();
    await handle.datasync();
  } catch (err) {
    await handle.close().catch(() => undefined);
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  await handle.close();
  await rename(tmp, final);
  await syncDir(dir);
  return size;
}

function recordLine(kind: Kind, id: number, s: Stored): string {
  return putLine(kind, id, s.record.version, s.unique, JSON.stringify(s.record.value));
}

/** Makes renames and new files in `dir` durable: without it a crash could bring back the old names. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
