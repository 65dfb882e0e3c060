// Owns one request's life at the gateway from arrival to its single end: the protocol (decided
// once), the route and credential once known, the time it arrived, the replica each forward
// attempt went to, the request's abort signal (the client went away, its gRPC deadline passed,
// the gateway is shutting down) that every waiting phase and forwarder listens to, the hooks
// of the policy that placed it, and `finish` — the one place that does all accounting, however
// the request ended (refused by a phase, held and given up, forwarded, cut): in-flight counts
// of the deployment, the revision and the replica, usage rows (under the serving replica's revision too), token spend for rate limits,
// metrics (the revision's too) and the revision's 5-second history, and an optional access log line — and, when tracing is on, the request's span (src/tracing/): an
// event per phase, a child span per attempt whose context goes to the replica, the first
// byte and the GenAI attributes at the end. Every answer it writes goes through respond.ts.
// Forwarders only report what happened (ForwardReport).

import type { Logger } from 'pino';
import type { Priority } from '../domain/priority.js';
import type { ShedReason } from './flow-control.js';
import type { Clock } from '../core/clock.js';
import type { UsageLedger } from '../store/usage-ledger.js';
import type { LatencySample, Placement, PlacementHooks, ReplicaRef } from '../balancer/selector.js';
import { protocolOf, type DownstreamRequest, type DownstreamResponse } from './downstream.js';
import type { InflightTracker } from './inflight.js';
import type { RevisionHistory } from './revision-history.js';
import type { DeploymentMeters, GatewayMetrics, Protocol } from './metrics.js';
import type { Authenticated, Rejection } from './phases.js';
import type { RateLimiter } from './rate-limiter.js';
import type { ReplicaHealth } from './replica-health.js';
import type { BodyFailureKind } from './request-body.js';
import { answerStarted, cutAnswer, writeRefusal } from './respond.js';
import type { Route } from './routing-table.js';
import type { LiveLinks, LiveRequests } from './live-requests.js';
import type { TokenUsage } from './usage-tap.js';
import type { AttemptTrace, RequestTrace, Tracing } from '../tracing/tracing.js';

/** How a request ended, as the accounting needs it. */
export interface Outcome {
  /** The status the client saw; a gRPC call's as its HTTP-like status (respond.ts). */
  status: number;
  /** Tokens the response reported. */
  usage?: TokenUsage | null;
  /** The client's body was refused at the gateway: it stalled, or outgrew the limit. */
  bodyRefused?: BodyFailureKind;
  /** Refused by the credential's rate limit. */
  rateLimited?: boolean;
  /** Refused by flow control: why (flow-control.ts). */
  shed?: ShedReason;
}

/** Why a request was ended before its answer: the signal's reason. */
export class RequestAborted extends Error {
  override name = 'RequestAborted';
  constructor(readonly reason: 'client_gone' | 'deadline' | 'shutdown') {
    super(reason === 'client_gone' ? 'the client went away' : reason === 'deadline' ? "the call's deadline passed" : 'the gateway is shutting down');
  }
}

/** What a forwarder reports while it carries a request; it keeps no count itself. */
export interface ForwardReport {
  readonly req: DownstreamRequest;
  readonly res: DownstreamResponse;
  readonly protocol: Protocol;
  readonly route: Route | null;
  /** The client went away, the deadline passed or the gateway is shutting down. */
  readonly aborted: boolean;
  /** Why, once aborted. */
  readonly abortReason: RequestAborted | null;
  /** Calls `fn` once when the request is aborted (at once if it already is). */
  onAbort(fn: () => void): void;
  /** Forgets a function given to onAbort. */
  offAbort(fn: () => void): void;
  /** The request has ended: nothing more is to be written or counted. */
  readonly ended: boolean;
  /** Ends the request for the signal's reason (after the forwarder cancelled its upstream). */
  endAborted(extra?: Omit<Outcome, 'status'>): void;
  /** Ends the request with a refusal, or with a cut when the answer had started. */
  fail(r: Rejection, extra?: Omit<Outcome, 'status'>): void;
  /** Ends an answer that had started with a cut; `status` is what it is counted as. */
  cut(status: number, extra?: Omit<Outcome, 'status'>, err?: Error): void;
  /** The request's trace when tracing is on (sampled or not); null when off. */
  readonly trace: RequestTrace | null;
  /**
   * The trace context for the replica of the current attempt (traceparent, tracestate), as a
   * flat [name, value, ...] list to send instead of the client's; null when tracing is off or
   * the request is not sampled (the client's own headers then go on unchanged).
   */
  readonly traceHeaders: readonly string[] | null;
  /** An attempt goes to this replica now; the previous attempt, if any, is over. */
  attempt(replica: ReplicaRef): void;
  /** The attempt could not reach the replica; enough of these in a row eject it. */
  connectionFailed(replica: ReplicaRef): void;
  /** The request goes on to the next candidate. */
  retrying(): void;
  /**
   * The replica's response headers arrived: it is healthy, and the first byte is in.
   * `streaming`: an SSE stream, whose first chunk is the first token.
   */
  responded(replica: ReplicaRef, status?: number, streaming?: boolean): void;
  /** The first byte of the response body went to the client (a stream's first token). */
  firstChunk(): void;
  upstreamError(replica: ReplicaRef, err: Error): void;
  finish(outcome: Outcome): void;
}

/** The gateway's shared books, written only from here. */
export interface Accounting {
  inflight: InflightTracker;
  health: ReplicaHealth;
  metrics: GatewayMetrics;
  limiter: RateLimiter;
  usage: UsageLedger | undefined;
  clock: Clock;
  log: Logger;
  /** Where one line per request goes when it ends; null: no access log. */
  accessLog: Logger | null;
  /** Requests not yet ended, so a shutdown can abort them; absent: not tracked. */
  live?: LiveRequests<RequestContext>;
  /** OpenTelemetry tracing when it is on; absent or null: off, and nothing is traced. */
  tracing?: Tracing | null;
  /** Learns each replica's time to first token from streamed responses; absent: nothing learns. */
  latency?: { observe(sample: LatencySample): void };
  /** Told when a request that held a replica ends: flow control may dispatch a waiting one. */
  flow?: { released(deploymentId: number): void };
  /** Per revision 5-second steps of requests that reached a replica; absent: not kept. */
  revisions?: Pick<RevisionHistory, 'record'>;
}

const GRPC_TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** A gRPC deadline (`grpc-timeout`: up to 8 digits and a unit H, M, S, m, u or n) in ms; null: none or malformed. */
export function grpcDeadlineMs(value: string | string[] | undefined): number | null {
  if (typeof value !== 'string') return null;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (!m) return null;
  return Number(m[1]) * GRPC_TIMEOUT_UNIT_MS[m[2]!]!;
}

/**
 * The end of a request the HTTP/1.1 parser refused before it became one (no deployment, no
 * credential): counted as every request is — a requests sample under no deployment, and its
 * access log line.
 */
export function finishParserRefusal(books: Accounting, status: number, client: string | null): void {
  books.metrics.forDeployment('', 'http').requests(status);
  books.accessLog?.info({ deployment: null, protocol: 'http', method: null, path: null, status, auth: null, replica: null, attempts: 0, ms: 0, client }, 'request');
}

export class RequestContext implements ForwardReport, LiveLinks {
  /** Links of the live-requests list (live-requests.ts). */
  livePrev: LiveLinks | null = null;
  liveNext: LiveLinks | null = null;
  readonly startedAt = performance.now();
  readonly protocol: Protocol;
  /** The deployment, once the route phase found it. */
  route: Route | null = null;
  /** The credential, once authenticated: from then on the request is the owner's usage. */
  who: Authenticated | null = null;
  /** Its class for flow control (X-Priority, capped by the credential), once authenticated. */
  priority: Priority | null = null;
  private meters: DeploymentMeters;
  /** The deployment whose in-flight count holds this request (admitted or held). */
  private loadOn: number | null = null;
  private replica: ReplicaRef | null = null;
  private attempts = 0;
  private finished = false;
  private chunked = false;
  /** The hooks of the policy that placed the request (placed). */
  private hooks: PlacementHooks | null = null;
  private placement: Placement | null = null;
  /** The current attempt, as the latency model needs it: when it started, the replica's load then, its prefill ahead. */
  private attemptAt = 0;
  private inflightAt = 0;
  private tokensAhead = 0;
  /** The response is a stream (SSE) whose first chunk is the first token: worth a latency sample. */
  private streaming = false;
  /** The revision of the replica the current attempt went to, whose in-flight count holds the request; null: none yet (or the replica's revision is not known). */
  private revision: number | null = null;
  private revisionOf = 0;
  /** Arrival to the first chunk of a streamed answer, once it came. */
  private ttftMs: number | null = null;
  private reason: RequestAborted | null = null;
  /** Who to tell when the request is aborted: one function or several (one is the common case). */
  private abortListeners: (() => void) | Array<() => void> | null = null;
  private controller: AbortController | null = null;
  private deadline: NodeJS.Timeout | null = null;
  readonly trace: RequestTrace | null = null;
  private attemptTrace: AttemptTrace | null = null;

  constructor(
    readonly req: DownstreamRequest,
    readonly res: DownstreamResponse,
    private readonly books: Accounting,
  ) {
    this.protocol = protocolOf(req);
    this.meters = books.metrics.forDeployment('', this.protocol);
    books.live?.add(this);
    if (books.tracing) {
      const url = req.url ?? '';
      const query = url.indexOf('?');
      const { traceparent, tracestate } = req.headers;
      this.trace = books.tracing.startRequest({ traceparent, tracestate }, { method: req.method ?? 'POST', path: query === -1 ? url : url.slice(0, query), protocol: this.protocol });
    }
    // The one place that notices a client going away; everything else listens to the signal.
    res.once('close', () => this.abortWith('client_gone'));
    if (this.protocol === 'grpc') {
      const ms = grpcDeadlineMs(req.headers['grpc-timeout']);
      if (ms !== null) {
        this.deadline = setTimeout(() => this.abortWith('deadline'), Math.max(0, Math.ceil(ms)));
        this.deadline.unref();
      }
    }
  }

  get traceHeaders(): readonly string[] | null {
    return this.attemptTrace?.headers ?? null;
  }

  get aborted(): boolean {
    return this.reason !== null;
  }

  get abortReason(): RequestAborted | null {
    return this.reason;
  }

  onAbort(fn: () => void): void {
    if (this.reason !== null) return fn();
    const current = this.abortListeners;
    if (current === null) this.abortListeners = fn;
    else if (typeof current === 'function') this.abortListeners = [current, fn];
    else current.push(fn);
  }

  offAbort(fn: () => void): void {
    const current = this.abortListeners;
    if (current === fn) this.abortListeners = null;
    else if (Array.isArray(current)) {
      const at = current.indexOf(fn);
      if (at !== -1) current.splice(at, 1);
    }
  }

  /**
   * The same abort as a standard AbortSignal, for APIs that take one. Made on first use only:
   * a Node AbortSignal is an EventTarget that costs about 2.5 µs and several objects to
   * create (measured), a cost every request would pay for a signal most never need — so the
   * gateway's own phases and forwarders listen through onAbort.
   */
  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.reason !== null) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** The gateway is closing: every phase and forwarder of this request stops. */
  shutdown(): void {
    this.abortWith('shutdown');
  }

  private abortWith(why: RequestAborted['reason']): void {
    if (this.finished || this.reason !== null) return;
    this.reason = new RequestAborted(why);
    this.controller?.abort(this.reason);
    const listeners = this.abortListeners;
    this.abortListeners = null;
    if (typeof listeners === 'function') listeners();
    else if (listeners !== null) for (const fn of listeners) fn();
  }

  get ended(): boolean {
    return this.finished;
  }

  routed(route: Route): void {
    if (this.route?.name !== route.name) {
      this.meters = this.books.metrics.forDeployment(route.name, this.protocol);
      this.trace?.set({ 'infergate.deployment': route.name });
    }
    this.route = route;
  }

  /** The request is load on its deployment from now on (in-flight, the autoscaler's signal). */
  countAsLoad(route: Route): void {
    this.routed(route);
    if (this.loadOn !== null) return;
    this.loadOn = route.deploymentId;
    this.books.inflight.deploymentStart(route.deploymentId);
  }

  /** Answers with the refusal and ends the request. */
  refuse(r: Rejection, extra: Omit<Outcome, 'status'> = {}): void {
    if (this.finished) return;
    writeRefusal(this.req, this.res, this.protocol, r);
    this.finish({ status: r.status, ...extra });
  }

  fail(r: Rejection, extra: Omit<Outcome, 'status'> = {}): void {
    if (this.finished) return;
    if (!answerStarted(this.res, this.protocol)) return this.refuse(r, extra);
    this.cut(r.status, extra);
  }

  cut(status: number, extra: Omit<Outcome, 'status'> = {}, err?: Error): void {
    if (this.finished) return;
    cutAnswer(this.res, this.protocol, err);
    this.finish({ status, ...extra });
  }

  /**
   * Ends the request for the reason its signal gives: a client that left is counted as 499
   * (nothing can reach it), a passed deadline is answered 504 (DEADLINE_EXCEEDED), a shutdown
   * 503 (UNAVAILABLE) with Retry-After — or cut, when the answer had started.
   */
  endAborted(extra: Omit<Outcome, 'status'> = {}): void {
    const reason = this.reason?.reason ?? 'client_gone';
    if (reason === 'client_gone') return this.finish({ status: 499, ...extra });
    if (reason === 'deadline') return this.fail({ status: 504, code: 'deadline_exceeded', message: "the call's deadline (grpc-timeout) passed at the gateway" }, extra);
    this.fail({ status: 503, code: 'unavailable', message: 'the gateway is shutting down; retry', headers: { 'retry-after': '1' } }, extra);
  }

  /**
   * The gateway's own code threw on this request's path: logged with the request id and
   * counted, then answered 500 (gRPC INTERNAL) if nothing was sent yet, else cut. The request
   * still ends here, once, with its accounting.
   */
  failedInside(err: unknown): void {
    const deployment = this.route?.name ?? '';
    const requestId = this.req.headers['x-request-id'];
    this.books.log.error({ err, deployment, requestId }, 'the gateway failed on a request; it was answered 500 and the gateway serves on');
    this.books.metrics.internalError(deployment);
    this.fail({ status: 500, code: 'internal', message: 'the gateway failed on this request (the error is in its log)' });
  }

  /** The policy that chose this request's replicas: its hooks see each attempt, the first byte, usage and the end. */
  placed(placement: Placement): void {
    this.hooks = placement.hooks;
    this.placement = placement;
  }

  attempt(replica: ReplicaRef): void {
    const { inflight } = this.books;
    if (this.replica) inflight.replicaEnd(this.replica.id);
    this.replica = replica;
    this.attempts++;
    this.attemptAt = performance.now();
    this.inflightAt = inflight.inflight(replica.id);
    this.streaming = false;
    inflight.replicaStart(replica.id);
    const revision = replica.revision ?? null;
    if (revision !== this.revision && this.route !== null) {
      // A retry to another revision (only when the split had nowhere else to go) moves the count with it.
      if (this.revision !== null) inflight.revisionEnd(this.revisionOf, this.revision);
      this.revision = revision;
      this.revisionOf = this.route.deploymentId;
      if (revision !== null) inflight.revisionStart(this.revisionOf, revision);
    }
    this.tokensAhead = this.placement?.tokensAhead?.(replica) ?? 0;
    this.hooks?.attemptStarted?.(replica);
    if (this.trace) {
      this.attemptTrace?.end('retried');
      this.attemptTrace = this.trace.attempt(replica, this.attempts);
    }
  }

  connectionFailed(replica: ReplicaRef): void {
    this.attemptTrace?.end('connection_failed');
    if (!this.books.health.failure(replica.id)) return;
    const name = this.route?.name ?? '';
    this.books.metrics.ejection(name);
    this.books.log.warn({ deployment: name, replica: replica.id, address: replica.address }, 'replica ejected after repeated connection failures');
  }

  retrying(): void {
    this.meters.retry();
  }

  responded(replica: ReplicaRef, status?: number, streaming = false): void {
    this.streaming = streaming && status === 200;
    this.attemptTrace?.end('responded', status);
    this.books.health.success(replica.id);
    this.meters.timeToFirstByte((performance.now() - this.startedAt) / 1000);
  }

  firstChunk(): void {
    if (this.chunked) return;
    this.chunked = true;
    // The replica's prefill for this request is over: it no longer owes it (prefix-aware.ts).
    this.hooks?.firstByte?.();
    if (this.streaming && this.replica !== null && this.route !== null && this.books.latency) {
      this.books.latency.observe({
        replicaId: this.replica.id,
        scope: this.route.deploymentId,
        tokensAhead: this.tokensAhead,
        inflight: this.inflightAt,
        ttftMs: performance.now() - this.attemptAt,
      });
    }
    const seconds = (performance.now() - this.startedAt) / 1000;
    if (this.streaming) this.ttftMs = seconds * 1000;
    this.meters.timeToFirstChunk(seconds);
    this.trace?.firstByte(seconds);
  }

  upstreamError(replica: ReplicaRef, err: Error): void {
    this.attemptTrace?.end('upstream_error');
    this.books.log.warn({ err, deployment: this.route?.name, replica: replica.id }, 'upstream request failed');
  }

  finish(outcome: Outcome): void {
    if (this.finished) return;
    this.finished = true;
    if (this.deadline !== null) clearTimeout(this.deadline);
    this.books.live?.delete(this);
    const { inflight, metrics, usage, limiter, clock } = this.books;
    if (this.replica) inflight.replicaEnd(this.replica.id);
    this.hooks?.end?.();
    if (this.loadOn !== null) inflight.deploymentEnd(this.loadOn);
    const { status } = outcome;
    const tokens = outcome.usage ?? null;
    if (this.revision !== null) {
      inflight.revisionEnd(this.revisionOf, this.revision);
      this.books.revisions?.record(this.revisionOf, this.revision, status, tokens?.completion ?? 0, this.ttftMs);
      if (this.route !== null) {
        const revisionMeters = metrics.forRevision(this.route.name, this.revision);
        revisionMeters.requests(status);
        if (this.ttftMs !== null) revisionMeters.ttft(this.ttftMs / 1000);
      }
    }
    this.meters.requests(status);
    if (this.attempts > 0) this.meters.duration((performance.now() - this.startedAt) / 1000);
    if (tokens) this.meters.tokens(tokens.prompt, tokens.completion, tokens.cached);
    if (tokens) this.hooks?.usage?.(tokens);
    const route = this.route;
    if (route && outcome.bodyRefused) metrics.bodyRefused(route.name, outcome.bodyRefused);
    if (route && this.who) {
      // Under the revision of the replica it was last forwarded to; one that reached none counts for the deployment only.
      const revision = this.replica?.revision;
      usage?.add(route.deploymentId, clock.now(), {
        requests: 1,
        errors: status >= 500 ? 1 : 0,
        prompt_tokens: tokens?.prompt ?? 0,
        completion_tokens: tokens?.completion ?? 0,
        rate_limited: outcome.rateLimited ? 1 : 0,
        ...(revision !== undefined ? { revision } : {}),
      }, route.project);
      if (tokens) limiter.spendTokens(route.deploymentId, route.rateLimit, this.who.credential, tokens.prompt + tokens.completion);
    }
    if (this.books.accessLog) this.logLine(this.books.accessLog, status, outcome.shed ?? null);
    if (this.trace) {
      this.attemptTrace?.end(status === 499 ? 'cancelled' : status >= 500 ? 'failed' : 'responded');
      this.trace.end(status, tokens);
    }
    // Last: a waiting request may be dispatched from here, and this one's books are closed.
    if (this.replica && this.loadOn !== null) this.books.flow?.released(this.loadOn);
  }

  /** The access log: who asked what of which deployment, and how it ended; never a secret. */
  private logLine(log: Logger, status: number, shed: ShedReason | null): void {
    const url = this.req.url ?? '';
    const query = url.indexOf('?');
    log.info(
      {
        deployment: this.route?.name ?? null,
        protocol: this.protocol,
        method: this.req.method,
        path: query === -1 ? url : url.slice(0, query),
        status,
        auth: this.who?.method ?? null,
        priority: this.priority,
        shed,
        replica: this.replica?.id ?? null,
        attempts: this.attempts,
        ms: Math.round((performance.now() - this.startedAt) * 10) / 10,
        client: this.req.socket?.remoteAddress ?? null,
      },
      'request',
    );
  }
}
