// `infergate` as a new user installs it: the package's bin is the compiled dist/cli/main.js, with
// a shebang, shipped by `npm pack`; `npm install -g` from the checkout (into a temp prefix,
// offline, never the machine's global one) puts a working `infergate` on PATH. And a client
// command stays light: `infergate ls` loads none of the service's modules (fastify, the store,
// node-forge, dockerode, gRPC…) nor yaml or ws, which only some commands need — its module
// graph is recorded by a resolve hook in a real process running the compiled entry.

import { execFile, spawn } from 'node:child_process';
import { lstat, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIST_MAIN, ensureDistBuilt, ROOT } from './helpers/dist-build.js';
import { freePort } from './helpers/ports.js';

const run = promisify(execFile);
const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string>; files: string[]; scripts: Record<string, string> };

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'infergate-install-'));
  await ensureDistBuilt();
}, 300_000);
afterAll(async () => {
  // The prefix holds a symlink to the checkout: rm removes the link, never what it points to.
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** npm with its cache and logs in the temp dir, never the user's. */
const npm = (args: string[]) => run('npm', [...args, '--cache', path.join(tmp, 'npm-cache'), '--no-audit', '--no-fund', '--no-update-notifier'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });

describe('installing infergate', () => {
  it('the bin is dist/cli/main.js: a node shebang, built by prepare, shipped by npm pack', async () => {
    expect(pkg.bin).toEqual({ infergate: 'dist/cli/main.js' });
    expect(pkg.scripts.prepare).toBe('npm run build');
    expect(pkg.scripts.build).toMatch(/^npm run build:service && /);
    expect(pkg.scripts['build:service']).toBe('node scripts/build-service.mjs');
    // typebox is bundled into the one module that imports it (scripts/build-service.mjs): no import of the package is left in dist/.
    expect(await readFile(path.join(ROOT, 'dist/core/typebox.js'), 'utf8')).not.toMatch(/from ["']typebox["']/);
    expect((await readFile(DIST_MAIN, 'utf8')).split('\n')[0]).toBe('#!/usr/bin/env node');
    const { stdout } = await npm(['pack', '--dry-run', '--json', '--ignore-scripts']);
    const files = (JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['package.json', 'dist/cli/main.js', 'dist/client/run.js', 'dist/cli/serve.js', 'dist/engine/server.js']));
    expect(files.some((f) => f.startsWith('proto/'))).toBe(true);
    expect(files.some((f) => f.startsWith('src/') || f.startsWith('test/'))).toBe(false);
  }, 120_000);

  it('npm install -g from the checkout puts a working infergate on PATH (a temp prefix, offline)', async () => {
    const prefix = path.join(tmp, 'prefix');
    // A folder installs as a link to it, with its own node_modules: nothing is fetched, and
    // --ignore-scripts skips prepare, whose build ensureDistBuilt has done (tsc; no console needed here).
    await npm(['install', '--global', '--prefix', prefix, '--offline', '--ignore-scripts', ROOT]);
    const bin = path.join(prefix, 'bin', 'infergate');
    expect((await lstat(bin)).isSymbolicLink()).toBe(true);
    expect(path.resolve(path.dirname(bin), await readlink(bin))).toBe(path.join(prefix, 'lib/node_modules/infergate/dist/cli/main.js'));
    // npm makes the bin executable: it runs as a program, not only through `node`.
    expect((await stat(bin)).mode & 0o111).toBe(0o111);

    const env = { ...process.env, PATH: `${path.join(prefix, 'bin')}${path.delimiter}${process.env.PATH ?? ''}` };
    expect((await run(bin, ['--version'], { env })).stdout).toBe(`${pkg.version}\n`);
    // From PATH, by name, as a user types it.
    expect((await run('infergate', ['--version'], { env })).stdout).toBe(`${pkg.version}\n`);
    expect((await run('infergate', ['--help'], { env })).stdout).toMatch(/^usage: infergate <command> \[options\]/);
    expect((await run('infergate', ['ls', '--help'], { env })).stdout).toMatch(/^Usage: infergate ls\|list \[options\]/);
  }, 120_000);
});

describe('start-up: what each command loads', () => {
  /** Every module URL `infergate ARGS` (the compiled entry) resolves, recorded by a resolve hook. */
  async function moduleGraph(args: string[]): Promise<{ urls: string[]; code: number | null; stderr: string }> {
    const dir = await mkdtemp(path.join(tmp, 'trace-'));
    const record = path.join(dir, 'modules.txt');
    await writeFile(record, '');
    await writeFile(
      path.join(dir, 'hooks.mjs'),
      "import { appendFileSync } from 'node:fs';\n" +
        'export async function resolve(specifier, context, next) {\n' +
        '  const result = await next(specifier, context);\n' +
        "  appendFileSync(process.env.INFERGATE_TRACE_FILE, result.url + '\\n');\n" +
        '  return result;\n' +
        '}\n',
    );
    await writeFile(path.join(dir, 'register.mjs'), "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n");
    const child = spawn(process.execPath, ['--import', pathToFileURL(path.join(dir, 'register.mjs')).href, DIST_MAIN, ...args], {
      cwd: dir,
      env: { ...process.env, INFERGATE_TRACE_FILE: record, INFERGATE_CONFIG: path.join(dir, 'config.json'), INFERGATE_API: '', INFERGATE_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    return { urls: (await readFile(record, 'utf8')).split('\n').filter(Boolean), code, stderr };
  }

  const SERVICE_FOLDERS = /\/dist\/(control|gateway|controller|runtime|store|pki|config|engine|orchestrated|metrics|autoscaler|net|balancer|protocol)\//;
  const HEAVY_PACKAGES = /\/node_modules\/(fastify|@fastify\/[^/]+|dockerode|@grpc\/[^/]+|ioredis|node-forge|pino|prom-client|node-pty|undici|tar-stream|yaml|ws|shell-quote)\//;

  it('infergate ls loads the client, commander and the table printer, and none of the service', async () => {
    // An API that refuses connections: ls gets as far as its request and exits 3.
    const { urls, code, stderr } = await moduleGraph(['ls', '--api', `http://127.0.0.1:${await freePort()}`, '--key', 'key-0123456789']);
    expect(code, stderr).toBe(3);
    expect(urls.some((u) => u.endsWith('/dist/client/run.js'))).toBe(true);
    expect(urls.some((u) => u.includes('/node_modules/commander/'))).toBe(true);
    expect(urls.some((u) => u.includes('/node_modules/cli-table3/'))).toBe(true);
    expect(urls.filter((u) => SERVICE_FOLDERS.test(u) || HEAVY_PACKAGES.test(u))).toEqual([]);
  }, 60_000);

  it('the programs are loaded when their command runs: serve --help loads the service configuration', async () => {
    // The hook sees what a command loads: the same check would have caught serve's modules.
    const { urls, code } = await moduleGraph(['serve', '--help']);
    expect(code).toBe(0);
    expect(urls.some((u) => u.endsWith('/dist/config/config.js'))).toBe(true);
    expect(urls.some((u) => u.endsWith('/dist/client/run.js'))).toBe(false);
  }, 60_000);

  it('an HTTP engine loads neither gRPC nor protobuf; a v2 engine does', async () => {
    // A port already taken: each engine loads what it serves with, fails to listen and exits 1.
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = String((taken.address() as net.AddressInfo).port);
    try {
      const grpc = (urls: string[]) => urls.filter((u) => /\/node_modules\/(@grpc\/|protobufjs\/)/.test(u));
      const http = await moduleGraph(['engine', '--host', '127.0.0.1', '--port', port, '--startup-ms', '0']);
      expect(http.code, http.stderr).toBe(1);
      expect(http.urls.some((u) => u.endsWith('/dist/engine/server.js'))).toBe(true);
      expect(grpc(http.urls)).toEqual([]);
      const v2 = await moduleGraph(['engine', '--flavor', 'v2', '--host', '127.0.0.1', '--port', port, '--startup-ms', '0']);
      expect(v2.code, v2.stderr).toBe(1);
      expect(grpc(v2.urls)).not.toEqual([]);
    } finally {
      taken.close();
    }
  }, 60_000);
});

describe('a reader that stops early', () => {
  /** `infergate ARGS` with its stdout pipe already closed by the reader, as `| head -1` leaves it. */
  async function withClosedStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [DIST_MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, INFERGATE_CONFIG: path.join(tmp, 'none.json') } });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    return { code, stderr };
  }

  it('ends a command that prints quietly with 0, not with an EPIPE stack', async () => {
    for (const args of [['--help'], ['delete', '--help'], ['version']]) {
      expect(await withClosedStdout(args), args.join(' ')).toEqual({ code: 0, stderr: '' });
    }
  }, 60_000);
});
