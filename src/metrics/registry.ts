// Owns the Prometheus registry of this process and its exposition on the metrics port.
// Modules declare their own metrics against the registry they are given; this file only
// creates it (with Node's process metrics, prefix infergate_) and serves /metrics. The JSON
// documents (service discovery: replicas' addresses, which only this host reaches) answer
// loopback clients only, even when an operator opens the listener to a remote Prometheus with
// --metrics-host.

import http from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';

export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'infergate_' });
  return registry;
}

/** What /metrics serves: a registry, or several processes' metrics merged (cluster.ts). */
export type Exposition = Pick<Registry, 'metrics' | 'contentType'>;

/** Extra JSON documents the listener serves (service discovery), by path. */
export type JsonRoutes = Record<string, () => Promise<unknown>>;

/** 127.0.0.0/8 and ::1, IPv4-mapped or not. */
function fromLoopback(address: string | undefined): boolean {
  const a = address?.replace(/^::ffff:/, '') ?? '';
  return a.startsWith('127.') || a === '::1';
}

/** A tiny server: GET /metrics for Prometheus, /healthz for probes, the JSON routes (loopback clients only), 404 otherwise. */
export function createMetricsServer(registry: Exposition, json: JsonRoutes = {}): http.Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const document = req.method === 'GET' && Object.hasOwn(json, path) ? json[path] : undefined;
    if (document && !fromLoopback(req.socket.remoteAddress)) {
      // Replica targets are addresses only this host reaches (pods, loopback ports): of use to a Prometheus here, and a map of unauthenticated ports to anyone else.
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end(`${path} answers clients on this host only: the replica targets it lists are addresses only this host reaches\n`);
      return;
    }
    if (document) {
      document().then(
        (body) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        },
        (err: Error) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`${path} failed: ${err.message}\n`);
        },
      );
      return;
    }
    if (req.method === 'GET' && path === '/metrics') {
      registry
        .metrics()
        .then((body) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(body);
        })
        .catch((err: Error) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`metrics collection failed: ${err.message}\n`);
        });
      return;
    }
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"ok"}');
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end(`not found: the metrics listener serves GET /metrics${Object.keys(json).map((p) => ` and ${p}`).join('')}\n`);
  });
}
