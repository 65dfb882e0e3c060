// Owns readiness probes: an HTTP GET of the health check path (any 2xx or 3xx is ready), or,
// for gRPC, a TCP connect (spec: "ignored for gRPC (a TCP socket probe is used)").

import http from 'node:http';
import net from 'node:net';

export type Probe = { kind: 'http'; path: string } | { kind: 'tcp' };

export function probeOnce(probe: Probe, host: string, port: number, timeoutMs: number): Promise<boolean> {
  return probe.kind === 'http' ? httpProbe(host, port, probe.path, timeoutMs) : tcpProbe(host, port, timeoutMs);
}

function httpProbe(host: string, port: number, path: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path, timeout: timeoutMs, agent: false, headers: { 'user-agent': 'infergate-probe' } }, (res) => {
      res.resume();
      const code = res.statusCode ?? 0;
      resolve(code >= 200 && code < 400);
    });
    req.on('timeout', () => req.destroy(new Error('probe timed out')));
    req.on('error', () => resolve(false));
  });
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
