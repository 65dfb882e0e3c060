// OpenTelemetry traces of gateway requests, seen by a real OTLP/HTTP receiver on loopback: the
// client's traceparent is the parent of the gateway's request span, the phases are its events,
// each attempt is a child span whose context the replica receives (a retried request shows two
// attempts), GenAI attributes are set where known, and `infergate serve` turns it on from the
// standard OTEL_* variables alone.

import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracingFromEnv, type Tracing } from '../src/tracing/tracing.js';
import { hostOf, startGatewayEnv, tokenFor, type GatewayEnv } from './helpers/gateway-env.js';
import { startOtlpReceiver, type OtlpReceiver } from './helpers/otlp-receiver.js';
import { startServe } from './helpers/serve-process.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

/** An OpenAI-style replica that records the trace headers it was sent. */
async function replica(): Promise<{ address: string; traceparents: string[]; close(): Promise<void> }> {
  const traceparents: string[] = [];
  const server = http.createServer((req, res) => {
    traceparents.push(String(req.headers.traceparent ?? ''));
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'x', object: 'chat.completion', model: 'sim/model', choices: [], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    traceparents,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function post(port: number, ca: string, name: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { host: hostOf(name), 'content-type': 'application/json', ...headers },
        createConnection: () => tls.connect({ host: '127.0.0.1', port, servername: hostOf(name), ca }),
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('tracing through the gateway', () => {
  let receiver: OtlpReceiver;
  let tracing: Tracing;
  let env: GatewayEnv;
  let upstream: Awaited<ReturnType<typeof replica>>;
  let deadPort: number;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracing = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gateway-under-test' }, {}, pino({ level: 'silent' }))!;
    env = await startGatewayEnv({ tracing });
    upstream = await replica();
    // A replica nothing listens on: the first attempt of a request that tries it fails to connect.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    deadPort = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const id = await env.deploy('traced');
    await env.addReplica(id, upstream.address);
    await env.waitForReplicas('traced', 1);
    const retried = await env.deploy('retried', { session_affinity: true });
    await env.addReplica(retried, `127.0.0.1:${deadPort}`);
    await env.addReplica(retried, upstream.address);
    await env.waitForReplicas('retried', 2);
  });

  afterAll(async () => {
    await env?.close(); // shuts the tracing down too
    await upstream?.close();
    await receiver?.close();
  });

  it("makes the client's trace the parent of the request span, with the phases as events and the replica under the attempt span", async () => {
    const traceparent = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
    const status = await post(env.port, env.ca.certPem, 'traced', { authorization: `Bearer ${tokenFor('traced')}`, traceparent }, JSON.stringify({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }] }));
    expect(status).toBe(200);
    await tracing.forceFlush();
    const spans = await expect.poll(() => receiver.spans().filter((s) => s.traceId === CLIENT_TRACE), { timeout: 5000 }).toHaveLength(2).then(() => receiver.spans().filter((s) => s.traceId === CLIENT_TRACE));
    const server = spans.find((s) => s.kind === 'SERVER')!;
    const attempt = spans.find((s) => s.kind === 'CLIENT')!;
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(server.serviceName).toBe('gateway-under-test');
    expect(server.events.map((e) => e.name)).toEqual(expect.arrayContaining(['routed', 'authenticated', 'admitted', 'body_received', 'selected', 'first_byte']));
    expect(server.attributes).toMatchObject({
      'infergate.deployment': 'traced',
      'gen_ai.request.model': 'sim/model',
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 7,
      'http.response.status_code': 200,
    });
    expect(server.attributes['gen_ai.response.time_to_first_chunk']).toEqual(expect.any(Number));
    expect(attempt.parentSpanId).toBe(server.spanId);
    // The replica's parent is the attempt span, in the client's trace.
    expect(upstream.traceparents.at(-1)).toBe(`00-${CLIENT_TRACE}-${attempt.spanId}-01`);
  });

  it('shows a retried request as two attempts, the first failed to connect', async () => {
    const trace = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1';
    // Sessions until one lands first on the dead replica (consistent hashing puts about half there).
    for (let i = 0; i < 40; i++) {
      const status = await post(env.port, env.ca.certPem, 'retried', { authorization: `Bearer ${tokenFor('retried')}`, 'x-session-id': `s${i}`, traceparent: `00-${trace.slice(0, 30)}${String(i).padStart(2, '0')}-${CLIENT_SPAN}-01` }, '{}');
      expect(status).toBe(200);
    }
    await tracing.forceFlush();
    const attempts = receiver.spans().filter((s) => s.kind === 'CLIENT' && s.traceId.startsWith(trace.slice(0, 30)));
    const failed = attempts.filter((s) => s.attributes['infergate.attempt.outcome'] === 'connection_failed');
    expect(failed.length).toBeGreaterThan(0);
    const sibling = attempts.find((s) => s.traceId === failed[0]!.traceId && s.spanId !== failed[0]!.spanId);
    expect(sibling?.parentSpanId).toBe(failed[0]!.parentSpanId);
    expect(failed[0]!.statusCode).toBe(2);
  });
});

describe('infergate serve and the OTEL_* variables', () => {
  it('exports a span per gateway request when OTEL_EXPORTER_OTLP_ENDPOINT is set, named by OTEL_SERVICE_NAME, in the client\'s trace', async () => {
    const receiver = await startOtlpReceiver();
    const root = await mkdtemp(path.join(os.tmpdir(), 'infergate-otel-'));
    const p = await startServe({
      dataDir: path.join(root, 'data'),
      certsDir: path.join(root, 'certs'),
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'edge-gateway', OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
    try {
      const port = Number(/gateway \(TLS, h2 and http\/1\.1\) listening on [^:]+:(\d+)/.exec(p.output())?.[1]);
      const status = await new Promise<number>((resolve, reject) => {
        const socket = tls.connect({ host: '127.0.0.1', port, servername: 'nobody.endpoints.localhost', rejectUnauthorized: false }, () => {
          socket.write(`GET /v1/models HTTP/1.1\r\nHost: nobody.endpoints.localhost\r\ntraceparent: 00-${CLIENT_TRACE}-${CLIENT_SPAN}-01\r\nConnection: close\r\n\r\n`);
        });
        let answer = '';
        socket.on('data', (b: Buffer) => (answer += b.toString()));
        socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1])));
        socket.on('error', reject);
      });
      expect(status).toBe(404);
      await expect.poll(() => receiver.spans().find((s) => s.traceId === CLIENT_TRACE), { timeout: 10_000 }).toMatchObject({
        parentSpanId: CLIENT_SPAN,
        serviceName: 'edge-gateway',
        kind: 'SERVER',
        attributes: { 'http.response.status_code': 404 },
      });
    } finally {
      p.kill('SIGTERM');
      await p.exited;
      await receiver.close();
      await removeTempDir(root);
    }
  });
});
