// Owns turning a data directory into the file store's state at open: the newest snapshot and
// the journals after it replayed (a torn last write cut off and said in the log), a fresh
// directory started, or a directory of the first format (one state.json) upgraded in place —
// written as snapshot 1 and an empty journal 1 before state.json is renamed aside, so a crash
// at any step leaves either the old file or the new ones to open from.

import { access, copyFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { checkConsistency, emptyState, type State } from './file-state.js';
import {
  CorruptFileError,
  JournalFile,
  journalName,
  listGenerations,
  loadSnapshot,
  replayJournal,
  snapshotName,
  syncDir,
  writeSnapshot,
  type Generations,
  type JournalRead,
} from './journal.js';
import { parseStateV1, readStateV1, V1_FILE } from './state-file-v1.js';
import { StoreError } from './store.js';

export interface Opened {
  state: State;
  journal: JournalFile;
  /** Bytes of the snapshot the state was loaded from (0 without one): how big a journal may grow before it is compacted. */
  snapshotSize: number;
  /** Entries replayed from journals. */
  entries: number;
}

export async function openState(dir: string, logger: Logger): Promise<Opened> {
  const gens = await listGenerations(dir);
  for (const tmp of gens.temps) await rm(path.join(dir, tmp), { force: true });
  // Left by the first format's interrupted write, whose rename never happened: not state.
  await rm(path.join(dir, `${V1_FILE}.tmp`), { force: true });
  const v1Path = path.join(dir, V1_FILE);
  const v1Text = await readStateV1(v1Path).catch((err: unknown) => {
    throw new StoreError(`cannot read state file ${v1Path}: ${reason(err)}`);
  });
  const present = gens.snapshots.length > 0 || gens.journals.length > 0;
  if (v1Text === undefined) return present ? recover(dir, gens, logger) : { state: emptyState(), journal: await JournalFile.create(dir, 1), snapshotSize: 0, entries: 0 };
  if (!present) return upgrade(dir, v1Text, logger);
  // Snapshot 1 and at most journal 1, empty, beside state.json: an upgrade that stopped
  // before it renamed state.json (snapshot 1 was written from it, and nothing is written to
  // journal 1 before that rename) — it only has to finish.
  if (gens.snapshots.length === 1 && gens.snapshots[0] === 1 && gens.journals.every((g) => g === 1)) {
    if (!gens.journals.includes(1)) await (await JournalFile.create(dir, 1)).close();
    const opened = await recover(dir, await listGenerations(dir), logger);
    if (opened.entries === 0) return retireV1(dir, opened, logger);
    await opened.journal.close();
  }
  throw new StoreError(
    `data dir ${dir} holds both ${V1_FILE} (the format of releases before the journal) and state-* files: which is current cannot be told; move ${V1_FILE} away to open the state-* files, or move them away to upgrade from ${V1_FILE}`,
  );
}

async function recover(dir: string, gens: Generations, logger: Logger): Promise<Opened> {
  // No snapshot yet: the state starts empty and the journals from the first one.
  const base = gens.snapshots.at(-1) ?? 0;
  const first = Math.max(base, 1);
  const journals = gens.journals.filter((g) => g >= first);
  const last = journals.at(-1) ?? first;
  for (let g = first; g <= last; g++) {
    if (!journals.includes(g)) {
      throw new StoreError(
        `data dir ${dir} lacks ${journalName(g)} (${base > 0 ? `it has ${snapshotName(base)}` : `it has ${journalName(last)}`}): its state-* files are incomplete — restore all of them from one backup`,
      );
    }
  }
  const state = emptyState();
  let snapshotSize = 0;
  let entries = 0;
  let read: JournalRead = { size: 0, entries: 0, torn: 0, tornLines: 0 };
  try {
    if (base > 0) snapshotSize = await loadSnapshot(dir, base, state);
    for (const g of journals) {
      const file = path.join(dir, journalName(g));
      read = await replayJournal(dir, g, state);
      entries += read.entries;
      if (read.torn > 0 && g !== last) throw new CorruptFileError(file, `has ${read.torn} unreadable bytes at byte ${read.size}, and a newer journal follows it`);
      if (read.size === 0 && read.tornLines > 0) throw new CorruptFileError(file, 'does not begin with a valid header line');
    }
  } catch (err) {
    if (err instanceof CorruptFileError) throw corrupt(err.message);
    throw new StoreError(`cannot read the state in ${dir}: ${reason(err)}`);
  }
  try {
    checkConsistency(state);
  } catch (err) {
    throw corrupt(`${path.join(dir, journalName(last))}, replayed over the files before it, leaves an inconsistent state: ${reason(err)}`);
  }
  const file = path.join(dir, journalName(last));
  if (read.torn > 0) {
    // Complete lines after an unreadable one are not what a cut append leaves: keep the bytes for a look.
    const kept = read.tornLines > 0 ? await keepCopy(file) : null;
    logger.warn(
      { file, bytes: read.torn, lines_after: read.tornLines, kept },
      `file store: ignored a torn last write (${read.torn} bytes at the end of ${journalName(last)}, never acknowledged)${kept ? `; the journal as it was is kept in ${kept}` : ''}`,
    );
  }
  const journal = await JournalFile.reopen(dir, last, read.size);
  // Files older than the newest snapshot: left by a compaction stopped before it removed them.
  for (const g of gens.snapshots) if (g < base) await rm(path.join(dir, snapshotName(g)), { force: true });
  for (const g of gens.journals) if (g < first) await rm(path.join(dir, journalName(g)), { force: true });
  return { state, journal, snapshotSize, entries };
}

async function upgrade(dir: string, v1Text: string, logger: Logger): Promise<Opened> {
  let state: State;
  try {
    state = parseStateV1(v1Text);
  } catch (err) {
    throw new StoreError(`state file ${path.join(dir, V1_FILE)} is corrupt (${reason(err)}); it was left untouched — restore it from a backup or move it away to start empty`);
  }
  const snapshotSize = await writeSnapshot(dir, 1, state);
  return retireV1(dir, { state, journal: await JournalFile.create(dir, 1), snapshotSize, entries: 0 }, logger);
}

/** The new files are durable: state.json is renamed aside, no longer read, and the upgrade said once. */
async function retireV1(dir: string, opened: Opened, logger: Logger): Promise<Opened> {
  const v1Path = path.join(dir, V1_FILE);
  const aside = await freeName(`${v1Path}.migrated`);
  try {
    await rename(v1Path, aside);
    await syncDir(dir);
  } catch (err) {
    await opened.journal.close();
    throw new StoreError(`cannot rename ${v1Path} to ${aside} after upgrading it: ${reason(err)}`);
  }
  logger.info(
    { dir, from: V1_FILE, to: [snapshotName(1), journalName(1)], kept: aside },
    `file store upgraded in place: ${V1_FILE} (format 1, rewritten whole on every write) is now ${snapshotName(1)} and the journal ${journalName(1)}; the old file is kept as ${path.basename(aside)} and no longer read`,
  );
  return opened;
}

function corrupt(what: string): StoreError {
  return new StoreError(
    `state file ${what}; the state-* files were left untouched — restore them from a backup (all from one), or move them away to start empty`,
  );
}

async function keepCopy(file: string): Promise<string> {
  const kept = await freeName(`${file}.torn`);
  await copyFile(file, kept);
  return kept;
}

/** `wanted`, or `wanted.2`, `wanted.3` … : the first name not taken. */
async function freeName(wanted: string): Promise<string> {
  for (let n = 1; ; n++) {
    const name = n === 1 ? wanted : `${wanted}.${n}`;
    try {
      await access(name);
    } catch {
      return name;
    }
  }
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The state in `dir` as its files hold it, read without the lock and without changing
 * anything: for looking into the data directory of a running service (a torn or unfinished
 * last write is left out). Retried when a compaction removes a file between listing and reading.
 */
export async function readState(dir: string): Promise<State> {
  for (let attempt = 1; ; attempt++) {
    try {
      const gens = await listGenerations(dir);
      const base = gens.snapshots.at(-1) ?? 0;
      const state = emptyState();
      if (base > 0) await loadSnapshot(dir, base, state);
      for (const g of gens.journals) if (g >= Math.max(base, 1)) await replayJournal(dir, g, state);
      return state;
    } catch (err) {
      if (attempt >= 5 || !(err instanceof Error && 'code' in err && err.code === 'ENOENT')) throw err;
    }
  }
}
