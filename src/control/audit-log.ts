// Owns the audit log: one AuditRecord appended to the store (file or Redis) for every mutating
// call of the control API, every refused call (401, 403, and a 404 the rules answer for another
// project), and the reads that hand out a secret's power (a terminal, a certificate's private
// key). audit-hook.ts writes each before the answer leaves, so a crash after a 2xx never loses
// its entry. An entry holds who, their role, the project, the route's action, its target (kind,
// id, name), the result, the status, the request id, the source address and the time — never
// a body, a query value or a header value, so no secret can reach it.
//
// The log is read through an in-memory copy kept from the store's change feed (GET /audit
// filters and pages it without reading the store), and kept to the newest RETAIN entries of
// each project: the writer deletes older ones itself; no route changes or deletes an entry.

import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.js';
import { PlatformError } from '../core/errors.js';
import type { RouteRule } from '../domain/access.js';
import type { AuditRecord, AuditResult } from '../domain/records.js';
import type { ChangeEvent, Store } from '../store/store.js';
import { decodeContinue, encodeContinue } from './paging.js';
import { PROJECT_HEADER, roleIn, type Principal } from './principal.js';

/** How many entries of one project (and of the platform-wide and anonymous calls) are kept. */
export const AUDIT_RETAIN_PER_PROJECT = 10_000;
/** A page of GET /audit without `limit`: the log only grows, so it is never answered whole. */
export const AUDIT_PAGE_DEFAULT = 100;

/** Reads audited although they change nothing: each hands out what a secret is worth. */
export const AUDITED_READS: ReadonlySet<RouteRule> = new Set<RouteRule>(['deployment.terminal', 'certificate.key']);
/** Actions that act on the platform, not in a project: their entries name no project. */
const PLATFORM_ACTIONS: ReadonlySet<RouteRule> = new Set<RouteRule>(['project.manage', 'platform.audit', 'self']);

export type NewAuditEntry = Omit<AuditRecord, 'id'>;

export interface AuditQuery {
  /** One project's entries; null: every project's (the admin). */
  project: string | null;
  actor?: string;
  action?: string;
  result?: AuditResult;
  /** ISO times, inclusive. */
  since?: string;
  until?: string;
  limit?: number;
  continue?: string;
}

export interface AuditPage {
  items: AuditRecord[];
  continue?: string;
  remaining_item_count?: number;
}

interface Cached {
  record: AuditRecord;
  at: number;
}

/** The retention bucket of an entry: its project, else platform-wide or anonymous calls. */
const bucketOf = (e: Pick<AuditRecord, 'project' | 'actor'>): string => e.project ?? (e.actor.kind === 'anonymous' ? '(anonymous)' : '(platform)');

/** Inserts `id` into an ascending array (ids mostly arrive in order: then it is a push). */
function insertSorted(ids: number[], id: number): void {
  if (ids.length === 0 || ids[ids.length - 1]! < id) {
    ids.push(id);
    return;
  }
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  if (ids[lo] !== id) ids.splice(lo, 0, id);
}

function removeSorted(ids: number[], id: number): void {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  if (ids[lo] === id) ids.splice(lo, 1);
}

export class AuditLog {
  private readonly byId = new Map<number, Cached>();
  /** Every id, ascending; and each bucket's. */
  private ids: number[] = [];
  private readonly buckets = new Map<string, number[]>();
  private loaded = false;
  private stale = false;
  private loading: Promise<void> | null = null;
  /** Feed events met while a load reads: applied once it is done. */
  private heldEvents: ChangeEvent[] | null = null;
  private readonly pending = new Set<Promise<unknown>>();
  private unsubscribe: Array<() => void> = [];

  /**
   * `store`: the store itself, not the API's view of it (record-index.ts), which refuses every
   * write of an audit entry so that no route can make or change one.
   */
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly logger?: FastifyBaseLogger,
    private readonly retain = AUDIT_RETAIN_PER_PROJECT,
  ) {}

  /** Appends an entry (durable when this resolves), then trims its project's to the newest `retain` in the background. */
  async append(entry: NewAuditEntry): Promise<AuditRecord> {
    const created = (await this.store.create('audit', (id) => ({ id, ...entry }))).value;
    if (this.loaded && !this.stale) this.add(created);
    this.track(this.trim(bucketOf(created)));
    return created;
  }

  /** An entry stamped now; for events that are no route's (a sign-in). */
  now(): string {
    return new Date(this.clock.now()).toISOString();
  }

  /** A page of entries, newest first. */
  async query(q: AuditQuery): Promise<AuditPage> {
    await this.ready();
    const since = q.since === undefined ? -Infinity : Date.parse(q.since);
    const until = q.until === undefined ? Infinity : Date.parse(q.until);
    const limit = q.limit ?? AUDIT_PAGE_DEFAULT;
    const below = q.continue === undefined ? Infinity : decodeContinue('audit', q.continue);
    const ids = q.project === null ? this.ids : (this.buckets.get(q.project) ?? []);
    const matches = (c: Cached): boolean =>
      (q.actor === undefined || c.record.actor.name === q.actor) &&
      (q.action === undefined || c.record.action === q.action) &&
      (q.result === undefined || c.record.result === q.result) &&
      c.at >= since &&
      c.at <= until;
    const items: AuditRecord[] = [];
    let remaining = 0;
    for (let i = ids.length - 1; i >= 0; i--) {
      const id = ids[i]!;
      if (id >= below) continue;
      const c = this.byId.get(id);
      if (!c || !matches(c)) continue;
      if (items.length < limit) items.push(c.record);
      else remaining++;
    }
    const last = items[items.length - 1];
    if (remaining === 0 || last === undefined) return { items };
    return { items, continue: encodeContinue('audit', last.id), remaining_item_count: remaining };
  }

  /** Waits for the trims under way and stops following the feed. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    for (const stop of this.unsubscribe) stop();
    this.unsubscribe = [];
  }

  private track(job: Promise<unknown>): void {
    const held = job
      .catch((err: unknown) => this.logger?.warn({ err }, 'audit log: trimming old entries failed; retried after the next entry'))
      .finally(() => this.pending.delete(held));
    this.pending.add(held);
  }

  /** Deletes a bucket's oldest entries beyond `retain`. */
  private async trim(bucket: string): Promise<void> {
    await this.ready();
    const ids = this.buckets.get(bucket) ?? [];
    const excess = ids.slice(0, Math.max(0, ids.length - this.retain));
    for (const id of excess) {
      await this.store.delete('audit', id);
      this.remove(id);
    }
  }

  private ready(): Promise<void> {
    if (this.loaded && !this.stale) return Promise.resolve();
    this.loading ??= this.load().finally(() => (this.loading = null));
    return this.loading;
  }

  private async load(): Promise<void> {
    if (this.unsubscribe.length === 0) {
      this.unsubscribe.push(
        this.store.watch((event) => this.changed(event)),
        this.store.onResync(() => (this.stale = true)),
      );
    }
    this.stale = false;
    this.heldEvents = [];
    try {
      const records = await this.store.list('audit');
      this.byId.clear();
      this.ids = [];
      this.buckets.clear();
      for (const { value } of records) this.add(value);
      this.loaded = true;
    } catch (err) {
      this.stale = true;
      throw err;
    } finally {
      const held = this.heldEvents ?? [];
      this.heldEvents = null;
      for (const event of held) this.changed(event);
    }
  }

  private changed(event: ChangeEvent): void {
    if (event.kind !== 'audit') return;
    if (this.heldEvents !== null) {
      this.heldEvents.push(event);
      return;
    }
    if (!this.loaded) return;
    if (event.op === 'delete') return this.remove(event.id);
    if (this.byId.has(event.id)) return;
    // Another process's entry (or this one's, before its create returned): read it once.
    this.track(
      this.store.get('audit', event.id).then(
        (found) => {
          if (found) this.add(found.value);
        },
        () => {
          this.stale = true;
        },
      ),
    );
  }

  private add(record: AuditRecord): void {
    if (this.byId.has(record.id)) return;
    this.byId.set(record.id, { record, at: Date.parse(record.time) });
    insertSorted(this.ids, record.id);
    const bucket = bucketOf(record);
    let ids = this.buckets.get(bucket);
    if (!ids) this.buckets.set(bucket, (ids = []));
    insertSorted(ids, record.id);
  }

  private remove(id: number): void {
    const found = this.byId.get(id);
    if (!found) return;
    this.byId.delete(id);
    removeSorted(this.ids, id);
    const ids = this.buckets.get(bucketOf(found.record));
    if (ids) removeSorted(ids, id);
  }
}

// ---- the entry of a call ------------------------------------------------------------------------

/** Requests whose error was a 404 the rules answered (HiddenByPolicy): refused, not failed (audit-hook.ts notes them). */
export const hiddenByPolicy = new WeakSet<FastifyRequest>();

/** `METHOD /path/{param}` as the OpenAPI document (and ROUTE_RULES) names the route. */
export function routeKey(method: string, fastifyPath: string): string {
  return `${method === 'HEAD' ? 'GET' : method} ${fastifyPath.replace(/:([A-Za-z_]+)/g, '{$1}')}`;
}

/** The kind of record a route's path acts on, by its leading segments. */
const TARGET_KINDS: ReadonlyArray<[prefix: string, kind: string]> = [
  ['/deployments/', 'deployment'],
  ['/vault/tokens', 'token'],
  ['/vault/registry-credentials', 'registry_credential'],
  ['/certificates', 'certificate'],
  ['/service-accounts', 'service_account'],
  ['/projects', 'project'],
  ['/clusters', 'cluster'],
  ['/presets', 'preset'],
  ['/audit', 'audit'],
  ['/auth/', 'session'],
];

/** The created or changed record's id and name from a JSON answer; nothing else of it is read. */
function answered(payload: unknown, contentType: unknown): { id?: number | string; name?: string } {
  if (typeof payload !== 'string' || payload.length > 256 * 1024 || !String(contentType ?? '').includes('json')) return {};
  try {
    const body = JSON.parse(payload) as { id?: unknown; name?: unknown };
    return {
      ...(typeof body.id === 'number' ? { id: body.id } : {}),
      ...(typeof body.name === 'string' && body.name.length <= 200 ? { name: body.name } : {}),
    };
  } catch {
    return {};
  }
}

/** What a call acted on: the kind its path names, the id in its path (else the answer's: a create), the name when the answer has it. */
export function targetOf(path: string, params: Record<string, unknown>, answer: { id?: number | string; name?: string }): AuditRecord['target'] {
  const kind = TARGET_KINDS.find(([prefix]) => path.startsWith(prefix))?.[1];
  if (kind === undefined) return null;
  if (kind === 'project' && typeof params.subject === 'string') return { kind: 'member', id: params.subject, name: null };
  const fromPath = kind === 'project' ? params.project : params.id;
  // A call refused before validation still has its path's ids as text.
  const id = typeof fromPath === 'string' && kind !== 'project' && /^[0-9]{1,15}$/.test(fromPath) ? Number(fromPath) : typeof fromPath === 'number' || typeof fromPath === 'string' ? fromPath : null;
  if (id === null) {
    // A create: the new record's id (a project is known by its name).
    const newId = kind === 'project' ? (answer.name ?? null) : (answer.id ?? null);
    return { kind, id: newId, name: answer.name ?? null };
  }
  // The answer names the target only when it is the target (a clone answers with the copy).
  const same = kind === 'project' ? answer.name === id : answer.id === id;
  return { kind, id, name: same ? (answer.name ?? null) : null };
}

function resultOf(request: FastifyRequest, status: number): AuditResult {
  if (status === 401 || status === 403 || (status === 404 && hiddenByPolicy.has(request))) return 'refused';
  return status < 400 ? 'allowed' : 'failed';
}

/** The project an entry belongs to: the one in the path, the request's, or none (a platform action, an unknown caller, a refused project header). */
function projectOf(request: FastifyRequest, principal: Principal | null, rule: RouteRule): string | null {
  const params = (request.params ?? {}) as Record<string, unknown>;
  if (typeof params.project === 'string') return params.project;
  if (principal === null || PLATFORM_ACTIONS.has(rule)) return null;
  const header = request.headers[PROJECT_HEADER];
  const asked = Array.isArray(header) ? header[0] : header;
  // The header named a project the caller cannot see: the request never acted in one.
  if (asked !== undefined && asked !== request.project) return null;
  return request.project;
}

/** The entry of a call, or null when it is not audited (a plain read, a public or sign-in route). */
export function entryOf(request: FastifyRequest, answer: { status: number; payload?: unknown; contentType?: unknown }, time: string): NewAuditEntry | null {
  const rule = request.routeOptions.config.rule;
  const path = request.routeOptions.url;
  if (rule === undefined || rule === 'public' || rule === 'auth' || path === undefined) return null;
  const status = answer.status;
  const result = resultOf(request, status);
  const mutating = request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'OPTIONS';
  if (result !== 'refused' && !mutating && !AUDITED_READS.has(rule)) return null;
  const principal = request.principal;
  const project = projectOf(request, principal, rule);
  const role: AuditRecord['role'] = principal === null ? null : principal.admin ? 'admin' : project === null ? null : roleIn(principal, project);
  const named = mutating && status < 300 ? answered(answer.payload, answer.contentType) : {};
  return {
    time,
    request_id: String(request.id),
    actor: principal ? { kind: principal.kind, id: principal.id, name: principal.name } : { kind: 'anonymous', id: null, name: null },
    role,
    project,
    action: rule,
    route: routeKey(request.method, path),
    target: targetOf(path, (request.params ?? {}) as Record<string, unknown>, named),
    result,
    status,
    source_address: request.ip,
  };
}

/** A filter the log cannot match: refused rather than answered empty, so a typo is seen. */
export function checkTime(field: 'since' | 'until', value: string | undefined): void {
  if (value !== undefined && Number.isNaN(Date.parse(value))) {
    throw new PlatformError('invalid_field', `${field} must be a time (ISO 8601, e.g. 2026-11-01T00:00:00Z)`, { field });
  }
}
