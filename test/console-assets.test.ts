// The web console's files at `/` of a real control API (port 0) over a temp build directory:
// index.html revalidated, hashed assets cached for a year, gzip copies when accepted, the
// security headers, no credential needed, HEAD, the "not built" answer, and the API's own
// routes and JSON 404 untouched.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startControl, type TestControl } from './helpers/control.js';

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body></body></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(2000))});\n`;

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function raw(base: string, p: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(base + p, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const json = (r: Raw) => JSON.parse(r.body.toString()) as { error: { code: string; message: string } };

function expectConsoleHeaders(r: Raw): void {
  expect(r.headers['content-security-policy']).toBe(CSP);
  expect(r.headers['x-content-type-options']).toBe('nosniff');
  expect(r.headers['referrer-policy']).toBe('no-referrer');
  expect(r.headers['x-frame-options']).toBe('DENY');
}

let root: string;
let built: TestControl;
let unbuilt: TestControl;
let none: TestControl;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-console-'));
  const dir = path.join(root, 'console');
  await mkdir(path.join(dir, 'assets'), { recursive: true });
  await writeFile(path.join(dir, 'index.html'), INDEX);
  await writeFile(path.join(dir, 'assets', 'index-abc123.js'), SCRIPT);
  await writeFile(path.join(dir, 'assets', 'index-abc123.js.gz'), gzipSync(SCRIPT));
  await writeFile(path.join(dir, 'assets', 'style-def456.css'), 'body{margin:0}\n');
  await mkdir(path.join(root, 'empty'));
  [built, unbuilt, none] = await Promise.all([
    startControl({ consoleDir: dir }),
    startControl({ consoleDir: path.join(root, 'empty') }),
    startControl({ consoleDir: null }),
  ]);
});

afterAll(async () => {
  await Promise.all([built?.close(), unbuilt?.close(), none?.close()]);
  if (root) await rm(root, { recursive: true, force: true });
});

describe('console files', () => {
  it('serves index.html at / without a credential, revalidated on every load, with the security headers', async () => {
    const r = await raw(built.url, '/');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/html/);
    expect(r.body.toString()).toBe(INDEX);
    expect(r.headers['cache-control']).toBe('no-cache');
    expectConsoleHeaders(r);

    const head = await raw(built.url, '/', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['cache-control']).toBe('no-cache');
    expectConsoleHeaders(head);

    // A revalidation is cheap: the ETag answers 304.
    const again = await raw(built.url, '/', { 'if-none-match': String(r.headers.etag) });
    expect(again.status).toBe(304);
  });

  it('serves hashed assets cached for a year, and the gzip copy when the client accepts gzip', async () => {
    const plain = await raw(built.url, '/assets/index-abc123.js');
    expect(plain.status).toBe(200);
    expect(plain.headers['content-type']).toMatch(/javascript/);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body.toString()).toBe(SCRIPT);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers.vary).toMatch(/accept-encoding/i);
    expectConsoleHeaders(plain);

    const gz = await raw(built.url, '/assets/index-abc123.js', { 'accept-encoding': 'gzip, deflate' });
    expect(gz.status).toBe(200);
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers['content-type']).toMatch(/javascript/);
    expect(gz.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(gz.headers.vary).toMatch(/accept-encoding/i);
    expect(gz.body.length).toBeLessThan(SCRIPT.length);
    expect(gunzipSync(gz.body).toString()).toBe(SCRIPT);

    // No .gz beside it: the file itself, whatever the client accepts.
    const css = await raw(built.url, '/assets/style-def456.css', { 'accept-encoding': 'gzip' });
    expect(css.status).toBe(200);
    expect(css.headers['content-encoding']).toBeUndefined();
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.body.toString()).toBe('body{margin:0}\n');

    const head = await raw(built.url, '/assets/index-abc123.js', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  });

  it('answers a missing asset and every other path with the API JSON 404 (no fallback to index.html)', async () => {
    // With a key: without one, a path that is no console file is the API's 401, as before.
    const auth = { authorization: `Bearer ${ADMIN_KEY}` };
    for (const p of ['/assets/nope-000.js', '/index.html', '/deployments', '/some/page', '/assets/..%2Findex.html']) {
      const r = await raw(built.url, p, auth);
      expect(r.status, p).toBeGreaterThanOrEqual(400);
      expect(r.status, p).toBeLessThan(500);
      expect(r.body.toString(), p).not.toContain('<!doctype html>');
      expect(json(r).error.code, p).toMatch(/not_found|forbidden|invalid_request/);
    }
    expect((await raw(built.url, '/some/page', auth)).status).toBe(404);
    expect((await raw(built.url, '/some/page')).status).toBe(401);
    // A missing asset needs no key to be told so.
    expect((await raw(built.url, '/assets/nope-000.js')).status).toBe(404);
  });

  it('keeps the API behind the credential, and marks its answers nosniff', async () => {
    const denied = await raw(built.url, '/deployments/general');
    expect(denied.status).toBe(401);
    expect(denied.headers['x-content-type-options']).toBe('nosniff');
    expect(denied.headers['content-security-policy']).toBeUndefined();
    const ok = await built.call('GET', '/clusters');
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-content-type-options')).toBe('nosniff');
    const doc = await built.call('GET', '/openapi.json', undefined, null);
    expect(Object.keys(doc.body.paths)).not.toContain('/');
    expect(Object.keys(doc.body.paths).some((p: string) => p.startsWith('/assets'))).toBe(false);
  });

  it('says how to build the console when it is not built', async () => {
    const r = await raw(unbuilt.url, '/');
    expect(r.status).toBe(404);
    expect(json(r).error.code).toBe('not_found');
    expect(json(r).error.message).toContain('console is not built');
    expect(json(r).error.message).toContain('npm run build');
    expectConsoleHeaders(r);
    expect((await raw(unbuilt.url, '/assets/index-abc123.js')).status).toBe(404);
  });

  it('has no console at all when told so', async () => {
    expect((await raw(none.url, '/')).status).toBe(401);
    const r = await raw(none.url, '/', { authorization: `Bearer ${ADMIN_KEY}` });
    expect(r.status).toBe(404);
    expect(json(r).error.message).toBe('no route GET /');
    expect(r.headers['content-security-policy']).toBeUndefined();
  });
});
