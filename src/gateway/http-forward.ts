// Owns the HTTP transport of a forwarded request (HTTP/1.1, or HTTP/2 through node's
// compatibility objects) with undici's dispatch API and its current handler interface
// (onRequestStart … onResponseEnd), the cheapest path measured (bench/README.md): raw headers
// pass through, the response is relayed chunk by chunk with backpressure (the dispatch
// controller's pause and resume), headers are flushed as soon as they arrive (SSE clients see
// them at once), and the request's abort (client gone, shutdown; onAbort) aborts the upstream
// request. Which replica to try, and whether a failed attempt is retried or ejects it, is the
// candidate loop's (candidates.ts); this module only says how an attempt failed:
//   connect   undici never put the request on a socket (onRequestStart not called);
//   timeout   the upstream-headers timer (undici's headersTimeout) fired;
//   upstream  the replica had the request and failed before its response headers;
//   local     undici refused the request itself (an argument it does not support).
// Timers: connect (the pool's connectTimeout), upstream headers (per deployment, else the
// gateway's), idle between chunks (undici's bodyTimeout).
// The body comes in received (request-body.ts): small sized ones whole, so a retry can send
// them again; large or unsized ones as a gate that streams them, replayable only before being
// read. A gate cut for a stalled or oversized body ends the request with 408 or 413 when no
// response has started.
//
// Usage: a streamed completion request held whole is sent asking for its usage
// (completion-request.ts: the body spliced, Content-Length set to match, Accept-Encoding
// dropped so the stream comes back as text the gateway can read), and its response goes
// through a usage tap that reads — and for such a stream removes — the usage event
// (usage-tap.ts); the tap's estimate stands in when no usage comes.

import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { ReplicaRef } from '../balancer/selector.js';
import type { DownstreamRequest } from './downstream.js';
import { CandidateLoop, type AttemptFailure } from './candidates.js';
import type { ForwardReport } from './request-context.js';
import type { Route } from './routing-table.js';
import type { UpstreamPools } from './upstream-pools.js';
import { completionExchange, type CompletionExchange } from './completion-request.js';
import { BodyError, BodyGate, type Body } from './request-body.js';
import { bodyRejection } from './respond.js';
import { usageTapFor, type UsageTap } from './usage-tap.js';

/** RFC 9110 §7.6.1 connection-specific fields, plus ones HTTP/2 forbids (RFC 9113 §8.2.2). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
]);
/**
 * Set by the gateway itself (a client's values would be spoofable), or answered by it:
 * `Expect: 100-continue` is the gateway's to answer, after authentication.
 */
const REPLACED = new Set(['authorization', 'x-forwarded-proto', 'x-forwarded-host', 'host', 'expect']);
/** Errors of the connection to a replica (as opposed to undici refusing the request itself). */
const CONNECTION_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

export interface HttpTarget {
  route: Route;
  /** The request target in origin form (phases.ts: targetPhase). */
  path: string;
  body: Body;
  /** Replicas in the order to try them (the select phase's choice). */
  candidates: readonly ReplicaRef[];
}

/** Request headers for the replica, as undici's flat [name, value, ...] list. */
export function upstreamRequestHeaders(req: DownstreamRequest, host: string): string[] {
  const raw = req.rawHeaders;
  let listed: string[] | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === 'connection') {
      listed = (listed ?? ([] as string[])).concat(raw[i + 1]!.toLowerCase().split(',').map((t) => t.trim()));
    }
  }
  const out: string[] = ['host', host];
  let forwardedFor: string | null = null;
  let requestId: string | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.charCodeAt(0) === 58 /* ':' HTTP/2 pseudo-header */) continue;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || REPLACED.has(lower) || (listed !== null && listed.includes(lower))) continue;
    const value = raw[i + 1]!;
    if (lower === 'x-forwarded-for') {
      forwardedFor = forwardedFor === null ? value : `${forwardedFor}, ${value}`;
      continue;
    }
    if (lower === 'x-request-id') requestId = value;
    out.push(name, value);
  }
  const peer = req.socket?.remoteAddress ?? '';
  out.push('x-forwarded-for', forwardedFor === null ? peer : `${forwardedFor}, ${peer}`);
  out.push('x-forwarded-proto', 'https', 'x-forwarded-host', host);
  if (requestId === null) out.push('x-request-id', randomUUID());
  return out;
}

/**
 * Response headers for the client: the replica's, minus connection-specific ones. undici
 * hands the raw list to the handler's controller (names in the replica's own case); the
 * parsed object is the fallback.
 */
function downstreamHeaders(raw: unknown, parsed: IncomingHttpHeaders): { headers: string[]; contentType: string | undefined; sized: boolean; encoded: boolean } {
  const headers: string[] = [];
  let contentType: string | undefined;
  let sized = false;
  let encoded = false;
  const add = (name: string, value: string): void => {
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower)) return;
    if (lower === 'content-type') contentType = value;
    else if (lower === 'content-length') sized = true;
    else if (lower === 'content-encoding' && value.trim().toLowerCase() !== 'identity') encoded = true;
    headers.push(name, value);
  };
  if (Array.isArray(raw)) {
    for (let i = 0; i < raw.length; i += 2) add(String(raw[i]), String(raw[i + 1]));
  } else {
    for (const [name, value] of Object.entries(parsed)) {
      if (Array.isArray(value)) for (const v of value) add(name, v);
      else if (value !== undefined) add(name, value);
    }
  }
  return { headers, contentType, sized, encoded };
}

/**
 * The headers for a body the gateway rewrote: its own Content-Length, and no Accept-Encoding —
 * a compressed stream could not have its usage event removed.
 */
function rewrittenBodyHeaders(headers: string[], length: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const lower = headers[i]!.toLowerCase();
    if (lower === 'accept-encoding') continue;
    out.push(headers[i]!, lower === 'content-length' ? String(length) : headers[i + 1]!);
  }
  return out;
}

/**
 * The request headers with the attempt's trace context instead of the client's: the replica's
 * parent is the gateway's attempt span, in the client's trace.
 */
function withTraceContext(headers: readonly string[], trace: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const lower = headers[i]!.toLowerCase();
    if (lower === 'traceparent' || lower === 'tracestate') continue;
    out.push(headers[i]!, headers[i + 1]!);
  }
  out.push(...trace);
  return out;
}

/** The gate's own error when an attempt failed because the client's body was cut. */
function bodyErrorOf(err: Error, body: Body): BodyError | null {
  if (err instanceof BodyError) return err;
  if (body instanceof BodyGate && body.errored instanceof BodyError) return body.errored;
  return null;
}

export class HttpForwarder {
  constructor(
    private readonly pools: UpstreamPools,
    private readonly isEjected: (replicaId: number) => boolean,
  ) {}

  forward(ctx: ForwardReport, target: HttpTarget): void {
    const exchange = completionExchange(ctx.req.method, target.path, target.body);
    let headers = upstreamRequestHeaders(ctx.req, target.route.host);
    let body = target.body;
    if (exchange?.injected && Buffer.isBuffer(exchange.body)) {
      headers = rewrittenBodyHeaders(headers, exchange.body.length);
      body = exchange.body;
    }
    if (exchange !== null && ctx.trace?.recording) ctx.trace.set({ 'gen_ai.request.model': exchange.model?.() ?? undefined });
    const headersTimeout = target.route.firstResponseMs;
    const call: HttpCall = { pools: this.pools, ctx, path: target.path, headers, body, exchange, headersTimeout, current: null, loop: null! };
    call.loop = new CandidateLoop(ctx, target.candidates, this.isEjected, (replica) => {
      call.current = new HttpAttempt(call, replica);
      call.current.send();
    });
    // The signal ends the request (client gone, shutdown): the attempt in flight is aborted,
    // and its handler ends the request with the usage it read so far.
    ctx.onAbort(() => call.current?.abort());
    call.loop.start();
  }
}

/** One request's state across its attempts. */
interface HttpCall {
  readonly pools: UpstreamPools;
  readonly ctx: ForwardReport;
  readonly path: string;
  readonly headers: string[];
  readonly body: Body;
  readonly exchange: CompletionExchange | null;
  /** The deployment's own upstream-headers timer, ms; null: the pool's (the gateway's default). */
  readonly headersTimeout: number | null;
  current: HttpAttempt | null;
  loop: CandidateLoop;
}

/** One attempt at one replica: the dispatch handler undici calls back. */
class HttpAttempt implements Dispatcher.DispatchHandler {
  private connected = false;
  private controller: Dispatcher.DispatchController | null = null;
  private status = 0;
  private tap: UsageTap | null = null;
  private bodyStarted = false;
  private done = false;

  constructor(
    private readonly call: HttpCall,
    private readonly replica: ReplicaRef,
  ) {}

  send(): void {
    const { call } = this;
    const traced = call.ctx.traceHeaders;
    const headers = traced === null ? call.headers : withTraceContext(call.headers, traced);
    const options: Dispatcher.DispatchOptions = { path: call.path, method: call.ctx.req.method as Dispatcher.HttpMethod, headers, body: call.body };
    if (call.headersTimeout !== null) options.headersTimeout = call.headersTimeout;
    call.pools.get(this.replica.address).dispatch(options, this);
  }

  /** The request's signal fired: stop the upstream request, end the request for its reason. */
  abort(): void {
    if (this.controller !== null) this.controller.abort(this.call.ctx.abortReason!);
    // Not on a socket yet: nothing to abort; onRequestStart aborts it when it gets one.
    else this.end(() => this.call.ctx.endAborted());
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.connected = true;
    this.controller = controller;
    if (this.call.ctx.aborted) controller.abort(this.call.ctx.abortReason!);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, parsed: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // 1xx (e.g. 100-continue): the final response follows
    const { ctx, exchange } = this.call;
    if (ctx.ended) return controller.abort(new Error('the request has ended'));
    const type = parsed['content-type'];
    ctx.responded(this.replica, statusCode, typeof type === 'string' && type.includes('text/event-stream'));
    this.status = statusCode;
    const { headers, contentType, sized, encoded } = downstreamHeaders(controller.rawHeaders, parsed);
    this.tap = usageTapFor({ status: statusCode, contentType, sized, encoded }, exchange && { injected: exchange.injected, estimation: exchange });
    const res = ctx.res as http.ServerResponse;
    res.writeHead(statusCode, headers);
    // Node holds headers until the first body write; a stream's first token may be seconds
    // away, so they must not wait for it (measured: time-to-headers otherwise equals
    // time-to-first-chunk). They leave at the end of this turn of the event loop: a chunk
    // that came in the same read goes out with them in one write and one TLS record. A sized
    // body is complete at the replica and follows its headers at once, so it needs no flush.
    if (!sized && typeof res.flushHeaders === 'function') {
      setImmediate(() => {
        if (!this.bodyStarted && !res.destroyed) res.flushHeaders();
      });
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // What the client gets of the chunk: all of it, or without the usage it did not ask for.
    const out = this.tap === null ? chunk : this.tap.push(chunk);
    if (out.length === 0) return;
    const { ctx } = this.call;
    if (!this.bodyStarted) ctx.firstChunk();
    this.bodyStarted = true;
    const res = ctx.res as http.ServerResponse;
    if (res.write(out)) return;
    controller.pause();
    res.once('drain', () => controller.resume());
  }

  onResponseEnd(): void {
    const { ctx } = this.call;
    const last = this.tap?.end() ?? null;
    if (last !== null && !this.bodyStarted) ctx.firstChunk();
    if (last === null) ctx.res.end();
    else ctx.res.end(last);
    this.end(() => ctx.finish({ status: this.status, usage: this.usage() }));
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    const { ctx, body, loop } = this.call;
    if (ctx.aborted) return this.end(() => ctx.endAborted({ usage: this.usage() }));
    const bodyError = bodyErrorOf(err, body);
    if (bodyError) return this.refuseBody(bodyError);
    if (this.status !== 0) {
      // The response had started: the client can only learn of the failure by the cut.
      ctx.upstreamError(this.replica, err);
      return this.end(() => ctx.cut(this.status, { usage: this.usage() }, err));
    }
    const replayable = body === null || Buffer.isBuffer(body) || !body.readableDidRead;
    this.end(() => loop.failed(this.replica, this.failure(err), replayable, err));
  }

  private failure(err: Error): AttemptFailure {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const detail = code || err.message;
    if (code === 'UND_ERR_HEADERS_TIMEOUT') return { kind: 'timeout', detail: 'upstream headers timer' };
    // Only a connection that failed says something about the replica; undici refusing the
    // request itself must never eject a healthy one.
    if (!this.connected) return CONNECTION_FAILURES.has(code) ? { kind: 'connect', detail } : { kind: 'local', detail };
    return { kind: 'upstream', detail };
  }

  /** The client's body stalled or outgrew the limit while it was being forwarded. */
  private refuseBody(error: BodyError): void {
    this.controller?.abort(error);
    const { ctx } = this.call;
    this.end(() => ctx.fail(bodyRejection(error), { bodyRefused: error.kind }));
  }

  private usage() {
    return this.tap?.finish() ?? null;
  }

  /** An attempt ends once; what follows (another attempt, the request's end) runs then. */
  private end(then: () => void): void {
    if (this.done) return;
    this.done = true;
    then();
  }
}
