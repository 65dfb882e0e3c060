// Owns the gateway's assembly: one TLS listener in front of every endpoint (listener.ts), the
// request pipeline behind it (pipeline.ts: route → authenticate → admit → select → forward →
// finish, docs/request-lifecycle.md), and the state they share — the routing table, kept
// current from the store's change feed, in-flight counts, replica health, rate limits, the
// activator, flow control and the latency model it and prefix_aware learn from, the split of
// traffic between revisions and what is measured per revision, upstream connection pools —
// pruned together whenever the table changes.

import type tls from 'node:tls';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { ConnectionGuard, type ConnectionCaps } from '../net/connection-guard.js';
import { listenerMeters } from '../net/metrics.js';
import type { CertificateAuthority } from '../pki/ca.js';
import { StoreUnavailableError, type Store } from '../store/store.js';
import type { UsageLedger } from '../store/usage-ledger.js';
import { Activator, type ActivatorOptions } from './activator.js';
import { AuthFailureBudget, type AuthFailureBudgetOptions } from './auth-failure-budget.js';
import { ConsistentHashSelector } from '../balancer/consistent-hash.js';
import { PowerOfTwoSelector } from '../balancer/power-of-two.js';
import { PrefixAwareSelector } from '../balancer/prefix-aware.js';
import { sessionOrLoadPolicy } from '../balancer/selector.js';
import { ReplicaSignalScraper } from './replica-signals.js';
import { LatencyModel } from '../balancer/latency-model.js';
import { FlowController } from './flow-control.js';
import { FlowMetrics } from './flow-metrics.js';
import { ReplicaCapacity } from './replica-capacity.js';
import { GrpcForwarder } from './grpc-forward.js';
import { HostCertificates } from './host-certificates.js';
import { HttpForwarder } from './http-forward.js';
import { InflightTracker } from './inflight.js';
import { createListener, type ClientTimeouts } from './listener.js';
import { GatewayMetrics } from './metrics.js';
import { RequestPipeline } from './pipeline.js';
import { RateLimiter } from './rate-limiter.js';
import { SharedRateLimits } from './shared-rate-limit.js';
import type { SharedLimitStore } from '../store/redis-rate-limit.js';
import { ReplicaHealth, type EjectionOptions } from './replica-health.js';
import type { BodyLimits } from './request-body.js';
import { LiveRequests } from './live-requests.js';
import { RoutingTable, type Route } from './routing-table.js';
import { RevisionHistory } from './revision-history.js';
import { TrafficSplitter } from './traffic-split.js';
import type { EngineReport } from '../domain/load-report.js';
import type { Tracing } from '../tracing/tracing.js';
import { UpstreamPools, type UpstreamTimeouts } from './upstream-pools.js';
import { DEFAULTS } from '../config/defaults.js';

export { type ClientTimeouts };

export interface GatewayOptions {
  store: Store;
  domain: string;
  /** The default certificate: `*.<domain>` from the platform CA, or the operator's. */
  certPem: string;
  keyPem: string;
  /** The platform CA: client certificates must chain to it; it issues per-host certificates. */
  ca: CertificateAuthority;
  /** Issue a certificate per endpoint hostname (off when the operator supplies one). */
  perHostCertificates?: boolean;
  logger: Logger;
  registry?: Registry;
  clock?: Clock;
  timeouts?: UpstreamTimeouts;
  ejection?: EjectionOptions;
  /** Bounded-load factor c of consistent hashing (default: --affinity-load-factor's). */
  loadFactor?: number;
  /** Queue size and wait timeout of the activator (scale from zero). */
  activator?: ActivatorOptions;
  /** Where authenticated requests, errors and tokens are counted per deployment and hour. */
  usage?: UsageLedger;
  /** Open connections in all and per client address (0: no cap). */
  connections?: ConnectionCaps;
  /** Timeouts on the client side of the gateway. */
  clientTimeouts?: ClientTimeouts;
  /** Request bodies: the size limit of deployments that set none, and the longest silence. */
  body?: BodyLimits;
  /** How many authentication failures per second an address gets before its 401s are held. */
  authFailures?: AuthFailureBudgetOptions;
  /** Log one line per request when it ends (deployment, method, path, status, time). */
  accessLog?: boolean;
  /** OpenTelemetry tracing (src/tracing/), when on; null or absent: off, at no cost per request. */
  tracing?: Tracing | null;
  /** Rate limits counted in Redis, shared by every gateway on it (store/redis-rate-limit.ts); null or absent: in this process. */
  sharedLimits?: SharedLimitStore | null;
}

export interface Gateway {
  server: tls.Server;
  table: RoutingTable;
  inflight: InflightTracker;
  /** Per revision 5-second steps (requests, errors, tokens, time to first token) of the last five minutes. */
  revisionHistory: RevisionHistory;
  /** Requests waiting in the deployment's flow-control queue now. */
  queued(deploymentId: number): number;
  /** Deployments with requests waiting in flow control now. */
  queuedDeployments(): number[];
  /**
   * Deployments with any load here now: requests in flight, held or queued, or a second of
   * concurrency above zero in the history. Every figure of every other deployment is zero.
   */
  busyDeployments(): Set<number>;
  /** What a replica's engine said at its last scrape, dated (ms since the epoch); null: nothing fresh. */
  engineSignals(replicaId: number): EngineReport | null;
  /** Holds requests of deployments at zero; its held counts are demand for the autoscaler. */
  activator: Activator;
  hostCertificates: HostCertificates | null;
  connections: ConnectionGuard;
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createGateway(opts: GatewayOptions): Gateway {
  const log = opts.logger;
  const clock = opts.clock ?? systemClock;
  const table = new RoutingTable(
    opts.store,
    opts.domain,
    // An unreachable store is expected to come back (the store monitor logs the outage); any
    // other failure is a bug or a bad record.
    (err) => log[err instanceof StoreUnavailableError ? 'warn' : 'error']({ err }, 'routing table rebuild failed: serving from the last table, retrying every second'),
    () => log.info('routing table rebuilt from the store again'),
  );
  const inflight = new InflightTracker(clock);
  const revisionHistory = new RevisionHistory(clock);
  const split = new TrafficSplitter();
  const health = new ReplicaHealth(opts.ejection ?? DEFAULTS.gateway.ejection, clock);
  const registry = opts.registry ?? new Registry();
  const metrics = new GatewayMetrics(registry, inflight, table);
  const connectionMeters = listenerMeters(registry, 'gateway');
  const connections = new ConnectionGuard(opts.connections ?? DEFAULTS.gateway.connections, connectionMeters);
  const shared = opts.sharedLimits ? new SharedRateLimits({ redis: opts.sharedLimits, heartbeats: opts.store, log, registry }) : null;
  const limiter = new RateLimiter(clock, shared);
  const activator = new Activator(opts.activator ?? DEFAULTS.gateway.activator, clock, registry, (id) => table.lookupDeployment(id)?.name);
  const upstreamTimeouts = opts.timeouts ?? DEFAULTS.gateway.upstream;
  const pools = new UpstreamPools(upstreamTimeouts);
  const isEjected = (replicaId: number) => health.isEjected(replicaId);
  const grpc = new GrpcForwarder({
    isEjected,
    timers: { connectMs: upstreamTimeouts.connectMs, firstMessageMs: upstreamTimeouts.firstMessageMs, idleMs: upstreamTimeouts.idleMs },
  });
  // The platform's default certificate is `*.<domain>`: it names one-label hosts under the domain only.
  const domainSuffix = `.${opts.domain.toLowerCase()}`;
  const oneLabel = (host: string) => host.endsWith(domainSuffix) && !host.slice(0, -domainSuffix.length).includes('.');
  const hostCertificates = opts.perHostCertificates === false ? null : new HostCertificates(opts.ca, opts.ca.certPem, log, oneLabel);

  // Every HTTP deployment's replicas, and gRPC ones whose spec names a metrics port (their
  // serving port speaks h2c only): flow control and the autoscaler's engine signals read the
  // engines' queues whatever the routing policy.
  const signals = new ReplicaSignalScraper(
    () => [...table.servingRoutes()].flatMap((r) => (r.protocol === 'http' ? r.replicas : r.replicas.filter((replica) => replica.metrics !== undefined))),
    (replicaId, tokens) => prefix.cacheSize(replicaId, tokens),
    DEFAULTS.gateway.scrape,
    () => performance.now(),
    log,
  );
  const latency = new LatencyModel();
  const prefix = new PrefixAwareSelector({ model: latency }, signals);
  const capacity = new ReplicaCapacity({
    inflight: (id) => inflight.inflight(id),
    limit: (id) => latency.limit(id),
    signals: (id) => signals.signals(id),
    // Owed prefill is known where prefix_aware placed the requests; elsewhere it is 0.
    prefillAheadMs: (id) => {
      const owed = prefix.owed(id);
      return owed === 0 ? 0 : prefix.tokens(owed) * latency.msPerToken(id);
    },
  });
  const flow: FlowController = new FlowController(capacity, new FlowMetrics(registry, () => table.routes(), (id) => flow.waiting(id), (id) => capacity.limit(id)));
  const pipeline = new RequestPipeline({
    table,
    metrics,
    limiter,
    authFailures: new AuthFailureBudget(opts.authFailures ?? DEFAULTS.gateway.authFailures, clock),
    activator,
    inflight,
    flow,
    room: (id) => capacity.room(id),
    split,
    policies: {
      affinity: sessionOrLoadPolicy(new ConsistentHashSelector({ loadFactor: opts.loadFactor ?? DEFAULTS.gateway.loadFactor }), new PowerOfTwoSelector()),
      prefix_aware: prefix,
    },
    http: new HttpForwarder(pools, isEjected),
    grpc,
    body: opts.body ?? DEFAULTS.gateway.body,
    books: {
      inflight,
      health,
      metrics,
      limiter,
      usage: opts.usage,
      clock,
      log,
      // Asked for by its own flag, so written whatever the log level (as an access log is).
      accessLog: opts.accessLog ? log.child({}, { level: 'info' }) : null,
      live: new LiveRequests(),
      tracing: opts.tracing ?? null,
      latency,
      flow,
      revisions: revisionHistory,
    },
  });
  const listener = createListener({
    certPem: opts.certPem,
    keyPem: opts.keyPem,
    caPem: opts.ca.certPem,
    contextFor: (servername) => {
      const chosen = hostCertificates?.handshakeContext(servername);
      return chosen instanceof Promise ? chosen.then((c) => c ?? null) : (chosen ?? null);
    },
    timeouts: opts.clientTimeouts ?? DEFAULTS.gateway.clientTimeouts,
    guard: connections,
    meters: connectionMeters,
    log,
    handle: pipeline.handle,
    parserRefused: pipeline.parserRefused,
  });

  // Followed by what each update changed: per-replica state is pruned when a replica left,
  // per-deployment state when a deployment left, and the rest is visited for the deployments
  // rebuilt only — a change costs the same however many deployments sit idle. A full rebuild
  // (start, the store's resync) re-syncs everything.
  const routed = { has: (id: number) => table.lookupDeployment(id) !== undefined };
  const routedNames = { has: (name: string) => table.lookupName(name)?.tag === null };
  table.onChange((routes, change) => {
    if (change.full || change.replicasLeft) {
      const addresses = table.addresses();
      const ids = table.replicaIds();
      pools.retain(addresses);
      grpc.retain(addresses);
      health.retain(ids);
      prefix.retain(ids);
      latency.retain(ids);
      capacity.retain(ids);
    }
    if (change.full || change.deploymentsLeft) {
      limiter.retain(routed);
      // A deleted deployment's concurrency history would otherwise stay for the life of the process.
      for (const id of inflight.deploymentIds()) if (!routed.has(id)) inflight.forget(id);
      split.retain(routed);
      revisionHistory.retain(routed);
      metrics.retain(routedNames);
    }
    if (change.full) {
      flow.sync(routes.values());
      const revisions = new Map<string, ReadonlySet<number>>();
      for (const route of routes.values()) {
        const present = revisionsOf(route);
        revisions.set(route.name, present);
        inflight.retainRevisions(route.deploymentId, present);
      }
      metrics.retainRevisions(revisions);
      // Tag hosts get their certificates by SNI like the deployments' own.
      hostCertificates?.sync(table.hosts());
    } else {
      for (const [id, before] of change.deployments) {
        const route = table.lookupDeployment(id);
        flow.follow(id, route);
        if (before !== undefined && before.name !== route?.name) metrics.retainRevisionsOf(before.name, NO_REVISIONS);
        if (route === undefined) continue;
        const present = revisionsOf(route);
        inflight.retainRevisions(id, present);
        metrics.retainRevisionsOf(route.name, present);
      }
      hostCertificates?.update(change.hostsAdded, change.hostsRemoved);
    }
    activator.release({ get: (id) => table.lookupDeployment(id) });
  });

  return {
    server: listener.server,
    table,
    inflight,
    revisionHistory,
    queued: (deploymentId) => {
      const waiting = flow.waiting(deploymentId);
      if (waiting === null) return 0;
      let n = 0;
      for (const count of Object.values(waiting)) n += count;
      return n;
    },
    queuedDeployments: () => flow.queuedDeployments(),
    busyDeployments: () => new Set([...inflight.busyDeploymentIds(), ...activator.heldDeployments(), ...flow.queuedDeployments()]),
    engineSignals: (replicaId) => {
      const reading = signals.reading(replicaId);
      if (reading === null) return null;
      const { waiting, kvUsage } = reading.signals;
      return { waiting, kvCachePercent: kvUsage === null ? null : kvUsage * 100, at: clock.now() - reading.ageMs };
    },
    activator,
    hostCertificates,
    connections,
    start: async () => {
      signals.start();
      await Promise.all([limiter.start(), table.start()]);
    },
    close: async () => {
      signals.stop();
      table.stop();
      // Requests in flight end first, each answered 503 (gRPC UNAVAILABLE) or cut, and counted.
      pipeline.shutdown();
      flow.close();
      activator.close();
      await listener.close();
      await pools.close();
      grpc.close();
      await limiter.close();
      await opts.tracing?.shutdown();
    },
  };
}

const NO_REVISIONS: ReadonlySet<number> = new Set();

/** The revisions a deployment still has: those its traffic names and those with a ready replica. */
function revisionsOf(route: Route): Set<number> {
  const present = new Set(route.trafficRevisions);
  for (const r of route.replicas) if (r.revision !== undefined) present.add(r.revision);
  return present;
}
