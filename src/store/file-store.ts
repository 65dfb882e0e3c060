// Owns the embedded default store: all state in memory, each change written as one line
// appended to a journal in the data directory and made durable (fdatasync) before it is
// acknowledged, the journal compacted into a snapshot once it outgrows the state (files:
// journal.ts; open, recovery and the upgrade from state.json: file-open.ts). A LOCK file
// keeps two processes from one data dir.
//
// Writes are planned one at a time against the state plus the changes still on their way to
// disk (the draft), so ids, versions and unique keys stay exact; the lines of every write that
// arrives while one fdatasync runs go to disk together in the next (group commit). Readers see
// only what is durable: a change reaches the state, the change feed and its caller once its
// line is on disk. A write that cannot be made durable is refused, the journal cut back to
// where it was, and the writes planned on top of it refused with it.

import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { systemClock, type Clock } from '../core/clock.js';
import type { DeploymentEvent, Kind, NewDeploymentEvent, RecordMap } from '../domain/records.js';
import { addEvent } from './events.js';
import { acquireLock, releaseLock } from './file-lock.js';
import { openState } from './file-open.js';
import {
  deepFreeze,
  deleteRecord,
  emptyState,
  entryLine,
  putLine,
  putRecord,
  setEvents,
  stored,
  type IndexRef,
  type State,
  type Stored,
} from './file-state.js';
import { JournalBrokenError, JournalFile, listGenerations, journalName, snapshotName, writeSnapshot } from './journal.js';
import {
  ConflictError,
  FencedError,
  NotFoundError,
  StoreError,
  VersionConflictError,
  type ChangeEvent,
  type ChangeListener,
  type CreateOptions,
  type Fence,
  type Store,
  type UniqueKey,
  type Versioned,
  type WriteOptions,
} from './store.js';

export interface FileStoreOptions {
  dir: string;
  /** Leases and reports expire on this clock, so tests step it rather than wait them out. */
  clock?: Clock;
  /** Where the upgrade, a torn last write and compactions are said; silent without one. */
  logger?: Logger;
  /**
   * The journal is compacted into a snapshot once it holds at least this many bytes and at
   * least `compactRatio` times the last snapshot's size: replaying it at open then costs at
   * most a few times reading the state, and compactions stay rare while the state is small.
   */
  compactBytes?: number;
  compactRatio?: number;
}

const COMPACT_BYTES = 4 * 1024 * 1024;
const COMPACT_RATIO = 2;

/** Changes planned but not yet durable, by key; null where the change removes it. Readers never see them. */
interface Draft {
  records: Map<string, Stored | null>;
  indexes: Map<string, IndexRef | null>;
  next: Map<Kind, number>;
  events: Map<number, readonly DeploymentEvent[] | null>;
}

/** A planned write: its journal line, what it does to the state once durable, what its caller gets. */
interface Planned<T> {
  line?: string;
  commit?: () => void;
  result: T;
  event?: ChangeEvent;
}

interface Queued extends Planned<unknown> {
  line: string;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export class FileStore implements Store {
  private readonly dir: string;
  private readonly lockPath: string;
  private readonly logger: Logger;
  private readonly compactBytes: number;
  private readonly compactRatio: number;
  private state: State = emptyState();
  private draft: Draft = emptyDraft();
  private journal: JournalFile | null = null;
  private opened = false;
  private closing = false;
  /** Set when the journal's end is unknown (a failed write could not be cut back): no more writes until reopened. */
  private broken: StoreError | null = null;
  private readonly queue: Queued[] = [];
  private flushing: Promise<void> | null = null;
  /** A snapshot being written; resolves to the error it met, if any. */
  private compacting: Promise<Error | null> | null = null;
  private readonly compactRequests: Array<{ resolve: () => void; reject: (err: unknown) => void }> = [];
  /** The journal size at which the next compaction starts. */
  private compactAt = 0;
  private readonly listeners = new Set<ChangeListener>();
  /** One process owns the data dir (the lock), so leases only need to exist in memory. */
  private readonly leases = new Map<string, { holder: string; expires: number; epoch: number }>();
  /** Reports live in memory: a file store has one process, which is every publisher. */
  private readonly reports = new Map<string, Map<string, { body: string; expires: number }>>();
  private readonly clock: Clock;

  constructor(options: FileStoreOptions) {
    this.dir = path.resolve(options.dir);
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? pino({ level: 'silent' });
    this.compactBytes = options.compactBytes ?? COMPACT_BYTES;
    this.compactRatio = options.compactRatio ?? COMPACT_RATIO;
    this.lockPath = path.join(this.dir, 'LOCK');
  }

  async open(): Promise<void> {
    if (this.opened) return;
    await mkdir(this.dir, { recursive: true, mode: 0o700 }).catch((err: unknown) => {
      throw new StoreError(`cannot create data dir ${this.dir}: ${reason(err)}`);
    });
    await acquireLock(this.dir, this.lockPath);
    try {
      const opened = await openState(this.dir, this.logger);
      this.state = opened.state;
      this.journal = opened.journal;
      this.setCompactAt(opened.snapshotSize);
    } catch (err) {
      await releaseLock(this.lockPath);
      throw err instanceof StoreError ? err : new StoreError(`cannot open the state in ${this.dir}: ${reason(err)}`);
    }
    this.draft = emptyDraft();
    this.broken = null;
    this.closing = false;
    this.opened = true;
  }

  /** Waits for the writes already made (and a compaction under way), then lets the data dir go. */
  async close(): Promise<void> {
    if (!this.opened || this.closing) return;
    this.closing = true;
    await this.flushing;
    await this.compacting;
    await this.journal?.close().catch(() => undefined);
    this.journal = null;
    this.opened = false;
    await releaseLock(this.lockPath);
  }

  async ping(): Promise<void> {
    this.assertOpen();
    if (this.broken) throw this.broken;
  }

  async holdLease(name: string, holder: string, ttlMs: number): Promise<number> {
    this.assertOpen();
    const now = this.clock.now();
    const current = this.leases.get(name);
    const live = current !== undefined && current.expires > now;
    if (live && current.holder !== holder) return 0;
    const epoch = live ? current.epoch : (current?.epoch ?? 0) + 1;
    this.leases.set(name, { holder, expires: now + ttlMs, epoch });
    return epoch;
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    // Expired rather than forgotten: its epoch carries on to the next holder.
    const current = this.leases.get(name);
    if (current?.holder === holder) current.expires = 0;
  }

  /** Inside a write's plan (plans run one at a time), so no lease change can slip between check and write. */
  private checkFence(fence: Fence | undefined): void {
    if (!fence) return;
    const lease = this.leases.get(fence.lease);
    if (lease?.holder !== fence.holder || lease.expires <= this.clock.now()) throw new FencedError(fence);
  }

  async publishReport(topic: string, publisher: string, body: string, ttlMs: number): Promise<void> {
    this.assertOpen();
    let byPublisher = this.reports.get(topic);
    if (!byPublisher) this.reports.set(topic, (byPublisher = new Map()));
    byPublisher.set(publisher, { body, expires: this.clock.now() + ttlMs });
  }

  async readReports(topic: string): Promise<Map<string, string>> {
    this.assertOpen();
    const now = this.clock.now();
    const out = new Map<string, string>();
    const byPublisher = this.reports.get(topic);
    for (const [publisher, r] of byPublisher ?? []) {
      if (r.expires > now) out.set(publisher, r.body);
      else byPublisher!.delete(publisher);
    }
    return out;
  }

  // ---- reads: the durable state, values frozen and shared --------------------------------

  async get<K extends Kind>(kind: K, id: number): Promise<Versioned<RecordMap[K]> | undefined> {
    this.assertOpen();
    return this.state.records.get(kind)?.get(id)?.record as Versioned<RecordMap[K]> | undefined;
  }

  async list<K extends Kind>(kind: K): Promise<Versioned<RecordMap[K]>[]> {
    this.assertOpen();
    const out: Versioned<RecordMap[K]>[] = [];
    for (const s of this.state.records.get(kind)?.values() ?? []) out.push(s.record as Versioned<RecordMap[K]>);
    return out;
  }

  async lookup(index: string, key: string): Promise<{ kind: Kind; id: number } | undefined> {
    this.assertOpen();
    const ref = this.state.indexes.get(index)?.get(key);
    return ref && { kind: ref.kind, id: ref.id };
  }

  async listEvents(deploymentId: number): Promise<DeploymentEvent[]> {
    this.assertOpen();
    return (this.state.events.get(deploymentId) ?? []) as DeploymentEvent[];
  }

  // ---- writes -----------------------------------------------------------------------------

  create<K extends Kind>(kind: K, build: (id: number) => RecordMap[K], options: CreateOptions = {}): Promise<Versioned<RecordMap[K]>> {
    return this.write(() => {
      this.checkFence(options.fence);
      const id = this.draft.next.get(kind) ?? this.state.next.get(kind) ?? 1;
      const unique = (options.unique ?? []).map(({ index, key }) => ({ index, key }));
      for (const u of unique) if (this.holder(u)) throw new ConflictError(u.index, u.key);
      const json = JSON.stringify(build(id));
      const s = stored(1, unique, JSON.parse(json));
      const ref: IndexRef = { kind, id };
      this.draft.records.set(recordKey(kind, id), s);
      for (const u of unique) this.draft.indexes.set(indexKey(u), ref);
      this.draft.next.set(kind, id + 1);
      return {
        line: putLine(kind, id, 1, unique, json),
        commit: () => {
          putRecord(this.state, kind, id, s);
          undraft(this.draft.records, recordKey(kind, id), s);
          for (const u of unique) undraft(this.draft.indexes, indexKey(u), ref);
          undraft(this.draft.next, kind, id + 1);
        },
        result: s.record as Versioned<RecordMap[K]>,
        event: { kind, id, op: 'put', version: 1 },
      };
    });
  }

  update<K extends Kind>(kind: K, id: number, expectedVersion: number, value: RecordMap[K], options: WriteOptions = {}): Promise<Versioned<RecordMap[K]>> {
    return this.write(() => {
      this.checkFence(options.fence);
      const current = this.current(kind, id);
      if (!current) throw new NotFoundError(kind, id);
      if (current.record.version !== expectedVersion) throw new VersionConflictError(kind, id);
      const version = expectedVersion + 1;
      const json = JSON.stringify(value);
      const s = stored(version, current.unique, JSON.parse(json));
      this.draft.records.set(recordKey(kind, id), s);
      return {
        line: putLine(kind, id, version, current.unique, json),
        commit: () => {
          putRecord(this.state, kind, id, s);
          undraft(this.draft.records, recordKey(kind, id), s);
        },
        result: s.record as Versioned<RecordMap[K]>,
        event: { kind, id, op: 'put', version },
      };
    });
  }

  delete(kind: Kind, id: number, expectedVersion?: number, options: WriteOptions = {}): Promise<boolean> {
    return this.write((): Planned<boolean> => {
      this.checkFence(options.fence);
      const current = this.current(kind, id);
      if (!current) return { result: false };
      if (expectedVersion !== undefined && current.record.version !== expectedVersion) throw new VersionConflictError(kind, id);
      const released = current.unique.filter((u) => this.holder(u)?.id === id && this.holder(u)?.kind === kind);
      this.draft.records.set(recordKey(kind, id), null);
      for (const u of released) this.draft.indexes.set(indexKey(u), null);
      if (kind === 'deployment') this.draft.events.set(id, null);
      return {
        line: entryLine({ op: 'delete', kind, id }),
        commit: () => {
          deleteRecord(this.state, kind, id);
          undraft(this.draft.records, recordKey(kind, id), null);
          for (const u of released) undraft(this.draft.indexes, indexKey(u), null);
          if (kind === 'deployment') undraft(this.draft.events, id, null);
        },
        result: true,
        event: { kind, id, op: 'delete', version: current.record.version },
      };
    });
  }

  appendEvent(deploymentId: number, event: NewDeploymentEvent, options: WriteOptions = {}): Promise<boolean> {
    return this.write((): Planned<boolean> => {
      this.checkFence(options.fence);
      if (!this.current('deployment', deploymentId)) return { result: false };
      const drafted = this.draft.events.get(deploymentId);
      const before = drafted !== undefined ? (drafted ?? []) : (this.state.events.get(deploymentId) ?? []);
      const added: NewDeploymentEvent = { time: event.time, type: event.type, reason: event.reason, message: event.message };
      const events = deepFreeze(addEvent(before, added));
      this.draft.events.set(deploymentId, events);
      return {
        line: entryLine({ op: 'event', deployment: deploymentId, event: added }),
        commit: () => {
          setEvents(this.state, deploymentId, events);
          undraft(this.draft.events, deploymentId, events);
        },
        result: true,
      };
    });
  }

  watch(listener: ChangeListener): () => void {
    // Wrapped so that subscribing the same function twice yields two independent subscriptions.
    const wrapped: ChangeListener = (event) => listener(event);
    this.listeners.add(wrapped);
    return () => {
      this.listeners.delete(wrapped);
    };
  }

  onResync(): () => void {
    // The feed is in-process: it is never cut, so there is never anything to catch up on.
    return () => undefined;
  }

  /** The record as the next write sees it: drafted changes first, then the durable state. */
  private current(kind: Kind, id: number): Stored | undefined {
    const drafted = this.draft.records.get(recordKey(kind, id));
    return drafted !== undefined ? (drafted ?? undefined) : this.state.records.get(kind)?.get(id);
  }

  private holder(u: UniqueKey): IndexRef | undefined {
    const drafted = this.draft.indexes.get(indexKey(u));
    return drafted !== undefined ? (drafted ?? undefined) : this.state.indexes.get(u.index)?.get(u.key);
  }

  /**
   * Plans the write now (synchronously: plans never interleave) and queues its line; resolves
   * once the line is durable and the change is in the state. A plan with no line (nothing to
   * change) resolves at once.
   */
  private write<T>(plan: () => Planned<T>): Promise<T> {
    let planned: Planned<T>;
    try {
      this.assertOpen();
      if (this.closing) throw new StoreError(`file store ${this.dir} is closing`);
      if (this.broken) throw this.broken;
      planned = plan();
    } catch (err) {
      return Promise.reject(err);
    }
    const { line } = planned;
    if (line === undefined) return Promise.resolve(planned.result);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ ...planned, line, resolve: resolve as (value: unknown) => void, reject });
      this.flushing ??= this.flush();
    });
  }

  /**
   * Writes the queued lines, a batch per fdatasync, until none is left, and compacts between
   * batches when due or asked. It lets go (clears `flushing`) in the same step as it finds
   * nothing left to do, so work queued just after never waits for a flush that has ended.
   */
  private async flush(): Promise<void> {
    // A microtask later, so that the writes made in the same turn share the first fdatasync.
    await Promise.resolve();
    for (;;) {
      if (this.queue.length > 0) await this.writeBatch(this.queue.splice(0));
      const asked = this.compactRequests.splice(0);
      const journal = this.journal!;
      if (asked.length > 0) {
        // A compaction under way may have begun before the asker's writes: a new one follows it.
        await this.compacting;
        const failed = this.closing ? new StoreError(`file store ${this.dir} is closing`) : await this.startCompaction(journal);
        void (this.compacting ?? Promise.resolve(failed)).then((err) => {
          for (const a of asked) (err ? a.reject(err) : a.resolve());
        });
      } else if (journal.size >= this.compactAt && !this.compacting && !this.closing) {
        await this.startCompaction(journal);
      }
      if (this.queue.length === 0 && this.compactRequests.length === 0) {
        this.flushing = null;
        return;
      }
    }
  }

  private async writeBatch(batch: Queued[]): Promise<void> {
    const journal = this.journal!;
    try {
      await journal.append(batch.map((q) => q.line).join(''));
    } catch (err) {
      this.refuse(batch, journal, err);
      return;
    }
    for (const q of batch) q.commit?.();
    for (const q of batch) {
      if (q.event) this.emit(q.event);
      q.resolve(q.result);
    }
  }

  /** The batch failed: it and every write planned since (on top of it) are refused, the draft dropped. */
  private refuse(batch: Queued[], journal: JournalFile, err: unknown): void {
    const later = this.queue.splice(0);
    this.draft = emptyDraft();
    const error = new StoreError(`cannot write the journal ${journal.file}: ${reason(err)}; the change was not applied`);
    if (err instanceof JournalBrokenError) {
      this.broken = new StoreError(`the journal ${journal.file} cannot be written (${reason(err)}); no change is accepted until the service restarts`);
      this.logger.error({ err, file: journal.file }, 'file store: the journal cannot be written or cut back; refusing every write until restarted');
    }
    for (const q of batch) q.reject(error);
    for (const q of later) q.reject(new StoreError(`an earlier write to ${journal.file} failed (${reason(err)}); this change was not applied`));
  }

  // ---- compaction -------------------------------------------------------------------------

  /**
   * Compacts now and resolves once done: the snapshot holds the state as it stands, and no
   * journal or snapshot with replaced or deleted values is left — what a caller that has just
   * overwritten something that must not stay on disk (a value kept in plain text by an older
   * release) asks for.
   */
  compact(): Promise<void> {
    try {
      this.assertOpen();
      if (this.closing) throw new StoreError(`file store ${this.dir} is closing`);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<void>((resolve, reject) => {
      this.compactRequests.push({ resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  private setCompactAt(snapshotSize: number): void {
    this.compactAt = Math.max(this.compactBytes, this.compactRatio * snapshotSize);
  }

  /**
   * Between two batches: the next writes go to a new journal, and a snapshot of the state as
   * it stands now — when that journal begins — is written in the background (`compacting`,
   * resolving to the error it met, if any). Once it is durable, the older files go. Returns
   * the error when not even the new journal could be made.
   */
  private async startCompaction(old: JournalFile): Promise<Error | null> {
    const gen = old.gen + 1;
    let next: JournalFile;
    try {
      next = await JournalFile.create(this.dir, gen);
    } catch (err) {
      this.compactAt = old.size + this.compactBytes;
      this.logger.warn({ err, file: journalName(gen) }, 'file store: cannot start a new journal to compact into; the journal keeps growing until the next try');
      return new StoreError(`cannot compact the journal ${old.file}: ${reason(err)}`);
    }
    this.journal = next;
    await old.close().catch(() => undefined);
    // Stored values are never changed in place: copies of the maps are the state at this moment.
    const source = {
      next: new Map(this.state.next),
      records: new Map([...this.state.records].map(([kind, recs]) => [kind, new Map(recs)])),
      events: new Map(this.state.events),
    };
    this.compactAt = Number.POSITIVE_INFINITY;
    const started = this.clock.now();
    this.compacting = writeSnapshot(this.dir, gen, source)
      .then(async (size): Promise<Error | null> => {
        const { snapshots, journals } = await listGenerations(this.dir);
        for (const g of snapshots) if (g < gen) await removeFile(this.dir, snapshotName(g));
        for (const g of journals) if (g < gen) await removeFile(this.dir, journalName(g));
        this.setCompactAt(size);
        this.logger.info({ snapshot: snapshotName(gen), bytes: size, journal_bytes: old.size, ms: this.clock.now() - started }, 'file store: journal compacted into a snapshot');
        return null;
      })
      .catch((err: unknown) => {
        this.compactAt = (this.journal?.size ?? 0) + this.compactBytes;
        this.logger.warn({ err, snapshot: snapshotName(gen) }, 'file store: compaction failed; the journals stay and are replayed at open until the next compaction');
        return new StoreError(`cannot compact the journal ${old.file}: ${reason(err)}`);
      })
      .finally(() => (this.compacting = null));
    return null;
  }

  private emit(event: ChangeEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener({ ...event });
      } catch (err) {
        // The change is already committed; a broken listener must not turn it into a failure.
        process.emitWarning(`store change listener threw: ${reason(err)}`);
      }
    }
  }

  private assertOpen(): void {
    if (!this.opened) throw new StoreError(`file store ${this.dir} is not open`);
  }
}

function emptyDraft(): Draft {
  return { records: new Map(), indexes: new Map(), next: new Map(), events: new Map() };
}

function recordKey(kind: Kind, id: number): string {
  return `${kind}/${id}`;
}

function indexKey(u: UniqueKey): string {
  return `${u.index}\n${u.key}`;
}

/**
 * A committed change leaves the draft unless a later write drafted the same key since: each
 * write drafts objects of its own (or null, or a next id no other write drafts), so identity
 * tells them apart.
 */
function undraft<K, V>(map: Map<K, V>, key: K, value: V): void {
  if (map.get(key) === value) map.delete(key);
}

async function removeFile(dir: string, name: string): Promise<void> {
  await rm(path.join(dir, name), { force: true });
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
