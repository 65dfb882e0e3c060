// Owns the gateway: one TLS listener in front of every endpoint. It caps connections (in all
// and per client address) before they cost a handshake, terminates TLS with the certificate
// chosen by SNI within a handshake timeout, asks for (never requires) a client certificate,
// hands each connection to an HTTP/1.1 or HTTP/2 server object by ALPN (one tls.Server for
// both), closes idle connections, and runs every request through headers → route →
// authenticate → rate limit → paused? → receive body → admit (or hold in the activator while
// a deployment scales up from zero) → choose replica → forward (docs/request-lifecycle.md).
// The routing table is kept current from the store's change feed.

import http from 'node:http';
import http2 from 'node:http2';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { ConnectionGuard, type ConnectionCaps } from '../net/connection-guard.js';
import { closeIdleSessions } from '../net/h2-idle.js';
import { listenerMeters } from '../net/metrics.js';
import { normalizeFingerprint } from '../pki/client-certs.js';
import type { CertificateAuthority } from '../pki/ca.js';
import type { Store } from '../store/store.js';
import type { UsageLedger } from '../store/usage-ledger.js';
import { Activator, DEFAULT_ACTIVATOR, type ActivatorOptions } from './activator.js';
import { ConsistentHashSelector } from './balancer/consistent-hash.js';
import { PowerOfTwoSelector } from './balancer/power-of-two.js';
import { HostCertificates } from './host-certificates.js';
import { GrpcForwarder } from './grpc-forward.js';
import { HttpForwarder, type Body, type DownstreamRequest, type DownstreamResponse } from './http-forward.js';
import { InflightTracker } from './inflight.js';
import { GatewayMetrics, type DeploymentMeters, type Protocol } from './metrics.js';
import { admitPhase, authenticatePhase, headersPhase, pausedPhase, rateLimitPhase, routePhase, targetPhase, type Authenticated, type Rejection } from './phases.js';
import { RateLimiter } from './rate-limiter.js';
import { AuthFailureBudget, DEFAULT_AUTH_FAILURE_BUDGET, type AuthFailureBudgetOptions } from './auth-failure-budget.js';
import { BodyGate, followClient, grpcMessageCheck, hasNoBody, receiveBody, type BodyError, type BodyLimits, type ReceivedBody } from './request-body.js';
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
  /** Open connections in all and per client address (0: no cap). */
  connections?: ConnectionCaps;
  /** Timeouts on the client side of the gateway. */
  clientTimeouts?: ClientTimeouts;
  /** Request bodies: the size limit of deployments that set none, and the longest silence. */
  body?: BodyLimits;
  /** How many authentication failures per second an address gets before its 401s are held. */
  authFailures?: AuthFailureBudgetOptions;
}

export interface ClientTimeouts {
  tlsHandshakeMs: number;
  /** An HTTP/1.1 connection idle between requests. */
  keepAliveMs: number;
  /** An HTTP/2 connection with no open stream. */
  h2IdleMs: number;
  /** From the connection (or the previous response) to a request's complete headers. */
  headersMs: number;
}

export const DEFAULT_CLIENT_TIMEOUTS: ClientTimeouts = { tlsHandshakeMs: 10_000, keepAliveMs: 65_000, h2IdleMs: 120_000, headersMs: 30_000 };
export const DEFAULT_CONNECTION_CAPS: ConnectionCaps = { maxConnections: 8192, maxConnectionsPerClient: 256 };
export const DEFAULT_BODY_LIMITS: BodyLimits = { maxBytes: 16 * 1024 * 1024, idleMs: 30_000 };

export interface Gateway {
  server: tls.Server;
  table: RoutingTable;
  inflight: InflightTracker;
  /** Holds requests of deployments at zero; its held counts are demand for the autoscaler. */
  activator: Activator;
  hostCertificates: HostCertificates | null;
  connections: ConnectionGuard;
  start(): Promise<void>;
  close(): Promise<void>;
}

const fingerprints = new WeakMap<tls.TLSSocket, string | null>();

/**
 * The client certificate's fingerprint when it chains to the platform CA, else null. Cached
 * per connection: the certificate cannot change on it, and the lookup costs ~4 µs a request.
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

/** gRPC clients read a status from trailers, not the HTTP code (gRPC over HTTP/2: grpc-status). */
const GRPC_STATUS: Record<number, number> = { 401: 16, 404: 5, 408: 4, 413: 8, 429: 8, 431: 8, 503: 14, 501: 12 };

/**
 * Ends a request with a refusal: JSON error body (HTTP) or a Trailers-Only gRPC status. A body
 * the gateway did not read is not waited for: HTTP/1.1 closes the connection after the
 * answer (it cannot carry another request), HTTP/2 resets the stream with NO_ERROR.
 */
function sendRejection(req: DownstreamRequest, res: DownstreamResponse, r: Rejection): void {
  const unread = !req.complete && !hasNoBody(req);
  if (isGrpc(req)) {
    const stream = (res as http2.Http2ServerResponse).stream;
    if (stream.destroyed || stream.headersSent) return;
    // Trailers-Only: one HEADERS frame with END_STREAM carries the status.
    stream.respond(
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(GRPC_STATUS[r.status] ?? 2),
        'grpc-message': encodeURIComponent(r.message),
        ...r.headers,
      },
      { endStream: true },
    );
    if (unread) stream.close(http2.constants.NGHTTP2_NO_ERROR);
    return;
  }
  if (res.headersSent) return;
  const body = JSON.stringify({ error: { code: r.code, message: r.message } });
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...r.headers };
  if (unread && req.httpVersionMajor === 1) headers.connection = 'close';
  (res as http.ServerResponse).writeHead(r.status, headers);
  res.end(body);
  if (unread && req.httpVersionMajor === 2) {
    const stream = (res as http2.Http2ServerResponse).stream;
    res.once('finish', () => stream.destroyed || stream.close(http2.constants.NGHTTP2_NO_ERROR));
  }
}

function bodyRejection(error: BodyError): Rejection {
  return error.kind === 'timeout'
    ? { status: 408, code: 'request_timeout', message: error.message }
    : { status: 413, code: 'payload_too_large', message: error.message };
}

/** A client error of the HTTP/1.1 parser answered in the error shape, then the connection closed. */
function answerClientError(socket: import('node:stream').Duplex, status: number, code: string, message: string): void {
  if (!socket.writable) return void socket.destroy();
  const reasons: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${reasons[status] ?? 'Bad Request'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export function createGateway(opts: GatewayOptions): Gateway {
  const log = opts.logger;
  const clock = opts.clock ?? systemClock;
  const timeouts = opts.clientTimeouts ?? DEFAULT_CLIENT_TIMEOUTS;
  const bodyDefaults = opts.body ?? DEFAULT_BODY_LIMITS;
  const table = new RoutingTable(opts.store, opts.domain, (err) => log.error({ err }, 'routing table rebuild failed'));
  const inflight = new InflightTracker(clock);
  const health = new ReplicaHealth(opts.ejection ?? DEFAULT_EJECTION, clock);
  const registry = opts.registry ?? new Registry();
  const metrics = new GatewayMetrics(registry, inflight, table);
  const connectionMeters = listenerMeters(registry, 'gateway');
  const connections = new ConnectionGuard(opts.connections ?? DEFAULT_CONNECTION_CAPS, connectionMeters);
  const limiter = new RateLimiter(clock);
  const authFailures = new AuthFailureBudget(opts.authFailures ?? DEFAULT_AUTH_FAILURE_BUDGET, clock);
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
    const routed = new Set([...routes.values()].map((r) => r.deploymentId));
    limiter.retain(routed);
    // A deleted deployment's concurrency history would otherwise stay for the life of the process.
    for (const id of inflight.deploymentIds()) if (!routed.has(id)) inflight.forget(id);
    metrics.retain(new Set([...routes.values()].map((r) => r.name)));
    hostCertificates?.sync(new Set(routes.keys()));
    activator.release(new Map([...routes.values()].map((r) => [r.deploymentId, r])));
  });

  const countUsage = (deploymentId: number, status: number, usage: { prompt: number; completion: number } | null, rateLimited = false): void => {
    opts.usage?.add(deploymentId, clock.now(), {
      requests: 1,
      errors: status >= 500 ? 1 : 0,
      prompt_tokens: usage?.prompt ?? 0,
      completion_tokens: usage?.completion ?? 0,
      rate_limited: rateLimited ? 1 : 0,
    });
  };

  const handle = (req: DownstreamRequest, res: DownstreamResponse): void => {
    const startedAt = performance.now();
    const protocol: Protocol = isGrpc(req) ? 'grpc' : 'http';
    const headers = headersPhase(req.rawHeaders);
    if (!headers.ok) {
      metrics.forDeployment('', protocol).requests(headers.rejection.status);
      return sendRejection(req, res, headers.rejection);
    }
    const host = req.headers.host ?? (req.headers[':authority'] as string | undefined);
    const target = targetPhase(req.url, host);
    if (!target.ok) {
      metrics.forDeployment('', protocol).requests(400);
      return sendRejection(req, res, target.rejection);
    }
    const routed = routePhase(table, host);
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
    const socket = tlsSocketOf(req);
    const authed = authenticatePhase(route, { authorization: req.headers.authorization, certificateFingerprint: peerFingerprint(socket) });
    if (!authed.ok) {
      metrics.authFailure(route.name, authed.rejection.authFailure ?? 'missing_credential');
      // An address that keeps failing gets its 401s late (auth-failure-budget.ts).
      const address = socket?.remoteAddress ?? '';
      const delay = authFailures.delayFor(address);
      if (delay === 0) return refuse(authed.rejection);
      metrics.authFailureDelayed(route.name);
      let held = true;
      const release = () => {
        if (!held) return false;
        held = false;
        authFailures.released(address);
        return true;
      };
      const timer = setTimeout(() => {
        if (release() && !res.destroyed && !res.writableEnded) refuse(authed.rejection);
      }, delay);
      timer.unref();
      res.once('close', () => {
        clearTimeout(timer);
        release();
      });
      return;
    }
    // From here on the request is the deployment owner's: it counts in the usage view.
    const who = authed.value;
    const refuseCounted = (r: Rejection) => {
      countUsage(route.deploymentId, r.status, null);
      refuse(r);
    };
    const decision = limiter.admit(route.deploymentId, route.rateLimit, who.credential);
    const limited = rateLimitPhase(decision);
    if (!limited.ok) {
      if (!decision.ok) metrics.rateLimited(route.name, decision.limit);
      countUsage(route.deploymentId, 429, null, true);
      return refuse(limited.rejection);
    }
    const paused = pausedPhase(route);
    if (!paused.ok) return refuseCounted(paused.rejection);

    // The body (or a gRPC call's first message) before anything else: only then is the
    // request load on the deployment (in-flight, autoscaling) or in the activator's queue.
    const limits: BodyLimits = { maxBytes: route.maxBodyBytes ?? bodyDefaults.maxBytes, idleMs: bodyDefaults.idleMs };
    const received = (r: ReceivedBody) => {
      if (!r.ok) {
        if (r.error === null) {
          meters.requests(499);
          countUsage(route.deploymentId, 499, null);
          return;
        }
        metrics.bodyRefused(route.name, r.error.kind);
        return refuseCounted(bodyRejection(r.error));
      }
      admit(req, res, route, who, r.body, target.value, meters, startedAt, refuseCounted);
    };
    if (protocol === 'grpc') {
      const gate = new BodyGate(limits, grpcMessageCheck(limits.maxBytes));
      gate.onFirstByte((r) => {
        // A bidirectional stream may rightly go quiet once its first message is in.
        gate.stopIdleTimer();
        received(r);
      });
      followClient(req, gate);
      return;
    }
    receiveBody(req, res, limits, received);
  };

  /** The request is load from here: held at zero by the activator, or admitted and forwarded. */
  const admit = (
    req: DownstreamRequest,
    res: DownstreamResponse,
    arrived: Route,
    who: Authenticated,
    body: Body,
    path: string,
    meters: DeploymentMeters,
    startedAt: number,
    refuseCounted: (r: Rejection) => void,
  ): void => {
    // The table may have changed while the body came in.
    const route = table.lookup(arrived.host) ?? arrived;
    inflight.deploymentStart(route.deploymentId);
    if (!route.paused && route.replicas.length === 0 && route.scaleToZero) {
      void activator
        .hold(route, (cancel) => res.once('close', cancel))
        .then((outcome) => {
          if (outcome.ok) return forward(req, res, outcome.route, who, body, path, meters, startedAt);
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
    if (!admitted.ok) {
      inflight.deploymentEnd(route.deploymentId);
      return refuseCounted(admitted.rejection);
    }
    forward(req, res, route, who, body, path, meters, startedAt);
  };

  /** Choose a replica (affinity or p2c) and forward; in-flight was counted by the caller. */
  const forward = (
    req: DownstreamRequest,
    res: DownstreamResponse,
    route: Route,
    who: Authenticated,
    body: Body,
    path: string,
    meters: DeploymentMeters,
    startedAt: number,
  ): void => {
    // X-Session-Id, or the gRPC metadata key x-session-id: both arrive as this header.
    const sessionId = route.affinity ? req.headers['x-session-id'] : undefined;
    const key = typeof sessionId === 'string' && sessionId !== '' ? sessionId : null;
    const candidates = (key !== null ? affinity : spread).select(route.replicas, inflight, key);
    if (isGrpc(req)) {
      grpc.forward(req as http2.Http2ServerRequest, res as http2.Http2ServerResponse, {
        authority: route.host,
        body: body as BodyGate,
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
    forwarder.forward(req, res, body, {
      route,
      path,
      candidates,
      meters,
      startedAt,
      done: (status, usage) => {
        inflight.deploymentEnd(route.deploymentId);
        countUsage(route.deploymentId, status, usage);
        if (usage) limiter.spendTokens(route.deploymentId, route.rateLimit, who.credential, usage.prompt + usage.completion);
        if (status === 408 || status === 413) metrics.bodyRefused(route.name, status === 408 ? 'timeout' : 'too_large');
        meters.requests(status);
        meters.duration((performance.now() - startedAt) / 1000);
      },
    });
  };

  const h1 = http.createServer(
    {
      // Generations can be long and streams quiet: no request timeout cuts them. Headers must
      // still arrive in time (slow-loris), and an idle keep-alive connection ends.
      requestTimeout: 0,
      headersTimeout: timeouts.headersMs,
      keepAliveTimeout: timeouts.keepAliveMs,
      // How often Node looks for connections past headersTimeout (its default is 30 s).
      connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(timeouts.headersMs / 4))),
    },
    handle,
  );
  // `100 Continue` is sent by receiveBody, after authentication, not by Node on arrival.
  h1.on('checkContinue', handle);
  // With a 'timeout' listener Node leaves the idle keep-alive socket to it: counted, then closed.
  h1.on('timeout', (socket: import('node:net').Socket) => {
    connectionMeters.closed('keep_alive_timeout');
    socket.destroy();
  });
  h1.on('clientError', (err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      connectionMeters.closed('header_timeout');
      return answerClientError(socket, 408, 'request_timeout', `the request headers did not arrive within ${Math.round(timeouts.headersMs / 1000)} s`);
    }
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      return answerClientError(socket, 431, 'headers_too_large', 'the request headers are larger than 16 KiB');
    }
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    answerClientError(socket, 400, 'invalid_request', `the request is not valid HTTP/1.1 (${err.code ?? 'parse error'})`);
  });
  // nghttp2 resets a stream past its header-pair limit without an answer; it is raised here
  // so the request reaches headersPhase and gets a 431 it can read.
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: 256 }, maxHeaderListPairs: 8 * 128 });
  h2.on('request', handle);
  h2.on('checkContinue', handle);
  closeIdleSessions(h2, timeouts.h2IdleMs, () => connectionMeters.closed('idle_timeout'));

  const defaultContext = tls.createSecureContext({ cert: opts.certPem, key: opts.keyPem, ca: opts.ca.certPem });
  const server = tls.createServer(
    {
      cert: opts.certPem,
      key: opts.keyPem,
      ca: opts.ca.certPem,
      ALPNProtocols: ['h2', 'http/1.1'],
      minVersion: 'TLSv1.2',
      // Node's default is 120 s: a connection that never sends a ClientHello holds a socket.
      handshakeTimeout: timeouts.tlsHandshakeMs,
      // http.createServer turns Nagle off for its sockets, a plain TLS server does not; with it
      // on, a response written in two pieces waits ~40 ms for the client's delayed ACK.
      noDelay: true,
      // Ask for a client certificate, never require one: bearer clients have none.
      requestCert: true,
      rejectUnauthorized: false,
      SNICallback: (servername, cb) => cb(null, hostCertificates?.contextFor(servername) ?? defaultContext),
    },
    (socket) => {
      if (socket.alpnProtocol === 'h2') h2.emit('connection', socket);
      else h1.emit('connection', socket);
    },
  );
  connections.attach(server);
  // Every connection, from before its handshake, so close() can end them all.
  const openSockets = new Set<import('node:net').Socket>();
  server.on('connection', (socket: import('node:net').Socket) => {
    if (socket.destroyed) return; // refused by a connection cap
    openSockets.add(socket);
    socket.once('close', () => openSockets.delete(socket));
  });
  // With a listener here Node no longer closes the connection of a failed handshake (a
  // handshake timeout included): it must be destroyed, or it stays open.
  server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: tls.TLSSocket) => {
    socket.destroy();
    if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') connectionMeters.closed('handshake_timeout');
    log.debug({ err }, 'TLS handshake failed');
  });
  // The HTTP/1.1 server object never listens itself; this starts its header-timeout checks.
  server.on('listening', () => h1.emit('listening'));

  return {
    server,
    table,
    inflight,
    activator,
    hostCertificates,
    connections,
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
