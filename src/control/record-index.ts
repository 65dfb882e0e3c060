// Owns what the control API's checks and lists need to know of every record, kept in memory
// from the store's change feed (an informer's cache, as Kubernetes clients keep one): per
// deployment its name, family, traffic (tag hosts), bindings and quota footprint; the vault's
// token hashes and ids, service-account key hashes, unrevoked certificate ids and registry
// credentials. A create then checks names, credentials and quota without reading every record
// of the store, and a list pages over ids without reading the others.
//
// Consistency: loaded on first use (the watch is on before the list is read); each change
// event re-reads that one record; this process's own writes are applied when they return
// (`indexedStore`), so a request sees every write made before it here, and others' writes as
// soon as the feed brings them (at once with the file store, whose feed is in-process). A
// resync of the feed (a shared store's connection was cut) or a failed re-read makes the next
// use reload everything. Versions only grow and ids are never reused, so an older read never
// replaces a newer one and a deleted record never comes back.

import { projectOf } from '../domain/access.js';
import type { Catalog } from '../domain/catalog.js';
import { footprint, holdingsOf, type Footprint, type Holdings } from '../domain/quota.js';
import type { DeploymentRecord, Family, Kind, RecordMap } from '../domain/records.js';
import { registryHostOf, type BoundCredential } from '../domain/registry-hosts.js';
import type { ChangeEvent, CreateOptions, Store, Versioned, WriteOptions } from '../store/store.js';

/** What the index keeps of a deployment. */
export interface DeploymentEntry {
  id: number;
  /** The owning project (absent in the record: `default`). */
  project: string;
  family: Family;
  name: string;
  cluster_id: number;
  /** Tag hosts are `<tag>-<name>`: another name must not take one. */
  traffic: DeploymentRecord['traffic'];
  auth: Pick<DeploymentRecord['auth'], 'token_id' | 'client_certificate_id'>;
  /** The vault registry credential its current spec pulls with, and its image's registry host. */
  registry: { credential_id: number; host: string } | null;
  footprint: Footprint;
}

/** A registry credential as the index keeps it: its binding, and its project. */
export type CredentialEntry = BoundCredential & { project: string };

interface Digests {
  deployment: DeploymentEntry;
  token: { id: number; project: string; hash: string };
  /** `project` null: an admin account, which belongs to no project. */
  service_account: { id: number; project: string | null; key_hash: string };
  certificate: { id: number; project: string; revoked: boolean; deployment_id: number | null };
  registry_credential: CredentialEntry;
}

/**
 * Which records a list or a check sees: one family of deployments, one project's records
 * (absent: every project's), and for service accounts whether the admin accounts (no project)
 * are among them.
 */
export interface Scope {
  family?: Family;
  project?: string;
  admins?: boolean;
}

const scopeKey = (scope: Scope | undefined): string => `${scope?.family ?? ''}|${scope?.project ?? '*'}|${scope?.admins === true ? 'a' : ''}`;

function inScope(digest: { project?: string | null; family?: Family }, scope: Scope | undefined): boolean {
  if (scope === undefined) return true;
  if (scope.family !== undefined && digest.family !== scope.family) return false;
  if (scope.project === undefined) return true;
  if (digest.project === null) return scope.admins === true;
  return digest.project === scope.project;
}

type Indexed = keyof Digests;
/** The kinds the index keeps. */
export type IndexedKind = Indexed;
const INDEXED: readonly Indexed[] = ['deployment', 'token', 'service_account', 'certificate', 'registry_credential'];
const isIndexed = (kind: Kind): kind is Indexed => (INDEXED as readonly Kind[]).includes(kind);

interface Entry<T> {
  version: number;
  digest: T;
}

type Tables = { [K in Indexed]: Map<number, Entry<Digests[K]>> };
const emptyTables = (): Tables => ({ deployment: new Map(), token: new Map(), service_account: new Map(), certificate: new Map(), registry_credential: new Map() });

/** The index at one moment: what a request reads. Sets and lists are derived once per change of their kind. */
export interface IndexView {
  /** Every deployment, or one project's. */
  deployments(project?: string): readonly DeploymentEntry[];
  deployment(id: number): DeploymentEntry | undefined;
  /** Ids of a kind in ascending order, of the records in `scope` (all when absent). */
  ids(kind: Indexed, scope?: Scope): readonly number[];
  /** Every project's: a value is screened against every credential there is. */
  tokenHashes(): ReadonlySet<string>;
  /** One project's vault tokens (all when absent). */
  tokenIds(project?: string): ReadonlySet<number>;
  platformKeyHashes(): ReadonlySet<string>;
  /** Certificates not revoked (one project's, or all). */
  liveCertificateIds(project?: string): ReadonlySet<number>;
  registryCredentials(project?: string): ReadonlyMap<number, CredentialEntry>;
  /** What every deployment (of `project`, when given) but `excludeId` holds of the quota and the catalog's instances. */
  holdings(excludeId?: number, project?: string): Holdings;
}

export class RecordIndex implements IndexView {
  private tables = emptyTables();
  private readonly deleted: { [K in Indexed]: Set<number> } = { deployment: new Set(), token: new Set(), service_account: new Set(), certificate: new Set(), registry_credential: new Set() };
  private readonly derived = new Map<string, unknown>();
  private loading: Promise<void> | null = null;
  private loaded = false;
  private stale = false;
  /** Records changed while a load was reading: read again once it has swapped its tables in. */
  private changedWhileLoading: Array<{ kind: Indexed; id: number }> | null = null;
  private readonly pending = new Set<Promise<void>>();
  private unsubscribe: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    private readonly catalog: Catalog,
  ) {}

  /** The index with every change this process has seen so far applied; loads it on first use. */
  async current(): Promise<IndexView> {
    if (!this.loaded || this.stale) await this.load();
    if (this.pending.size > 0) await Promise.all([...this.pending]);
    if (this.stale) await this.load();
    return this;
  }

  /** Stops following the feed. */
  close(): void {
    for (const stop of this.unsubscribe) stop();
    this.unsubscribe = [];
  }

  /** Applies a record as a write returned it (own writes, before the feed brings them). */
  applyWritten<K extends Kind>(kind: K, id: number, written: Versioned<RecordMap[K]> | null): void {
    if (!isIndexed(kind)) return;
    // A load under way may have read before this write: the record is read again after it.
    if (this.changedWhileLoading !== null) this.changedWhileLoading.push({ kind, id });
    if (!this.loaded) return;
    if (written === null) this.remove(kind, id);
    else this.put(kind, id, written.version, written.value as RecordMap[Indexed]);
  }

  private load(): Promise<void> {
    this.loading ??= this.reload().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async reload(): Promise<void> {
    if (this.unsubscribe.length === 0) {
      this.unsubscribe.push(
        this.store.watch((event) => this.changed(event)),
        this.store.onResync(() => {
          this.stale = true;
        }),
      );
    }
    this.stale = false;
    this.changedWhileLoading = [];
    try {
      const lists = await Promise.all(INDEXED.map(async (kind) => [kind, await this.store.list(kind)] as const));
      const before = this.tables;
      const tables = emptyTables();
      const touched = new Set((this.changedWhileLoading ?? []).map(({ kind, id }) => `${kind}:${id}`));
      for (const [kind, records] of lists) {
        const table = tables[kind] as Map<number, Entry<unknown>>;
        for (const { value, version } of records) {
          const id = (value as { id: number }).id;
          if (!this.deleted[kind].has(id)) table.set(id, { version, digest: this.digest(kind, value) });
        }
        // Gone while the feed was cut: never to be brought back by a late re-read. (One
        // changed during the load is read again below and decides for itself.)
        for (const id of before[kind].keys()) if (!table.has(id) && !touched.has(`${kind}:${id}`)) this.deleted[kind].add(id);
      }
      this.tables = tables;
      this.derived.clear();
      this.loaded = true;
    } catch (err) {
      this.stale = true;
      throw err;
    } finally {
      const changed = this.changedWhileLoading;
      this.changedWhileLoading = null;
      for (const { kind, id } of changed) this.refresh(kind, id);
    }
  }

  private changed(event: ChangeEvent): void {
    if (!isIndexed(event.kind)) return;
    if (this.changedWhileLoading !== null) this.changedWhileLoading.push({ kind: event.kind, id: event.id });
    if (!this.loaded) return;
    if (event.op === 'delete') return this.remove(event.kind, event.id);
    if ((this.tables[event.kind].get(event.id)?.version ?? 0) >= event.version) return;
    this.refresh(event.kind, event.id);
  }

  /** Reads one record again; a failed read makes the next use reload everything. */
  private refresh(kind: Indexed, id: number): void {
    const job = this.store
      .get(kind, id)
      .then((found) => (found ? this.put(kind, id, found.version, found.value) : this.remove(kind, id)))
      .catch(() => {
        this.stale = true;
      })
      .finally(() => this.pending.delete(job));
    this.pending.add(job);
  }

  private put(kind: Indexed, id: number, version: number, value: RecordMap[Indexed]): void {
    if (this.deleted[kind].has(id)) return;
    const table = this.tables[kind] as Map<number, Entry<unknown>>;
    if ((table.get(id)?.version ?? 0) >= version) return;
    table.set(id, { version, digest: this.digest(kind, value) });
    this.invalidate(kind);
  }

  private remove(kind: Indexed, id: number): void {
    this.deleted[kind].add(id);
    if (this.tables[kind].delete(id)) this.invalidate(kind);
  }

  private invalidate(kind: Indexed): void {
    for (const key of this.derived.keys()) if (key.startsWith(`${kind}:`)) this.derived.delete(key);
  }

  private digest(kind: Indexed, value: RecordMap[Indexed]): Digests[Indexed] {
    switch (kind) {
      case 'deployment': {
        const d = value as DeploymentRecord;
        const registry = d.spec.family === 'general' && d.spec.registry_credential_id != null ? { credential_id: d.spec.registry_credential_id, host: registryHostOf(d.spec.image) } : null;
        return {
          id: d.id,
          project: projectOf(d),
          family: d.family,
          name: d.name,
          cluster_id: d.cluster_id,
          traffic: d.traffic ?? null,
          auth: { token_id: d.auth.token_id, client_certificate_id: d.auth.client_certificate_id },
          registry,
          footprint: footprint(d, this.catalog),
        };
      }
      case 'token': {
        const t = value as RecordMap['token'];
        return { id: t.id, project: projectOf(t), hash: t.hash };
      }
      case 'service_account': {
        const a = value as RecordMap['service_account'];
        return { id: a.id, project: a.role === 'admin' ? null : projectOf(a), key_hash: a.key_hash };
      }
      case 'certificate': {
        const c = value as RecordMap['certificate'];
        return { id: c.id, project: projectOf(c), revoked: c.revoked_at !== null, deployment_id: c.deployment_id };
      }
      case 'registry_credential': {
        const c = value as RecordMap['registry_credential'];
        return { id: c.id, project: projectOf(c), name: c.name, registry: c.registry ?? null };
      }
    }
  }

  private memo<T>(key: string, build: () => T): T {
    if (this.derived.has(key)) return this.derived.get(key) as T;
    const value = build();
    this.derived.set(key, value);
    return value;
  }

  private digests<K extends Indexed>(kind: K): Digests[K][] {
    return this.memo(`${kind}:all`, () => [...this.tables[kind].values()].map((e) => e.digest));
  }

  deployments(project?: string): readonly DeploymentEntry[] {
    const all = this.digests('deployment');
    return project === undefined ? all : this.memo(`deployment:of:${project}`, () => all.filter((d) => d.project === project));
  }

  deployment(id: number): DeploymentEntry | undefined {
    return this.tables.deployment.get(id)?.digest;
  }

  ids(kind: Indexed, scope?: Scope): readonly number[] {
    return this.memo(`${kind}:ids:${scopeKey(scope)}`, () => {
      const all = [...this.tables[kind].values()].map((e) => e.digest as { id: number; family?: Family; project?: string | null });
      return all.filter((d) => inScope(d, scope)).map((d) => d.id).sort((a, b) => a - b);
    });
  }

  tokenHashes(): ReadonlySet<string> {
    return this.memo('token:hashes', () => new Set(this.digests('token').map((t) => t.hash)));
  }

  tokenIds(project?: string): ReadonlySet<number> {
    return this.memo(`token:idset:${project ?? '*'}`, () => new Set(this.digests('token').filter((t) => project === undefined || t.project === project).map((t) => t.id)));
  }

  platformKeyHashes(): ReadonlySet<string> {
    return this.memo('service_account:hashes', () => new Set(this.digests('service_account').map((a) => a.key_hash)));
  }

  liveCertificateIds(project?: string): ReadonlySet<number> {
    return this.memo(`certificate:live:${project ?? '*'}`, () =>
      new Set(this.digests('certificate').filter((c) => !c.revoked && (project === undefined || c.project === project)).map((c) => c.id)),
    );
  }

  registryCredentials(project?: string): ReadonlyMap<number, CredentialEntry> {
    return this.memo(`registry_credential:map:${project ?? '*'}`, () =>
      new Map(this.digests('registry_credential').filter((c) => project === undefined || c.project === project).map((c) => [c.id, c])),
    );
  }

  holdings(excludeId?: number, project?: string): Holdings {
    const all = this.deployments(project);
    return holdingsOf(excludeId === undefined ? all : all.filter((d) => d.id !== excludeId));
  }
}

/**
 * The audit log is written by control/audit-log.ts alone, on the store itself: the store every
 * route gets refuses to create, change or delete an entry, so no route can.
 */
function refuseAudit(kind: Kind): void {
  if (kind === 'audit') throw new Error('audit entries are written by the audit log alone, never through the API\'s store');
}

/**
 * The store with every write made through it applied to `index` as soon as it returns, so
 * this process reads its own writes even before the change feed brings them. Every other
 * member — and any the Store interface gains later (compact() came so) — passes through to
 * the store itself: a wrapper that listed them would drop a new one without a word.
 */
export function indexedStore(store: Store, index: RecordIndex): Store {
  const writes: Pick<Store, 'create' | 'update' | 'delete'> = {
    create: async <K extends Kind>(kind: K, build: (id: number) => RecordMap[K], options?: CreateOptions) => {
      refuseAudit(kind);
      const created = await store.create(kind, build, options);
      index.applyWritten(kind, (created.value as { id: number }).id, created);
      return created;
    },
    update: async <K extends Kind>(kind: K, id: number, expectedVersion: number, value: RecordMap[K], options?: WriteOptions) => {
      refuseAudit(kind);
      const updated = await store.update(kind, id, expectedVersion, value, options);
      index.applyWritten(kind, id, updated);
      return updated;
    },
    delete: async (kind, id, expectedVersion, options) => {
      refuseAudit(kind);
      const gone = await store.delete(kind, id, expectedVersion, options);
      index.applyWritten(kind, id, null);
      return gone;
    },
  };
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'create' || prop === 'update' || prop === 'delete') return writes[prop];
      const value = Reflect.get(target, prop, target) as unknown;
      // Bound to the store: a method reached through the proxy still runs on the store itself.
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
