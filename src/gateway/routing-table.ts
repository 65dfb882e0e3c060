// Owns the gateway's routing table: hostname (and, for path addresses, name and project) →
// what the request path needs to know about a deployment (the bound token's hash, the client
// certificates it accepts, each credential's cap on X-Priority, paused, status, the ready
// replicas it routes to with the revision each runs, the split of its traffic between
// revisions, its body and rate limits and its flow control), and one route per tag of its
// traffic (`<tag>-<name>.<domain>`, and the path name `<tag>-<name>`) that reaches only the
// tagged revision's replicas; a deployment's own host wins over a tag host, and of two tags
// claiming one host the first (by deployment id, then traffic order) wins. Routes are keyed by
// project and name (domain/endpoint-address.ts): another project's deployment is at
// `<name>.<project>.<domain>` and `/endpoints/<name>.<project>/`, so two projects may each
// have a `chat` and each is reached only at its own addresses; the default project's are also
// reached at `<name>.default.<domain>` and `/endpoints/<name>.default/`. It is kept in
// memory, so the request path never touches the store: read whole at start and on the store's
// resync (its feed was cut, events were lost); after that each change-feed event re-reads only
// the record it names, and only the routes of the deployments that record touches are rebuilt
// (route-sources.ts keeps the indexes that say which) — so a change costs the same with ten
// deployments or a thousand. When the store cannot be read the last table keeps serving: a
// failed update is retried every second, with the records it had to read still pending. A
// bound token whose hash is also a service-account key's is left out: a platform credential
// never opens an endpoint, whatever a record written before that rule says.

import { tagHost, tagLabel, type RevisionShare } from '../domain/traffic.js';
import { addressName, canonicalEndpointHost, defaultProjectAlias } from '../domain/endpoint-address.js';
import { DEFAULT_PROJECT } from '../domain/access.js';
import { CoalescingRunner } from '../core/coalescing-runner.js';
import type { Priority } from '../domain/priority.js';
import type { DeploymentStatus, FlowControl, Kind, Protocol, RateLimit, RoutingPolicy } from '../domain/records.js';
import type { ChangeEvent, Store } from '../store/store.js';
import type { ReplicaRef } from '../balancer/selector.js';
import { RouteSources, type Basis, type RoutedKind, type RoutedRecord } from './route-sources.js';

/** One revision of a split: its share and its ready replicas. */
export interface RevisionRoute {
  readonly revision: number;
  /** Whole percent; 0 for a revision that runs for its tags only (never chosen by the split). */
  readonly percent: number;
  /** Its ready replicas of the routed component; the same array object until the set changes. */
  readonly replicas: readonly ReplicaRef[];
}

/** How a deployment's requests are split between revisions (domain/traffic.ts: splitOf). */
export interface TrafficSplit {
  /** The shares as text ("3:90,4:10"): it changes exactly when they do. */
  readonly key: string;
  /** In the order of the traffic list. */
  readonly revisions: readonly RevisionRoute[];
}

/** What a tag host reaches: one revision. */
export interface TagTarget {
  readonly name: string;
  readonly revision: number;
}

export interface Route {
  deploymentId: number;
  /**
   * The deployment's name as its addresses spell it: `chat` in the default project, `chat.team-a`
   * in another (domain/endpoint-address.ts: addressName). Unique in the table, so it is what
   * the gateway's metrics, logs and messages name the deployment by.
   */
  name: string;
  /** The project that owns the deployment. */
  project: string;
  /**
   * The canonical host, `<name>.<domain>` (another project's `<name>.<project>.<domain>`; a tag
   * route: `<tag>-<name>…`), whichever address the request used: the realm of its 401s too.
   */
  host: string;
  /** gRPC deployments are addressed by host only. */
  protocol: Protocol;
  /** SHA-256 of the bound endpoint token, or null when the deployment uses only mTLS. */
  tokenHash: string | null;
  /** The bound token's cap on X-Priority; null: none (or no token). */
  tokenMaxPriority: Priority | null;
  /**
   * The unrevoked client certificates it accepts — the bound one and every one issued for it
   * (domain/client-certificates.ts) — by SHA-256 fingerprint (lowercase hex, no colons), each
   * with its cap on X-Priority (null: none). Empty: no mTLS.
   */
  clientCertificates: ReadonlyMap<string, Priority | null>;
  /** X-Session-Id selects the replica by consistent hashing (general inference switch). */
  affinity: boolean;
  /**
   * The placement policy that orders its replicas: the spec's routing_policy for general
   * deployments; `affinity` for orchestrated ones, whose Frontend makes the prefix-aware choice
   * among its Workers itself.
   */
  routingPolicy: RoutingPolicy;
  paused: boolean;
  /** General inference with min_replicas 0: at zero, the activator holds its requests. */
  scaleToZero: boolean;
  status: DeploymentStatus;
  /** The component requests go to: every replica (general) or the Frontend (orchestrated). */
  component: string;
  /**
   * Ready replicas of that component, every revision's (a tag route: its revision's only); the
   * same array object until the set changes. Flow control, the activator and admission work on
   * this set.
   */
  replicas: readonly ReplicaRef[];
  /**
   * The split of requests between revisions; null when traffic names one revision (every
   * replica of `replicas` is a candidate, as in a rolling update) and on tag routes.
   */
  split: TrafficSplit | null;
  /** The revisions the deployment's traffic names (resolveTraffic), in list order. */
  trafficRevisions: readonly number[];
  /** On a tag route, the tag and its revision; null on the deployment's own route. */
  tag: TagTarget | null;
  /** Largest request body in bytes; null: the gateway's default. */
  maxBodyBytes: number | null;
  /**
   * Longest wait for a replica's first response (HTTP: its headers; gRPC: its first message),
   * in ms; null: the gateway's default.
   */
  firstResponseMs: number | null;
  /** Per-credential rate limit; null: none. */
  rateLimit: RateLimit | null;
  /** The queue past saturation as applied: the deployment's own, else DEFAULT_FLOW_CONTROL. */
  flowControl: FlowControl;
}

/**
 * What one update of the table changed, for those who follow it (gateway.ts prunes its
 * per-deployment and per-replica state by it): after a full rebuild, anything may have.
 */
export interface TableChange {
  /** The table was read whole (start, the store's resync): followers re-sync everything. */
  readonly full: boolean;
  /** Deployments whose routes were rebuilt, each with its own route before (undefined: it had none). */
  readonly deployments: ReadonlyMap<number, Route | undefined>;
  /** Hosts served now that were not before (own or tag), and those no longer served. */
  readonly hostsAdded: readonly string[];
  readonly hostsRemoved: readonly string[];
  /** A replica (its id or its address) left the table. */
  readonly replicasLeft: boolean;
  /** A deployment left the table or changed its name. */
  readonly deploymentsLeft: boolean;
}

const ROUTED: ReadonlySet<Kind> = new Set<Kind>(['deployment', 'token', 'replica', 'certificate', 'service_account']);
/** The change that asked for a failed update is not announced again: retry until one lands. */
const RETRY_MS = 1_000;

/** One tag of a deployment's traffic claiming its label; ordered as the claims are decided. */
interface TagClaim {
  deploymentId: number;
  /** Position of the share in the traffic list, then of the tag in the share. */
  share: number;
  index: number;
  revision: number;
  tag: string;
}

const claimOrder = (a: TagClaim, b: TagClaim) => a.deploymentId - b.deploymentId || a.share - b.share || a.index - b.index;

type Pending = { kind: RoutedKind; id: number; op: ChangeEvent['op'] };

/** Counts of a multiset with its members as a set (retain() of the replica state takes a set). */
class CountedSet<T> {
  readonly members = new Set<T>();
  private readonly counts = new Map<T, number>();

  add(v: T): void {
    const n = this.counts.get(v) ?? 0;
    this.counts.set(v, n + 1);
    if (n === 0) this.members.add(v);
  }

  /** True when `v` left the set. */
  remove(v: T): boolean {
    const n = this.counts.get(v) ?? 0;
    if (n > 1) {
      this.counts.set(v, n - 1);
      return false;
    }
    this.counts.delete(v);
    return this.members.delete(v);
  }

  clear(): void {
    this.members.clear();
    this.counts.clear();
  }
}

export class RoutingTable {
  /** The deployments' own routes, by host. */
  private readonly table = new Map<string, Route>();
  /** Tag routes by host (a host taken by a deployment's own route is not here). */
  private readonly tags = new Map<string, Route>();
  /**
   * Own routes by address name and tag routes by address label (`<tag>-<name>`, with
   * `.<project>` outside the default project), for path addresses: keyed by project and name.
   */
  private readonly ownByName = new Map<string, Route>();
  private readonly tagByLabel = new Map<string, Route>();
  private readonly byId = new Map<number, Route>();
  /** Deployments whose own route has a ready replica. */
  private readonly serving = new Set<number>();
  /** Address label → the tags claiming it, in claimOrder; deployment → the labels it claims. */
  private readonly claims = new Map<string, TagClaim[]>();
  private readonly claimed = new Map<number, string[]>();
  /** The replicas of the own routes (a tag route's are a subset), by id and by address. */
  private readonly replicaIdSet = new CountedSet<number>();
  private readonly addressSet = new CountedSet<string>();
  private readonly sources: RouteSources;
  /** Records named by the change feed since the last update, by `${kind}:${id}`. */
  private readonly pending = new Map<string, Pending>();
  /** The next update reads everything (start, resync, a failed full read). */
  private full = true;
  private started = false;
  private unwatch: (() => void) | null = null;
  private unresync: (() => void) | null = null;
  private retry: NodeJS.Timeout | null = null;
  private failing = false;
  /** Bursts of changes coalesce into one update at a time, plus one after it. */
  private readonly updates = new CoalescingRunner(() => this.update(), (err) => this.failed(err));
  private readonly listeners: Array<(routes: ReadonlyMap<string, Route>, change: TableChange) => void> = [];

  constructor(
    private readonly store: Store,
    readonly domain: string,
    /** Told of the first failure of a run of failed updates (the next ones are retries). */
    private readonly onError: (err: Error) => void = () => {},
    private readonly onRecovered: () => void = () => {},
  ) {
    this.sources = new RouteSources(domain);
  }

  async start(): Promise<void> {
    this.unwatch = this.store.watch((event) => {
      if (!ROUTED.has(event.kind)) return;
      this.pending.set(`${event.kind}:${event.id}`, { kind: event.kind as RoutedKind, id: event.id, op: event.op });
      if (this.started) this.updates.trigger();
    });
    this.unresync = this.store.onResync(() => {
      this.full = true;
      if (this.started) this.updates.trigger();
    });
    // Events that arrive during the first read wait for it: an update running beside it could
    // be overwritten by its older lists.
    await this.rebuild();
    this.started = true;
    if (this.pending.size > 0 || this.full) this.updates.trigger();
  }

  stop(): void {
    this.started = false;
    this.unwatch?.();
    this.unwatch = null;
    this.unresync?.();
    this.unresync = null;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
  }

  /**
   * Called after every update with the deployments' own routes by host, one per deployment
   * (tag hosts are in hosts() and tagRoutes()), and what the update changed.
   */
  onChange(listener: (routes: ReadonlyMap<string, Route>, change: TableChange) => void): void {
    this.listeners.push(listener);
  }

  /** Resolves once no update is running or due: every change announced so far is in the table (tests). */
  settled(): Promise<void> {
    return this.updates.settled();
  }

  /**
   * Host header value (any case, with or without port) → route: a deployment's own, else a
   * tag's; `<label>.default.<domain>` is the default project's `<label>.<domain>`.
   */
  lookup(hostHeader: string | undefined): Route | undefined {
    if (!hostHeader) return undefined;
    let host = hostHeader;
    const colon = host.lastIndexOf(':');
    if (colon !== -1 && !host.endsWith(']')) host = host.slice(0, colon);
    const exact = this.table.get(host) ?? this.tags.get(host);
    if (exact !== undefined) return exact;
    const lower = canonicalEndpointHost(host.toLowerCase(), this.domain);
    return this.table.get(lower) ?? this.tags.get(lower);
  }

  /**
   * A deployment, or a tag (`<tag>-<name>`), of a project by its exact name (path addresses;
   * names are lowercase): another project's deployment of the same name is never it.
   */
  lookupName(name: string, project: string = DEFAULT_PROJECT): Route | undefined {
    const key = addressName(name, project);
    return this.ownByName.get(key) ?? this.tagByLabel.get(key);
  }

  /** A deployment's own route. */
  lookupDeployment(deploymentId: number): Route | undefined {
    return this.byId.get(deploymentId);
  }

  /** The deployments' own routes, one per deployment. */
  routes(): IterableIterator<Route> {
    return this.table.values();
  }

  /** The own routes with at least one ready replica: what per-replica work (scrapes, engine figures) visits. */
  *servingRoutes(): IterableIterator<Route> {
    for (const id of this.serving) yield this.byId.get(id)!;
  }

  /** The tag routes. */
  tagRoutes(): IterableIterator<Route> {
    return this.tags.values();
  }

  /**
   * Every host served: the deployments' and their tags', the default project's in both
   * spellings (certificates by SNI follow these).
   */
  hosts(): Set<string> {
    return new Set(this.withAliases([...this.table.keys(), ...this.tags.keys()]));
  }

  /** Canonical hosts and, after each of the default project's, its `<label>.default.<domain>` spelling. */
  private withAliases(hosts: readonly string[]): string[] {
    const all: string[] = [];
    for (const host of hosts) {
      all.push(host);
      const alias = defaultProjectAlias(host, this.domain);
      if (alias !== null) all.push(alias);
    }
    return all;
  }

  /** The ids of the deployments in the table (a copy). */
  deploymentIds(): Set<number> {
    return new Set(this.byId.keys());
  }

  /** The ids of the replicas routed to now (a live view, kept as routes change). */
  replicaIds(): ReadonlySet<number> {
    return this.replicaIdSet.members;
  }

  /** The addresses of the replicas routed to now (a live view). */
  addresses(): ReadonlySet<string> {
    return this.addressSet.members;
  }

  get size(): number {
    return this.table.size;
  }

  private failed(err: Error): void {
    if (!this.failing) this.onError(err);
    this.failing = true;
    if (this.unwatch === null || this.retry !== null) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.updates.trigger();
    }, RETRY_MS);
    this.retry.unref();
  }

  /** Applies what the change feed named since the last update: each record re-read once, then only the routes it touches. */
  private async update(): Promise<void> {
    if (this.full) return this.rebuild();
    const batch = [...this.pending.values()];
    this.pending.clear();
    let records: Array<RoutedRecord | undefined>;
    try {
      // Ids are never reused: a deleted record needs no read.
      records = await Promise.all(batch.map((p) => (p.op === 'delete' ? Promise.resolve(undefined) : this.read(p.kind, p.id))));
    } catch (err) {
      // Still to do; a newer event of the same record, if one came meanwhile, stands.
      for (const p of batch) {
        const key = `${p.kind}:${p.id}`;
        if (!this.pending.has(key)) this.pending.set(key, p);
      }
      throw err;
    }
    const affected = new Set<number>();
    batch.forEach((p, i) => this.sources.apply(p.kind, p.id, records[i], affected));
    this.refresh(affected, false);
  }

  private async read(kind: RoutedKind, id: number): Promise<RoutedRecord | undefined> {
    return (await this.store.get(kind, id))?.value as RoutedRecord | undefined;
  }

  /** Reads every record and rebuilds every route (arrays kept where their sets are unchanged). */
  private async rebuild(): Promise<void> {
    this.full = false;
    // What the feed names from here on is newer than these lists, or the same: it is applied after.
    this.pending.clear();
    const [accounts, tokens, certificates, replicas, deployments] = await Promise.all([
      this.store.list('service_account'),
      this.store.list('token'),
      this.store.list('certificate'),
      this.store.list('replica'),
      this.store.list('deployment'),
    ]).catch((err: unknown) => {
      this.full = true;
      throw err;
    });
    this.sources.clear();
    const touched = new Set<number>();
    for (const { value } of accounts) this.sources.apply('service_account', value.id, value, touched);
    for (const { value } of tokens) this.sources.apply('token', value.id, value, touched);
    for (const { value } of certificates) this.sources.apply('certificate', value.id, value, touched);
    for (const { value } of replicas) this.sources.apply('replica', value.id, value, touched);
    for (const { value } of deployments) this.sources.apply('deployment', value.id, value, touched);
    this.refresh(new Set([...this.byId.keys(), ...this.sources.bases.keys()]), true);
  }

  /** Rebuilds the routes of `ids` (own and tag) from the sources, then tells the listeners. */
  private refresh(ids: ReadonlySet<number>, full: boolean): void {
    const before = new Map<number, Route | undefined>();
    const hostsBefore = new Map<string, boolean>();
    const touch = (host: string) => {
      if (!hostsBefore.has(host)) hostsBefore.set(host, this.table.has(host) || this.tags.has(host));
    };
    const labels = new Set<string>();
    let replicasLeft = false;
    let deploymentsLeft = false;
    for (const id of [...ids].sort((a, b) => a - b)) {
      const old = this.byId.get(id);
      before.set(id, old);
      for (const label of this.claimed.get(id) ?? []) labels.add(label);
      const basis = this.sources.bases.get(id);
      const route = basis === undefined ? undefined : this.build(basis, old);
      if (old !== undefined && (route === undefined || route.host !== old.host)) {
        touch(old.host);
        // Another deployment of this batch may have taken the name already.
        if (this.table.get(old.host) === old) this.table.delete(old.host);
        if (this.ownByName.get(old.name) === old) this.ownByName.delete(old.name);
        labels.add(old.name);
        deploymentsLeft = true;
      }
      if (old?.replicas !== route?.replicas) {
        for (const r of old?.replicas ?? []) {
          if (this.replicaIdSet.remove(r.id)) replicasLeft = true;
          if (this.addressSet.remove(r.address)) replicasLeft = true;
        }
        for (const r of route?.replicas ?? []) {
          this.replicaIdSet.add(r.id);
          this.addressSet.add(r.address);
        }
      }
      if (route === undefined) {
        this.byId.delete(id);
        this.serving.delete(id);
        this.claim(id, null);
        continue;
      }
      touch(route.host);
      this.table.set(route.host, route);
      this.ownByName.set(route.name, route);
      this.byId.set(id, route);
      if (route.replicas.length > 0) this.serving.add(id);
      else this.serving.delete(id);
      labels.add(route.name);
      for (const label of this.claim(id, basis!)) labels.add(label);
    }
    for (const label of labels) this.decideTag(label, touch);
    const hostsAdded: string[] = [];
    const hostsRemoved: string[] = [];
    for (const [host, was] of hostsBefore) {
      const now = this.table.has(host) || this.tags.has(host);
      if (now && !was) hostsAdded.push(host);
      if (was && !now) hostsRemoved.push(host);
    }
    if (this.failing) {
      this.failing = false;
      this.onRecovered();
    }
    const change: TableChange = { full, deployments: before, hostsAdded: this.withAliases(hostsAdded), hostsRemoved: this.withAliases(hostsRemoved), replicasLeft, deploymentsLeft };
    for (const listener of this.listeners) listener(this.table, change);
  }

  /** A deployment's own route from its basis; arrays of the previous route kept while their sets are unchanged (the balancer's per-set caches hold). */
  private build(b: Basis, previous: Route | undefined): Route {
    const ready = this.sources.readyOf(b);
    const token = this.sources.tokenOf(b);
    const all = previous && sameReplicas(previous.replicas, ready) ? previous.replicas : ready;
    return {
      deploymentId: b.id,
      name: b.address,
      project: b.project,
      host: b.host,
      protocol: b.protocol,
      tokenHash: token?.hash ?? null,
      tokenMaxPriority: token?.maxPriority ?? null,
      clientCertificates: this.sources.certificatesOf(b),
      affinity: b.affinity,
      routingPolicy: b.routingPolicy,
      paused: b.paused,
      scaleToZero: b.scaleToZero,
      status: b.status,
      component: b.component,
      replicas: all,
      split: b.split === null ? null : splitRoute(b.split, all, previous?.split ?? null),
      trafficRevisions: b.shares.map((s) => s.revision),
      tag: null,
      maxBodyBytes: b.maxBodyBytes,
      firstResponseMs: b.firstResponseMs,
      rateLimit: b.rateLimit,
      flowControl: b.flowControl,
    };
  }

  /** Replaces the tag claims of a deployment (null: it has none now); the labels it claims now. */
  private claim(deploymentId: number, b: Basis | null): string[] {
    for (const label of this.claimed.get(deploymentId) ?? []) {
      const rest = (this.claims.get(label) ?? []).filter((c) => c.deploymentId !== deploymentId);
      if (rest.length > 0) this.claims.set(label, rest);
      else this.claims.delete(label);
    }
    this.claimed.delete(deploymentId);
    if (b === null) return [];
    const labels: string[] = [];
    b.shares.forEach((share, s) => {
      share.tags.forEach((tag, t) => {
        const label = addressName(tagLabel(tag, b.name), b.project);
        const claims = this.claims.get(label) ?? [];
        claims.push({ deploymentId, share: s, index: t, revision: share.revision, tag });
        claims.sort(claimOrder);
        this.claims.set(label, claims);
        if (!labels.includes(label)) labels.push(label);
      });
    });
    if (labels.length > 0) this.claimed.set(deploymentId, labels);
    return labels;
  }

  /**
   * Who serves a tag's address label now: the first claim, unless a deployment's own host or
   * name is it. Labels carry their project, so a tag only ever contends within its project.
   */
  private decideTag(label: string, touch: (host: string) => void): void {
    const winner = this.claims.get(label)?.[0];
    const own = winner === undefined ? undefined : this.byId.get(winner.deploymentId);
    const basis = winner === undefined ? undefined : this.sources.bases.get(winner.deploymentId);
    const host = own === undefined || basis === undefined ? undefined : tagHost(winner!.tag, basis.name, this.domain, basis.project);
    const previous = this.tagByLabel.get(label);
    if (previous !== undefined) {
      touch(previous.host);
      if (this.tags.get(previous.host) === previous) this.tags.delete(previous.host);
      this.tagByLabel.delete(label);
    }
    // A deployment's own host (and name) always wins: a tag never shadows an endpoint.
    if (own === undefined || host === undefined || this.table.has(host) || this.ownByName.has(label)) return;
    const revision = winner!.revision;
    // The split's array of the same revision when there is one: one set, one ring in the balancer.
    const inSplit = own.split?.revisions.find((r) => r.revision === revision)?.replicas;
    const kept = previous?.host === host ? previous : undefined;
    const ready = inSplit ?? own.replicas.filter((r) => r.revision === revision);
    const route: Route = {
      ...own,
      host,
      replicas: inSplit ?? (kept && sameReplicas(kept.replicas, ready) ? kept.replicas : ready),
      split: null,
      tag: { name: winner!.tag, revision },
      // A revision of a split never scales to zero; without one the tag follows the
      // deployment, and only a deployment with nothing ready at all is woken.
      scaleToZero: own.scaleToZero && own.split === null && own.replicas.length === 0,
    };
    touch(host);
    this.tags.set(host, route);
    this.tagByLabel.set(label, route);
  }
}

/** A split's revisions with their ready replicas, each array kept from the last table while its set is unchanged. */
function splitRoute(shares: readonly RevisionShare[], ready: readonly ReplicaRef[], previous: TrafficSplit | null): TrafficSplit {
  return {
    key: shares.map((s) => `${s.revision}:${s.percent}`).join(','),
    revisions: shares.map((s) => {
      const replicas = ready.filter((r) => r.revision === s.revision);
      const before = previous?.revisions.find((p) => p.revision === s.revision);
      return { revision: s.revision, percent: s.percent, replicas: before && sameReplicas(before.replicas, replicas) ? before.replicas : replicas };
    }),
  };
}

function sameReplicas(a: readonly ReplicaRef[], b: readonly ReplicaRef[]): boolean {
  return a.length === b.length && a.every((r, i) => r.id === b[i]!.id && r.address === b[i]!.address && r.revision === b[i]!.revision && r.metrics === b[i]!.metrics);
}
