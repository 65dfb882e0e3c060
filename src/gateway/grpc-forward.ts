// Owns the gRPC transport: each client stream (TLS h2) becomes one stream on a cleartext
// HTTP/2 (h2c) session to the chosen replica, generic over services and methods — request
// headers and metadata, length-prefixed messages in both directions, response headers and
// trailers pass intact; `grpc-timeout` travels with the request, so the replica enforces the
// deadline too; the request's abort (client gone, deadline, shutdown; onAbort) resets the
// upstream stream with CANCEL. The Authorization metadata stays at the gateway. Which replica
// to try next, and whether a failure ejects it, is the candidate loop's (candidates.ts): an
// attempt whose stream never opened at the replica is a `connect` failure (no message was
// read for it, so the next candidate can have them all); one that failed after is `upstream`.
// Timers, each named for what it times:
//   connect        until the stream is open at the replica (its HEADERS sent);
//   first message  from then until the replica's response headers, which grpc-js sends with
//                  the first response message (per deployment, else the gateway's; 0: off,
//                  the default — a model may take minutes, and the client's deadline bounds
//                  the call);
//   idle           between two response messages.
// The answers the gateway writes itself (Trailers-Only statuses, cuts) go through respond.ts.

import http2 from 'node:http2';
import type { Readable } from 'node:stream';
import type { ReplicaRef } from '../balancer/selector.js';
import { CandidateLoop } from './candidates.js';
import { BodyError } from './request-body.js';
import type { ForwardReport } from './request-context.js';
import { bodyRejection, httpStatusOfGrpc } from './respond.js';
import type { Route } from './routing-table.js';

const { NGHTTP2_CANCEL } = http2.constants;

/** Headers the gateway never forwards: HTTP/2 forbids connection-specific ones; auth is ours. */
const DROPPED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'authorization', 'http2-settings']);

export interface GrpcTimers {
  connectMs: number;
  /** Longest wait for the first response message once the stream is open; 0: none. */
  firstMessageMs: number;
  /** Longest silence between response messages; 0: none. */
  idleMs: number;
}

export interface GrpcTarget {
  route: Route;
  /** The request's messages, as received (request-body.ts: per-message size limit). */
  body: Readable;
  /** Replicas in the order to try them (the select phase's choice). */
  candidates: readonly ReplicaRef[];
}

export class GrpcForwarder {
  private readonly sessions = new Map<string, http2.ClientHttp2Session>();

  constructor(private readonly deps: { isEjected: (replicaId: number) => boolean; timers: GrpcTimers }) {}

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
    const timers = { ...this.deps.timers, firstMessageMs: target.route.firstResponseMs ?? this.deps.timers.firstMessageMs };
    const loop: CandidateLoop = new CandidateLoop(ctx, target.candidates, this.deps.isEjected, (replica) => this.attempt(ctx, target, loop, timers, replica));
    loop.start();
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

  private attempt(ctx: ForwardReport, target: GrpcTarget, loop: CandidateLoop, timers: GrpcTimers, replica: ReplicaRef): void {
    const req = ctx.req as http2.Http2ServerRequest;
    const res = ctx.res as http2.Http2ServerResponse;
    let done = false;
    let opened = false;
    let responded = false;
    let trailersOnly = false;
    let grpcStatus = 13;
    let timer: NodeJS.Timeout | null = null;
    /** One timer at a time, each named for what it times. */
    const arm = (ms: number, onFire: () => void) => {
      if (timer !== null) clearTimeout(timer);
      timer = ms > 0 ? setTimeout(onFire, ms) : null;
    };
    const end = (then: () => void) => {
      if (done) return;
      done = true;
      if (timer !== null) clearTimeout(timer);
      ctx.offAbort(onAbort);
      then();
    };
    const failedBeforeAnswer = (kind: 'connect' | 'upstream' | 'timeout', detail: string, err?: Error) =>
      end(() => loop.failed(replica, { kind, detail }, !opened, err));

    const upstreamHeaders: http2.OutgoingHttpHeaders = { ':method': 'POST', ':scheme': 'http', ':authority': target.route.host, ':path': req.headers[':path'] ?? '/' };
    for (const [name, value] of Object.entries(req.headers)) {
      if (name.startsWith(':') || DROPPED.has(name) || value === undefined) continue;
      upstreamHeaders[name] = value;
    }
    const traced = ctx.traceHeaders;
    if (traced !== null) {
      // The replica's parent is the gateway's attempt span, in the client's trace.
      delete upstreamHeaders.traceparent;
      delete upstreamHeaders.tracestate;
      for (let i = 0; i < traced.length; i += 2) upstreamHeaders[traced[i]!] = traced[i + 1]!;
    }
    let up: http2.ClientHttp2Stream;
    try {
      up = this.session(replica.address).request(upstreamHeaders);
    } catch (err) {
      return failedBeforeAnswer('connect', (err as Error).message, err as Error);
    }
    const onAbort = () => {
      if (!up.closed) up.close(NGHTTP2_CANCEL);
      end(() => ctx.endAborted());
    };
    ctx.onAbort(onAbort);

    const onOpen = () => {
      opened = true;
      arm(timers.firstMessageMs, () => {
        up.close(NGHTTP2_CANCEL);
        failedBeforeAnswer('timeout', `first message timer, ${timers.firstMessageMs / 1000} s`);
      });
      // The messages wait for the stream to be open at the replica: piped at once they would
      // be read into a stream whose connection then fails, and could not be sent to the next
      // one. (A 'data' listener would start the flow too: the pipe is the only reader.)
      target.body.pipe(up);
    };
    arm(timers.connectMs, () => {
      up.close(NGHTTP2_CANCEL);
      failedBeforeAnswer('connect', `connect timer, ${timers.connectMs / 1000} s`);
    });
    if (up.pending) up.once('ready', onOpen);
    else onOpen();

    up.on('response', (h) => {
      if (done) return;
      responded = true;
      ctx.responded(replica, Number(h[':status'] ?? 200));
      // Trailers-Only (gRPC over HTTP/2): the status is in the response headers themselves.
      if (up.endAfterHeaders || h['grpc-status'] !== undefined) {
        trailersOnly = true;
        // Passed on as one HEADERS frame with END_STREAM.
        grpcStatus = Number(h['grpc-status'] ?? 13);
        if (!res.stream.destroyed) res.stream.respond(responseHeaders(h), { endStream: true });
        return end(() => ctx.finish({ status: httpStatusOfGrpc(grpcStatus) }));
      }
      const idle = () =>
        arm(timers.idleMs, () => {
          up.close(NGHTTP2_CANCEL);
          end(() => ctx.cut(504));
        });
      idle();
      const out = responseHeaders(h);
      delete out[':status'];
      res.writeHead(Number(h[':status'] ?? 200), out);
      up.pipe(res);
      up.once('data', () => ctx.firstChunk());
      up.on('data', idle);
    });
    up.on('trailers', (t) => {
      grpcStatus = Number(t['grpc-status'] ?? 13);
      res.addTrailers(responseHeaders(t) as Record<string, string>);
    });
    up.on('end', () => {
      if (responded && !trailersOnly) end(() => ctx.finish({ status: httpStatusOfGrpc(grpcStatus) }));
    });
    up.on('error', (err) => {
      if (done) return;
      if (!responded) return failedBeforeAnswer(opened ? 'upstream' : 'connect', (err as NodeJS.ErrnoException).code ?? err.message, err);
      ctx.upstreamError(replica, err);
      end(() => ctx.cut(httpStatusOfGrpc(14)));
    });
    up.on('close', () => {
      if (done || responded) return;
      failedBeforeAnswer(opened ? 'upstream' : 'connect', `stream closed (code ${up.rstCode ?? 'none'})`);
    });

    // A message over the size limit ends the call with RESOURCE_EXHAUSTED (what gRPC servers
    // answer beyond their max receive size); a stalled one with DEADLINE_EXCEEDED. The
    // replica's stream is cancelled.
    const body = target.body;
    const onBodyError = (err: Error) => {
      if (!(err instanceof BodyError) || done) return;
      if (!up.closed) up.close(NGHTTP2_CANCEL);
      end(() => ctx.fail(bodyRejection(err), { bodyRefused: err.kind }));
    };
    body.once('error', onBodyError);
    up.once('close', () => body.off('error', onBodyError));
  }
}

function responseHeaders(h: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(h)) {
    if ((name.startsWith(':') && name !== ':status') || DROPPED.has(name) || value === undefined) continue;
    out[name] = value;
  }
  return out;
}
