// Test helper: a registry that is not one, as an attacker would run it — a plain HTTP server on
// a free 127.0.0.1 port that answers every request 401 with a Basic challenge (so a daemon
// holding credentials sends them) and records each connection and each request with its
// Authorization header. The registry tests read it to show which credentials reached which
// host, and that a refused host heard nothing at all (not even a connection).

import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  path: string;
  /** The Authorization header as sent, or null. */
  authorization: string | null;
}

export interface FakeRegistry {
  /** host:port, as an image names the registry. */
  host: string;
  /** Connections accepted so far (a TLS attempt that never became a request included). */
  connections(): number;
  requests(): readonly SeenRequest[];
  /** The Basic credentials sent, decoded as user:password. */
  credentialsSent(): string[];
  stop(): Promise<void>;
}

export async function startFakeRegistry(): Promise<FakeRegistry> {
  const requests: SeenRequest[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization ?? null });
    res.writeHead(401, {
      'content-type': 'application/json',
      'docker-distribution-api-version': 'registry/2.0',
      'www-authenticate': 'Basic realm="fake registry"',
    });
    res.end(JSON.stringify({ errors: [{ code: 'UNAUTHORIZED', message: 'authentication required' }] }));
  });
  server.on('connection', () => connections++);
  // A daemon tries TLS first on an insecure registry: the garbage is not a request.
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    connections: () => connections,
    requests: () => requests,
    credentialsSent: () =>
      requests
        .map((r) => r.authorization)
        .filter((a): a is string => a !== null && a.startsWith('Basic '))
        .map((a) => Buffer.from(a.slice('Basic '.length), 'base64').toString('utf8')),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
