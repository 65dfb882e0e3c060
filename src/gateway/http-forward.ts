// Owns forwarding one authenticated HTTP request (HTTP/1.1, or HTTP/2 through node's
// compatibility objects) to a replica with undici's dispatch API and its current handler
// interface (onRequestStart … onResponseEnd), the cheapest path measured (bench/README.md):
// raw headers pass through, the response is relayed chunk by chunk with backpressure
// (the dispatch controller's pause and resume), headers are flushed as soon as they arrive
// (SSE clients see them at once), and a client that goes away aborts the upstream request.
// It keeps no count: it reports attempts, failures and the outcome to the request's context.
//
// Retries: a request is sent to the next candidate only when the failed attempt never got a
// connection (undici calls onRequestStart once the request is on a socket), so nothing reached
// the replica and even a POST is safe to repeat. The body comes in received (request-body.ts):
// small sized ones whole, so a retry can send them again; large or unsized ones as a gate
// that streams them, retried only before being read. A gate cut for a stalled or oversized
// body ends the attempt with 408 or 413 when no response has started.
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
import type { ForwardReport } from './request-context.js';
import type { Route } from './routing-table.js';
import type { UpstreamPools } from './upstream-pools.js';
import { completionExchange, type CompletionExchange } from './completion-request.js';
import { BodyError, BodyGate, type Body } from './request-body.js';
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
const MAX_ATTEMPTS = 4;
/** Errors of the connection to a replica (as opposed to undici refusing the request itself). */
const CONNECTION_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const RETRYABLE_BEFORE_CONNECT = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET']);

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
    const live = target.candidates.filter((c) => !this.isEjected(c.id));
    const order = live.length > 0 ? live : target.candidates; // all ejected: try them anyway
    const exchange = completionExchange(ctx.req.method, target.path, target.body);
    let headers = upstreamRequestHeaders(ctx.req, target.route.host);
    let sent = target;
    if (exchange?.injected && Buffer.isBuffer(exchange.body)) {
      headers = rewrittenBodyHeaders(headers, exchange.body.length);
      sent = { ...target, body: exchange.body };
    }
    new Attempt(this.pools, ctx, sent, order, headers, exchange).send(0);
  }
}

/** One request's journey over its candidates; the dispatch handler of each attempt. */
class Attempt implements Dispatcher.DispatchHandler {
  private index = 0;
  private connected = false;
  private controller: Dispatcher.DispatchController | null = null;
  private clientGone = false;
  private finished = false;
  private status = 0;
  private tap: UsageTap | null = null;
  private replica: ReplicaRef | null = null;
  private bodyStarted = false;
  private readonly body: Body;

  constructor(
    private readonly pools: UpstreamPools,
    private readonly ctx: ForwardReport,
    private readonly target: HttpTarget,
    private readonly order: readonly ReplicaRef[],
    private readonly headers: string[],
    private readonly exchange: CompletionExchange | null,
  ) {
    this.body = target.body;
    ctx.res.on('close', () => {
      if (this.finished) return;
      this.clientGone = true;
      this.controller?.abort(new Error('client closed the connection'));
      if (!this.connected) this.finish(499);
    });
  }

  send(index: number): void {
    if (this.clientGone) return;
    const replica = this.order[index]!;
    this.index = index;
    this.replica = replica;
    this.connected = false;
    this.controller = null;
    this.ctx.attempt(replica);
    this.pools.get(replica.address).dispatch(
      { path: this.target.path, method: this.ctx.req.method as Dispatcher.HttpMethod, headers: this.headers, body: this.body },
      this,
    );
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.connected = true;
    this.controller = controller;
    if (this.clientGone) controller.abort(new Error('client closed the connection'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, parsed: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // 1xx (e.g. 100-continue): the final response follows
    this.ctx.responded(this.replica!);
    this.status = statusCode;
    const { headers, contentType, sized, encoded } = downstreamHeaders(controller.rawHeaders, parsed);
    const exchange = this.exchange;
    this.tap = usageTapFor({ status: statusCode, contentType, sized, encoded }, exchange && { injected: exchange.injected, estimation: exchange });
    const res = this.ctx.res as http.ServerResponse;
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
    if (!this.bodyStarted) this.ctx.firstChunk();
    this.bodyStarted = true;
    const res = this.ctx.res as http.ServerResponse;
    if (res.write(out)) return;
    controller.pause();
    res.once('drain', () => controller.resume());
  }

  onResponseEnd(): void {
    const last = this.tap?.end() ?? null;
    if (last !== null && !this.bodyStarted) this.ctx.firstChunk();
    if (last === null) this.ctx.res.end();
    else this.ctx.res.end(last);
    this.finish(this.status);
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    const replica = this.replica!;
    const { ctx } = this;
    const res = ctx.res as http.ServerResponse;
    if (this.clientGone) return this.finish(499);
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const bodyError = bodyErrorOf(err, this.body);
    if (bodyError) return this.refuseBody(bodyError);
    const replayable = this.body === null || Buffer.isBuffer(this.body) || !this.body.readableDidRead;
    if (!this.connected && this.status === 0) {
      // Only a connection that failed says something about the replica; undici refusing the
      // request itself (an argument it does not support) must never eject a healthy one.
      if (CONNECTION_FAILURES.has(code)) ctx.connectionFailed(replica);
      if (replayable && RETRYABLE_BEFORE_CONNECT.has(code) && this.index + 1 < Math.min(this.order.length, MAX_ATTEMPTS)) {
        ctx.retrying();
        return this.send(this.index + 1);
      }
    }
    ctx.upstreamError(replica, err);
    const route = this.target.route;
    if (this.status === 0 && !res.headersSent) {
      const timeout = code === 'UND_ERR_HEADERS_TIMEOUT';
      const status = timeout ? 504 : 502;
      const message = timeout
        ? `replica ${replica.id} of ${route.name} sent no response in time`
        : this.connected
          ? `replica ${replica.id} of ${route.name} failed before answering (${code || err.message})`
          : `no replica of ${route.name} accepted the connection (tried ${this.index + 1}; last: ${code || err.message})`;
      const body = JSON.stringify({ error: { code: timeout ? 'gateway_timeout' : 'bad_gateway', message } });
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return this.finish(status);
    }
    // The response had started: the client can only learn of the failure by the cut.
    res.destroy(err);
    this.finish(this.status);
  }

  /** The client's body stalled or outgrew the limit while it was being forwarded. */
  private refuseBody(error: BodyError): void {
    const res = this.ctx.res as http.ServerResponse;
    this.controller?.abort(error);
    if (this.status !== 0 || res.headersSent) {
      res.destroy(error);
      return this.finish(this.status, error);
    }
    const status = error.kind === 'timeout' ? 408 : 413;
    const body = JSON.stringify({ error: { code: error.kind === 'timeout' ? 'request_timeout' : 'payload_too_large', message: error.message } });
    // The rest of the body will not be read: the connection cannot carry another request.
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    if (this.ctx.req.httpVersionMajor === 1) headers.connection = 'close';
    res.writeHead(status, headers);
    res.end(body);
    this.finish(status, error);
  }

  private finish(status: number, bodyError?: BodyError): void {
    if (this.finished) return;
    this.finished = true;
    this.ctx.finish({ status, usage: this.tap?.finish() ?? null, bodyRefused: bodyError?.kind });
  }
}
