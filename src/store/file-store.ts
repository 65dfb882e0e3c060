// Owns the embedded default store: all state in memory, persisted as one JSON file
// (<dir>/state.json) that is replaced atomically after every change, guarded by a LOCK file
// so that two processes never write the same data dir. Deployments' events live in the same
// file, beside the records (older files without them load as having none).

import { open as openFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { systemClock, type Clock } from '../core/clock.js';
import { KINDS, type DeploymentEvent, type Kind, type NewDeploymentEvent, type RecordMap } from '../domain/records.js';
import { addEvent } from './events.js';
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

const FORMAT = 1;

interface Envelope {
  version: number;
  unique: UniqueKey[];
  value: unknown;
}

interface IndexRef {
  kind: Kind;
  id: number;
}

/** Envelopes are never mutated in place, so a shallow copy of the maps is a safe snapshot. */
interface State {
  next: Map<Kind, number>;
  records: Map<Kind, Map<number, Envelope>>;
  indexes: Map<string, Map<string, IndexRef>>;
  /** Per deployment id, oldest first; arrays are replaced, never changed in place. */
  events: Map<number, DeploymentEvent[]>;
}

interface Plan<T> {
  next?: State;
  result: T;
  event?: ChangeEvent;
}

/** Lock files held by this process, so a second FileStore here is refused but a stale lock
 * left by an earlier process that happened to have our pid (pid 1 in containers) is not. */
const locksHeldHere = new Set<string>();

export class FileStore implements Store {
  private readonly dir: string;
  private readonly statePath: string;
  private readonly tmpPath: string;
  private readonly lockPath: string;
  private state: State = emptyState();
  private opened = false;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly listeners = new Set<ChangeListener>();
  /** One process owns the data dir (the lock), so leases only need to exist in memory. */
  private readonly leases = new Map<string, { holder: string; expires: number; epoch: number }>();
  /** Reports live in memory: a file store has one process, which is every publisher. */
  private readonly reports = new Map<string, Map<string, { body: string; expires: number }>>();

  /** Leases and reports expire on this clock, so tests step it rather than wait them out. */
  private readonly clock: Clock;

  constructor(options: { dir: string; clock?: Clock }) {
    this.dir = path.resolve(options.dir);
    this.clock = options.clock ?? systemClock;
    this.statePath = path.join(this.dir, 'state.json');
    this.tmpPath = path.join(this.dir, 'state.json.tmp');
    this.lockPath = path.join(this.dir, 'LOCK');
  }

  async open(): Promise<void> {
    if (this.opened) return;
    await mkdir(this.dir, { recursive: true, mode: 0o700 }).catch((err: unknown) => {
      throw new StoreError(`cannot create data dir ${this.dir}: ${reason(err)}`);
    });
    await acquireLock(this.dir, this.lockPath);
    try {
      this.state = await loadState(this.statePath);
      // A leftover temp file is an interrupted write whose rename never happened: not state.
      await rm(this.tmpPath, { force: true }).catch(() => undefined);
    } catch (err) {
      await releaseLock(this.lockPath);
      throw err;
    }
    this.opened = true;
  }

  async close(): Promise<void> {
    if (!this.opened) return;
    await this.exclusive(async () => {
      this.opened = false;
    });
    await releaseLock(this.lockPath);
  }

  async ping(): Promise<void> {
    this.assertOpen();
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

  /** Inside a mutation (one at a time), so no lease change can slip between check and write. */
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

  async get<K extends Kind>(kind: K, id: number): Promise<Versioned<RecordMap[K]> | undefined> {
    this.assertOpen();
    const env = this.state.records.get(kind)?.get(id);
    return env && toVersioned<RecordMap[K]>(env);
  }

  async list<K extends Kind>(kind: K): Promise<Versioned<RecordMap[K]>[]> {
    this.assertOpen();
    const entries = [...(this.state.records.get(kind) ?? new Map<number, Envelope>()).entries()];
    return entries.sort(([a], [b]) => a - b).map(([, env]) => toVersioned<RecordMap[K]>(env));
  }

  async lookup(index: string, key: string): Promise<{ kind: Kind; id: number } | undefined> {
    this.assertOpen();
    const ref = this.state.indexes.get(index)?.get(key);
    return ref && { ...ref };
  }

  create<K extends Kind>(
    kind: K,
    build: (id: number) => RecordMap[K],
    options: CreateOptions = {},
  ): Promise<Versioned<RecordMap[K]>> {
    return this.mutate((state) => {
      this.checkFence(options.fence);
      const id = state.next.get(kind) ?? 1;
      const unique = (options.unique ?? []).map(({ index, key }) => ({ index, key }));
      for (const u of unique) if (state.indexes.get(u.index)?.has(u.key)) throw new ConflictError(u.index, u.key);
      const env: Envelope = { version: 1, unique, value: jsonClone(build(id)) };
      const next = cloneState(state);
      next.next.set(kind, id + 1);
      putRecord(next, kind, id, env);
      for (const u of unique) setIndex(next, u, { kind, id });
      return { next, result: toVersioned<RecordMap[K]>(env), event: { kind, id, op: 'put', version: 1 } };
    });
  }

  update<K extends Kind>(
    kind: K,
    id: number,
    expectedVersion: number,
    value: RecordMap[K],
    options: WriteOptions = {},
  ): Promise<Versioned<RecordMap[K]>> {
    return this.mutate((state) => {
      this.checkFence(options.fence);
      const current = state.records.get(kind)?.get(id);
      if (!current) throw new NotFoundError(kind, id);
      if (current.version !== expectedVersion) throw new VersionConflictError(kind, id);
      const env: Envelope = { version: current.version + 1, unique: current.unique, value: jsonClone(value) };
      const next = cloneState(state);
      putRecord(next, kind, id, env);
      return { next, result: toVersioned<RecordMap[K]>(env), event: { kind, id, op: 'put', version: env.version } };
    });
  }

  delete(kind: Kind, id: number, expectedVersion?: number, options: WriteOptions = {}): Promise<boolean> {
    return this.mutate((state): Plan<boolean> => {
      this.checkFence(options.fence);
      const current = state.records.get(kind)?.get(id);
      if (!current) return { result: false };
      if (expectedVersion !== undefined && current.version !== expectedVersion) {
        throw new VersionConflictError(kind, id);
      }
      const next = cloneState(state);
      next.records.get(kind)?.delete(id);
      for (const u of current.unique) releaseIndex(next, u, { kind, id });
      if (kind === 'deployment') next.events.delete(id);
      return { next, result: true, event: { kind, id, op: 'delete', version: current.version } };
    });
  }

  appendEvent(deploymentId: number, event: NewDeploymentEvent, options: WriteOptions = {}): Promise<boolean> {
    return this.mutate((state): Plan<boolean> => {
      this.checkFence(options.fence);
      if (!state.records.get('deployment')?.has(deploymentId)) return { result: false };
      const next = cloneState(state);
      next.events.set(deploymentId, addEvent(state.events.get(deploymentId) ?? [], jsonClone(event)));
      return { next, result: true };
    });
  }

  async listEvents(deploymentId: number): Promise<DeploymentEvent[]> {
    this.assertOpen();
    return jsonClone(this.state.events.get(deploymentId) ?? []);
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

  /** Plans a change against the current state, makes it durable, and only then adopts it. */
  private mutate<T>(plan: (state: State) => Plan<T>): Promise<T> {
    return this.exclusive(async () => {
      this.assertOpen();
      const { next, result, event } = plan(this.state);
      if (next) {
        await this.persist(next);
        this.state = next;
      }
      if (event) this.emit(event);
      return result;
    });
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async persist(state: State): Promise<void> {
    try {
      await writeDurably(this.dir, this.tmpPath, this.statePath, serializeState(state));
    } catch (err) {
      await rm(this.tmpPath, { force: true }).catch(() => undefined);
      throw new StoreError(`cannot write state file ${this.statePath}: ${reason(err)}; the change was not applied`);
    }
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

// ---- durability -------------------------------------------------------------------------

async function writeDurably(dir: string, tmpPath: string, finalPath: string, text: string): Promise<void> {
  const file = await openFile(tmpPath, 'w', 0o600);
  try {
    await file.writeFile(text, 'utf8');
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmpPath, finalPath);
  // The rename itself lives in the directory; without this a crash could bring back the old file.
  const dirHandle = await openFile(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}

// ---- lock file --------------------------------------------------------------------------

async function acquireLock(dir: string, lockPath: string): Promise<void> {
  // A few rounds only to survive a racing takeover; each round either wins, refuses, or
  // removes a stale lock.
  for (let round = 0; round < 3; round++) {
    try {
      await writeFile(lockPath, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      locksHeldHere.add(lockPath);
      return;
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw new StoreError(`cannot create lock file ${lockPath}: ${reason(err)}`);
    }
    const holder = await readLockPid(lockPath);
    if (holder !== undefined && lockIsLive(holder, lockPath)) {
      throw new StoreError(
        `data dir ${dir} is in use by process ${holder} (lock file ${lockPath}); stop that process or use another --data-dir`,
      );
    }
    await rm(lockPath, { force: true });
  }
  throw new StoreError(`cannot take lock file ${lockPath}: it keeps reappearing`);
}

async function releaseLock(lockPath: string): Promise<void> {
  locksHeldHere.delete(lockPath);
  // Only remove it if it is still ours: someone may have (wrongly) taken it over meanwhile.
  const holder = await readLockPid(lockPath);
  if (holder === process.pid) await rm(lockPath, { force: true }).catch(() => undefined);
}

/** The pid in the lock file; undefined when the file is unreadable, empty or garbage. */
async function readLockPid(lockPath: string): Promise<number | undefined> {
  try {
    const text = (await readFile(lockPath, 'utf8')).trim();
    const pid = Number(text);
    return /^\d+$/.test(text) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function lockIsLive(pid: number, lockPath: string): boolean {
  if (pid === process.pid) return locksHeldHere.has(lockPath);
  return processIsAlive(pid);
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else — still alive.
    return errorCode(err) === 'EPERM';
  }
}

// ---- state file -------------------------------------------------------------------------

async function loadState(statePath: string): Promise<State> {
  let text: string;
  try {
    text = await readFile(statePath, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return emptyState();
    throw new StoreError(`cannot read state file ${statePath}: ${reason(err)}`);
  }
  try {
    return parseState(text);
  } catch (err) {
    throw new StoreError(
      `state file ${statePath} is corrupt (${reason(err)}); it was left untouched — restore it from a backup or move it away to start empty`,
    );
  }
}

interface StateFile {
  format: number;
  next: Record<string, number>;
  records: Record<string, Record<string, Envelope>>;
  indexes: Record<string, Record<string, IndexRef>>;
  /** Absent in files written before events existed. */
  events?: Record<string, DeploymentEvent[]>;
}

function serializeState(state: State): string {
  const file: StateFile = {
    format: FORMAT,
    next: Object.fromEntries(state.next),
    records: Object.fromEntries(
      [...state.records].map(([kind, recs]) => [kind, Object.fromEntries([...recs].map(([id, env]) => [String(id), env]))]),
    ),
    indexes: Object.fromEntries([...state.indexes].map(([index, keys]) => [index, Object.fromEntries(keys)])),
    events: Object.fromEntries([...state.events].map(([id, events]) => [String(id), events])),
  };
  return JSON.stringify(file, null, 1) + '\n';
}

/** Parses and checks the file; throws a plain Error whose message is the reason. */
function parseState(text: string): State {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`not JSON: ${reason(err)}`);
  }
  if (!isObject(raw)) throw new Error('top level is not an object');
  if (raw.format !== FORMAT) throw new Error(`format is ${JSON.stringify(raw.format)}, expected ${FORMAT}`);
  const state = emptyState();
  parseNext(raw.next, state);
  parseRecords(raw.records, state);
  parseIndexes(raw.indexes, state);
  parseEvents(raw.events, state);
  checkConsistency(state);
  return state;
}

function parseNext(raw: unknown, state: State): void {
  if (!isObject(raw)) throw new Error('"next" is not an object');
  for (const [kind, n] of Object.entries(raw)) {
    if (!isKind(kind)) throw new Error(`"next" has unknown kind ${JSON.stringify(kind)}`);
    if (!isPositiveInt(n)) throw new Error(`"next.${kind}" is not a positive integer`);
    state.next.set(kind, n);
  }
}

function parseRecords(raw: unknown, state: State): void {
  if (!isObject(raw)) throw new Error('"records" is not an object');
  for (const [kind, recs] of Object.entries(raw)) {
    if (!isKind(kind)) throw new Error(`"records" has unknown kind ${JSON.stringify(kind)}`);
    if (!isObject(recs)) throw new Error(`"records.${kind}" is not an object`);
    const map = new Map<number, Envelope>();
    for (const [id, env] of Object.entries(recs)) map.set(parseId(id, `records.${kind}`), parseEnvelope(env, `${kind} ${id}`));
    state.records.set(kind, map);
  }
}

function parseEnvelope(raw: unknown, where: string): Envelope {
  if (!isObject(raw)) throw new Error(`record ${where} is not an object`);
  if (!isPositiveInt(raw.version)) throw new Error(`record ${where} has no valid version`);
  if (!isObject(raw.value)) throw new Error(`record ${where} has no value object`);
  if (!Array.isArray(raw.unique) || !raw.unique.every(isUniqueKey)) {
    throw new Error(`record ${where} has no valid unique key list`);
  }
  return { version: raw.version, unique: raw.unique, value: raw.value };
}

function parseIndexes(raw: unknown, state: State): void {
  if (!isObject(raw)) throw new Error('"indexes" is not an object');
  for (const [index, keys] of Object.entries(raw)) {
    if (!isObject(keys)) throw new Error(`"indexes.${index}" is not an object`);
    const map = new Map<string, IndexRef>();
    for (const [key, ref] of Object.entries(keys)) {
      if (!isObject(ref) || typeof ref.kind !== 'string' || !isKind(ref.kind) || !isPositiveInt(ref.id)) {
        throw new Error(`index entry ${index} ${JSON.stringify(key)} is not a {kind, id} reference`);
      }
      map.set(key, { kind: ref.kind, id: ref.id });
    }
    state.indexes.set(index, map);
  }
}

function parseEvents(raw: unknown, state: State): void {
  if (raw === undefined) return;
  if (!isObject(raw)) throw new Error('"events" is not an object');
  for (const [id, events] of Object.entries(raw)) {
    if (!Array.isArray(events) || !events.every(isEvent)) throw new Error(`"events.${id}" is not a list of events`);
    state.events.set(parseId(id, 'events'), events);
  }
}

function isEvent(value: unknown): value is DeploymentEvent {
  return (
    isObject(value) &&
    typeof value.time === 'string' &&
    typeof value.first_time === 'string' &&
    (value.type === 'normal' || value.type === 'warning') &&
    typeof value.reason === 'string' &&
    typeof value.message === 'string' &&
    isPositiveInt(value.count)
  );
}

/** Catches hand edits that would break the guarantees: reused ids and dangling unique keys. */
function checkConsistency(state: State): void {
  for (const [kind, recs] of state.records) {
    const next = state.next.get(kind) ?? 1;
    for (const [id, env] of recs) {
      if (id >= next) throw new Error(`${kind} ${id} is not below next id ${next}`);
      for (const u of env.unique) {
        const ref = state.indexes.get(u.index)?.get(u.key);
        if (ref?.kind !== kind || ref.id !== id) throw new Error(`${kind} ${id} claims ${u.index} ${JSON.stringify(u.key)} but the index disagrees`);
      }
    }
  }
  for (const [index, keys] of state.indexes) {
    for (const [key, ref] of keys) {
      if (!state.records.get(ref.kind)?.has(ref.id)) throw new Error(`index ${index} ${JSON.stringify(key)} points at missing ${ref.kind} ${ref.id}`);
    }
  }
  for (const id of state.events.keys()) {
    if (!state.records.get('deployment')?.has(id)) throw new Error(`events of deployment ${id}, which does not exist`);
  }
}

// ---- pure state helpers -----------------------------------------------------------------

function emptyState(): State {
  return { next: new Map(), records: new Map(), indexes: new Map(), events: new Map() };
}

function cloneState(state: State): State {
  return {
    next: new Map(state.next),
    records: new Map([...state.records].map(([kind, recs]) => [kind, new Map(recs)])),
    indexes: new Map([...state.indexes].map(([index, keys]) => [index, new Map(keys)])),
    events: new Map(state.events),
  };
}

function putRecord(state: State, kind: Kind, id: number, env: Envelope): void {
  let recs = state.records.get(kind);
  if (!recs) state.records.set(kind, (recs = new Map()));
  recs.set(id, env);
}

function setIndex(state: State, u: UniqueKey, ref: IndexRef): void {
  let keys = state.indexes.get(u.index);
  if (!keys) state.indexes.set(u.index, (keys = new Map()));
  keys.set(u.key, ref);
}

function releaseIndex(state: State, u: UniqueKey, ref: IndexRef): void {
  const keys = state.indexes.get(u.index);
  const held = keys?.get(u.key);
  if (held?.kind === ref.kind && held.id === ref.id) keys?.delete(u.key);
  if (keys?.size === 0) state.indexes.delete(u.index);
}

function toVersioned<T>(env: Envelope): Versioned<T> {
  return { value: jsonClone(env.value) as T, version: env.version };
}

/** Callers get and give copies, and JSON semantics match what a reopened store returns. */
function jsonClone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function parseId(text: string, where: string): number {
  const id = Number(text);
  if (!/^\d+$/.test(text) || !isPositiveInt(id)) throw new Error(`"${where}" has a non-integer id ${JSON.stringify(text)}`);
  return id;
}

function isKind(value: string): value is Kind {
  return (KINDS as readonly string[]).includes(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function isUniqueKey(value: unknown): value is UniqueKey {
  return isObject(value) && typeof value.index === 'string' && typeof value.key === 'string';
}

function errorCode(err: unknown): string | undefined {
  return isObject(err) && typeof err.code === 'string' ? err.code : undefined;
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
