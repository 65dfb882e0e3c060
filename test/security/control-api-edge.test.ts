// The control API's edge, attacked the way a careful user would: `100 Continue` only after
// authentication (raw sockets), requests Node or fastify refuse before any route (too-large
// headers, bad bytes, bad percent-encoding) answered in the error shape and closed, integers
// in paths and queries that only look like numbers (`1e400`, `0x10`, twenty digits) refused
// as 400 naming the parameter, and request logs that keep query values out.

import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, generalBody, startControl, type TestControl } from '../helpers/control.js';
import { finalResponse, rawConnect } from '../helpers/raw-http.js';

const TOKEN = 'edge-endpoint-token-0123';

let api: TestControl;
let deploymentId: number;
const logLines: string[] = [];

beforeAll(async () => {
  // Every line the app logs, as written: the query-redaction test reads them.
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  api = await startControl({ logger: pino({ level: 'info' }, sink) });
  const created = await api.call('POST', '/deployments/general', generalBody('edge', TOKEN));
  expect(created.status).toBe(201);
  deploymentId = created.body.id;
});
afterAll(async () => api?.close());

function expectErrorShape(body: unknown, code: string): void {
  expect(body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
}

const postHead = (auth: string | null, length: number) =>
  [
    `POST /deployments/general/${deploymentId}/clone HTTP/1.1`,
    'Host: localhost',
    'Content-Type: application/json',
    `Content-Length: ${length}`,
    'Expect: 100-continue',
    ...(auth ? [`Authorization: Bearer ${auth}`] : []),
    '',
    '',
  ].join('\r\n');

describe('Expect: 100-continue', () => {
  it('answers an unauthenticated request 401 without a 100 first, and closes the connection', async () => {
    const conn = await rawConnect(api.url);
    conn.write(postHead(null, 2));
    const raw = await conn.closed();
    expect(raw).not.toContain('100 Continue');
    expect(raw.startsWith('HTTP/1.1 401 ')).toBe(true);
    expectErrorShape(finalResponse(raw).body, 'unauthenticated');
  });

  it('answers a wrong key the same way', async () => {
    const conn = await rawConnect(api.url);
    conn.write(postHead('igk_not-a-key-at-all', 2));
    const raw = await conn.closed();
    expect(raw).not.toContain('100 Continue');
    expect(finalResponse(raw).status).toBe(401);
  });

  it('answers an unknown expectation as if it were absent, in the error shape (not an empty 417)', async () => {
    const conn = await rawConnect(api.url);
    conn.write('GET /deployments/general HTTP/1.1\r\nHost: localhost\r\nExpect: something-else\r\n\r\n');
    const raw = await conn.waitFor(/\r\n\r\n\{[^]*\}$/);
    conn.destroy();
    expect(finalResponse(raw).status).toBe(401);
    expectErrorShape(finalResponse(raw).body, 'unauthenticated');
  });

  it('sends 100 Continue to an authenticated request, which then proceeds', async () => {
    const body = JSON.stringify({ name: 'edge-clone' });
    const conn = await rawConnect(api.url);
    conn.write(postHead(ADMIN_KEY, Buffer.byteLength(body)));
    expect(await conn.waitFor(/^HTTP\/1\.1 100 Continue\r\n\r\n/)).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    conn.write(body);
    const raw = await conn.waitFor(/HTTP\/1\.1 201 [^]*\r\n\r\n\{[^]*\}$/);
    conn.destroy();
    expect(finalResponse(raw).body).toMatchObject({ name: 'edge-clone', revision: 1 });
  });
});

describe('requests refused before any route', () => {
  it('answers headers over the limit 431 in the error shape and closes', async () => {
    const conn = await rawConnect(api.url);
    conn.write(`GET /deployments/general HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${ADMIN_KEY}\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
    const raw = await conn.closed();
    const res = finalResponse(raw);
    expect(res.status).toBe(431);
    expectErrorShape(res.body, 'headers_too_large');
    expect(res.head).toMatch(/content-type: application\/json/i);
  });

  it('answers bytes that are not HTTP 400 in the error shape and closes', async () => {
    for (const garbage of ['GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 'NOT-A-METHOD\x00 / HTTP/1.1\r\n\r\n', 'GET / HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n']) {
      const conn = await rawConnect(api.url);
      conn.write(garbage);
      const res = finalResponse(await conn.closed());
      expect(res.status, JSON.stringify(garbage)).toBe(400);
      expectErrorShape(res.body, 'invalid_request');
    }
  });

  it('answers a path that is not valid percent-encoding 400 in the error shape', async () => {
    const res = await api.call('GET', '/deployments/general/%zz');
    expect(res.status).toBe(400);
    expectErrorShape(res.body, 'invalid_request');
  });
});

describe('integers in paths and queries', () => {
  const cases: Array<[string, string]> = [
    [`/deployments/general/${0}/logs?revision=1e400`, 'revision'],
    ['/deployments/general/1e400', 'id'],
    ['/deployments/general/0x1', 'id'],
    ['/deployments/general/99999999999999999999', 'id'],
    ['/deployments/orchestrated/2147483648', 'id'],
    ['/deployments/general/%201', 'id'],
    ['/vault/tokens/1.5', 'id'],
    ['/certificates/-1', 'id'],
    ['/clusters/Infinity', 'id'],
    ['/service-accounts/1e3', 'id'],
  ];

  it.each(cases)('%s → 400 invalid_request naming %s', async (rawPath, field) => {
    const path = rawPath.replace('/general/0/', `/general/${deploymentId}/`);
    const res = await api.call('GET', path);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field });
  });

  it('refuses query integers in another spelling or too large, naming them', async () => {
    const base = `/deployments/general/${deploymentId}`;
    for (const [query, field] of [
      ['logs?tail=1e9', 'tail'],
      ['logs?tail=10001', 'tail'],
      ['logs?revision=99999999999999999999', 'revision'],
      ['logs?revision=1&revision=2', 'revision'],
      ['revisions/99999999999999999999', 'n'],
      ['revisions/1e0', 'n'],
    ] as const) {
      const res = await api.call('GET', `${base}/${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error, query).toMatchObject({ code: 'invalid_request', field });
    }
  });

  it('refuses an out-of-range revision in a rollback body', async () => {
    const res = await api.call('POST', `/deployments/general/${deploymentId}/rollback`, '{"revision": 1e400}');
    expect(res.status).toBe(400);
    expect(res.body.error.field).toBe('revision');
  });

  it('still answers a well-formed id that does not exist 404', async () => {
    expect((await api.call('GET', '/deployments/general/2147483647')).status).toBe(404);
    expect((await api.call('GET', `/deployments/general/${deploymentId}/logs?revision=7`)).status).toBe(404);
  });
});

describe('request logs', () => {
  it('keep the path and the query parameter names, never their values', async () => {
    const secret = 'query-value-that-must-not-be-logged';
    const res = await api.call('GET', `/deployments/general/${deploymentId}/logs?tail=5&component=${secret}&follow=false`);
    expect(res.status).toBe(200);
    const lines = logLines.filter((l) => l.includes(`/deployments/general/${deploymentId}/logs`));
    expect(lines.length).toBeGreaterThan(0);
    const urls = lines.map((l) => (JSON.parse(l) as { req?: { url?: string } }).req?.url).filter(Boolean);
    expect(urls).toContain(`/deployments/general/${deploymentId}/logs?tail=[redacted]&component=[redacted]&follow=[redacted]`);
    expect(logLines.join('\n')).not.toContain(secret);
  });
});
