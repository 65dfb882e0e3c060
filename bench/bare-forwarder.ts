// Bench reference: the leanest Node forwarding path measured on these machines — node:https, one
// undici Pool, dispatch() with a handler, raw headers passed through; no routing, auth,
// affinity, accounting or metrics. It is the floor the gateway is compared with, so the
// cost of the gateway's own work per request can be read off the difference.
//   tsx bench/bare-forwarder.ts <port> <upstream-port> <cert.pem> <key.pem>

import { readFileSync } from 'node:fs';
import https from 'node:https';
import type http from 'node:http';
import { Pool, type Dispatcher } from 'undici';

const [port, upstreamPort, certFile, keyFile] = process.argv.slice(2);
const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, { pipelining: 1 });

function forward(req: http.IncomingMessage, res: http.ServerResponse): void {
  let resume: () => void = () => undefined;
  const handler: Dispatcher.DispatchHandler = {
    onConnect: () => undefined,
    onHeaders: (status, raw, r) => {
      resume = r;
      const headers: string[] = [];
      for (let i = 0; i < raw.length; i += 2) headers.push(raw[i]!.toString('latin1'), raw[i + 1]!.toString('latin1'));
      res.writeHead(status, headers);
      return true;
    },
    onData: (chunk) => {
      if (res.write(chunk)) return true;
      res.once('drain', resume);
      return false;
    },
    onComplete: () => res.end(),
    onError: () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    },
  };
  const headers: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() !== 'connection') headers.push(raw[i]!, raw[i + 1]!);
  pool.dispatch({ path: req.url ?? '/', method: req.method as Dispatcher.HttpMethod, headers, body: req }, handler);
}

https
  .createServer({ cert: readFileSync(certFile!), key: readFileSync(keyFile!), keepAliveTimeout: 65_000 }, forward)
  .listen(Number(port), '127.0.0.1', () => console.log(JSON.stringify({ listening: Number(port) })));
