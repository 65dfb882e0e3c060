// Owns the order of a request's phases at the gateway, one method each, every one of them
// ending the request through its RequestContext (docs/request-lifecycle.md):
//   route        the header fields, the request target and the Host → deployment (or, on
//                localhost, an IP or the bare domain, /endpoints/<name>/ → deployment, stripped);
//   authenticate client certificate or Bearer token; repeated failures answered late;
//   admit        rate limit, paused, the body received, then load on the deployment —
//                held by the activator while it scales up from zero, or refused if not ready;
//   dispatch     flow control (flow-control.ts): on at once while a replica has room, else
//                queued by X-Priority class, fair between credentials, or refused 429/503;
//   select       the revision when traffic splits between revisions (traffic-split.ts: by
//                X-Session-Id, else a weighted round robin), then a replica order among its
//                replicas from the deployment's placement policy (balancer/selector.ts),
//                whose hooks then see each attempt, the first byte, usage and the end;
//   forward      one candidate loop (candidates.ts) over HTTP (undici) or gRPC (h2c)
//                transport, the only step that differs by protocol;
//   finish       RequestContext.finish: all accounting, however the request ended.
// Each step runs under one guard: an exception ends that request with 500 (gRPC INTERNAL),
// not the process. Waiting steps listen to the request's abort (onAbort: client gone, gRPC
// deadline, shutdown). The decisions themselves are pure functions in phases.ts.

import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Activator } from './activator.js';
import type { AuthFailureBudget } from './auth-failure-budget.js';
import type { PlacementPolicy } from '../balancer/selector.js';
import type { RoutingPolicy } from '../domain/records.js';
import { peerFingerprint, tlsSocketOf, type DownstreamRequest, type DownstreamResponse } from './downstream.js';
import type { GrpcForwarder } from './grpc-forward.js';
import type { HttpForwarder } from './http-forward.js';
import type { InflightTracker } from './inflight.js';
import type { GatewayMetrics } from './metrics.js';
import { admitPhase, authenticatePhase, headersPhase, pausedPhase, rateLimitPhase, routePhase, targetPhase, type Rejection } from './phases.js';
import type { RateDecision, RateLimiter } from './rate-limiter.js';
import { BodyGate, followClient, grpcMessageCheck, receiveBody, type Body, type BodyLimits, type ReceivedBody } from './request-body.js';
import { finishParserRefusal, RequestContext, type Accounting } from './request-context.js';
import { bodyRejection } from './respond.js';
import type { Route, RoutingTable } from './routing-table.js';
import type { FlowController, Waiting } from './flow-control.js';
import type { TrafficSplitter } from './traffic-split.js';
import { cappedPriority, DEFAULT_PRIORITY, parsePriority } from '../domain/priority.js';

const BAD_PRIORITY: Rejection = {
  status: 400,
  code: 'invalid_request',
  message: 'X-Priority must be critical, standard or sheddable (absent: standard)',
};

/** Characters of prompt per token, the usual rule of thumb: what a request is charged in its fair share. */
const CHARS_PER_TOKEN = 4;

/** A request's fair-share charge: its prompt's tokens, estimated from the body's size (1 when unknown). */
function requestCost(body: Body): number {
  return Buffer.isBuffer(body) ? Math.max(1, Math.round(body.length / CHARS_PER_TOKEN)) : 1;
}

export interface PipelineDeps {
  table: RoutingTable;
  metrics: GatewayMetrics;
  limiter: RateLimiter;
  authFailures: AuthFailureBudget;
  activator: Activator;
  inflight: InflightTracker;
  /** Per-deployment queues when every replica is saturated (flow-control.ts). */
  flow: FlowController;
  /** How many more requests a replica takes before it is saturated (replica-capacity.ts). */
  room: (replicaId: number) => number;
  /** Chooses the revision of a request to a deployment whose traffic splits between revisions. */
  split: TrafficSplitter;
  /** The placement policy of each routing_policy, one instance for all its deployments. */
  policies: Readonly<Record<RoutingPolicy, PlacementPolicy>>;
  http: HttpForwarder;
  grpc: GrpcForwarder;
  /** The body size limit of deployments that set none, and the longest silence. */
  body: BodyLimits;
  books: Accounting;
}

export class RequestPipeline {
  constructor(private readonly deps: PipelineDeps) {}

  /** A request the HTTP/1.1 parser refused (already answered by the listener) ends here too. */
  readonly parserRefused = (r: Rejection, socket: Duplex): void => {
    finishParserRefusal(this.deps.books, r.status, (socket as Partial<Socket>).remoteAddress ?? null);
  };

  /** Aborts every request not yet ended (the gateway is closing): each ends with 503 or a cut. */
  shutdown(): void {
    for (const ctx of this.deps.books.live?.snapshot() ?? []) ctx.shutdown();
  }

  /** The listener's request handler: HTTP/1.1 and HTTP/2 (gRPC included) alike. */
  readonly handle = (req: DownstreamRequest, res: DownstreamResponse): void => {
    const ctx = new RequestContext(req, res, this.deps.books);
    this.guarded(ctx, () => this.route(ctx));
  };

  /**
   * Runs a step of a request's path — the phases up to the body, what runs once it is in, and
   * what runs once the activator lets it go. An exception there is a bug: it ends that request
   * (500, gRPC INTERNAL; logged and counted) instead of escaping the request handler, where it
   * would take the process and every request in it down.
   */
  private guarded(ctx: RequestContext, step: () => void): void {
    try {
      step();
    } catch (err) {
      ctx.failedInside(err);
    }
  }

  private route(ctx: RequestContext): void {
    const { req } = ctx;
    const headers = headersPhase(req.rawHeaders);
    if (!headers.ok) return ctx.refuse(headers.rejection);
    const host = req.headers.host ?? (req.headers[':authority'] as string | undefined);
    const target = targetPhase(req.url, host);
    if (!target.ok) return ctx.refuse(target.rejection);
    const routed = routePhase(this.deps.table, host, target.value, ctx.protocol);
    if (!routed.ok) return ctx.refuse(routed.rejection);
    ctx.routed(routed.value.route);
    ctx.trace?.phase('routed');
    this.authenticate(ctx, routed.value.route, routed.value.path);
  }

  private authenticate(ctx: RequestContext, route: Route, path: string): void {
    const { metrics, authFailures } = this.deps;
    const socket = tlsSocketOf(ctx.req);
    const authed = authenticatePhase(route, { authorization: ctx.req.headers.authorization, certificateFingerprint: peerFingerprint(socket) });
    if (authed.ok) {
      ctx.who = authed.value;
      const asked = parsePriority(ctx.req.headers['x-priority']);
      if (asked === null) return ctx.refuse(BAD_PRIORITY);
      ctx.priority = cappedPriority(asked, authed.value.maxPriority);
      ctx.trace?.phase('authenticated', { 'infergate.auth': authed.value.method, 'infergate.priority': ctx.priority });
      return this.admit(ctx, route, path);
    }
    metrics.authFailure(route.name, authed.rejection.authFailure ?? 'missing_credential');
    // An address that keeps failing gets its 401s late (auth-failure-budget.ts).
    const address = socket?.remoteAddress ?? '';
    const delay = authFailures.delayFor(address);
    if (delay === 0) return ctx.refuse(authed.rejection);
    metrics.authFailureDelayed(route.name);
    let held = true;
    const release = (): boolean => {
      if (!held) return false;
      held = false;
      authFailures.released(address);
      return true;
    };
    const onAbort = (): void => {
      clearTimeout(timer);
      release();
      // A client that left before its late 401 still counts, once, as gone.
      ctx.endAborted();
    };
    const timer = setTimeout(() => {
      ctx.offAbort(onAbort);
      if (release()) ctx.refuse(authed.rejection);
    }, delay);
    timer.unref();
    ctx.onAbort(onAbort);
  }

  /**
   * Rate limit and pause first, then the body (or a gRPC call's first message): only once it
   * is in does the request become load on the deployment or enter the activator's queue.
   * `decided`: the rate limit's answer, once it came from Redis.
   */
  private admit(ctx: RequestContext, route: Route, path: string, decided?: RateDecision): void {
    const decision = decided ?? this.deps.limiter.admit(route.deploymentId, route.rateLimit, ctx.who!.credential);
    if (decision instanceof Promise) {
      // Counted in Redis, shared by every gateway: the request waits for the answer (never
      // longer than the shared limits' timeout) holding nothing else; a client that leaves
      // meanwhile ends as aborted.
      const onAbort = (): void => ctx.endAborted();
      ctx.onAbort(onAbort);
      void decision.then(
        (d) => {
          if (ctx.aborted) return;
          ctx.offAbort(onAbort);
          this.guarded(ctx, () => this.admit(ctx, route, path, d));
        },
        (err: unknown) => {
          ctx.offAbort(onAbort);
          ctx.failedInside(err);
        },
      );
      return;
    }
    const limited = rateLimitPhase(decision);
    if (!limited.ok) {
      if (!decision.ok) this.deps.metrics.rateLimited(route.name, decision.limit);
      return ctx.refuse(limited.rejection, { rateLimited: true });
    }
    const paused = pausedPhase(route);
    if (!paused.ok) return ctx.refuse(paused.rejection);
    ctx.trace?.phase('admitted');
    const limits: BodyLimits = { maxBytes: route.maxBodyBytes ?? this.deps.body.maxBytes, idleMs: this.deps.body.idleMs };
    const received = (r: ReceivedBody): void =>
      this.guarded(ctx, () => {
        if (r.ok) {
          ctx.trace?.phase('body_received');
          return this.load(ctx, route.host, path, r.body);
        }
        if (r.error === null) return ctx.endAborted();
        ctx.refuse(bodyRejection(r.error), { bodyRefused: r.error.kind });
      });
    if (ctx.protocol === 'grpc') {
      const gate = new BodyGate(limits, grpcMessageCheck(limits.maxBytes));
      gate.onFirstByte((r) => {
        // A bidirectional stream may rightly go quiet once its first message is in.
        gate.stopIdleTimer();
        received(r);
      });
      followClient(ctx.req, gate);
      return;
    }
    receiveBody(ctx.req, ctx.res, limits, received);
  }

  /** The request is load from here: held at zero by the activator, or admitted if ready. */
  private load(ctx: RequestContext, host: string, path: string, body: Body): void {
    // The table may have changed while the body came in.
    const route = this.deps.table.lookup(host) ?? ctx.route!;
    ctx.countAsLoad(route);
    if (!route.paused && route.replicas.length === 0 && route.scaleToZero) {
      ctx.trace?.phase('queued', { 'infergate.queue': 'activator' });
      void this.deps.activator
        .hold(route, (cancel) => ctx.onAbort(cancel))
        .then((outcome) =>
          this.guarded(ctx, () => {
            if (outcome.ok) {
              ctx.trace?.phase('released');
              const current = this.addressed(route, outcome.route);
              // A tag host's revision may still have nothing ready when the deployment has.
              if (current.tag !== null) {
                const admitted = admitPhase(current);
                if (!admitted.ok) return ctx.refuse(admitted.rejection);
              }
              return this.dispatch(ctx, current, path, body);
            }
            if (outcome.rejection) ctx.refuse(outcome.rejection);
            else ctx.endAborted();
          }),
        )
        .catch((err: unknown) => ctx.failedInside(err));
      return;
    }
    const admitted = admitPhase(route);
    if (!admitted.ok) return ctx.refuse(admitted.rejection);
    this.dispatch(ctx, route, path, body);
  }

  /**
   * Flow control: on at once while a replica has room and nothing waits; else the request
   * waits its turn (by class, fair between credentials) or is refused 429/503 with Retry-After.
   * A client that leaves while waiting gives up its place.
   */
  private dispatch(ctx: RequestContext, route: Route, path: string, body: Body): void {
    if (ctx.aborted) return ctx.endAborted();
    const priority = ctx.priority ?? DEFAULT_PRIORITY;
    // Flow control is per deployment, over all its ready replicas, whichever host was called.
    const flowRoute = route.tag === null ? route : (this.deps.table.lookupDeployment(route.deploymentId) ?? route);
    if (this.deps.flow.mayGoNow(flowRoute, priority)) return this.forward(ctx, route, path, body);
    let waiting: Waiting | null = null;
    const onAbort = (): void => {
      if (waiting?.cancel()) ctx.endAborted();
    };
    // mayGoNow said no: straight to the queue, without asking again.
    waiting = this.deps.flow.wait(flowRoute, {
      priority,
      credential: ctx.who?.credential ?? '',
      cost: requestCost(body),
      go: (current) => {
        if (waiting !== null) {
          ctx.offAbort(onAbort);
          ctx.trace?.phase('dispatched');
        }
        this.guarded(ctx, () => this.forward(ctx, this.addressed(route, current), path, body));
      },
      refuse: (r, reason) => {
        ctx.offAbort(onAbort);
        ctx.refuse(r, { shed: reason });
      },
    });
    // null: it went on, or was refused, before admit returned.
    if (waiting === null) return;
    ctx.trace?.phase('queued', { 'infergate.queue': 'flow_control' });
    ctx.onAbort(onAbort);
  }


  /**
   * The route a request addressed, as the table has it now, given the deployment's `current`
   * route (from flow control or the activator): a tag host's own route, else `current`.
   */
  private addressed(route: Route, current: Route): Route {
    return route.tag === null ? current : (this.deps.table.lookup(route.host) ?? route);
  }

  private forward(ctx: RequestContext, route: Route, path: string, body: Body): void {
    if (ctx.aborted) return ctx.endAborted();
    ctx.routed(route);
    // X-Session-Id, or the gRPC metadata key x-session-id: both arrive as this header.
    const sessionId = route.affinity || route.split !== null ? ctx.req.headers['x-session-id'] : undefined;
    const sessionHeader = typeof sessionId === 'string' && sessionId !== '' ? sessionId : null;
    // The revision first (any session keeps its revision), then the replica inside it (a
    // session keeps its replica only with session_affinity).
    const replicas = route.split === null ? route.replicas : this.deps.split.choose(route, sessionHeader);
    const session = route.affinity ? sessionHeader : null;
    // A body already in whole (sized bodies up to 1 MiB are read before the choice) is the
    // prompt a policy may read; a larger or chunked one is placed without it and streamed.
    const placement = this.deps.policies[route.routingPolicy].place(replicas, this.deps.inflight, {
      scope: route.deploymentId,
      session,
      body: Buffer.isBuffer(body) ? body : null,
      room: this.deps.room,
    });
    if (placement.session !== null) this.deps.metrics.sessionRouted(route.name, placement.session);
    ctx.placed(placement);
    ctx.trace?.phase('selected', { 'infergate.routing_policy': route.routingPolicy, 'infergate.candidates': placement.order.length });
    if (ctx.protocol === 'grpc') {
      this.deps.grpc.forward(ctx, { route, body: body as BodyGate, candidates: placement.order });
      return;
    }
    this.deps.http.forward(ctx, { route, path, body, candidates: placement.order });
  }
}
