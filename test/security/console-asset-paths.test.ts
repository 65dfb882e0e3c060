// The web console's `/assets/` on a real control API (port 0), probed with the paths a
// scanner sends — traversal plain and percent-encoded, `//`, NUL bytes, `.`, a backslash, the
// directory itself — and with preconditions and ranges a real file cannot meet, each as GET
// and HEAD with the path sent byte for byte (node:http does not normalise it). Each must be a
// 4xx in the API's error body with the console's headers, leak no file, and log at most one
// warning: never an error line, never a stack trace. Real files are served as before.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControl, type TestControl } from '../helpers/control.js';

/** Beside assets/, so only a traversal could reach it. */
const CANARY = 'canary-4f1e9b-must-never-be-served';
const SCRIPT = 'console.log("asset");\n';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface LogLine {
  level: number;
  msg?: string;
  [key: string]: unknown;
}

let root: string;
let api: TestControl;
const logLines: string[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-asset-paths-'));
  const dir = path.join(root, 'console');
  await mkdir(path.join(dir, 'assets'), { recursive: true });
  await writeFile(path.join(dir, 'index.html'), '<!doctype html><html></html>');
  await writeFile(path.join(dir, 'secret.txt'), CANARY);
  await writeFile(path.join(root, 'secret.txt'), CANARY);
  await writeFile(path.join(dir, 'assets', 'index-abc123.js'), SCRIPT);
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  api = await startControl({ consoleDir: dir, logger: pino({ level: 'debug' }, sink) });
});

afterAll(async () => {
  await api?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** The request line's path exactly as given: no URL parsing, no dot-segment removal. */
function send(method: string, rawPath: string, headers: Record<string, string> = {}): Promise<Answer> {
  const { hostname, port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port: Number(port), method, path: rawPath, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Log lines written since `from`, parsed. */
function logSince(from: number): LogLine[] {
  return logLines.slice(from).map((l) => JSON.parse(l) as LogLine);
}

function expectQuietLog(lines: LogLine[], what: string): void {
  for (const line of lines) {
    expect(line.level, `${what}: ${JSON.stringify(line)}`).toBeLessThan(50);
    expect(JSON.stringify(line), what).not.toMatch(/stack|"err"/);
  }
  const warnings = lines.filter((l) => l.level === 40);
  expect(warnings.length, `${what}: ${JSON.stringify(warnings)}`).toBeLessThanOrEqual(1);
}

const PROBES = [
  // The reported ones.
  '/assets/../../package.json',
  '/assets//etc/passwd',
  '/assets/x%00.js',
  '/assets/',
  // Percent-encoded and other spellings of the same.
  '/assets/%2e%2e/%2e%2e/package.json',
  '/assets/..%2f..%2fpackage.json',
  '/assets/%2e%2e%2f%2e%2e%2fpackage.json',
  '/assets/%00',
  '/assets/index-abc123.js%00',
  '/assets/../secret.txt',
  '/assets/%2e%2e/secret.txt',
  '/assets/..%2fsecret.txt',
  '/assets/..%5csecret.txt',
  '/assets/..\\secret.txt',
  '/assets/..',
  '/assets/.',
  '/assets/%2e',
  '/assets/./index-abc123.js',
  '/assets//index-abc123.js',
  '/assets/index-abc123.js/',
  '/assets/nope-000.js',
  '/assets/.hidden',
];

describe('console asset paths a client should not send', () => {
  for (const method of ['GET', 'HEAD']) {
    for (const probe of PROBES) {
      it(`${method} ${probe} is a 4xx in the error shape, leaks nothing and logs no error`, async () => {
        const from = logLines.length;
        const r = await send(method, probe);
        expect([400, 404], `${method} ${probe} → ${r.status} ${r.body}`).toContain(r.status);
        expect(r.headers['x-content-type-options'], probe).toBe('nosniff');
        expect(r.body).not.toContain(CANARY);
        expect(r.body).not.toContain('"name": "infergate"');
        expect(r.body).not.toContain('root:');
        if (method === 'GET') {
          expect(r.headers['content-type']).toMatch(/^application\/json/);
          const body = JSON.parse(r.body) as { error: { code: string; message: string } };
          expect(body.error.code).toBe(r.status === 404 ? 'not_found' : 'invalid_request');
          expect(body.error.message).toEqual(expect.any(String));
        } else {
          expect(r.body).toBe('');
        }
        // The log lines of this request are written before its answer ends.
        expectQuietLog(logSince(from), `${method} ${probe}`);
      });
    }
  }

  it('answers a precondition or a range a real file cannot meet with its 4xx, not a 500', async () => {
    for (const method of ['GET', 'HEAD']) {
      const from = logLines.length;
      const precondition = await send(method, '/assets/index-abc123.js', { 'if-match': '"not-this-one"' });
      expect(precondition.status).toBe(412);
      const range = await send(method, '/assets/index-abc123.js', { range: 'bytes=99999-' });
      expect(range.status).toBe(416);
      expect(range.headers['content-range']).toBe(`bytes */${Buffer.byteLength(SCRIPT)}`);
      if (method === 'GET') expect(JSON.parse(range.body)).toEqual({ error: { code: 'invalid_request', message: expect.any(String) } });
      const lines = logSince(from);
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
      expect(lines.filter((l) => l.level === 40).length).toBeLessThanOrEqual(4);
    }
  });

  it('still serves the real file, cached for a year, without a warning', async () => {
    const from = logLines.length;
    const r = await send('GET', '/assets/index-abc123.js');
    expect(r.status).toBe(200);
    expect(r.body).toBe(SCRIPT);
    expect(r.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(r.headers['content-security-policy']).toBeDefined();
    expect(logSince(from).filter((l) => l.level >= 40)).toEqual([]);
  });
});
