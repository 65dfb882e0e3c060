// Owns the Store interface: what every implementation (file, Redis) promises the control
// API, the controller and the gateway. Records are versioned for compare-and-set; unique
// keys (deployment names, token hashes, key hashes) are claimed atomically with the record;
// every committed change is announced on the change feed.

import type { DeploymentEvent, Kind, NewDeploymentEvent, RecordMap } from '../domain/records.js';

/** A unique key claimed by a record, released when the record is deleted. */
export interface UniqueKey {
  /** The index, for example `deployment-name`. */
  index: string;
  key: string;
}

export interface Versioned<T> {
  value: T;
  /** Starts at 1 on create and grows by one on every update. */
  version: number;
}

export interface ChangeEvent {
  kind: Kind;
  id: number;
  op: 'put' | 'delete';
  version: number;
}

export type ChangeListener = (event: ChangeEvent) => void;

/**
 * A write made on behalf of a lease holder: the store applies it only while `holder` holds
 * the lease `lease` — checked in the same atomic step as the write — and refuses it with
 * FencedError otherwise. How a controller that stalled past its lease (a GC pause, a frozen
 * VM, a partition) is kept from undoing what its successor did.
 */
export interface Fence {
  lease: string;
  holder: string;
}

export interface WriteOptions {
  fence?: Fence;
}

export interface CreateOptions extends WriteOptions {
  unique?: UniqueKey[];
}

export interface Store {
  /** Loads or connects; throws StoreError with a clear message when it cannot. */
  open(): Promise<void>;
  close(): Promise<void>;
  /** Cheap liveness check for /readyz. */
  ping(): Promise<void>;

  /**
   * Values handed out (by reads and writes alike) are the caller's to read, never to change:
   * a store may share one object with every reader (the file store hands out frozen values,
   * so an assignment into one throws). To change a record, build a new value.
   */
  get<K extends Kind>(kind: K, id: number): Promise<Versioned<RecordMap[K]> | undefined>;
  /** Every record of the kind, in id order. */
  list<K extends Kind>(kind: K): Promise<Versioned<RecordMap[K]>[]>;
  /** The id holding `key` in `index`, if any. */
  lookup(index: string, key: string): Promise<{ kind: Kind; id: number } | undefined>;

  /**
   * Creates a record with the next integer id of its kind (ids are never reused).
   * `build` receives the id. Throws ConflictError (with the index) when a unique key is taken;
   * then nothing is written (the id it drew may be skipped).
   */
  create<K extends Kind>(
    kind: K,
    build: (id: number) => RecordMap[K],
    options?: CreateOptions,
  ): Promise<Versioned<RecordMap[K]>>;

  /**
   * Replaces the record if its version is still `expectedVersion` (compare-and-set).
   * Throws VersionConflictError when another writer got there first, NotFoundError when gone.
   */
  update<K extends Kind>(
    kind: K,
    id: number,
    expectedVersion: number,
    value: RecordMap[K],
    options?: WriteOptions,
  ): Promise<Versioned<RecordMap[K]>>;

  /**
   * Deletes the record and releases its unique keys. With `expectedVersion`, only if unchanged.
   * Returns false when it did not exist.
   */
  delete(kind: Kind, id: number, expectedVersion?: number, options?: WriteOptions): Promise<boolean>;

  /**
   * Adds an event to deployment `deploymentId`'s events (store/events.ts: folded into a recent
   * identical one, the newest EVENTS_PER_DEPLOYMENT kept), in the same atomic step as checking
   * that the deployment exists: false, and nothing written, when it does not — so a writer
   * late after a delete leaves nothing behind. Events are not records: no version, no change
   * event. Deleting the deployment record deletes its events.
   */
  appendEvent(deploymentId: number, event: NewDeploymentEvent, options?: WriteOptions): Promise<boolean>;
  /** The deployment's events, oldest first (by last occurrence); empty when it has none. */
  listEvents(deploymentId: number): Promise<DeploymentEvent[]>;

  /**
   * Optional: rewrites what the store keeps on disk so that no replaced or deleted value is
   * left there — the file store's journal keeps each superseded line until it is compacted.
   * For a caller that has just overwritten what must not stay at rest (a secret an older
   * release kept in plain text). A store that keeps no such history has none.
   */
  compact?(): Promise<void>;

  /** Subscribes to committed changes (this process's and, for shared stores, others'). */
  watch(listener: ChangeListener): () => void;

  /**
   * Called each time the change feed is back after an interruption (a shared store's
   * connection was lost): events committed meanwhile were missed, so a watcher must re-read
   * what it keeps. A store whose feed cannot be cut never calls it.
   */
  onResync(listener: () => void): () => void;

  /**
   * Takes or renews the lease `name` for `holder` for `ttlMs` (the controller runs only where
   * it holds one). When `holder` holds it now: the lease's epoch, which grows by one each time
   * the lease is taken while free (so a holder that finds it grew by more than one since its
   * last hold knows another held the lease in between); 0 while another holder's is unexpired.
   */
  holdLease(name: string, holder: string, ttlMs: number): Promise<number>;
  /** Gives the lease up, if `holder` has it. */
  releaseLease(name: string, holder: string): Promise<void>;

  /**
   * Publishes `publisher`'s current report on `topic` (replacing its previous one), kept for
   * `ttlMs` unless published again: how each gateway tells the autoscaler its load. Not a
   * record: no version, no change event, gone when its publisher stops.
   */
  publishReport(topic: string, publisher: string, body: string, ttlMs: number): Promise<void>;
  /** The unexpired reports on `topic`, by publisher. */
  readReports(topic: string): Promise<Map<string, string>>;
}

export class StoreError extends Error {
  override name = 'StoreError';
}

/**
 * The store cannot be reached (Redis down, connection lost, a command unanswered): nothing
 * was read, and a write may or may not have been applied. Callers retry later; the control
 * API answers 503.
 */
export class StoreUnavailableError extends StoreError {
  override name = 'StoreUnavailableError';
}

/** A unique key is held by another record. */
export class ConflictError extends StoreError {
  override name = 'ConflictError';
  constructor(
    readonly index: string,
    readonly key: string,
  ) {
    super(`${index} "${key}" is already taken`);
  }
}

/** Compare-and-set failed: the record changed since it was read. */
export class VersionConflictError extends StoreError {
  override name = 'VersionConflictError';
  constructor(
    readonly kind: Kind,
    readonly id: number,
  ) {
    super(`${kind} ${id} was changed by another writer`);
  }
}

/** A fenced write came from a process that no longer holds the lease: nothing was written. */
export class FencedError extends StoreError {
  override name = 'FencedError';
  constructor(readonly fence: Fence) {
    super(`the ${fence.lease} lease is no longer held by ${fence.holder}: its write was refused`);
  }
}

export class NotFoundError extends StoreError {
  override name = 'NotFoundError';
  constructor(
    readonly kind: Kind,
    readonly id: number,
  ) {
    super(`${kind} ${id} does not exist`);
  }
}

/**
 * Read-modify-write with retries on VersionConflictError. `change` returns the new value, or
 * undefined to leave the record as it is. Returns the stored result. Retries with a jittered
 * pause so that many writers on one record all land.
 */
export async function modify<K extends Kind>(
  store: Store,
  kind: K,
  id: number,
  change: (current: RecordMap[K]) => RecordMap[K] | undefined,
  attempts = 50,
): Promise<Versioned<RecordMap[K]>> {
  for (let i = 0; ; i++) {
    // Under contention each round lets one writer through; a short jittered pause spreads
    // the others so they do not collide again on the same version.
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** i)));
    const current = await store.get(kind, id);
    if (!current) throw new NotFoundError(kind, id);
    const next = change(current.value);
    if (next === undefined) return current;
    try {
      return await store.update(kind, id, current.version, next);
    } catch (err) {
      if (!(err instanceof VersionConflictError) || i + 1 >= attempts) throw err;
    }
  }
}
