// Owns the gateway's routing table: hostname (and, for path addresses, name) → what the
// request path needs to know about a deployment (the bound token's hash, the client
// certificates it accepts, each credential's cap on X-Priority, paused, status, the ready
// replicas it routes to with the revision each runs, the split of its traffic between
// revisions, its body and rate limits and its flow control), and one route per tag of its
// traffic (`<tag>-<name>.<domain>`, and the path name `<tag>-<name>`) that reaches only the
// tagged revision's replicas; a deployment's own host wins over a tag host. It is rebuilt in
// memory from the store whenever the change feed reports a relevant change, so the request
// path never touches the store. When the store cannot be read the last table keeps serving: a
// failed rebuild is retried every second, and the store's resync (its feed was cut, events were
// lost) asks for a full one. A bound token whose hash is also a service-account key's is left
// out: a platform credential never opens an endpoint, whatever a record written before that
// rule says.

import { acceptsCertificate } from '../domain/client-certificates.js';
import { routedComponent } from '../domain/components.js';
import { endpointHost } from '../domain/endpoint-address.js';
import { resolveTraffic, splitOf, tagHost, tagLabel, type RevisionShare } from '../domain/traffic.js';
import { CoalescingRunner } from '../core/coalescing-runner.js';
import { normalizeFingerprint } from '../pki/client-certs.js';
import type { Priority } from '../domain/priority.js';
import {
  DEFAULT_FLOW_CONTROL,
  limitsOf,
  routingPolicyOf,
  type CertificateRecord,
  type DeploymentStatus,
  type FlowControl,
  type Kind,
  type Protocol,
  type RateLimit,
  type ReplicaRecord,
  type RoutingPolicy,
} from '../domain/records.js';
import type { Store } from '../store/store.js';
import type { ReplicaRef } from '../balancer/selector.js';

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
  name: string;
  /**
   * `<name>.<domain>` (a tag route: `<tag>-<name>.<domain>`), whichever address the request
   * used: the realm of its 401s too.
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

const NO_CERTIFICATES: ReadonlyMap<string, Priority | null> = new Map();

/** A limit in seconds as ms; absent (a record older than the field) or null: none. */
function secondsAsMs(seconds: number | null | undefined): number | null {
  return seconds === undefined || seconds === null ? null : seconds * 1000;
}

const RELEVANT: ReadonlySet<Kind> = new Set<Kind>(['deployment', 'token', 'replica', 'certificate', 'service_account']);
/** The change that asked for a failed rebuild is not announced again: retry until one lands. */
const RETRY_MS = 1_000;

export class RoutingTable {
  /** The deployments' own routes, by host. */
  private table = new Map<string, Route>();
  /** Tag routes by host (a host taken by a deployment's own route is not here). */
  private tags = new Map<string, Route>();
  /** Own and tag routes by name (`<name>`, `<tag>-<name>`), for path addresses. */
  private byName = new Map<string, Route>();
  private byId = new Map<number, Route>();
  private unwatch: (() => void) | null = null;
  private unresync: (() => void) | null = null;
  private retry: NodeJS.Timeout | null = null;
  private failing = false;
  /** Bursts of changes coalesce into one rebuild at a time, plus one after it. */
  private readonly rebuilds = new CoalescingRunner(() => this.rebuild(), (err) => this.failed(err));
  private readonly listeners: Array<(routes: ReadonlyMap<string, Route>) => void> = [];

  constructor(
    private readonly store: Store,
    readonly domain: string,
    /** Told of the first failure of a run of failed rebuilds (the next ones are retries). */
    private readonly onError: (err: Error) => void = () => {},
    private readonly onRecovered: () => void = () => {},
  ) {}

  async start(): Promise<void> {
    this.unwatch = this.store.watch((event) => {
      if (RELEVANT.has(event.kind)) this.rebuilds.trigger();
    });
    this.unresync = this.store.onResync(() => this.rebuilds.trigger());
    await this.rebuild();
  }

  stop(): void {
    this.unwatch?.();
    this.unwatch = null;
    this.unresync?.();
    this.unresync = null;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
  }

  /**
   * Called after every rebuild with the deployments' own routes by host, one per deployment
   * (pools, metrics and flow control follow it); tag hosts are in hosts() and tagRoutes().
   */
  onChange(listener: (routes: ReadonlyMap<string, Route>) => void): void {
    this.listeners.push(listener);
  }

  /** Host header value (any case, with or without port) → route: a deployment's own, else a tag's. */
  lookup(hostHeader: string | undefined): Route | undefined {
    if (!hostHeader) return undefined;
    let host = hostHeader;
    const colon = host.lastIndexOf(':');
    if (colon !== -1 && !host.endsWith(']')) host = host.slice(0, colon);
    const exact = this.table.get(host) ?? this.tags.get(host);
    if (exact !== undefined) return exact;
    const lower = host.toLowerCase();
    return this.table.get(lower) ?? this.tags.get(lower);
  }

  /** A deployment, or a tag (`<tag>-<name>`), by its exact name (path addresses; names are lowercase). */
  lookupName(name: string): Route | undefined {
    return this.byName.get(name);
  }

  /** A deployment's own route. */
  lookupDeployment(deploymentId: number): Route | undefined {
    return this.byId.get(deploymentId);
  }

  /** The deployments' own routes, one per deployment. */
  routes(): IterableIterator<Route> {
    return this.table.values();
  }

  /** The tag routes. */
  tagRoutes(): IterableIterator<Route> {
    return this.tags.values();
  }

  /** Every host served: the deployments' and their tags' (certificates by SNI follow these). */
  hosts(): Set<string> {
    return new Set([...this.table.keys(), ...this.tags.keys()]);
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
      this.rebuilds.trigger();
    }, RETRY_MS);
    this.retry.unref();
  }

  private async rebuild(): Promise<void> {
    const [deployments, tokens, replicas, certificates, accounts] = await Promise.all([
      this.store.list('deployment'),
      this.store.list('token'),
      this.store.list('replica'),
      this.store.list('certificate'),
      this.store.list('service_account'),
    ]);
    const platformKeys = new Set(accounts.map((a) => a.value.key_hash));
    const liveTokens = new Map(tokens.filter((t) => !platformKeys.has(t.value.hash)).map((t) => [t.value.id, t.value]));
    const liveCertificates = new LiveCertificates(certificates.map((c) => c.value).filter((c) => c.revoked_at === null));
    const readyBy = new Map<number, ReplicaRecord[]>();
    for (const { value: r } of replicas) {
      // A record without an address cannot be forwarded to, whatever its state says.
      if (r.state !== 'ready' || r.address === '') continue;
      const list = readyBy.get(r.deployment_id);
      if (list) list.push(r);
      else readyBy.set(r.deployment_id, [r]);
    }
    const next = new Map<string, Route>();
    const tagged: Array<{ own: Route; shares: RevisionShare[] }> = [];
    for (const { value: d } of deployments) {
      const host = endpointHost(d.name, this.domain);
      const component = routedComponent(d);
      const ready: ReplicaRef[] = (readyBy.get(d.id) ?? [])
        .filter((r) => r.component === component)
        .sort((a, b) => a.id - b.id)
        .map((r) => ({ id: r.id, address: r.address, revision: r.revision, metrics: r.metrics_target ? `http://${r.metrics_target.address}${r.metrics_target.path}` : undefined }));
      const previous = this.table.get(host);
      const token = d.auth.token_id === null ? undefined : liveTokens.get(d.auth.token_id);
      const limits = limitsOf(d);
      // Keep the old arrays when nothing changed, so the balancer's per-set caches hold.
      const all = previous && sameReplicas(previous.replicas, ready) ? previous.replicas : ready;
      const shares = resolveTraffic(d);
      const split = splitOf(d);
      const route: Route = {
        deploymentId: d.id,
        name: d.name,
        host,
        protocol: d.spec.protocol,
        tokenHash: token?.hash ?? null,
        tokenMaxPriority: token?.max_priority ?? null,
        clientCertificates: liveCertificates.acceptedBy(d),
        affinity: d.spec.family === 'general' && d.spec.session_affinity,
        routingPolicy: d.spec.family === 'general' ? routingPolicyOf(d.spec) : 'affinity',
        paused: d.paused,
        scaleToZero: d.family === 'general' && d.scaling.min_replicas === 0,
        status: d.status,
        component,
        replicas: all,
        split: split === null ? null : splitRoute(split, all, previous?.split ?? null),
        trafficRevisions: shares.map((s) => s.revision),
        tag: null,
        maxBodyBytes: limits.max_request_body_bytes,
        firstResponseMs: secondsAsMs(limits.first_response_timeout_seconds),
        rateLimit: limits.rate_limit,
        flowControl: limits.flow_control ?? DEFAULT_FLOW_CONTROL,
      };
      next.set(host, route);
      if (shares.some((s) => s.tags.length > 0)) tagged.push({ own: route, shares });
    }
    const byName = new Map([...next.values()].map((r) => [r.name, r]));
    const tags = new Map<string, Route>();
    for (const { own, shares } of tagged) {
      for (const share of shares) {
        for (const tag of share.tags) {
          const host = tagHost(tag, own.name, this.domain);
          const label = tagLabel(tag, own.name);
          // A deployment's own host (and name) always wins: a tag never shadows an endpoint.
          if (next.has(host) || byName.has(label)) continue;
          // The split's array of the same revision when there is one: one set, one ring in the balancer.
          const inSplit = own.split?.revisions.find((r) => r.revision === share.revision)?.replicas;
          const previous = this.tags.get(host);
          const ready = inSplit ?? own.replicas.filter((r) => r.revision === share.revision);
          const route: Route = {
            ...own,
            host,
            replicas: inSplit ?? (previous && sameReplicas(previous.replicas, ready) ? previous.replicas : ready),
            split: null,
            tag: { name: tag, revision: share.revision },
            // A revision of a split never scales to zero; without one the tag follows the
            // deployment, and only a deployment with nothing ready at all is woken.
            scaleToZero: own.scaleToZero && own.split === null && own.replicas.length === 0,
          };
          tags.set(host, route);
          byName.set(label, route);
        }
      }
    }
    this.table = next;
    this.tags = tags;
    this.byName = byName;
    this.byId = new Map([...next.values()].map((r) => [r.deploymentId, r]));
    if (this.failing) {
      this.failing = false;
      this.onRecovered();
    }
    for (const listener of this.listeners) listener(next);
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

/** The unrevoked certificates of one rebuild, indexed so each deployment finds its own without a scan. */
class LiveCertificates {
  private readonly byId = new Map<number, CertificateRecord>();
  private readonly byDeployment = new Map<number, CertificateRecord[]>();

  constructor(live: readonly CertificateRecord[]) {
    for (const c of live) {
      this.byId.set(c.id, c);
      if (c.deployment_id === null) continue;
      const list = this.byDeployment.get(c.deployment_id);
      if (list) list.push(c);
      else this.byDeployment.set(c.deployment_id, [c]);
    }
  }

  /** Fingerprint → cap of the live certificates `d` accepts. */
  acceptedBy(d: Parameters<typeof acceptsCertificate>[0]): ReadonlyMap<string, Priority | null> {
    if (d.auth.client_certificate_id === null) return NO_CERTIFICATES;
    const bound = this.byId.get(d.auth.client_certificate_id);
    const candidates = [...(bound ? [bound] : []), ...(this.byDeployment.get(d.id) ?? [])];
    const accepted = new Map<string, Priority | null>();
    for (const c of candidates) if (acceptsCertificate(d, c)) accepted.set(normalizeFingerprint(c.fingerprint_sha256), c.max_priority ?? null);
    return accepted.size === 0 ? NO_CERTIFICATES : accepted;
  }
}

function sameReplicas(a: readonly ReplicaRef[], b: readonly ReplicaRef[]): boolean {
  return a.length === b.length && a.every((r, i) => r.id === b[i]!.id && r.address === b[i]!.address && r.revision === b[i]!.revision && r.metrics === b[i]!.metrics);
}
