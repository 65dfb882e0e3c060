// Owns reading the file store's first format: one `<data-dir>/state.json` (format 1) holding
// every record, index, id counter and event, which releases before the journal rewrote whole
// after every write. Read once, when such a data directory is upgraded in place; never written.

import { readFile } from 'node:fs/promises';
import type { DeploymentEvent } from '../domain/records.js';
import {
  checkConsistency,
  deepFreeze,
  emptyState,
  isEvent,
  isKind,
  isObject,
  isPositiveInt,
  isUniqueKey,
  parseNext,
  stored,
  type IndexRef,
  type State,
  type Stored,
} from './file-state.js';

export const V1_FILE = 'state.json';

/** The state in `text`; throws a plain Error whose message is the reason it cannot be read. */
export function parseStateV1(text: string): State {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isObject(raw)) throw new Error('top level is not an object');
  if (raw.format !== 1) throw new Error(`format is ${JSON.stringify(raw.format)}, expected 1`);
  const state = emptyState();
  parseNext(raw.next, state);
  parseRecords(raw.records, state);
  parseIndexes(raw.indexes, state);
  parseEvents(raw.events, state);
  checkConsistency(state);
  return state;
}

/** The text of the file, or undefined when there is none. */
export async function readStateV1(filePath: string): Promise<string | undefined> {
  try {
    return await readFile(filePath, 'utf8');
  } catch (err) {
    if (isObject(err) && err.code === 'ENOENT') return undefined;
    throw err;
  }
}

function parseRecords(raw: unknown, state: State): void {
  if (!isObject(raw)) throw new Error('"records" is not an object');
  for (const [kind, recs] of Object.entries(raw)) {
    if (!isKind(kind)) throw new Error(`"records" has unknown kind ${JSON.stringify(kind)}`);
    if (!isObject(recs)) throw new Error(`"records.${kind}" is not an object`);
    // Integer-like keys iterate in ascending order: the map is in id order, as list() needs.
    const map = new Map<number, Stored>();
    for (const [id, env] of Object.entries(recs)) map.set(parseId(id, `records.${kind}`), parseEnvelope(env, `${kind} ${id}`));
    state.records.set(kind, map);
  }
}

function parseEnvelope(raw: unknown, where: string): Stored {
  if (!isObject(raw)) throw new Error(`record ${where} is not an object`);
  if (!isPositiveInt(raw.version)) throw new Error(`record ${where} has no valid version`);
  if (!isObject(raw.value)) throw new Error(`record ${where} has no value object`);
  if (!Array.isArray(raw.unique) || !raw.unique.every(isUniqueKey)) throw new Error(`record ${where} has no valid unique key list`);
  return stored(raw.version, raw.unique, raw.value);
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

/** Absent in files written before events existed: no deployment has any. */
function parseEvents(raw: unknown, state: State): void {
  if (raw === undefined) return;
  if (!isObject(raw)) throw new Error('"events" is not an object');
  for (const [id, events] of Object.entries(raw)) {
    if (!Array.isArray(events) || !events.every(isEvent)) throw new Error(`"events.${id}" is not a list of events`);
    state.events.set(parseId(id, 'events'), deepFreeze(events as DeploymentEvent[]));
  }
}

function parseId(text: string, where: string): number {
  const id = Number(text);
  if (!/^\d+$/.test(text) || !isPositiveInt(id)) throw new Error(`"${where}" has a non-integer id ${JSON.stringify(text)}`);
  return id;
}
