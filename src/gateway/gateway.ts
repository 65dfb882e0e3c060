// Owns the gateway: one TLS listener in front of every endpoint (DESIGN §4). It terminates
// TLS with the certificate chosen by SNI, asks for (never requires) a client certificate,
// hands each connection to an HTTP/1.1 or HTTP/2 server object by ALPN (one tls.Server,
// PERF-NOTES), and runs every request through route → authenticate → admit (or hold in the
// activator while a deployment scales up from zero) → choose replica → forward. The routing
// table is kept current from the store's change feed.

import http from 'node:http';
import http2 from 'node:http2';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { normalizeFingerprint } from '../pki/client-certs.js';
import type { CertificateAuthority } from '../pki/ca.js';
import type { Store } from '../store/store.js';
import type { UsageLedger } from '../store/usage-ledger.js';
import { Activator, DEFAULT_ACTIVATOR, type ActivatorOptions } from './activator.js';
import { ConsistentHashSelector } from './balancer/consistent-hash.js';
import { PowerOfTwoSelector } from './balancer/power-of-two.js';
import { HostCertificates } from './host-certificates.js';
import { GrpcForwarder } from './grpc-forward.js';
import { HttpForwarder, type DownstreamRequest, type DownstreamResponse } from './http-forward.js';
import { InflightTracker } from './inflight.js';
import { GatewayMetrics, type DeploymentMeters, type Protocol } from './metrics.js';
import { admitPhase, authenticatePhase, routePhase, type Rejection } from './phases.js';
import { DEFAULT_EJECTION, ReplicaHealth, type EjectionOptions } from './replica-health.js';
import { RoutingTable, type Route } from './routing-table.js';
import { DEFAULT_UPSTREAM_TIMEOUTS, UpstreamPools, type UpstreamTimeouts } from './upstream-pools.js';

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
  /** Bounded-load factor c of consistent hashing (default 1.25). */
  loadFactor?: number;
  /** Queue size and wait timeout of the activator (scale from zero). */
  activator?: ActivatorOptions;
  /** Where authenticated requests, errors and tokens are counted per deployment and hour. */
  usage?: UsageLedger;
}

export interface Gateway {
  server: tls.Server;
  table: RoutingTable;
  inflight: InflightTracker;
  /** Holds requests of deployments at zero; its held counts are demand for the autoscaler. */
  activator: Activator;
  hostCertificates: HostCertificates | null;
  start(): Promise<void>;
  close(): Promise<void>;
}

const fingerprints = new WeakMap<tls.TLSSocket, string | null>();

/**
 * The client certificate's fingerprint when it chains to the platform CA, else null. Cached
 * per connection: the certificate cannot change on it, and the lookup costs ~4 µs (PERF-NOTES).
 */
function peerFingerprint(socket: tls.TLSSocket | undefined): string | null {
  if (!socket) return null;
  const cached = fingerprints.get(socket);
  if (cached !== undefined) return cached;
  let value: string | null = null;
  if (socket.authorized) {
    const cert = socket.getPeerCertificate();
    if (cert?.fingerprint256) value = normalizeFingerprint(cert.fingerprint256);
  }
  fingerprints.set(socket, value);
  return value;
}

function tlsSocketOf(req: DownstreamRequest): tls.TLSSocket | undefined {
  if ('stream' in req && req.stream) return req.stream.session?.socket as tls.TLSSocket | undefined;
  return req.socket as tls.TLSSocket;
}

function isGrpc(req: DownstreamRequest): boolean {
  return req.httpVersionMajor === 2 && (req.headers['content-type'] ?? '').startsWith('application/grpc');
}

/** A gRPC call's outcome as the HTTP-like status the metrics and usage count it under. */
const HTTP_OF_GRPC: Record<number, number> = { 0: 200, 1: 499, 3: 400, 4: 504, 5: 404, 7: 403, 8: 429, 12: 501, 14: 503, 16: 401 };

/** gRPC clients read a status from trailers, not the HTTP code (PROTOCOLS.md, gRPC over HTTP/2). */
const GRPC_STATUS: Record<number, number> = { 401: 16, 404: 5, 503: 14, 501: 12 };

function sendRejection(req: DownstreamRequest, res: DownstreamResponse, r: Rejection): void {
  if (isGrpc(req)) {
    // Trailers-Only: one HEADERS frame with END_STREAM carries the status (PERF-NOTES).
    (res as http2.Http2ServerResponse).stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(GRPC_STATUS[r.status] ?? 2), 'grpc-message': encodeURIComponent(r.message) },
      { endStream: true },
    );
    return;
  }
  const body = JSON.stringify({ error: { code: r.code, message: r.message } });
  (res as http.ServerResponse).writeHead(r.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...r.headers });
  res.end(body);
}

export function createGateway(opts: GatewayOptions): Gateway {
  const log = opts.logger;
  const clock = opts.clock ?? systemClock;
  const table = new RoutingTable(opts.store, opts.domain, (err) => log.error({ err }, 'routing table rebuild failed'));
  const inflight = new InflightTracker(clock);
  const health = new ReplicaHealth(opts.ejection ?? DEFAULT_EJECTION, clock);
  const registry = opts.registry ?? new Registry();
  const metrics = new GatewayMetrics(registry, inflight, table);
  const activator = new Activator(opts.activator ?? DEFAULT_ACTIVATOR, clock, registry, () => new Map([...table.routes()].map((r) => [r.deploymentId, r.name])));
  const pools = new UpstreamPools(opts.timeouts ?? DEFAULT_UPSTREAM_TIMEOUTS);
  const affinity = new ConsistentHashSelector({ loadFactor: opts.loadFactor ?? 1.25 });
  const spread = new PowerOfTwoSelector();
  const hostCertificates = opts.perHostCertificates === false ? null : new HostCertificates(opts.ca, opts.ca.certPem, log);
  const grpc = new GrpcForwarder({ inflight, health, connectMs: (opts.timeouts ?? DEFAULT_UPSTREAM_TIMEOUTS).connectMs });
  const forwarder = new HttpForwarder({
    pools,
    inflight,
    health,
    onEjected: (route, replica) => {
      metrics.ejection(route.name);
      log.warn({ deployment: route.name, replica: replica.id, address: replica.address }, 'replica ejected after repeated connection failures');
    },
    onUpstreamError: (route, replica, err) => log.warn({ err, deployment: route.name, replica: replica.id }, 'upstream request failed'),
  });

  table.onChange((routes) => {
    const addresses = new Set<string>();
    const ids = new Set<number>();
    for (const route of routes.values()) {
      for (const r of route.replicas) {
        addresses.add(r.address);
        ids.add(r.id);
      }
    }
    pools.retain(addresses);
    grpc.retain(addresses);
    health.retain(ids);
    metrics.retain(new Set([...routes.values()].map((r) => r.name)));
    hostCertificates?.sync(new Set(routes.keys()));
    activator.release(new Map([...routes.values()].map((r) => [r.deploymentId, r])));
  });

  const handle = (req: DownstreamRequest, res: DownstreamResponse): void => {
    const startedAt = performance.now();
    const protocol: Protocol = isGrpc(req) ? 'grpc' : 'http';
    const routed = routePhase(table, req.headers.host ?? (req.headers[':authority'] as string | undefined));
    if (!routed.ok) {
      metrics.forDeployment('', protocol).requests(routed.rejection.status);
      return sendRejection(req, res, routed.rejection);
    }
    const route = routed.value;
    const meters = metrics.forDeployment(route.name, protocol);
    const refuse = (r: Rejection) => {
      meters.requests(r.status);
      sendRejection(req, res, r);
    };
    const authed = authenticatePhase(route, { authorization: req.headers.authorization, certificateFingerprint: peerFingerprint(tlsSocketOf(req)) });
    if (!authed.ok) {
      metrics.authFailure(route.name, authed.rejection.authFailure ?? 'missing_credential');
      return refuse(authed.rejection);
    }
    // From here on the request is the deployment owner's: it counts in the usage view.
    const refuseCounted = (r: Rejection) => {
      countUsage(route.deploymentId, r.status, null);
      refuse(r);
    };
    // A request counts from arrival: held by the activator or forwarded.
    if (!route.paused && route.replicas.length === 0 && route.scaleToZero) {
      inflight.deploymentStart(route.deploymentId);
      void activator
        .hold(route, (cancel) => res.once('close', cancel))
        .then((outcome) => {
          if (outcome.ok) return forward(req, res, outcome.route, meters, startedAt);
          inflight.deploymentEnd(route.deploymentId);
          if (outcome.rejection) refuseCounted(outcome.rejection);
          else {
            meters.requests(499);
            countUsage(route.deploymentId, 499, null);
          }
        });
      return;
    }
    const admitted = admitPhase(route);
    if (!admitted.ok) return refuseCounted(admitted.rejection);
    inflight.deploymentStart(route.deploymentId);
    forward(req, res, route, meters, startedAt);
  };

  const countUsage = (deploymentId: number, status: number, usage: { prompt: number; completion: number } | null): void => {
    opts.usage?.add(deploymentId, clock.now(), {
      requests: 1,
      errors: status >= 500 ? 1 : 0,
      prompt_tokens: usage?.prompt ?? 0,
      completion_tokens: usage?.completion ?? 0,
    });
  };

  /** Choose a replica (affinity or p2c) and forward; in-flight was counted by the caller. */
  const forward = (req: DownstreamRequest, res: DownstreamResponse, route: Route, meters: DeploymentMeters, startedAt: number): void => {
    // X-Session-Id, or the gRPC metadata key x-session-id: both arrive as this header.
    const sessionId = route.affinity ? req.headers['x-session-id'] : undefined;
    const key = typeof sessionId === 'string' && sessionId !== '' ? sessionId : null;
    const candidates = (key !== null ? affinity : spread).select(route.replicas, inflight, key);
    if (isGrpc(req)) {
      grpc.forward(req as http2.Http2ServerRequest, res as http2.Http2ServerResponse, {
        authority: route.host,
        candidates,
        done: ({ grpcStatus }) => {
          const status = HTTP_OF_GRPC[grpcStatus] ?? 500;
          inflight.deploymentEnd(route.deploymentId);
          countUsage(route.deploymentId, status, null);
          meters.requests(status);
          meters.duration((performance.now() - startedAt) / 1000);
        },
      });
      return;
    }
    forwarder.forward(req, res, {
      route,
      candidates,
      meters,
      startedAt,
      done: (status, usage) => {
        inflight.deploymentEnd(route.deploymentId);
        countUsage(route.deploymentId, status, usage);
        meters.requests(status);
        meters.duration((performance.now() - startedAt) / 1000);
      },
    });
  };

  const h1 = http.createServer(
    {
      // Generations can be long and streams quiet: no request timeout cuts them. Headers
      // must still arrive within a minute (slow-loris), and idle keep-alive ends after 65 s.
      requestTimeout: 0,
      headersTimeout: 60_000,
      keepAliveTimeout: 65_000,
    },
    handle,
  );
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: 256 } });
  h2.on('request', handle);

  const defaultContext = tls.createSecureContext({ cert: opts.certPem, key: opts.keyPem, ca: opts.ca.certPem });
  const server = tls.createServer(
    {
      cert: opts.certPem,
      key: opts.keyPem,
      ca: opts.ca.certPem,
      ALPNProtocols: ['h2', 'http/1.1'],
      minVersion: 'TLSv1.2',
      // http.createServer turns Nagle off for its sockets, a plain TLS server does not; with it
      // on, a response written in two pieces waits ~40 ms for the client's delayed ACK.
      noDelay: true,
      // Ask for a client certificate, never require one: bearer clients have none (§4.1).
      requestCert: true,
      rejectUnauthorized: false,
      SNICallback: (servername, cb) => cb(null, hostCertificates?.contextFor(servername) ?? defaultContext),
    },
    (socket) => {
      if (socket.alpnProtocol === 'h2') h2.emit('connection', socket);
      else h1.emit('connection', socket);
    },
  );
  // Every connection, from before its handshake, so close() can end them all.
  const openSockets = new Set<import('node:net').Socket>();
  server.on('connection', (socket: import('node:net').Socket) => {
    openSockets.add(socket);
    socket.once('close', () => openSockets.delete(socket));
  });
  server.on('tlsClientError', (err) => log.debug({ err }, 'TLS handshake failed'));
  // The HTTP/1.1 server object never listens itself; this starts its header-timeout checks.
  server.on('listening', () => h1.emit('listening'));

  return {
    server,
    table,
    inflight,
    activator,
    hostCertificates,
    start: () => table.start(),
    close: async () => {
      table.stop();
      activator.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        h1.closeAllConnections();
        h1.close(() => undefined);
        h2.close();
        for (const socket of openSockets) socket.destroy();
      });
      await pools.close();
      grpc.close();
    },
  };
}
