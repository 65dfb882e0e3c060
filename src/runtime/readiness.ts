// Owns readiness probes: an HTTP GET of the health check path (any 2xx or 3xx is ready), or,
// for gRPC, a TCP connect (spec: "ignored for gRPC (a TCP socket probe is used)").

import http from 'node:http';
import net from 'node:net';

export type Probe = { kind: 'http'; path: string } | { kind: 'tcp' };

/** A replica's probe: an HTTP GET of its health path, or a TCP connect for gRPC (where the path is ignored). */
export function readinessProbe(req: { protocol: 'http' | 'grpc'; healthPath: string }): Probe {
  return req.protocol === 'grpc' ? { kind: 'tcp' } : { kind: 'http', path: req.healthPath };
}

export function probeOnce(probe: Probe, host: string, port: number, timeoutMs: number): Promise<boolean> {
  return probeAnswer(probe, host, port, timeoutMs).then((a) => a.ok);
}

/** A probe's verdict and, when it failed, what the server answered, in words for a status reason. */
export interface ProbeAnswer {
  ok: boolean;
  answer: string;
}

export function probeAnswer(probe: Probe, host: string, port: number, timeoutMs: number): Promise<ProbeAnswer> {
  return probe.kind === 'http'
    ? httpProbe(host, port, probe.path, timeoutMs)
    : tcpProbe(host, port, timeoutMs).then((ok) => ({ ok, answer: ok ? 'accepts connections' : 'TCP connect refused' }));
}

/** The start of a failed answer's body is kept: an engine says there why it is not ready. */
const ANSWER_BYTES = 300;

function httpProbe(host: string, port: number, path: string, timeoutMs: number): Promise<ProbeAnswer> {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path, timeout: timeoutMs, agent: false, headers: { 'user-agent': 'infergate-probe' } }, (res) => {
      const code = res.statusCode ?? 0;
      if (code >= 200 && code < 400) {
        res.resume();
        resolve({ ok: true, answer: `GET ${path} answered ${code}` });
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < ANSWER_BYTES) body += chunk;
      });
      const done = () => resolve({ ok: false, answer: `GET ${path} answered ${code}${body.trim() === '' ? '' : `: ${body.trim().slice(0, ANSWER_BYTES)}`}` });
      res.on('end', done);
      res.on('error', done);
    });
    req.on('timeout', () => req.destroy(new Error('probe timed out')));
    req.on('error', (err) => resolve({ ok: false, answer: `GET ${path} failed: ${err.message}` }));
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
