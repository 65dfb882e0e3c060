// Owns the gateway's Prometheus metrics (docs/operations.md#metrics), declared against the registry it is
// given. Labels stay bounded: deployment names, status codes, protocols and fixed reason
// words — never request ids or session ids. Gauges that mirror state (in-flight, ready
// replicas) are computed at scrape time from the tracker and the routing table, so the
// request path pays nothing for them.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { TTFT_BUCKETS_MS } from '../domain/revision-stats.js';
import type { InflightTracker } from './inflight.js';
import type { RoutingTable } from './routing-table.js';

export type AuthFailureReason = 'missing_credential' | 'invalid_token' | 'certificate_not_accepted';
export type Protocol = 'http' | 'grpc';

/** Per-deployment handles, created once per deployment name so requests skip label hashing. */
export interface DeploymentMeters {
  requests(status: number): void;
  duration(seconds: number): void;
  timeToFirstByte(seconds: number): void;
  /** The first byte of the response body: for a stream, the first token (its TTFT). */
  timeToFirstChunk(seconds: number): void;
  tokens(prompt: number, completion: number, cached: number): void;
  retry(): void;
}

/** Per-revision handles, created once per deployment and revision. */
export interface RevisionMeters {
  /** A request that reached a replica of the revision ended with this status. */
  requests(status: number): void;
  /** Arrival to the first chunk of a streamed answer. */
  ttft(seconds: number): void;
}

/** A status as its class: the `code` label of the revision metrics. */
function codeClass(status: number): string {
  return status >= 500 ? '5xx' : status >= 400 ? '4xx' : status >= 300 ? '3xx' : status >= 200 ? '2xx' : '1xx';
}

const CODE_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];
const NO_REVISIONS: ReadonlySet<number> = new Set();

/** What the prefix-aware policy did with a request's X-Session-Id (balancer/prefix-aware.ts). */
export type SessionRouting = 'kept' | 'moved' | 'new';

export class GatewayMetrics {
  private readonly requestsTotal: Counter<'deployment' | 'status' | 'protocol'>;
  private readonly requestDuration: Histogram<'deployment' | 'protocol'>;
  private readonly ttfb: Histogram<'deployment' | 'protocol'>;
  private readonly ttfc: Histogram<'deployment' | 'protocol'>;
  private readonly sessionRouting: Counter<'deployment' | 'decision'>;
  private readonly tokensTotal: Counter<'deployment' | 'kind'>;
  private readonly authFailures: Counter<'deployment' | 'reason'>;
  private readonly retries: Counter<'deployment'>;
  private readonly ejections: Counter<'deployment'>;
  private readonly rateLimitedTotal: Counter<'deployment' | 'limit'>;
  private readonly bodyRefusals: Counter<'deployment' | 'reason'>;
  private readonly authFailuresDelayed: Counter<'deployment'>;
  private readonly internalErrors: Counter<'deployment'>;
  private readonly meters = new Map<string, DeploymentMeters>();
  private readonly revisionRequests: Counter<'deployment' | 'revision' | 'code'>;
  private readonly revisionTtft: Histogram<'deployment' | 'revision'>;
  /** Deployment name → revision → handles: no string is built per request. */
  private readonly revisionMeters = new Map<string, Map<number, RevisionMeters>>();

  constructor(registry: Registry, inflight: InflightTracker, table: RoutingTable) {
    const registers = [registry];
    this.requestsTotal = new Counter({
      name: 'infergate_requests_total',
      help: 'Requests answered by the gateway, by deployment, HTTP status and protocol',
      labelNames: ['deployment', 'status', 'protocol'],
      registers,
    });
    this.requestDuration = new Histogram({
      name: 'infergate_request_duration_seconds',
      help: 'Time from request arrival to the last byte of the response',
      labelNames: ['deployment', 'protocol'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.ttfb = new Histogram({
      name: 'infergate_time_to_first_byte_seconds',
      help: 'Time from request arrival to the response headers from the replica',
      labelNames: ['deployment', 'protocol'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.ttfc = new Histogram({
      name: 'infergate_time_to_first_chunk_seconds',
      help: "Time from request arrival to the first byte of the response body (a stream's first token)",
      labelNames: ['deployment', 'protocol'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 30, 60],
      registers,
    });
    this.sessionRouting = new Counter({
      name: 'infergate_session_routing_total',
      help: 'Requests with X-Session-Id routed by the prefix-aware policy: kept on their replica, moved, or placed anew',
      labelNames: ['deployment', 'decision'],
      registers,
    });
    this.tokensTotal = new Counter({
      name: 'infergate_tokens_total',
      help: 'Tokens from `usage` in responses (streams included), estimated where a completion reported none: prompt, completion, and cached (prompt tokens the replica served from its prefix cache)',
      labelNames: ['deployment', 'kind'],
      registers,
    });
    this.authFailures = new Counter({
      name: 'infergate_auth_failures_total',
      help: 'Requests refused with 401, by deployment and reason',
      labelNames: ['deployment', 'reason'],
      registers,
    });
    this.retries = new Counter({
      name: 'infergate_upstream_retries_total',
      help: 'Requests sent to another replica after a connection failure',
      labelNames: ['deployment'],
      registers,
    });
    this.ejections = new Counter({
      name: 'infergate_replica_ejections_total',
      help: 'Replicas left out of replica choice for a while after repeated connection failures',
      labelNames: ['deployment'],
      registers,
    });
    this.rateLimitedTotal = new Counter({
      name: 'infergate_rate_limited_total',
      help: "Requests refused with 429 by a deployment's rate_limit, by deployment and limit (requests, tokens)",
      labelNames: ['deployment', 'limit'],
      registers,
    });
    this.bodyRefusals = new Counter({
      name: 'infergate_request_body_refusals_total',
      help: 'Requests refused for their body, by deployment and reason (timeout: 408, too_large: 413)',
      labelNames: ['deployment', 'reason'],
      registers,
    });
    this.internalErrors = new Counter({
      name: 'infergate_gateway_internal_errors_total',
      help: "Requests the gateway's own code failed on (an exception inside a phase), by deployment (\"\" before routing): each answered 500 or gRPC INTERNAL, logged with its request id",
      labelNames: ['deployment'],
      registers,
    });
    this.authFailuresDelayed = new Counter({
      name: 'infergate_auth_failures_delayed_total',
      help: 'Requests refused with 401 whose answer was held because their client address kept failing authentication',
      labelNames: ['deployment'],
      registers,
    });
    this.revisionRequests = new Counter({
      name: 'infergate_revision_requests_total',
      help: 'Requests that reached a replica of a revision, by deployment, revision and status class (2xx, 4xx, 5xx): compare a canary with the revision it may replace',
      labelNames: ['deployment', 'revision', 'code'],
      registers,
    });
    this.revisionTtft = new Histogram({
      name: 'infergate_revision_ttft_seconds',
      help: "Time from a request's arrival to the first chunk of its streamed answer (its first token), by deployment and revision",
      labelNames: ['deployment', 'revision'],
      buckets: TTFT_BUCKETS_MS.map((ms) => ms / 1000),
      registers,
    });
    new Gauge({
      name: 'infergate_inflight_requests',
      help: 'Requests in flight at the gateway, by deployment and replica',
      labelNames: ['deployment', 'replica'],
      registers,
      collect() {
        this.reset();
        for (const route of table.routes()) {
          const total = inflight.deploymentInflight(route.deploymentId);
          this.set({ deployment: route.name, replica: '' }, total);
          for (const r of route.replicas) this.set({ deployment: route.name, replica: String(r.id) }, inflight.inflight(r.id));
        }
      },
    });
    new Gauge({
      name: 'infergate_replicas_ready',
      help: 'Ready replicas the gateway routes to, by deployment and component',
      labelNames: ['deployment', 'component'],
      registers,
      // Every gateway worker of a process routes from the same table: summed, they would count it N times.
      aggregator: 'max',
      collect() {
        this.reset();
        for (const route of table.routes()) this.set({ deployment: route.name, component: route.component }, route.replicas.length);
      },
    });
  }

  /** Handles for one deployment (`''` for requests that matched none). */
  forDeployment(name: string, protocol: Protocol): DeploymentMeters {
    const key = `${name}\u0000${protocol}`;
    let m = this.meters.get(key);
    if (m) return m;
    const byStatus = new Map<number, Counter.Internal>();
    const duration = this.requestDuration.labels(name, protocol);
    const ttfb = this.ttfb.labels(name, protocol);
    const ttfc = this.ttfc.labels(name, protocol);
    const prompt = this.tokensTotal.labels(name, 'prompt');
    const completion = this.tokensTotal.labels(name, 'completion');
    const cachedTokens = this.tokensTotal.labels(name, 'cached');
    const retries = this.retries.labels(name);
    m = {
      requests: (status) => {
        let c = byStatus.get(status);
        if (!c) {
          c = this.requestsTotal.labels(name, String(status), protocol);
          byStatus.set(status, c);
        }
        c.inc();
      },
      duration: (s) => duration.observe(s),
      timeToFirstByte: (s) => ttfb.observe(s),
      timeToFirstChunk: (s) => ttfc.observe(s),
      tokens: (p, c, cached) => {
        if (p > 0) prompt.inc(p);
        if (c > 0) completion.inc(c);
        if (cached > 0) cachedTokens.inc(cached);
      },
      retry: () => retries.inc(),
    };
    this.meters.set(key, m);
    return m;
  }

  /** Handles for one revision of a deployment. */
  forRevision(name: string, revision: number): RevisionMeters {
    let byRevision = this.revisionMeters.get(name);
    if (byRevision === undefined) {
      byRevision = new Map();
      this.revisionMeters.set(name, byRevision);
    }
    let m = byRevision.get(revision);
    if (m) return m;
    const label = String(revision);
    const byClass = new Map<string, Counter.Internal>();
    const ttft = this.revisionTtft.labels(name, label);
    m = {
      requests: (status) => {
        const code = codeClass(status);
        let c = byClass.get(code);
        if (!c) {
          c = this.revisionRequests.labels(name, label, code);
          byClass.set(code, c);
        }
        c.inc();
      },
      ttft: (seconds) => ttft.observe(seconds),
    };
    byRevision.set(revision, m);
    return m;
  }

  /**
   * Removes the revision series of deployments and revisions that left the routing table:
   * `present` maps each routed deployment's name to the revisions it still has.
   */
  retainRevisions(present: ReadonlyMap<string, ReadonlySet<number>>): void {
    for (const name of [...this.revisionMeters.keys()]) this.retainRevisionsOf(name, present.get(name) ?? NO_REVISIONS);
  }

  /** The same for one deployment: its revisions not in `present` (none: it left) are dropped. */
  retainRevisionsOf(name: string, present: ReadonlySet<number>): void {
    const byRevision = this.revisionMeters.get(name);
    if (byRevision === undefined) return;
    for (const revision of byRevision.keys()) {
      if (present.has(revision)) continue;
      byRevision.delete(revision);
      const label = String(revision);
      for (const code of CODE_CLASSES) this.revisionRequests.remove(name, label, code);
      this.revisionTtft.remove(name, label);
    }
    if (byRevision.size === 0) this.revisionMeters.delete(name);
  }

  authFailure(deployment: string, reason: AuthFailureReason): void {
    this.authFailures.labels(deployment, reason).inc();
  }

  internalError(deployment: string): void {
    this.internalErrors.inc({ deployment });
  }

  authFailureDelayed(deployment: string): void {
    this.authFailuresDelayed.labels(deployment).inc();
  }

  rateLimited(deployment: string, limit: 'requests' | 'tokens'): void {
    this.rateLimitedTotal.labels(deployment, limit).inc();
  }

  bodyRefused(deployment: string, reason: 'timeout' | 'too_large'): void {
    this.bodyRefusals.labels(deployment, reason).inc();
  }

  sessionRouted(deployment: string, decision: SessionRouting): void {
    this.sessionRouting.labels(deployment, decision).inc();
  }

  ejection(deployment: string): void {
    this.ejections.labels(deployment).inc();
  }

  /** Drops cached handles of deployments that left the table (their series stay until restart). */
  retain(names: { has(name: string): boolean }): void {
    for (const key of this.meters.keys()) if (!names.has(key.split('\u0000')[0]!)) this.meters.delete(key);
  }
}
