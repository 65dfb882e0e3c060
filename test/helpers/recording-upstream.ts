// Test helper: replica stand-ins that record EVERY request that reaches them, whatever its
// shape — ordinary requests, upgrade requests, CONNECT — with method, target, headers and
// body, so a security test can assert that a replica saw nothing, or exactly the one
// authorized request. `startRecordingUpstream` speaks HTTP/1.1 (the gateway's undici pools);
// `startRecordingGrpcUpstream` speaks cleartext HTTP/2 (the gateway's gRPC forwarder) and
// answers every stream with one gRPC message and grpc-status 0.

import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { SCRAPER_USER_AGENT } from '../../src/gateway/replica-signals.js';

export interface RecordedRequest {
  /** 'request', or the node event the request arrived as ('upgrade', 'connect'). */
  kind: 'request' | 'upgrade' | 'connect' | 'stream';
  method: string;
  /** The request target exactly as the replica received it. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The request body as received (filled in as it arrives). */
  body: string;
}

export interface RecordingUpstream {
  name: string;
  address: string;
  seen: RecordedRequest[];
  close(): Promise<void>;
}

/** The gateway's GET /metrics: its scraper's user agent, never forwarded (no X-Forwarded-For). */
export function isGatewayScrape(req: http.IncomingMessage): boolean {
  return req.method === 'GET' && req.url === '/metrics' && req.headers['user-agent'] === SCRAPER_USER_AGENT && req.headers['x-forwarded-for'] === undefined;
}

export async function startRecordingUpstream(name: string): Promise<RecordingUpstream> {
  const sockets = new Set<Socket>();
  const seen: RecordedRequest[] = [];
  const record = (kind: RecordedRequest['kind'], req: http.IncomingMessage): RecordedRequest => {
    const entry: RecordedRequest = { kind, method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: '' };
    seen.push(entry);
    return entry;
  };
  const server = http.createServer((req, res) => {
    // The gateway's own scrape of /metrics (flow control reads engine queues) is not a request
    // a client sent: answered 404 as a replica without metrics would, and not recorded.
    if (isGatewayScrape(req)) {
      res.writeHead(404).end();
      return;
    }
    const entry = record('request', req);
    req.setEncoding('utf8');
    req.on('data', (c: string) => (entry.body += c));
    req.on('end', () => {
      const out = JSON.stringify({ upstream: name, method: entry.method, path: entry.path, body: entry.body });
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': name });
      res.end(out);
    });
  });
  // A replica that would accept an upgrade or a tunnel: if the gateway ever passed one on,
  // the test sees it here (and the client would see the 101 / 200 it answers).
  server.on('upgrade', (req: http.IncomingMessage, socket: Socket) => {
    record('upgrade', req);
    socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
  });
  server.on('connect', (req: http.IncomingMessage, socket: Socket) => {
    record('connect', req);
    socket.end('HTTP/1.1 200 Connection Established\r\n\r\n');
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  return listening(server, name, seen, sockets);
}

/** A gRPC message frame: compressed flag 0, 4-byte big-endian length, payload. */
export function grpcFrame(payload: Buffer | string): Buffer {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

export async function startRecordingGrpcUpstream(name: string): Promise<RecordingUpstream> {
  const seen: RecordedRequest[] = [];
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer();
  server.on('session', (s) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => {
    const entry: RecordedRequest = {
      kind: 'stream',
      method: String(headers[':method'] ?? ''),
      path: String(headers[':path'] ?? ''),
      headers: headers as http.IncomingHttpHeaders,
      body: '',
    };
    seen.push(entry);
    stream.on('data', (c: Buffer) => (entry.body += c.toString('latin1')));
    stream.on('end', () => {
      if (stream.destroyed) return;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-served-by': name }));
      stream.end(grpcFrame(`${name}:ok`));
    });
    stream.on('error', () => undefined);
  });
  return listening(server, name, seen, sessions);
}

/** Listens on a free loopback port; close() destroys what is still open, then stops listening. */
async function listening(
  server: http.Server | http2.Http2Server,
  name: string,
  seen: RecordedRequest[],
  open: Set<{ destroy(): void }>,
): Promise<RecordingUpstream> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    name,
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
