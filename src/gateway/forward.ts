// Owns forwarding an authenticated HTTP/1.1 request to a replica: both bodies streamed
// with backpressure (pipe), hop-by-hop headers (RFC 9110 §7.6.1) and the client's
// Authorization dropped, X-Forwarded-* and X-Request-Id set, a client disconnect aborting
// the upstream request.

import http from 'node:http';
import { randomUUID } from 'node:crypto';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

export function upstreamHeaders(req: http.IncomingMessage, host: string): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  const connectionListed = new Set(
    String(req.headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || connectionListed.has(name) || name === 'authorization') continue;
    out[name] = value;
  }
  const peer = req.socket.remoteAddress ?? '';
  const prior = req.headers['x-forwarded-for'];
  out['x-forwarded-for'] = prior ? `${String(prior)}, ${peer}` : peer;
  out['x-forwarded-proto'] = 'https';
  out['x-forwarded-host'] = host;
  out['x-request-id'] = (req.headers['x-request-id'] as string | undefined) ?? randomUUID();
  return out;
}

export function forwardHttp(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  replicaAddress: string,
  host: string,
  onError: (err: Error) => void,
): void {
  const [hostname, portText] = splitAddress(replicaAddress);
  const upstream = http.request({
    agent,
    host: hostname,
    port: Number(portText),
    method: req.method,
    path: req.url,
    headers: upstreamHeaders(req, host),
  });
  upstream.on('response', (up) => {
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(up.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    res.writeHead(up.statusCode ?? 502, headers);
    // Headers go out at once so a streaming client sees them before the first chunk.
    res.flushHeaders();
    up.pipe(res);
  });
  upstream.on('error', (err) => {
    onError(err);
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'unavailable', message: 'the replica did not answer' } }));
    } else {
      res.destroy(err);
    }
  });
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

function splitAddress(address: string): [string, string] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), address.slice(i + 1)];
}
