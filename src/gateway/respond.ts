// Owns every answer the gateway writes itself, in each protocol's own terms — refusals of a
// phase, failures of the replicas (502, 504), refused bodies (408, 413), the activator's 503,
// HTTP/1.1 parser errors — and the cut of a response that had started. HTTP answers carry the
// JSON error shape `{"error": {"code", "message"}}`; gRPC answers are Trailers-Only (one
// HEADERS frame with END_STREAM and grpc-status), the status mapped from the HTTP one. It also
// maps a gRPC call's outcome back to the HTTP-like status that metrics and usage count.
// Nothing else in the gateway writes a status line or a grpc-status.

import type http from 'node:http';
import http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import type { DownstreamRequest, DownstreamResponse } from './downstream.js';
import type { Protocol } from './metrics.js';
import type { Rejection } from './phases.js';
import { hasNoBody, type BodyError } from './request-body.js';

/**
 * gRPC clients read a status from trailers, not the HTTP code (gRPC over HTTP/2: grpc-status):
 * 408 and 504 are the deadline (DEADLINE_EXCEEDED), 502 and 503 a replica that cannot serve
 * (UNAVAILABLE), 413 and 429 a limit (RESOURCE_EXHAUSTED).
 */
const GRPC_OF_HTTP: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5, 408: 4, 413: 8, 429: 8, 431: 8, 499: 1, 500: 13, 501: 12, 502: 14, 503: 14, 504: 4 };

/** A gRPC call's outcome as the HTTP-like status the metrics and usage count it under. */
const HTTP_OF_GRPC: Record<number, number> = { 0: 200, 1: 499, 3: 400, 4: 504, 5: 404, 7: 403, 8: 429, 12: 501, 13: 500, 14: 503, 16: 401 };

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

export function httpStatusOfGrpc(grpcStatus: number): number {
  return HTTP_OF_GRPC[grpcStatus] ?? 500;
}

export function grpcStatusOfHttp(status: number): number {
  return GRPC_OF_HTTP[status] ?? 2; // UNKNOWN
}

/**
 * A `grpc-message` value. encodeURI, not encodeURIComponent: grpc-js reads it with decodeURI,
 * which would leave a `:` or `,` encoded (%3A) in the message the client shows.
 */
export function grpcMessage(text: string): string {
  return encodeURI(text);
}

/** Whether the client has seen the start of an answer (status line or response headers). */
export function answerStarted(res: DownstreamResponse, protocol: Protocol): boolean {
  if (protocol === 'grpc') {
    const stream = (res as http2.Http2ServerResponse).stream;
    return stream.destroyed || stream.headersSent;
  }
  return res.headersSent;
}

/**
 * Answers a request with a refusal: the JSON error (HTTP) or a Trailers-Only status (gRPC). A
 * body the gateway did not read is not waited for: HTTP/1.1 closes the connection after the
 * answer (it cannot carry another request), HTTP/2 resets the stream with NO_ERROR. An answer
 * already started cannot be replaced: nothing is written then.
 */
export function writeRefusal(req: DownstreamRequest, res: DownstreamResponse, protocol: Protocol, r: Rejection): void {
  const unread = !req.complete && !hasNoBody(req);
  if (protocol === 'grpc') {
    const stream = (res as http2.Http2ServerResponse).stream;
    if (stream.destroyed || stream.headersSent) return;
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(grpcStatusOfHttp(r.status)), 'grpc-message': grpcMessage(r.message), ...r.headers },
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

/**
 * Ends an answer that had started and cannot be finished: the client learns of the failure
 * only by the cut (HTTP: the connection or stream reset; gRPC: RST_STREAM INTERNAL_ERROR,
 * which clients report as INTERNAL).
 */
export function cutAnswer(res: DownstreamResponse, protocol: Protocol, err?: Error): void {
  if (protocol === 'grpc') {
    const stream = (res as http2.Http2ServerResponse).stream;
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  res.destroy(err);
}

/**
 * A request the HTTP/1.1 parser refused before it became one (bad syntax, headers too large or
 * too slow): written on the socket in the same error shape, then the connection is closed.
 */
export function writeParserRefusal(socket: Duplex, r: Rejection): void {
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify({ error: { code: r.code, message: r.message } });
  socket.end(
    `HTTP/1.1 ${r.status} ${REASONS[r.status] ?? 'Bad Request'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export function bodyRejection(error: BodyError): Rejection {
  return error.kind === 'timeout'
    ? { status: 408, code: 'request_timeout', message: error.message }
    : { status: 413, code: 'payload_too_large', message: error.message };
}
