// Owns gRPC forwarding: each client stream (TLS h2) becomes one stream on a
// cleartext HTTP/2 (h2c) session to the chosen replica, generic over services and methods —
// request headers and metadata, length-prefixed messages in both directions, response
// headers and trailers pass intact; `grpc-timeout` travels with the request, so the replica
// enforces the deadline; a client cancel resets the upstream stream with CANCEL. The
// Authorization metadata stays at the gateway. A replica that cannot be reached is skipped
// for the next candidate (no message is read before its stream is open); when none answers,
// the client gets UNAVAILABLE (14) as a Trailers-Only response (sent with respond(…,
// {endStream: true}): answered through waitForTrailers instead, the status is lost and
// clients see INTERNAL).
// Like the HTTP forwarder it keeps no count: attempts, connection failures (which eject a
// replica), retries, the first byte and the outcome go to the request's context.

import http2 from 'node:http2';
import type { Readable } from 'node:stream';
import type { ReplicaRef } from '../balancer/selector.js';
import { BodyError } from './request-body.js';
import type { ForwardReport } from './request-context.js';
import { grpcMessage, httpStatusOfGrpc } from './respond.js';

const { NGHTTP2_CANCEL } = http2.constants;

/** Headers the gateway never forwards: HTTP/2 forbids connection-specific ones; auth is ours. */
const DROPPED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'authorization', 'http2-settings']);

export interface GrpcTarget {
  authority: string;
  /** The request's messages, as received (request-body.ts: per-message size limit). */
  body: Readable;
  /** Replicas in the order to try them (the select phase's choice). */
  candidates: readonly ReplicaRef[];
}

export class GrpcForwarder {
  private readonly sessions = new Map<string, http2.ClientHttp2Session>();

  constructor(
    private readonly deps: { isEjected: (replicaId: number) => boolean; connectMs: number },
  ) {}

  /** Closes sessions to replicas that left every route. */
  retain(addresses: ReadonlySet<string>): void {
    for (const [address, session] of this.sessions) {
      if (!addresses.has(address)) {
        session.close();
        this.sessions.delete(address);
      }
    }
  }

  close(): void {
    for (const session of this.sessions.values()) session.destroy();
    this.sessions.clear();
  }

  /**
   * The compatibility objects of node:http2 carry the call: the response's trailers must go
   * through `res.addTrailers`, since the compatibility layer answers the stream's
   * 'wantTrailers' itself; only Trailers-Only answers use the raw stream (endStream).
   */
  forward(ctx: ForwardReport, target: GrpcTarget): void {
    const order = target.candidates.filter((c) => !this.deps.isEjected(c.id));
    this.attempt(ctx, target, order.length > 0 ? order : target.candidates, 0);
  }

  private session(address: string): http2.ClientHttp2Session {
    let session = this.sessions.get(address);
    if (!session || session.closed || session.destroyed) {
      session = http2.connect(`http://${address}`);
      const s = session;
      s.on('error', () => this.sessions.get(address) === s && this.sessions.delete(address));
      s.on('close', () => this.sessions.get(address) === s && this.sessions.delete(address));
      s.on('goaway', () => this.sessions.get(address) === s && this.sessions.delete(address));
      this.sessions.set(address, s);
    }
    return session;
  }

  private attempt(ctx: ForwardReport, target: GrpcTarget, order: readonly ReplicaRef[], index: number): void {
    const req = ctx.req as http2.Http2ServerRequest;
    const res = ctx.res as http2.Http2ServerResponse;
    const replica = order[index];
    if (!replica) return this.trailersOnly(ctx, 14, 'no replica of this deployment could be reached');
    if (res.stream.destroyed) return finishCall(ctx, 1);
    ctx.attempt(replica);
    let finished = false;
    let responded = false;
    let bodyStarted = false;
    let trailersOnly = false;
    let grpcStatus = 13;
    const finish = (status: number) => {
      if (finished) return;
      finished = true;
      finishCall(ctx, status);
    };
    const retry = () => {
      if (finished) return;
      finished = true;
      ctx.connectionFailed(replica);
      if (bodyStarted) return this.trailersOnly(ctx, 14, 'the replica failed before answering');
      if (index + 1 < order.length) ctx.retrying();
      this.attempt(ctx, target, order, index + 1);
    };

    const upstreamHeaders: http2.OutgoingHttpHeaders = { ':method': 'POST', ':scheme': 'http', ':authority': target.authority, ':path': req.headers[':path'] ?? '/' };
    for (const [name, value] of Object.entries(req.headers)) {
      if (name.startsWith(':') || DROPPED.has(name) || value === undefined) continue;
      upstreamHeaders[name] = value;
    }
    let up: http2.ClientHttp2Stream;
    try {
      up = this.session(replica.address).request(upstreamHeaders);
    } catch {
      return retry();
    }
    // Times the connection only: it stops once the stream is open at the replica. grpc-js
    // sends its response headers with the first message, so a timer running until them would
    // cut every call the model takes longer than connectMs to answer (the client's own
    // deadline, grpc-timeout, bounds the call).
    const connectTimer = setTimeout(() => up.close(NGHTTP2_CANCEL), this.deps.connectMs);
    if (up.pending) up.once('ready', () => clearTimeout(connectTimer));
    else clearTimeout(connectTimer);

    up.on('response', (h) => {
      clearTimeout(connectTimer);
      responded = true;
      ctx.responded(replica);
      // Trailers-Only (gRPC over HTTP/2): the status is in the response headers themselves.
      if (up.endAfterHeaders || h['grpc-status'] !== undefined) {
        trailersOnly = true;
        // Trailers-Only from the replica: pass it on as one HEADERS frame with END_STREAM.
        grpcStatus = Number(h['grpc-status'] ?? 13);
        if (!res.stream.destroyed) res.stream.respond(responseHeaders(h), { endStream: true });
        return finish(grpcStatus);
      }
      const out = responseHeaders(h);
      delete out[':status'];
      res.writeHead(Number(h[':status'] ?? 200), out);
      up.pipe(res);
      up.once('data', () => ctx.firstChunk());
    });
    up.on('trailers', (t) => {
      grpcStatus = Number(t['grpc-status'] ?? 13);
      res.addTrailers(responseHeaders(t) as Record<string, string>);
    });
    up.on('end', () => {
      if (responded && !trailersOnly) finish(grpcStatus);
    });
    up.on('error', (err) => {
      clearTimeout(connectTimer);
      if (!responded) return retry();
      ctx.upstreamError(replica, err);
      if (!res.stream.destroyed) res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      finish(14);
    });
    up.on('close', () => {
      clearTimeout(connectTimer);
      if (!responded) return retry();
    });
    // A client that goes away cancels the call at the replica too.
    res.on('close', () => {
      if (!up.closed) up.close(NGHTTP2_CANCEL);
      finish(1);
    });

    // A message over the size limit ends the call with RESOURCE_EXHAUSTED (what gRPC servers
    // answer beyond their max receive size); the replica's stream is cancelled.
    const body = target.body;
    const onBodyError = (err: Error) => {
      if (!(err instanceof BodyError) || finished) return;
      clearTimeout(connectTimer);
      if (!up.closed) up.close(NGHTTP2_CANCEL);
      finished = true;
      const status = err.kind === 'too_large' ? 8 : 4;
      if (!res.stream.destroyed && !res.stream.headersSent) this.trailersOnly(ctx, status, err.message, err);
      else {
        if (!res.stream.destroyed) res.stream.close(http2.constants.NGHTTP2_CANCEL);
        finishCall(ctx, status, err);
      }
    };
    body.once('error', onBodyError);
    up.once('close', () => body.off('error', onBodyError));
    // The messages wait for the stream to be open at the replica: piped at once they would be
    // read into a stream whose connection then fails, and could not be sent to the next one.
    // (A 'data' listener would start the flow too: the pipe is the only reader.)
    const send = () => {
      bodyStarted = true;
      body.pipe(up);
    };
    if (up.pending) up.once('ready', send);
    else send();
  }

  private trailersOnly(ctx: ForwardReport, status: number, message: string, bodyError?: BodyError): void {
    const downstream = (ctx.res as http2.Http2ServerResponse).stream;
    if (!downstream.destroyed && !downstream.headersSent) {
      downstream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status), 'grpc-message': grpcMessage(message) }, { endStream: true });
    } else if (!downstream.destroyed) {
      downstream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    }
    finishCall(ctx, status, bodyError);
  }
}

/** A call's end as its context counts it: the gRPC status as an HTTP-like one. */
function finishCall(ctx: ForwardReport, grpcStatus: number, bodyError?: BodyError): void {
  ctx.finish({ status: httpStatusOfGrpc(grpcStatus), bodyRefused: bodyError?.kind });
}

function responseHeaders(h: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(h)) {
    if ((name.startsWith(':') && name !== ':status') || DROPPED.has(name) || value === undefined) continue;
    out[name] = value;
  }
  return out;
}
