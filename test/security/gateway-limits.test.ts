// Security suite — the gateway's limits on what a client can hold or send: a connection that
// never sends a ClientHello, an idle HTTP/2 session, request headers that never finish or
// are too many, a body that stalls (408, never in-flight load) or is too large (413),
// `100 Continue` only after authentication, the connection caps under a flood while a valid
// client keeps being served, per-credential rate limits (429 with Retry-After, in the metrics
// and the usage view), and a service-account key that never opens an endpoint.

import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { DEFAULTS } from '../../src/config/defaults.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/core/secrets.js';
import { modify } from '../../src/store/store.js';
import { startChatUpstream, type ChatUpstream } from '../helpers/chat-upstream.js';
import { hostOf, startGatewayEnv, tokenFor, waitFor, type GatewayEnv } from '../helpers/gateway-env.js';
import { httpsRequest } from '../helpers/https-client.js';
import { RawConnection } from '../helpers/raw-tls.js';

const SHORT = 700; // ms: every client-side timeout of this gateway
let env: GatewayEnv;
let upstream: ChatUpstream;
const ids: Record<string, number> = {};

const metric = async (name: string, labels: string): Promise<number> => {
  const text = await env.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : 0;
};

/** A TLS connection to the gateway under an endpoint's name, HTTP/1.1 by ALPN. */
function connect(name: string): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: env.port, servername: hostOf(name), ca: env.ca.certPem, ALPNProtocols: ['http/1.1'] }, () =>
      resolve(socket),
    );
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the connection (or `ms` pass). */
function readUntilClose(socket: net.Socket | tls.TLSSocket, ms = 5000): Promise<{ text: string; closedAfterMs: number | null }> {
  const started = Date.now();
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('error', () => undefined);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closedAfterMs: null });
    }, ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ text, closedAfterMs: Date.now() - started });
    });
  });
}

const statusOf = (raw: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
const bodyOf = (raw: string): unknown => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));

function h2session(name: string): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://127.0.0.1:${env.port}`, { ca: env.ca.certPem, servername: hostOf(name) });
    session.once('connect', () => resolve(session));
    session.once('error', reject);
  });
}

function h2request(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string): Promise<{ status: number; body: string; headers: http2.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers);
    let text = '';
    let response: http2.IncomingHttpHeaders = {};
    stream.on('response', (h) => (response = h));
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (text += c));
    stream.on('end', () => resolve({ status: Number(response[':status']), body: text, headers: response }));
    stream.on('error', reject);
    stream.end(body);
  });
}

beforeAll(async () => {
  env = await startGatewayEnv({
    clientTimeouts: { tlsHandshakeMs: SHORT, keepAliveMs: SHORT, h2IdleMs: SHORT, headersMs: SHORT },
    connections: { maxConnections: 60, maxConnectionsPerClient: 20 },
    body: { maxBytes: DEFAULTS.gateway.body.maxBytes, idleMs: SHORT },
  });
  upstream = await startChatUpstream({ name: 'limits', promptTokens: 30, chunks: 10 });
  ids.plain = await env.deploy('lim-plain', { max_request_body_bytes: 2048 });
  ids.tokens = await env.deploy('lim-tokens', { rate_limit: { tokens_per_minute: 50 } });
  ids.rps = await env.deploy('lim-rps', { rate_limit: { requests_per_second: 1 } });
  for (const id of Object.values(ids)) await env.addReplica(id, upstream.address);
  for (const name of ['lim-plain', 'lim-tokens', 'lim-rps']) await env.waitForReplicas(name, 1);
});

afterAll(async () => {
  await upstream?.close();
  await env?.close();
});

describe('connection timeouts', () => {
  it('closes a connection that never sends a ClientHello within the handshake timeout, and counts it', async () => {
    const before = await metric('infergate_connections_timed_out_total', 'reason="handshake_timeout"');
    const socket = net.connect(env.port, '127.0.0.1');
    const { closedAfterMs } = await readUntilClose(socket, 5000);
    expect(closedAfterMs).not.toBeNull();
    expect(closedAfterMs!).toBeLessThan(SHORT + 1500);
    expect(await metric('infergate_connections_timed_out_total', 'reason="handshake_timeout"')).toBe(before + 1);
  });

  it('answers 408 in the error shape when request headers never finish', async () => {
    const socket = await connect('lim-plain');
    socket.write(`GET /v1/models HTTP/1.1\r\nHost: ${hostOf('lim-plain')}\r\n`);
    const { text, closedAfterMs } = await readUntilClose(socket);
    expect(statusOf(text)).toBe(408);
    expect(bodyOf(text)).toMatchObject({ error: { code: 'request_timeout' } });
    expect(closedAfterMs).not.toBeNull();
    expect(await metric('infergate_connections_timed_out_total', 'reason="header_timeout"')).toBeGreaterThan(0);
  });

  it('closes an idle HTTP/1.1 keep-alive connection after the keep-alive timeout', async () => {
    const socket = await connect('lim-plain');
    socket.write(`GET /v1/models HTTP/1.1\r\nHost: ${hostOf('lim-plain')}\r\nAuthorization: Bearer ${tokenFor('lim-plain')}\r\n\r\n`);
    const { text, closedAfterMs } = await readUntilClose(socket);
    expect(statusOf(text)).toBe(200);
    expect(closedAfterMs).not.toBeNull();
    expect(await metric('infergate_connections_timed_out_total', 'reason="keep_alive_timeout"')).toBeGreaterThan(0);
  });

  it('closes an HTTP/2 session with no open stream after its idle timeout (GOAWAY), but not one with a stream in progress', async () => {
    const idle = await h2session('lim-plain');
    const closed = new Promise<number>((resolve) => {
      const started = Date.now();
      idle.once('close', () => resolve(Date.now() - started));
    });
    expect(await closed).toBeLessThan(SHORT + 1500);

    // A session whose stream waits on a slow replica stays open past the idle timeout.
    const slow = await startChatUpstream({ name: 'slow', hold: true, chunks: 2 });
    const id = await env.deploy('lim-slow');
    await env.addReplica(id, slow.address);
    await env.waitForReplicas('lim-slow', 1);
    const busy = await h2session('lim-slow');
    // Cut (close) or told to go (GOAWAY, after which the session takes no new stream).
    let busyClosed = false;
    busy.once('close', () => (busyClosed = true));
    busy.once('goaway', () => (busyClosed = true));
    const stream = busy.request({
      ':method': 'POST',
      ':path': '/v1/chat/completions',
      ':authority': hostOf('lim-slow'),
      authorization: `Bearer ${tokenFor('lim-slow')}`,
      'content-type': 'application/json',
    });
    stream.end(JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    await waitFor(() => slow.open === 1, 5000, 'the stream held at the replica');
    // The clock is a session opened after it with no stream: the gateway closes that one at
    // its idle timeout, so an idle timer running on the busy session would have fired first.
    const later = await h2session('lim-plain');
    let laterClosed = false;
    later.once('close', () => (laterClosed = true));
    await waitFor(() => laterClosed, SHORT + 5000, 'the later, idle session closed at its idle timeout');
    expect(busyClosed).toBe(false);
    slow.release();
    await new Promise<void>((resolve) => stream.on('end', resolve).resume());
    busy.close();
    await slow.close();
    expect(await metric('infergate_connections_timed_out_total', 'reason="idle_timeout"')).toBeGreaterThan(0);
  });
});

describe('request headers', () => {
  it('answers 431 in the error shape to an HTTP/1.1 request with more than 128 header fields, and to headers over 16 KiB', async () => {
    const many = Array.from({ length: 200 }, (_, i) => `X-H${i}: v`).join('\r\n');
    let socket = await connect('lim-plain');
    socket.write(`GET /v1/models HTTP/1.1\r\nHost: ${hostOf('lim-plain')}\r\nAuthorization: Bearer ${tokenFor('lim-plain')}\r\n${many}\r\n\r\n`);
    let { text } = await readUntilClose(socket, 2000);
    expect(statusOf(text)).toBe(431);
    expect(bodyOf(text)).toMatchObject({ error: { code: 'headers_too_large' } });

    socket = await connect('lim-plain');
    socket.write(`GET /v1/models HTTP/1.1\r\nHost: ${hostOf('lim-plain')}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    ({ text } = await readUntilClose(socket, 2000));
    expect(statusOf(text)).toBe(431);
    expect(bodyOf(text)).toMatchObject({ error: { code: 'headers_too_large' } });
  });

  it('answers 431 to an HTTP/2 request with more than 128 header fields instead of resetting the stream', async () => {
    const session = await h2session('lim-plain');
    const headers: http2.OutgoingHttpHeaders = { ':method': 'GET', ':path': '/v1/models', ':authority': hostOf('lim-plain'), authorization: `Bearer ${tokenFor('lim-plain')}` };
    for (let i = 0; i < 200; i++) headers[`x-h${i}`] = 'v';
    const res = await h2request(session, headers);
    session.close();
    expect(res.status).toBe(431);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'headers_too_large' } });
  });
});

describe('request bodies', () => {
  it('a stalled body gets 408, never reaches the replica, and is never in-flight load', async () => {
    const seen = upstream.seen.length;
    const since = Date.now() - (Date.now() % 1000);
    const socket = await connect('lim-plain');
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: ${hostOf('lim-plain')}\r\nAuthorization: Bearer ${tokenFor('lim-plain')}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":',
    );
    let maxInflight = 0;
    const sampler = setInterval(() => (maxInflight = Math.max(maxInflight, env.gateway.inflight.deploymentInflight(ids.plain!))), 20);
    const { text } = await readUntilClose(socket, 5000);
    clearInterval(sampler);
    expect(statusOf(text)).toBe(408);
    expect(bodyOf(text)).toMatchObject({ error: { code: 'request_timeout' } });
    // Listed, not counted: whatever did reach the upstream names itself if this fails.
    expect(upstream.seen.slice(seen).map((r) => `${r.method} ${r.path} ${r.headers['user-agent'] ?? ''} ${r.headers['x-forwarded-for'] ?? ''}`)).toEqual([]);
    expect(maxInflight).toBe(0);
    // The autoscaler's input (time-weighted concurrency per second) saw nothing either.
    expect(env.gateway.inflight.concurrency(ids.plain!).filter((s) => s.second >= since).every((s) => s.average === 0)).toBe(true);
    expect(await metric('infergate_request_body_refusals_total', 'reason="timeout"')).toBeGreaterThan(0);
  });

  it('a streamed (chunked) body that stalls after its first bytes counts while it flows, then is cut with 408 and leaves the count', async () => {
    const socket = await connect('lim-plain');
    socket.write(
      `POST /echo HTTP/1.1\r\nHost: ${hostOf('lim-plain')}\r\nAuthorization: Bearer ${tokenFor('lim-plain')}\r\n` + 'Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n',
    );
    await waitFor(() => env.gateway.inflight.deploymentInflight(ids.plain!) === 1, 2000, 'the request in flight');
    const { text } = await readUntilClose(socket, 5000);
    expect(statusOf(text)).toBe(408);
    expect(env.gateway.inflight.deploymentInflight(ids.plain!)).toBe(0);
  });

  it("refuses a body over the deployment's max_request_body_bytes with 413, by Content-Length without reading it, and when chunked", async () => {
    const seen = upstream.seen.length;
    const big = await httpsRequest({
      port: env.port,
      host: hostOf('lim-plain'),
      ca: env.ca.certPem,
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${tokenFor('lim-plain')}`, 'content-type': 'application/json' },
      body: 'x'.repeat(4096),
    });
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body)).toMatchObject({ error: { code: 'payload_too_large' } });
    expect(big.headers.connection).toBe('close');

    const socket = await connect('lim-plain');
    socket.write(`POST /echo HTTP/1.1\r\nHost: ${hostOf('lim-plain')}\r\nAuthorization: Bearer ${tokenFor('lim-plain')}\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const chunk = 'y'.repeat(1000);
    for (let i = 0; i < 3; i++) socket.write(`${(1000).toString(16)}\r\n${chunk}\r\n`);
    const { text } = await readUntilClose(socket, 3000);
    expect(statusOf(text)).toBe(413);
    // The small one went nowhere; the chunked one may have reached the replica before it grew too big.
    expect(upstream.seen.slice(seen).filter((s) => s.path === '/v1/chat/completions')).toHaveLength(0);
  });

  it('refuses an HTTP/2 body over the limit with 413 as well', async () => {
    const session = await h2session('lim-plain');
    const res = await h2request(
      session,
      { ':method': 'POST', ':path': '/echo', ':authority': hostOf('lim-plain'), authorization: `Bearer ${tokenFor('lim-plain')}` },
      'z'.repeat(5000),
    );
    session.close();
    expect(res.status).toBe(413);
  });
});

describe('100 Continue', () => {
  const expectContinue = async (authorization: string | null): Promise<string> => {
    const conn = await RawConnection.open({ port: env.port, servername: hostOf('lim-plain'), ca: env.ca.certPem });
    const auth = authorization === null ? '' : `Authorization: Bearer ${authorization}\r\n`;
    conn.write(`POST /echo HTTP/1.1\r\nHost: ${hostOf('lim-plain')}\r\n${auth}Content-Length: 5\r\nExpect: 100-continue\r\n\r\n`);
    // The parser counts an interim 100 as a response: the body goes after it, once, and the
    // wait ends with the whole final response (anything an interim adds comes before it).
    const [first] = await conn.waitFor(1, 3000);
    if (first?.status === 100) {
      conn.write('hello');
      await conn.waitFor(2, 3000);
    }
    conn.close();
    return conn.raw;
  };

  it('is not sent to an unauthenticated request: the 401 comes first and alone', async () => {
    const text = await expectContinue(null);
    expect(text.startsWith('HTTP/1.1 401')).toBe(true);
    expect(text).not.toContain('100 Continue');
  });

  it('is sent once the request is authenticated, and the body then goes through', async () => {
    const text = await expectContinue(tokenFor('lim-plain'));
    expect(text.startsWith('HTTP/1.1 100 Continue')).toBe(true);
    expect(text).toContain('HTTP/1.1 200');
    expect(text).toContain('"body":"hello"');
  });
});

describe('rate limits', () => {
  const chat = (name: string) =>
    httpsRequest({
      port: env.port,
      host: hostOf(name),
      ca: env.ca.certPem,
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${tokenFor(name)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('answers 429 with Retry-After once a credential used its tokens per minute, in the metrics and the usage view', async () => {
    // Each answer reports 30 prompt + 10 completion tokens; the limit is 50 per minute.
    expect((await chat('lim-tokens')).status).toBe(200);
    expect((await chat('lim-tokens')).status).toBe(200); // 10 were left: admitted, and now in debt
    const refused = await chat('lim-tokens');
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'rate_limited' } });
    expect(JSON.parse(refused.body).error.message).toMatch(/50 tokens per minute/);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(30);
    expect(retryAfter).toBeLessThanOrEqual(40);
    expect(await metric('infergate_rate_limited_total', 'deployment="lim-tokens",limit="tokens"')).toBe(1);
  });

  it('answers 429 past requests_per_second, per credential, and shows it in the usage view', async () => {
    const ledgerEnv = await startGatewayEnv({ withUsage: true });
    const usage = ledgerEnv.usage!;
    try {
      const id = await ledgerEnv.deploy('lim-usage', { rate_limit: { requests_per_second: 1 } });
      await ledgerEnv.addReplica(id, upstream.address);
      await ledgerEnv.waitForReplicas('lim-usage', 1);
      const call = () =>
        httpsRequest({ port: ledgerEnv.port, host: hostOf('lim-usage'), ca: ledgerEnv.ca.certPem, path: '/v1/models', headers: { authorization: `Bearer ${tokenFor('lim-usage')}` } });
      const statuses = [(await call()).status, (await call()).status, (await call()).status];
      expect(statuses).toEqual([200, 429, 429]);
      await usage.flush();
      const view = await ledgerEnv.api.call('GET', `/deployments/general/${id}/usage`);
      expect(view.body.totals).toMatchObject({ requests: 3, rate_limited: 2 });
    } finally {
      await ledgerEnv.close();
    }
  });
});

describe('connection caps', () => {
  it('holds the per-client and global caps under a flood from one address while a client on another is served', async () => {
    const flood: net.Socket[] = [];
    const refusedBefore = await metric('infergate_connections_refused_total', 'reason="client_cap"');
    try {
      for (let i = 0; i < 100; i++) {
        const s = net.connect({ host: '127.0.0.1', port: env.port, localAddress: '127.0.0.2' });
        s.on('error', () => undefined);
        flood.push(s);
      }
      await waitFor(async () => (await metric('infergate_connections_refused_total', 'reason="client_cap"')) >= refusedBefore + 80, 3000, 'refusals');
      expect(env.gateway.connections.openFrom('127.0.0.2')).toBeLessThanOrEqual(20);
      for (let i = 0; i < 5; i++) {
        const res = await httpsRequest({ port: env.port, host: hostOf('lim-plain'), ca: env.ca.certPem, path: '/v1/models', headers: { authorization: `Bearer ${tokenFor('lim-plain')}` } });
        expect(res.status).toBe(200);
      }
      expect(env.gateway.connections.open).toBeLessThanOrEqual(60);
    } finally {
      for (const s of flood) s.destroy();
    }
  });
});

describe('authentication failures', () => {
  it('an address that keeps failing gets its 401s late, while a valid request from the same address is answered at once', async () => {
    const slow = await startGatewayEnv({ authFailures: { ratePerSecond: 1, burst: 2, delayMs: 1500, maxHeld: 10 } });
    try {
      const id = await slow.deploy('lim-tarpit');
      await slow.addReplica(id, upstream.address);
      await slow.waitForReplicas('lim-tarpit', 1);
      const call = async (token: string) => {
        const t = Date.now();
        const res = await httpsRequest({ port: slow.port, host: hostOf('lim-tarpit'), ca: slow.ca.certPem, path: '/v1/models', headers: { authorization: `Bearer ${token}` } });
        return { status: res.status, ms: Date.now() - t };
      };
      const quick = [await call('tok_wrong_0123456789abcdef'), await call('tok_wrong_0123456789abcdef')];
      expect(quick.map((r) => r.status)).toEqual([401, 401]);
      const [late, valid] = await Promise.all([call('tok_wrong_0123456789abcdef'), call(tokenFor('lim-tarpit'))]);
      expect(late.status).toBe(401);
      expect(late.ms).toBeGreaterThanOrEqual(1450);
      expect(valid.status).toBe(200);
      expect(valid.ms).toBeLessThan(1400); // answered without waiting for the held 401
      const text = await slow.registry.metrics();
      expect(text).toMatch(/infergate_auth_failures_delayed_total\{deployment="lim-tarpit"\} 1/);
    } finally {
      await slow.close();
    }
  });
});

describe('platform credentials', () => {
  it('a service-account key bound as a token (a record from before the rule) never opens the endpoint', async () => {
    const key = 'igk_member_key_used_as_token_0123';
    await env.api.store.create('service_account', (id) => ({ id, name: 'robot', role: 'member', key_hash: sha256Hex(key), hint: 'x', created_at: new Date().toISOString() }));
    const token = await env.api.store.create('token', (id) => ({ id, name: 'leaked', hash: sha256Hex(key), hint: 'x', created_at: new Date().toISOString() }));
    const id = await env.deploy('lim-sa');
    await modify(env.api.store, 'deployment', id, (d) => ({ ...d, auth: { ...d.auth, token_id: token.value.id } }));
    await env.addReplica(id, upstream.address);
    await env.waitForReplicas('lim-sa', 1);
    const res = await httpsRequest({ port: env.port, host: hostOf('lim-sa'), ca: env.ca.certPem, path: '/v1/models', headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(401);
  });
});
