// Owns the file store's state in memory and the one-line entries it is written as: records
// with their versions and unique keys, the indexes the keys form, the next id of each kind,
// each deployment's events — and how an entry (a put, a delete, an event) changes that state,
// the same code whether the entry is being committed now or replayed from disk at open.
// Stored values are deep-frozen once, when written or loaded, and handed to readers as they
// are: a read copies nothing, and nobody can change a value behind the store's back.

import { KINDS, type DeploymentEvent, type Kind, type NewDeploymentEvent } from '../domain/records.js';
import { addEvent } from './events.js';
import type { UniqueKey, Versioned } from './store.js';

/** A record as kept: what readers get (frozen, shared) and the unique keys it holds. */
export interface Stored {
  readonly record: Readonly<Versioned<unknown>>;
  readonly unique: readonly UniqueKey[];
}

export interface IndexRef {
  readonly kind: Kind;
  readonly id: number;
}

/**
 * Records of a kind iterate in id order: ids only grow (a create takes the kind's next id),
 * a Map keeps insertion order and an update keeps the key's place — so list() never sorts.
 */
export interface State {
  next: Map<Kind, number>;
  records: Map<Kind, Map<number, Stored>>;
  indexes: Map<string, Map<string, IndexRef>>;
  /** Per deployment id, oldest first; lists are replaced, never changed in place. */
  events: Map<number, readonly DeploymentEvent[]>;
}

/** One committed change, as one line of the journal (and of a snapshot). */
export type Entry =
  | { op: 'put'; kind: Kind; id: number; version: number; unique: UniqueKey[]; value: object }
  | { op: 'delete'; kind: Kind; id: number }
  | { op: 'event'; deployment: number; event: NewDeploymentEvent }
  /** A deployment's whole event list: how a snapshot writes them. */
  | { op: 'events'; deployment: number; events: DeploymentEvent[] };

export function emptyState(): State {
  return { next: new Map(), records: new Map(), indexes: new Map(), events: new Map() };
}

export function stored(version: number, unique: readonly UniqueKey[], value: unknown): Stored {
  return Object.freeze({ record: Object.freeze({ value: deepFreeze(value), version }), unique: Object.freeze(unique.map((u) => Object.freeze({ index: u.index, key: u.key }))) });
}

/** Freezes a JSON value and everything in it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

// ---- changes, shared by commit and replay -------------------------------------------------

export function putRecord(state: State, kind: Kind, id: number, s: Stored): void {
  let recs = state.records.get(kind);
  if (!recs) state.records.set(kind, (recs = new Map()));
  recs.set(id, s);
  for (const u of s.unique) setIndex(state, u, { kind, id });
  if (id >= (state.next.get(kind) ?? 1)) state.next.set(kind, id + 1);
}

/** Removes the record, the keys it holds and, for a deployment, its events; the removed one, if any. */
export function deleteRecord(state: State, kind: Kind, id: number): Stored | undefined {
  const current = state.records.get(kind)?.get(id);
  if (!current) return undefined;
  state.records.get(kind)!.delete(id);
  for (const u of current.unique) releaseIndex(state, u, { kind, id });
  if (kind === 'deployment') state.events.delete(id);
  return current;
}

export function setEvents(state: State, deploymentId: number, events: readonly DeploymentEvent[]): void {
  state.events.set(deploymentId, deepFreeze(events));
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

/** Applies a line read back from disk; throws a plain Error naming what is wrong with it. */
export function replay(state: State, entry: Entry): void {
  switch (entry.op) {
    case 'put':
      putRecord(state, entry.kind, entry.id, stored(entry.version, entry.unique, entry.value));
      return;
    case 'delete':
      if (!deleteRecord(state, entry.kind, entry.id)) throw new Error(`deletes ${entry.kind} ${entry.id}, which does not exist`);
      return;
    case 'event':
      if (!state.records.get('deployment')?.has(entry.deployment)) throw new Error(`is an event of deployment ${entry.deployment}, which does not exist`);
      setEvents(state, entry.deployment, addEvent(state.events.get(entry.deployment) ?? [], entry.event));
      return;
    case 'events':
      if (!state.records.get('deployment')?.has(entry.deployment)) throw new Error(`lists events of deployment ${entry.deployment}, which does not exist`);
      setEvents(state, entry.deployment, entry.events);
      return;
  }
}

// ---- lines --------------------------------------------------------------------------------

/**
 * A put's line, with the value's JSON already made (the caller made it to copy the value):
 * one JSON.stringify per write, and the line is that text with a few fields around it.
 */
export function putLine(kind: Kind, id: number, version: number, unique: readonly UniqueKey[], valueJson: string): string {
  return `{"op":"put","kind":${JSON.stringify(kind)},"id":${id},"version":${version},"unique":${JSON.stringify(unique)},"value":${valueJson}}\n`;
}

export function entryLine(entry: Entry): string {
  return JSON.stringify(entry) + '\n';
}

/** Parses and checks one line; throws a plain Error whose message is the reason. */
export function parseEntry(raw: unknown): Entry {
  if (!isObject(raw)) throw new Error('is not an object');
  switch (raw.op) {
    case 'put': {
      const { kind, id, version, unique, value } = raw;
      if (typeof kind !== 'string' || !isKind(kind)) throw new Error(`has an unknown kind ${JSON.stringify(kind)}`);
      if (!isPositiveInt(id) || !isPositiveInt(version)) throw new Error('has no valid id or version');
      if (!isObject(value)) throw new Error('has no value object');
      if (!Array.isArray(unique) || !unique.every(isUniqueKey)) throw new Error('has no valid unique key list');
      return { op: 'put', kind, id, version, unique, value };
    }
    case 'delete': {
      const { kind, id } = raw;
      if (typeof kind !== 'string' || !isKind(kind)) throw new Error(`has an unknown kind ${JSON.stringify(kind)}`);
      if (!isPositiveInt(id)) throw new Error('has no valid id');
      return { op: 'delete', kind, id };
    }
    case 'event': {
      const { deployment, event } = raw;
      if (!isPositiveInt(deployment)) throw new Error('has no valid deployment id');
      if (!isNewEvent(event)) throw new Error('has no valid event');
      return { op: 'event', deployment, event: { time: event.time, type: event.type, reason: event.reason, message: event.message } };
    }
    case 'events': {
      const { deployment, events } = raw;
      if (!isPositiveInt(deployment)) throw new Error('has no valid deployment id');
      if (!Array.isArray(events) || !events.every(isEvent)) throw new Error('has no valid event list');
      return { op: 'events', deployment, events };
    }
    default:
      throw new Error(`has an unknown op ${JSON.stringify(raw.op)}`);
  }
}

/** The next-id counters of a snapshot's header. */
export function parseNext(raw: unknown, state: State): void {
  if (!isObject(raw)) throw new Error('"next" is not an object');
  for (const [kind, n] of Object.entries(raw)) {
    if (!isKind(kind)) throw new Error(`"next" has unknown kind ${JSON.stringify(kind)}`);
    if (!isPositiveInt(n)) throw new Error(`"next.${kind}" is not a positive integer`);
    state.next.set(kind, Math.max(n, state.next.get(kind) ?? 1));
  }
}

/** Catches what would break the guarantees: reused ids, dangling unique keys, orphan events. */
export function checkConsistency(state: State): void {
  for (const [kind, recs] of state.records) {
    const next = state.next.get(kind) ?? 1;
    for (const [id, s] of recs) {
      if (id >= next) throw new Error(`${kind} ${id} is not below next id ${next}`);
      for (const u of s.unique) {
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

export function isEvent(value: unknown): value is DeploymentEvent {
  return isNewEvent(value) && typeof value.first_time === 'string' && isPositiveInt(value.count);
}

function isNewEvent(value: unknown): value is NewDeploymentEvent & Record<string, unknown> {
  return (
    isObject(value) &&
    typeof value.time === 'string' &&
    (value.type === 'normal' || value.type === 'warning') &&
    typeof value.reason === 'string' &&
    typeof value.message === 'string'
  );
}

export function isKind(value: string): value is Kind {
  return (KINDS as readonly string[]).includes(value);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

export function isUniqueKey(value: unknown): value is UniqueKey {
  return isObject(value) && typeof value.index === 'string' && typeof value.key === 'string';
}
