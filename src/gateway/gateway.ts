// Owns the gateway listener: one TLS port in front of every endpoint. It terminates TLS
// with the platform-issued certificate, keeps the routing table current from the store's
// change feed, and runs each request through the phases in phases.ts before forwarding.

import https from 'node:https';
import type http from 'node:http';
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import { forwardHttp } from './forward.js';
import { admitPhase, authenticatePhase, routePhase, type Rejection } from './phases.js';
import { RoutingTable } from './routing-table.js';

export interface GatewayOptions {
  store: Store;
  domain: string;
  certPem: string;
  keyPem: string;
  logger: Logger;
}

export interface Gateway {
  server: https.Server;
  table: RoutingTable;
  start(): Promise<void>;
  close(): Promise<void>;
}

function sendRejection(res: http.ServerResponse, r: Rejection): void {
  const body = JSON.stringify({ error: { code: r.code, message: r.message } });
  res.writeHead(r.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...r.headers });
  res.end(body);
}

export function createGateway(opts: GatewayOptions): Gateway {
  const log = opts.logger;
  const table = new RoutingTable(opts.store, opts.domain, (err) => log.error({ err }, 'routing table rebuild failed'));

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const routed = routePhase(table, req.headers.host);
    if (!routed.ok) return sendRejection(res, routed.rejection);
    const route = routed.value;
    const authed = authenticatePhase(route, req.headers.authorization);
    if (!authed.ok) return sendRejection(res, authed.rejection);
    const admitted = admitPhase(route);
    if (!admitted.ok) return sendRejection(res, admitted.rejection);
    const replicas = admitted.value;
    const replica = replicas[Math.floor(Math.random() * replicas.length)];
    if (!replica) return sendRejection(res, { status: 503, code: 'unavailable', message: 'no replica is ready' });
    forwardHttp(req, res, replica.address, route.host, (err) =>
      log.warn({ err, deployment: route.name, replica: replica.id }, 'upstream request failed'),
    );
  };

  const server = https.createServer(
    {
      cert: opts.certPem,
      key: opts.keyPem,
      ALPNProtocols: ['http/1.1'],
      minVersion: 'TLSv1.2',
      // Generations can be long and streams quiet: no request or idle timeout cuts them.
      requestTimeout: 0,
      headersTimeout: 60_000,
      keepAliveTimeout: 65_000,
    },
    handle,
  );
  server.on('tlsClientError', (err) => log.debug({ err }, 'TLS handshake failed'));

  return {
    server,
    table,
    start: () => table.start(),
    close: async () => {
      table.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
