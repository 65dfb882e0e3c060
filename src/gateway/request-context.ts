// Owns one request's life at the gateway from arrival to its single end: the protocol (decided
// once), the route and credential once known, the time it arrived, the replica each forward
// attempt went to, and `finish` — the one place that does all accounting, however the request
// ended (refused by a phase, held and given up, forwarded, cut): in-flight counts of the
// deployment and the replica, usage rows, token spend for rate limits, metrics, and an
// optional access log line. Forwarders only report what happened (ForwardReport).

import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import type { UsageLedger } from '../store/usage-ledger.js';
import type { ReplicaRef } from '../balancer/selector.js';
import type { Dispatch, PrefixAwareSelector, PrefixRequest } from '../balancer/prefix-aware.js';
import { protocolOf, type DownstreamRequest, type DownstreamResponse } from './downstream.js';
import type { InflightTracker } from './inflight.js';
import type { DeploymentMeters, GatewayMetrics, Protocol } from './metrics.js';
import type { Authenticated, Rejection } from './phases.js';
import type { RateLimiter } from './rate-limiter.js';
import type { ReplicaHealth } from './replica-health.js';
import type { BodyFailureKind } from './request-body.js';
import { sendRejection } from './respond.js';
import type { Route } from './routing-table.js';
import type { TokenUsage } from './usage-tap.js';

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
}

/** What a forwarder reports while it carries a request; it keeps no count itself. */
export interface ForwardReport {
  readonly req: DownstreamRequest;
  readonly res: DownstreamResponse;
  /** An attempt goes to this replica now; the previous attempt, if any, is over. */
  attempt(replica: ReplicaRef): void;
  /** The attempt could not reach the replica; enough of these in a row eject it. */
  connectionFailed(replica: ReplicaRef): void;
  /** The request goes on to the next candidate. */
  retrying(): void;
  /** The replica's response headers arrived: it is healthy, and the first byte is in. */
  responded(replica: ReplicaRef): void;
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
}

export class RequestContext implements ForwardReport {
  readonly startedAt = performance.now();
  readonly protocol: Protocol;
  /** The deployment, once the route phase found it. */
  route: Route | null = null;
  /** The credential, once authenticated: from then on the request is the owner's usage. */
  who: Authenticated | null = null;
  private meters: DeploymentMeters;
  /** The deployment whose in-flight count holds this request (admitted or held). */
  private loadOn: number | null = null;
  private replica: ReplicaRef | null = null;
  private attempts = 0;
  private finished = false;
  private chunked = false;
  /** The prefix-aware policy's books, when it chose the replicas (placedBy). */
  private placement: { policy: PrefixAwareSelector; request: PrefixRequest } | null = null;
  private dispatch: Dispatch | null = null;

  constructor(
    readonly req: DownstreamRequest,
    readonly res: DownstreamResponse,
    private readonly books: Accounting,
  ) {
    this.protocol = protocolOf(req);
    this.meters = books.metrics.forDeployment('', this.protocol);
  }

  get ended(): boolean {
    return this.finished;
  }

  routed(route: Route): void {
    if (this.route?.name !== route.name) this.meters = this.books.metrics.forDeployment(route.name, this.protocol);
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
    sendRejection(this.req, this.res, this.protocol, r);
    this.finish({ status: r.status, ...extra });
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
    if (this.finished) return;
    if (!this.res.headersSent) return this.refuse({ status: 500, code: 'internal', message: 'the gateway failed on this request (the error is in its log)' });
    this.res.destroy();
    this.finish({ status: 500 });
  }

  /** The prefix-aware policy chose this request's replicas: each attempt is on its books. */
  placedBy(policy: PrefixAwareSelector, request: PrefixRequest): void {
    this.placement = { policy, request };
  }

  attempt(replica: ReplicaRef): void {
    const { inflight } = this.books;
    if (this.replica) inflight.replicaEnd(this.replica.id);
    this.dispatch?.end();
    this.replica = replica;
    this.attempts++;
    inflight.replicaStart(replica.id);
    if (this.placement) this.dispatch = this.placement.policy.dispatched(replica, this.placement.request);
  }

  connectionFailed(replica: ReplicaRef): void {
    if (!this.books.health.failure(replica.id)) return;
    const name = this.route?.name ?? '';
    this.books.metrics.ejection(name);
    this.books.log.warn({ deployment: name, replica: replica.id, address: replica.address }, 'replica ejected after repeated connection failures');
  }

  retrying(): void {
    this.meters.retry();
  }

  responded(replica: ReplicaRef): void {
    this.books.health.success(replica.id);
    this.meters.timeToFirstByte((performance.now() - this.startedAt) / 1000);
  }

  firstChunk(): void {
    if (this.chunked) return;
    this.chunked = true;
    // The replica's prefill for this request is over: it no longer owes it (prefix-aware.ts).
    this.dispatch?.firstByte();
    this.meters.timeToFirstChunk((performance.now() - this.startedAt) / 1000);
  }

  upstreamError(replica: ReplicaRef, err: Error): void {
    this.books.log.warn({ err, deployment: this.route?.name, replica: replica.id }, 'upstream request failed');
  }

  finish(outcome: Outcome): void {
    if (this.finished) return;
    this.finished = true;
    const { inflight, metrics, usage, limiter, clock } = this.books;
    if (this.replica) inflight.replicaEnd(this.replica.id);
    this.dispatch?.end();
    if (this.loadOn !== null) inflight.deploymentEnd(this.loadOn);
    const { status } = outcome;
    const tokens = outcome.usage ?? null;
    this.meters.requests(status);
    if (this.attempts > 0) this.meters.duration((performance.now() - this.startedAt) / 1000);
    if (tokens) this.meters.tokens(tokens.prompt, tokens.completion, tokens.cached);
    const blocks = this.placement?.request.blocks;
    // An estimate says nothing of the replica's tokenizer: only reported usage calibrates the policy.
    if (tokens && blocks && !tokens.estimated) this.placement!.policy.promptTokens(blocks.length, tokens.prompt);
    const route = this.route;
    if (route && outcome.bodyRefused) metrics.bodyRefused(route.name, outcome.bodyRefused);
    if (route && this.who) {
      usage?.add(route.deploymentId, clock.now(), {
        requests: 1,
        errors: status >= 500 ? 1 : 0,
        prompt_tokens: tokens?.prompt ?? 0,
        completion_tokens: tokens?.completion ?? 0,
        rate_limited: outcome.rateLimited ? 1 : 0,
      });
      if (tokens) limiter.spendTokens(route.deploymentId, route.rateLimit, this.who.credential, tokens.prompt + tokens.completion);
    }
    if (this.books.accessLog) this.logLine(this.books.accessLog, status);
  }

  /** The access log: who asked what of which deployment, and how it ended; never a secret. */
  private logLine(log: Logger, status: number): void {
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
        replica: this.replica?.id ?? null,
        attempts: this.attempts,
        ms: Math.round((performance.now() - this.startedAt) * 10) / 10,
        client: this.req.socket?.remoteAddress ?? null,
      },
      'request',
    );
  }
}
