// Owns what the gateway knows of a client request before any phase runs: its two shapes
// (HTTP/1.1 objects, or node:http2's compatibility objects), which protocol it speaks —
// decided once, here — and the verified client certificate of its connection.

import type http from 'node:http';
import type http2 from 'node:http2';
import type tls from 'node:tls';
import { normalizeFingerprint } from '../pki/client-certs.js';
import type { Protocol } from './metrics.js';

export type DownstreamRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type DownstreamResponse = http.ServerResponse | http2.Http2ServerResponse;

/** gRPC is HTTP/2 with an application/grpc content type (gRPC over HTTP/2); anything else is HTTP. */
export function protocolOf(req: DownstreamRequest): Protocol {
  return req.httpVersionMajor === 2 && (req.headers['content-type'] ?? '').startsWith('application/grpc') ? 'grpc' : 'http';
}

export function tlsSocketOf(req: DownstreamRequest): tls.TLSSocket | undefined {
  if ('stream' in req && req.stream) return req.stream.session?.socket as tls.TLSSocket | undefined;
  return req.socket as tls.TLSSocket;
}

const fingerprints = new WeakMap<tls.TLSSocket, string | null>();

/**
 * The client certificate's fingerprint when it chains to the platform CA, else null. Cached
 * per connection: the certificate cannot change on it, and the lookup costs ~4 µs a request.
 */
export function peerFingerprint(socket: tls.TLSSocket | undefined): string | null {
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
