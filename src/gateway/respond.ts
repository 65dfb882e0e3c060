// Owns the answers the gateway writes itself, in each protocol's own terms: a refusal as the
// JSON error shape (HTTP) or as a Trailers-Only status (gRPC), and the mapping between HTTP
// statuses and gRPC status codes in both directions (a refusal's code for gRPC clients, a
// gRPC call's outcome as the HTTP-like status that metrics and usage count).

import type http from 'node:http';
import http2 from 'node:http2';
import type { DownstreamRequest, DownstreamResponse } from './downstream.js';
import type { Protocol } from './metrics.js';
import type { Rejection } from './phases.js';
import { hasNoBody, type BodyError } from './request-body.js';

/** gRPC clients read a status from trailers, not the HTTP code (gRPC over HTTP/2: grpc-status). */
const GRPC_OF_HTTP: Record<number, number> = { 401: 16, 404: 5, 408: 4, 413: 8, 429: 8, 431: 8, 500: 13, 503: 14, 501: 12 };

/** A gRPC call's outcome as the HTTP-like status the metrics and usage count it under. */
const HTTP_OF_GRPC: Record<number, number> = { 0: 200, 1: 499, 3: 400, 4: 504, 5: 404, 7: 403, 8: 429, 12: 501, 13: 500, 14: 503, 16: 401 };

export function httpStatusOfGrpc(grpcStatus: number): number {
  return HTTP_OF_GRPC[grpcStatus] ?? 500;
}

/**
 * Ends a request with a refusal: JSON error body (HTTP) or a Trailers-Only gRPC status. A body
 * the gateway did not read is not waited for: HTTP/1.1 closes the connection after the
 * answer (it cannot carry another request), HTTP/2 resets the stream with NO_ERROR.
 */
/**
 * A `grpc-message` value. encodeURI, not encodeURIComponent: grpc-js reads it with decodeURI,
 * which would leave a `:` or `,` encoded (%3A) in the message the client shows.
 */
export function grpcMessage(text: string): string {
  return encodeURI(text);
}

export function sendRejection(req: DownstreamRequest, res: DownstreamResponse, protocol: Protocol, r: Rejection): void {
  const unread = !req.complete && !hasNoBody(req);
  if (protocol === 'grpc') {
    const stream = (res as http2.Http2ServerResponse).stream;
    if (stream.destroyed || stream.headersSent) return;
    // Trailers-Only: one HEADERS frame with END_STREAM carries the status.
    stream.respond(
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(GRPC_OF_HTTP[r.status] ?? 2),
        'grpc-message': grpcMessage(r.message),
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

export function bodyRejection(error: BodyError): Rejection {
  return error.kind === 'timeout'
    ? { status: 408, code: 'request_timeout', message: error.message }
    : { status: 413, code: 'payload_too_large', message: error.message };
}
