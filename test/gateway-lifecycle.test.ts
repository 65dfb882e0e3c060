// How requests end at the gateway, each way once and counted: an HTTP/1.1 request the parser
// refuses (answered in the error shape and counted under no deployment), a deployment's own
// upstream-headers timer (504, not held against the replica, not retried), a gRPC deadline
// passing while the activator holds the call (DEADLINE_EXCEEDED from the gateway, not 120 s
// later), and a shutdown with a request in flight (the replica's request cancelled, the
// request counted as 503).

import http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostOf, startGatewayEnv, tokenFor, type GatewayEnv } from './helpers/gateway-env.js';

/** An HTTP replica that answers after the `delay` query parameter (ms), and counts the requests it saw cut. */
async function slowReplica(): Promise<{ address: string; seen: number; cut: number; close(): Promise<void> }> {
  const state = { address: '', seen: 0, cut: 0, close: async () => undefined as void };
  const server = http.createServer((req, res) => {
    state.seen++;
    const delay = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
    const timer = setTimeout(() => res.end(JSON.stringify({ ok: true })), delay);
    res.on('close', () => {
      if (!res.writableEnded) {
        clearTimeout(timer);
        state.cut++;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

function get(env: GatewayEnv, name: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: env.port,
        path,
        method: 'GET',
        headers: { host: hostOf(name), authorization: `Bearer ${tokenFor(name)}` },
        createConnection: () => tls.connect({ host: '127.0.0.1', port: env.port, servername: hostOf(name), ca: env.ca.certPem }),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function metric(env: GatewayEnv, pattern: RegExp): Promise<number> {
  return Number(pattern.exec(await env.registry.metrics())?.[1] ?? 0);
}

describe('how a request ends at the gateway', () => {
  let env: GatewayEnv;
  let replica: Awaited<ReturnType<typeof slowReplica>>;

  beforeAll(async () => {
    env = await startGatewayEnv({});
    replica = await slowReplica();
    const timed = await env.deploy('timed', { first_response_timeout_seconds: 1 });
    await env.addReplica(timed, replica.address);
    await env.waitForReplicas('timed', 1);
    await env.deploy('rpc-zero', { protocol: 'grpc', min_replicas: 0 });
  });

  afterAll(async () => {
    await env?.close();
    await replica?.close();
  });

  it('answers a request the HTTP/1.1 parser refuses in the error shape, and counts it', async () => {
    const before = await metric(env, /infergate_requests_total\{deployment="",status="400",protocol="http"\} (\d+)/);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: env.port, servername: hostOf('timed'), ca: env.ca.certPem, ALPNProtocols: ['http/1.1'] }, () => {
        socket.write('GET / HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n');
      });
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (text += c));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { code: 'invalid_request' } });
    await expect.poll(() => metric(env, /infergate_requests_total\{deployment="",status="400",protocol="http"\} (\d+)/)).toBe(before + 1);
  });

  it("ends a request its replica does not answer within the deployment's first_response_timeout_seconds with 504, without a retry or an ejection", async () => {
    const started = Date.now();
    const late = await get(env, 'timed', '/late?delay=3000');
    expect(late.status).toBe(504);
    expect(JSON.parse(late.body)).toMatchObject({ error: { code: 'gateway_timeout', message: expect.stringContaining('upstream headers timer') } });
    expect(Date.now() - started).toBeLessThan(2900);
    // In time, the same replica answers: the timeout was not held against it.
    expect((await get(env, 'timed', '/soon?delay=100')).status).toBe(200);
    const metrics = await env.registry.metrics();
    expect(metrics).not.toMatch(/infergate_replica_ejections_total\{deployment="timed"\} [1-9]/);
    expect(metrics).not.toMatch(/infergate_upstream_retries_total\{deployment="timed"\} [1-9]/);
  });

  it('answers DEADLINE_EXCEEDED itself when a gRPC deadline passes while the activator holds the call', async () => {
    const session = http2.connect(`https://127.0.0.1:${env.port}`, { servername: hostOf('rpc-zero'), ca: env.ca.certPem });
    try {
      const started = Date.now();
      const stream = session.request({
        ':method': 'POST',
        ':path': '/test.Echo/Echo',
        ':authority': hostOf('rpc-zero'),
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': '300m',
        authorization: `Bearer ${tokenFor('rpc-zero')}`,
      });
      // One empty length-prefixed message: the call is in, and held (no replica at zero).
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
      const headers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        stream.on('response', resolve);
        stream.on('error', reject);
      });
      stream.resume();
      expect(headers['grpc-status']).toBe('4');
      expect(decodeURI(String(headers['grpc-message']))).toContain('deadline');
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      session.close();
    }
    await expect.poll(() => metric(env, /infergate_requests_total\{deployment="rpc-zero",status="504",protocol="grpc"\} (\d+)/)).toBe(1);
  });
});

describe('a gateway shutting down with a request in flight', () => {
  it('cancels the replica\'s request and counts the request once, as 503', async () => {
    const env = await startGatewayEnv({});
    const replica = await slowReplica();
    try {
      const id = await env.deploy('busy');
      await env.addReplica(id, replica.address);
      await env.waitForReplicas('busy', 1);
      const pending = get(env, 'busy', '/long?delay=60000').catch((err: Error) => err);
      await expect.poll(() => replica.seen).toBe(1);
      const registry = env.registry;
      await env.close();
      await pending;
      await expect.poll(() => replica.cut).toBe(1);
      expect(Number(/infergate_requests_total\{deployment="busy",status="503",protocol="http"\} (\d+)/.exec(await registry.metrics())?.[1])).toBe(1);
    } finally {
      await replica.close();
    }
  });
});
