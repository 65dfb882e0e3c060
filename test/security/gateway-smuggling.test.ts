// Security suite: request framing attacks on the gateway, over raw TLS sockets on loopback with
// hand-written HTTP/1.1 (and HTTP/2 where the attack has an HTTP/2 form). Owns: request
// smuggling shapes (Content-Length vs Transfer-Encoding, duplicate or odd framing headers,
// obs-fold, bare LF, bad header names, bad chunk sizes), requests hidden in or after the body
// of an authorized one, protocol upgrades (WebSocket, h2c) and CONNECT with and without a
// credential, and `Expect: 100-continue` before authentication. The rule each case keeps: no
// request reaches a replica unless it carries a valid credential itself — a smuggled inner
// request never does, whatever the outer one carried — nothing answers 101 or tunnels without
// one, and nothing answers 5xx. The credential matrix itself is gateway-auth-matrix.test.ts.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { h2Connect, h2Request, RawConnection, rawExchange, type RawResponse } from '../helpers/raw-tls.js';
import {
  expectNothingReached,
  expectOnlyReached,
  expectUnauthenticated,
  startSecurityEnv,
  type AnyResponse,
  type ProtectedDeployment,
  type SecurityEnv,
} from '../helpers/security-env.js';

let sec: SecurityEnv;
let A: ProtectedDeployment;
let B: ProtectedDeployment;

beforeAll(async () => {
  sec = await startSecurityEnv();
  A = await sec.add('smug-a', 'token');
  B = await sec.add('smug-b', 'both');
}, 60_000);

afterAll(async () => sec?.close());

const target = () => ({ port: sec.port, ca: sec.ca, servername: A.host });
const rawAsAny = (r: RawResponse): AnyResponse => ({ status: r.status, headers: r.headers, body: r.body });
const authA = () => `Authorization: Bearer ${A.token}\r\n`;
/** The request an attacker hides: no credential, a path no legitimate request uses. */
const inner = (host = A.host) => `GET /smuggled HTTP/1.1\r\nHost: ${host}\r\n\r\n`;

/** Nothing that reached any replica was the hidden request, or came without a credential. */
function expectNoSmuggledRequest(mark: Map<string, number>): void {
  const seen = Object.values(sec.seenSince(mark)).flat();
  expect(seen.filter((s) => s.path.includes('smuggled')).map((s) => `${s.method} ${s.path}`)).toEqual([]);
  for (const s of seen) {
    expect(s.kind).toBe('request');
    expect(s.path).toMatch(/^\/outer/);
  }
}

describe('baseline over raw TLS', () => {
  it('a well-formed POST with the token reaches the replica once, with its body and without Authorization; without it, 401', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), `POST /outer HTTP/1.1\r\nHost: ${A.host}\r\n${authA()}Content-Length: 5\r\n\r\nhello` + `POST /outer HTTP/1.1\r\nHost: ${A.host}\r\nContent-Length: 5\r\n\r\nhello`, 2);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200, 401]);
    expectUnauthenticated(rawAsAny(conn.responses[1]!));
    expect(expectOnlyReached(sec, mark, A.name, 1)[0]!.body).toBe('hello');
  });
});

// ─── framing ──────────────────────────────────────────────────────────────────────────────

describe('smuggling shapes: an authorized outer request framed ambiguously around an unauthenticated inner one', () => {
  const post = (headers: string, body: string) => `POST /outer HTTP/1.1\r\nHost: ${A.host}\r\n${authA()}${headers}\r\n${body}`;
  const smuggledChunked = () => `0\r\n\r\n${inner()}`;

  // Every shape is refused outright today: 400 and the connection closed, nothing forwarded.
  const REFUSED: Array<[string, () => string]> = [
    ['Content-Length and Transfer-Encoding: chunked (CL.TE)', () => post(`Content-Length: ${smuggledChunked().length}\r\nTransfer-Encoding: chunked\r\n`, smuggledChunked())],
    ['Transfer-Encoding: chunked before Content-Length (TE.CL)', () => post('Transfer-Encoding: chunked\r\nContent-Length: 4\r\n', `5c\r\n${inner().padEnd(0x5c, 'x')}\r\n0\r\n\r\n`)],
    ['Content-Length: 0 with Transfer-Encoding: chunked', () => post('Content-Length: 0\r\nTransfer-Encoding: chunked\r\n', smuggledChunked())],
    ['two different Content-Length headers', () => post(`Content-Length: 4\r\nContent-Length: ${4 + inner().length}\r\n`, `abcd${inner()}`)],
    ['two equal Content-Length headers', () => post('Content-Length: 4\r\nContent-Length: 4\r\n', `abcd${inner()}`)],
    ['a Content-Length list (4, 40)', () => post('Content-Length: 4, 40\r\n', `abcd${inner()}`)],
    ['a signed Content-Length (+4)', () => post('Content-Length: +4\r\n', `abcd${inner()}`)],
    ['a negative Content-Length', () => post('Content-Length: -1\r\n', `abcd${inner()}`)],
    ['Transfer-Encoding: chunked, identity', () => post('Transfer-Encoding: chunked, identity\r\n', smuggledChunked())],
    ['Transfer-Encoding: xchunked', () => post('Transfer-Encoding: xchunked\r\n', smuggledChunked())],
    ['Transfer-Encoding: chunked, then a second Transfer-Encoding: identity', () => post('Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n', smuggledChunked())],
    ['Transfer-Encoding folded onto a continuation line (obs-fold)', () => post('Transfer-Encoding:\r\n chunked\r\nContent-Length: 4\r\n', smuggledChunked())],
    ['Content-Length folded onto a continuation line (obs-fold)', () => post(`Content-Length: 4\r\n ${inner().length}\r\n`, `abcd${inner()}`)],
    ['a space before the colon of Transfer-Encoding', () => post('Transfer-Encoding : chunked\r\nContent-Length: 4\r\n', smuggledChunked())],
    ['a space before the colon of Content-Length', () => post(`Content-Length : ${inner().length + 4}\r\n`, `abcd${inner()}`)],
    ['a space before the colon of Authorization', () => `GET /outer HTTP/1.1\r\nHost: ${A.host}\r\nAuthorization : Bearer ${A.token}\r\n\r\n`],
    ['bare LF line endings throughout', () => `POST /outer HTTP/1.1\nHost: ${A.host}\nAuthorization: Bearer ${A.token}\nContent-Length: 4\n\nabcd${inner().replaceAll('\r\n', '\n')}`],
    ['a bare LF ending one header line', () => `POST /outer HTTP/1.1\r\nHost: ${A.host}\r\n${authA()}Content-Length: 4\nTransfer-Encoding: chunked\r\n\r\n${smuggledChunked()}`],
    ['a bare CR inside a header line', () => `GET /outer HTTP/1.1\r\nHost: ${A.host}\r\n${authA()}X-Pad: a\rTransfer-Encoding: chunked\r\n\r\n${smuggledChunked()}`],
    ['a NUL in a header value', () => `GET /outer HTTP/1.1\r\nHost: ${A.host}\r\nAuthorization: Bearer ${A.token}\0x\r\n\r\n${inner()}`],
    ['a request line with a space inside the target', () => `GET /outer /smuggled HTTP/1.1\r\nHost: ${A.host}\r\n${authA()}\r\n`],
    ['an HTTP/2 preface on an HTTP/1.1 connection', () => `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n${inner()}`],
  ];

  it.each(REFUSED)('%s: 400, the connection closed, nothing reaches a replica', async (_what, payload) => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), payload(), 2);
    await conn.waitClosed(2000);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([400]);
    expect(conn.closed).toBe(true);
    expectNothingReached(sec, mark);
  });

  // Errors inside a chunked body: the headers were valid and authorized, so the outer request
  // may already be on its way to the replica (its body is streamed) when the parser fails.
  // The connection is then cut with 400; the request hidden after the body never arrives.
  const BAD_BODY: Array<[string, () => string]> = [
    ['a chunk size with a 0x prefix', () => post('Transfer-Encoding: chunked\r\n', `0x4\r\nabcd\r\n0\r\n\r\n${inner()}`)],
    ['a negative chunk size', () => post('Transfer-Encoding: chunked\r\n', `-1\r\nabcd\r\n0\r\n\r\n${inner()}`)],
    ['a chunk size that overflows 64 bits', () => post('Transfer-Encoding: chunked\r\n', `1${'0'.repeat(16)}4\r\nabcd\r\n0\r\n\r\n${inner()}`)],
    ['a chunk whose data overruns its size', () => post('Transfer-Encoding: chunked\r\n', `2\r\nabcd\r\n0\r\n\r\n${inner()}`)],
    ['a chunked body ended by bare LFs', () => post('Transfer-Encoding: chunked\r\n', `4\nabcd\n0\n\n${inner()}`)],
  ];

  it.each(BAD_BODY)('%s: 400 or the connection cut, and the hidden request never reaches a replica', async (_what, payload) => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), payload(), 2);
    await conn.waitClosed(2000);
    conn.close();
    expect(conn.closed).toBe(true);
    expect(conn.responses.every((r) => r.status === 400)).toBe(true);
    expectNoSmuggledRequest(mark);
    for (const seen of Object.values(sec.seenSince(mark)).flat()) expect(seen.headers.authorization).toBeUndefined();
  });

  // Shapes that are valid HTTP/1.1: each request is framed one way only, so whatever follows
  // the outer request is a request of its own, judged on its own credential.
  it('a Content-Length that covers a whole inner request: the replica gets one request whose body is the inner text, the client one response', async () => {
    const mark = sec.mark();
    const body = inner();
    const conn = await rawExchange(target(), post(`Content-Length: ${body.length}\r\n`, body), 2, 500);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200]);
    const [outer] = expectOnlyReached(sec, mark, A.name, 1);
    expect(outer!.path).toBe('/outer');
    expect(outer!.body).toBe(body);
    expectNoSmuggledRequest(mark);
  });

  it('a Content-Length shorter than what was sent: the rest is the next request on the connection, and without a credential it is 401', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), post('Content-Length: 2\r\n', `ab${inner()}`), 2);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200, 401]);
    expectUnauthenticated(rawAsAny(conn.responses[1]!));
    expect(expectOnlyReached(sec, mark, A.name, 1)[0]!.body).toBe('ab');
    expectNoSmuggledRequest(mark);
  });

  it('a request after the last chunk of a chunked body (any case of "chunked") is 401 on its own', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), post('Transfer-Encoding: Chunked\r\n', `4\r\nabcd\r\n0\r\n\r\n${inner()}`), 2);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200, 401]);
    expect(expectOnlyReached(sec, mark, A.name, 1)[0]!.body).toBe('abcd');
    expectNoSmuggledRequest(mark);
  });

  it('a chunk extension and a trailer do not hide a request: the one after the body is 401', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), post('Transfer-Encoding: chunked\r\n', `4;ext="GET /smuggled"\r\nabcd\r\n0\r\nX-Trailer: GET /smuggled\r\n\r\n${inner()}`), 2);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200, 401]);
    expectOnlyReached(sec, mark, A.name, 1);
    expectNoSmuggledRequest(mark);
  });

  it('a GET with trailing bytes and no framing headers: the bytes are the next request, 401', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), `GET /outer HTTP/1.1\r\nHost: ${A.host}\r\n${authA()}\r\n${inner()}`, 2);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200, 401]);
    expectOnlyReached(sec, mark, A.name, 1);
    expectNoSmuggledRequest(mark);
  });

  it("an inner request for another endpoint behind an authorized one is judged against that endpoint: 401, its replica sees nothing", async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), post('Content-Length: 2\r\n', `ab${inner(B.host)}`), 2);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200, 401]);
    expectUnauthenticated(rawAsAny(conn.responses[1]!));
    expect(conn.responses[1]!.headers['www-authenticate']?.[0]).toContain(`realm="${B.host}"`);
    expectOnlyReached(sec, mark, A.name, 1);
  });

  it('a Transfer-Encoding with tab as whitespace is still one framing: the request after the body is 401', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), post('Transfer-Encoding:\tchunked\r\n', `4\r\nabcd\r\n0\r\n\r\n${inner()}`), 2);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200, 401]);
    expectOnlyReached(sec, mark, A.name, 1);
    expectNoSmuggledRequest(mark);
  });

  it('HTTP/1.0 with Transfer-Encoding: chunked and a hidden request: never reaches the replica as a request', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), `POST /outer HTTP/1.0\r\nHost: ${A.host}\r\n${authA()}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n${smuggledChunked()}`, 2);
    await conn.waitClosed(1000);
    conn.close();
    for (const r of conn.responses) expect(r.status).toBeLessThan(500);
    expectNoSmuggledRequest(mark);
  });
});

// ─── upgrades and tunnels ─────────────────────────────────────────────────────────────────

describe('upgrades and CONNECT', () => {
  const websocket = (host: string, extra = '') =>
    `GET /outer/ws HTTP/1.1\r\nHost: ${host}\r\n${extra}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;
  const h2c = (host: string, extra = '') =>
    `GET /outer/h2c HTTP/1.1\r\nHost: ${host}\r\n${extra}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`;

  it.each([
    ['WebSocket upgrade without a credential', () => websocket(A.host)],
    ["WebSocket upgrade with another endpoint's token", () => websocket(A.host, `Authorization: Bearer ${B.token}\r\n`)],
    ['WebSocket upgrade to a token+certificate endpoint without a credential', () => websocket(B.host)],
    ['h2c upgrade (Upgrade: h2c + HTTP2-Settings) without a credential', () => h2c(A.host)],
    ['h2c upgrade with a wrong token', () => h2c(A.host, 'Authorization: Bearer tok_wrong_0123456789abcdef\r\n')],
  ])('%s: 401, never 101, nothing reaches a replica', async (_what, payload) => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), payload());
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([401]);
    expect(conn.raw).not.toMatch(/^HTTP\/1\.1 101/m);
    expectUnauthenticated(rawAsAny(conn.responses[0]!), [B.token]);
    expectNothingReached(sec, mark);
  });

  it.each([
    ['WebSocket', () => websocket(A.host, authA())],
    ['h2c', () => h2c(A.host, authA())],
  ])('%s upgrade with the token: no 101 (the gateway does not upgrade); the replica gets a plain request without Upgrade, Connection or Authorization', async (_what, payload) => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), payload());
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200]);
    const [seen] = expectOnlyReached(sec, mark, A.name, 1);
    expect(seen!.kind).toBe('request');
    expect(seen!.headers.upgrade).toBeUndefined();
    expect(seen!.headers['http2-settings']).toBeUndefined();
    expect(seen!.headers.connection ?? '').not.toMatch(/upgrade/i);
  });

  // Bytes pipelined behind an upgrade request (in the same read) are discarded today — node's
  // parser stops at the Upgrade and, with no 'upgrade' listener, drops the rest of that read —
  // so they get no answer at all; later requests on the connection are parsed again. Either
  // way, what follows an upgrade request is never a tunnel and never reaches a replica
  // unauthenticated.
  it('an authorized WebSocket upgrade with an unauthenticated request pipelined behind it: 200 for the first, the second answered 401 or dropped, never forwarded', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), websocket(A.host, authA()) + inner(), 2, 500);
    conn.close();
    expect(conn.responses[0]?.status).toBe(200);
    expect(conn.responses.slice(1).every((r) => r.status === 401)).toBe(true);
    expect(conn.raw).not.toMatch(/^HTTP\/1\.1 101/m);
    expectOnlyReached(sec, mark, A.name, 1);
    expectNoSmuggledRequest(mark);
  });

  it('after an authorized WebSocket upgrade was answered 200, the next request on the connection is judged on its own: 401 without a credential', async () => {
    const mark = sec.mark();
    const conn = await RawConnection.open(target());
    try {
      conn.write(websocket(A.host, authA()));
      await conn.waitFor(1);
      conn.write(inner());
      await conn.waitFor(2);
      expect(conn.responses.map((r) => r.status)).toEqual([200, 401]);
      expectUnauthenticated(rawAsAny(conn.responses[1]!));
      expectOnlyReached(sec, mark, A.name, 1);
    } finally {
      conn.close();
    }
  });

  it('an authorized WebSocket upgrade followed by WebSocket frame bytes: no 101, the frame is never relayed to a replica', async () => {
    const mark = sec.mark();
    // A masked text frame "GET /smuggled", as a client would send after a 101.
    const text = Buffer.from('GET /smuggled HTTP/1.1');
    const mask = Buffer.from([1, 2, 3, 4]);
    const frame = Buffer.concat([Buffer.from([0x81, 0x80 | text.length]), mask, Buffer.from(text.map((b, i) => b ^ mask[i % 4]!))]);
    const conn = await rawExchange(target(), Buffer.concat([Buffer.from(websocket(A.host, authA())), frame]), 2, 500);
    conn.close();
    expect(conn.responses[0]?.status).toBe(200);
    expect(conn.responses.slice(1).every((r) => r.status === 400)).toBe(true);
    const [seen] = expectOnlyReached(sec, mark, A.name, 1);
    expect(seen!.body).toBe('');
    expectNoSmuggledRequest(mark);
  });

  it('an authorized h2c upgrade followed at once by an HTTP/2 preface and frames: answered as HTTP/1.1 (200), no h2c session, nothing more forwarded', async () => {
    const mark = sec.mark();
    // Preface, then an empty SETTINGS frame: what a client sends after a 101.
    const preface = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);
    const conn = await rawExchange(target(), Buffer.concat([Buffer.from(h2c(A.host, authA())), preface]), 2, 500);
    conn.close();
    expect(conn.responses[0]?.status).toBe(200);
    expect(conn.responses.slice(1).every((r) => r.status === 400)).toBe(true);
    expect(conn.unparsed).toBe(''); // no HTTP/2 frames (a server SETTINGS) came back
    expectOnlyReached(sec, mark, A.name, 1);
  });

  it('an Upgrade header without Connection: upgrade is an ordinary request: the one pipelined behind it is 401', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), `GET /outer HTTP/1.1\r\nHost: ${A.host}\r\n${authA()}Upgrade: websocket\r\n\r\n${inner()}`, 2);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([200, 401]);
    expect(expectOnlyReached(sec, mark, A.name, 1)[0]!.headers.upgrade).toBeUndefined();
    expectNoSmuggledRequest(mark);
  });

  it.each([
    ['without a credential', () => ''],
    ['with the token', () => authA()],
    ['with a Proxy-Authorization bearing the token', () => `Proxy-Authorization: Bearer ${A.token}\r\n`],
  ])('HTTP/1.1 CONNECT %s: no tunnel — the connection is closed without a 2xx, nothing reaches a replica', async (_what, extra) => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), `CONNECT ${B.host}:443 HTTP/1.1\r\nHost: ${A.host}:443\r\n${extra()}\r\n${inner(B.host)}`);
    await conn.waitClosed(1000);
    conn.close();
    for (const r of conn.responses) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
    }
    expect(conn.closed).toBe(true);
    expectNothingReached(sec, mark);
  });

  it.each([
    ['without a credential', (): Record<string, string> => ({})],
    ['with the token', (): Record<string, string> => ({ authorization: `Bearer ${A.token}` })],
  ])('HTTP/2 CONNECT %s: refused with a 4xx, nothing reaches a replica', async (_what, headers) => {
    const session = await h2Connect(target());
    try {
      const mark = sec.mark();
      const r = await h2Request(session, { ':method': 'CONNECT', ':authority': `${A.host}:443`, ...headers() });
      expect(r.error).toBeNull();
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expectNothingReached(sec, mark);
    } finally {
      session.close();
    }
  });

  it('HTTP/2: the gateway does not offer extended CONNECT (RFC 8441 WebSockets over h2)', async () => {
    const session = await h2Connect(target());
    try {
      await new Promise<void>((resolve) => (session.remoteSettings ? resolve() : session.once('remoteSettings', () => resolve())));
      expect(session.remoteSettings.enableConnectProtocol ?? false).toBe(false);
    } finally {
      session.close();
    }
  });
});

// ─── Expect: 100-continue ─────────────────────────────────────────────────────────────────

describe('Expect: 100-continue', () => {
  const expecting = (extra: string) => `POST /outer HTTP/1.1\r\nHost: ${A.host}\r\n${extra}Content-Length: 5\r\nExpect: 100-continue\r\n\r\n`;

  it('without a credential: answered 401, and nothing reaches a replica even when the body follows', async () => {
    const mark = sec.mark();
    const conn = await RawConnection.open(target());
    conn.write(expecting(''));
    await conn.waitFor(1, 1000);
    conn.write('hello');
    // A request after the body: once it is answered, or the connection closed, the gateway has
    // read the body or thrown it away, and whatever it did with it has happened.
    const before = conn.responses.length;
    conn.write(`GET /v1/models HTTP/1.1\r\nHost: ${A.host}\r\n\r\n`);
    await conn.waitFor(before + 1, 5000);
    expect(conn.closed || conn.responses.length > before).toBe(true);
    conn.close();
    const final = conn.responses.filter((r) => r.status >= 200);
    expect(final[0]?.status).toBe(401);
    expect(final.slice(1).every((r) => r.status === 401 || r.status === 400)).toBe(true);
    expectUnauthenticated(rawAsAny(final[0]!));
    expectNothingReached(sec, mark);
  });

  // Regression: node's HTTP/1.1 server answered `100 Continue` itself before the request
  // reached the gateway's handler, inviting an unauthenticated client to send its body.
  it('without a credential: no 100 Continue before the 401', async () => {
    const conn = await rawExchange(target(), expecting(''), 2, 1000);
    conn.close();
    expect(conn.responses.map((r) => r.status)).toEqual([401]);
  });

  // Regression: the gateway forwarded the client's `Expect` header to undici, which refused it
  // (UND_ERR_NOT_SUPPORTED) before connecting; the client got 502, and each such request
  // counted as a connection failure of the replica — three in a row ejected a healthy one.
  it('HTTP/1.1 with the token: the body follows 100 Continue and reaches the replica once; no 5xx, no replica ejected', async () => {
    const ejections = async () => Number(/infergate_replica_ejections_total\{deployment="smug-a"\} (\d+)/.exec(await sec.env.registry.getSingleMetricAsString('infergate_replica_ejections_total'))?.[1] ?? 0);
    const before = await ejections();
    for (let i = 0; i < 3; i++) {
      const mark = sec.mark();
      const conn = await RawConnection.open(target());
      conn.write(expecting(authA()));
      await conn.waitFor(1, 1000);
      conn.write('hello');
      await conn.waitFor(2, 2000);
      conn.close();
      expect(conn.responses.map((r) => r.status)).toEqual([100, 200]);
      expect(expectOnlyReached(sec, mark, A.name, 1)[0]!.body).toBe('hello');
    }
    expect(await ejections()).toBe(before);
  });

  it('HTTP/2 with the token and expect: 100-continue: forwarded, 200', async () => {
    const session = await h2Connect(target());
    try {
      const mark = sec.mark();
      const r = await h2Request(session, { ':method': 'POST', ':path': '/outer', authorization: `Bearer ${A.token}`, expect: '100-continue', 'content-length': '5' }, 'hello');
      expect(r.status).toBe(200);
      expect(expectOnlyReached(sec, mark, A.name, 1)[0]!.body).toBe('hello');
    } finally {
      session.close();
    }
  });

  it('whatever becomes of an authorized Expect: 100-continue request, the Expect header never makes an unauthenticated one reach a replica', async () => {
    const mark = sec.mark();
    const conn = await rawExchange(target(), expecting('') + 'hello' + expecting(`Authorization: Bearer ${B.token}\r\n`) + 'hello', 4, 1000);
    conn.close();
    // The first refusal leaves its body unread, so the gateway closes the connection after it
    // (Connection: close); anything it did answer after that is a 401 too.
    const finals = conn.responses.filter((r) => r.status >= 200).map((r) => r.status);
    expect(finals[0]).toBe(401);
    expect(finals.every((s) => s === 401)).toBe(true);
    expectNothingReached(sec, mark);
  });
});
