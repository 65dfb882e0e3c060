// Owns paged lists, as Kubernetes pages them: `?limit=N` (1–500) asks for at most N items,
// and an answer with more behind it carries `continue`, an opaque token that `?continue=`
// hands back for the next page, and `remaining_item_count`. Without `limit` a list answers
// everything, as before paging existed. Pages run in id order and the token holds the last
// id served, so an item created while a client pages (ids only grow) shows up on the last
// page or not at all, never twice; one deleted meanwhile is simply not there.
//
// The token: base64url of `v1.<collection>.<last id>.<check>`, the check a hash of the rest.
// Nothing in it is secret or grants anything (any id may be asked for); the check makes a
// token that was cut, edited or taken from another list a clean 400 naming `continue` — a list
// of another project is another list (`listCollection`).

import { createHash } from 'node:crypto';
import { Type } from '../core/typebox.js';
import { PlatformError } from '../core/errors.js';
import type { TSchema } from 'typebox';
import type { Kind, RecordMap } from '../domain/records.js';
import type { Store } from '../store/store.js';
import { DEFAULT_PROJECT, projectOf } from '../domain/access.js';
import type { IndexedKind, RecordIndex, Scope } from './record-index.js';

export const PAGE_LIMIT_MAX = 500;
/** Longer than any token this code makes; a longer one is refused before it is decoded. */
const TOKEN_MAX = 200;

export const PAGE_QUERY_FIELDS = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX, description: `at most this many items (1–${PAGE_LIMIT_MAX}); left out: every item, in one answer` }),
  ),
  continue: Type.Optional(
    Type.String({ minLength: 1, maxLength: TOKEN_MAX, description: 'the `continue` of the previous page: the items after it' }),
  ),
};

export const PageQuery = Type.Object(PAGE_QUERY_FIELDS, { additionalProperties: true });

/** A list answer: `items`, and `continue` with `remaining_item_count` while more remain. */
export function PageResponse<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    continue: Type.Optional(Type.String({ description: 'more remain: pass this as ?continue= (with a limit) for the next page' })),
    remaining_item_count: Type.Optional(Type.Integer({ minimum: 1, description: 'how many items come after this page (at the time of this answer)' })),
  });
}

export interface PageRequest {
  limit?: number;
  continue?: string;
}

export interface Page {
  /** The ids of this page, ascending. */
  ids: number[];
  continue?: string;
  remaining_item_count?: number;
}

function check(payload: string): string {
  return createHash('sha256').update(payload).digest('base64url').slice(0, 12);
}

export function encodeContinue(collection: string, lastId: number): string {
  const payload = `v1.${collection}.${lastId}`;
  return Buffer.from(`${payload}.${check(payload)}`).toString('base64url');
}

/** The last id a token names; a 400 naming `continue` when it is not one of this collection's. */
export function decodeContinue(collection: string, token: string): number {
  const refuse = (why: string) =>
    new PlatformError('invalid_field', `continue is not a token of this list (${why}); pass the continue of the previous page unchanged, or leave it out to start again`, { field: 'continue' });
  if (!/^[A-Za-z0-9_-]+$/.test(token)) throw refuse('not base64url');
  const text = Buffer.from(token, 'base64url').toString('utf8');
  const parts = text.split('.');
  if (parts.length !== 4 || parts[0] !== 'v1') throw refuse('not a token');
  const [, of, last, sum] = parts as [string, string, string, string];
  if (check(`v1.${of}.${last}`) !== sum) throw refuse('damaged');
  if (of !== collection) throw refuse(`made for ${of}`);
  if (!/^[0-9]{1,10}$/.test(last)) throw refuse('not a token');
  return Number(last);
}

/**
 * The name of a project's list in its tokens: `deployments/general` in `default` (tokens from
 * before projects stay good), `deployments/general@team-a` in another project.
 */
export function listCollection(collection: string, project: string): string {
  return project === DEFAULT_PROJECT ? collection : `${collection}@${project}`;
}

/**
 * The page of `ids` (ascending) a request asks for. `collection` names the list in its
 * tokens (a token of one list is refused by another).
 */
export function pageOf(ids: readonly number[], request: PageRequest, collection: string): Page {
  const after = request.continue === undefined ? 0 : decodeContinue(collection, request.continue);
  const start = firstAbove(ids, after);
  const end = request.limit === undefined ? ids.length : Math.min(ids.length, start + request.limit);
  const page = ids.slice(start, end);
  const remaining = ids.length - end;
  const last = page[page.length - 1];
  if (remaining === 0 || last === undefined) return { ids: page };
  return { ids: page, continue: encodeContinue(collection, last), remaining_item_count: remaining };
}

/** Index of the first id greater than `after` (binary search). */
function firstAbove(ids: readonly number[], after: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether a request pages at all: without limit and continue a list answers everything at once. */
export const pages = (request: PageRequest): boolean => request.limit !== undefined || request.continue !== undefined;

/**
 * The records of a page, read one by one in order; a record deleted since the index listed
 * its id is left out (the page is then shorter than its limit, as Kubernetes allows).
 */
export async function readPage<T>(page: Page, read: (id: number) => Promise<T | undefined>): Promise<T[]> {
  const found: (T | undefined)[] = await Promise.all(page.ids.map(read));
  return found.filter((x): x is T => x !== undefined);
}

/**
 * A list route's records of `kind` within `scope` (one project's; service accounts with or
 * without the admin accounts): every one (one store list, as before paging) when the request
 * does not page, else one page — ids from the record index, records read one by one.
 */
export async function listRecords<K extends IndexedKind & Kind>(
  store: Store,
  index: RecordIndex,
  kind: K,
  request: PageRequest,
  collection: string,
  scope: Scope & { project: string },
): Promise<{ records: RecordMap[K][]; page: Page | null }> {
  if (!pages(request)) {
    const all = (await store.list(kind)).map((r) => r.value);
    return { records: all.filter((r) => inScope(r, scope)), page: null };
  }
  const page = pageOf((await index.current()).ids(kind, scope), request, listCollection(collection, scope.project));
  const records = (await readPage(page, async (id) => (await store.get(kind, id))?.value)).filter((r) => inScope(r, scope));
  return { records, page };
}

/** Whether a record is in a list's scope: its project, or (service accounts) an admin account when the scope takes them. */
function inScope(record: object, scope: Scope & { project: string }): boolean {
  const r = record as { project?: string | null; role?: string };
  if (r.role === 'admin') return scope.admins === true;
  return projectOf(r) === scope.project;
}

/** The answer of a list route: the items, and the page's `continue` while more remain. */
export function pageAnswer<T>(items: T[], page: Page | null): { items: T[]; continue?: string; remaining_item_count?: number } {
  if (page?.continue === undefined) return { items };
  return { items, continue: page.continue, ...(page.remaining_item_count !== undefined && { remaining_item_count: page.remaining_item_count }) };
}
