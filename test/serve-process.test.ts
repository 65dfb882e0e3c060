// `infergate serve` as a real child process: start-up lines, persistence across SIGKILL,
// the data-dir lock, clean shutdown (a SIGTERM during the start included), and one-line
// failures with exit code 1.

import { runToEnd } from './helpers/child-process.js';
import { waitFor } from './helpers/wait.js';
import { killLeftoverReplicas } from './helpers/platform.js';
import { apiCall } from './helpers/admin-api.js';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueServerCertificate, loadOrCreateCa } from '../src/pki/ca.js';
import { disaggregatedBody, generalBody } from './helpers/control.js';
import { freePort } from './helpers/ports.js';
import { spawnCli, startServe, type ServeProcess } from './helpers/serve-process.js';
import { removeTempDir } from './helpers/temp-dirs.js';
import { readMountTable } from '../src/runtime/host-dirs.js';

const running: ServeProcess[] = [];
let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-serve-'));
});
afterAll(async () => {
  for (const p of running) p.kill('SIGKILL');
  await Promise.all(running.map((p) => p.exited));
  // The persistence case kills a service whose deployments run: its pods stay unless removed.
  for (const name of await readdir(root)) killLeftoverReplicas(path.join(root, name, 'data'));
  await removeTempDir(root);
});

async function start(name: string, extra: Partial<Parameters<typeof startServe>[0]> = {}): Promise<ServeProcess> {
  const p = await startServe({ dataDir: path.join(root, name, 'data'), certsDir: path.join(root, name, 'certs'), ...extra });
  running.push(p);
  return p;
}

const call = (p: ServeProcess, key: string, method: string, route: string, body?: unknown) => apiCall(p.apiUrl, key, method, route, body);

/** Runs the CLI to completion and returns its exit code and output. */
async function runToExit(args: string[], env: Record<string, string>) {
  const { code, stdout, stderr } = await runToEnd(spawnCli(args, env));
  return { code, out: stdout + stderr };
}

describe('infergate serve', () => {
  it('keeps every deployment, token and service account across SIGKILL, and locks its data dir', async () => {
    const first = await start('persist');
    const out = first.output();
    expect(out).toMatch(/control API listening on http:\/\/127\.0\.0\.1:\d+/);
    // npm ci built the console (the browser suites rebuild it when stale): the start-up says where it is.
    expect(out).toMatch(/web console at http:\/\/127\.0\.0\.1:\d+\/ /);
    expect(out).toMatch(/endpoint domain endpoints\.localhost/);
    const keyFile = path.join(root, 'persist', 'data', 'admin.key');
    expect(out).toContain(keyFile);
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    const key = (await readFile(keyFile, 'utf8')).trim();

    const token = await call(first, key, 'POST', '/vault/tokens', { name: 'persisted' });
    expect(token.status).toBe(201);
    const account = await call(first, key, 'POST', '/service-accounts', { name: 'robot' });
    expect(account.status).toBe(201);
    const general = await call(first, key, 'POST', '/deployments/general', generalBody('gen-one', token.body.token));
    expect(general.status).toBe(201);
    const orch = await call(first, key, 'POST', '/deployments/orchestrated', disaggregatedBody('orch-one', token.body.token));
    expect(orch.status).toBe(201);
    const edit = await call(first, key, 'PATCH', `/deployments/general/${general.body.id}`, { tag: 'nim' });
    expect(edit.body.revision).toBe(2);

    // A second process on the same data dir is refused while the first runs.
    const second = await start('persist', { expectStart: false });
    const refused = await second.exited;
    expect(refused.code).toBe(1);
    expect(second.output()).toMatch(/infergate: error: data dir .* is in use by process \d+/);
    expect(second.output().trim().split('\n')).toHaveLength(1);

    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');

    const again = await start('persist');
    expect(again.output()).not.toContain('shown once');
    const list = await call(again, key, 'GET', '/deployments/general');
    expect(list.body.items.map((d: { name: string; revision: number }) => [d.name, d.revision])).toEqual([['gen-one', 2]]);
    const orchAgain = await call(again, key, 'GET', `/deployments/orchestrated/${orch.body.id}`);
    expect(orchAgain.body.worker_pools).toEqual(disaggregatedBody('x', 'y').worker_pools);
    const tokens = await call(again, key, 'GET', '/vault/tokens');
    expect(tokens.body.items.map((t: { name: string }) => t.name)).toContain('persisted');
    expect((await call(again, account.body.key, 'GET', '/clusters')).status).toBe(200);

    again.kill('SIGTERM');
    const stopped = await again.exited;
    expect(stopped.code).toBe(0);
    await expect(stat(path.join(root, 'persist', 'data', 'LOCK'))).rejects.toThrow();
  });

  it('takes the admin key from INFERGATE_ADMIN_KEY and stops cleanly on SIGINT', async () => {
    const adminKey = 'igk_fixed-admin-key-for-tests-000';
    const p = await start('fixed-key', { env: { INFERGATE_ADMIN_KEY: adminKey } });
    expect(p.output()).toMatch(/admin key: the value of INFERGATE_ADMIN_KEY/);
    expect((await call(p, adminKey, 'GET', '/clusters')).status).toBe(200);
    p.kill('SIGINT');
    expect((await p.exited).code).toBe(0);
  });

  it('a SIGTERM while it starts stops it cleanly once it is up: exit 0, its replica directories unmounted', async () => {
    const dataDir = path.join(root, 'term-at-start', 'data');
    const p = await start('term-at-start', { expectStart: false });
    // The lock is taken inside the start, well before its last line.
    await waitFor(() => existsSync(path.join(dataDir, 'LOCK')), 20_000, 'the data directory locked');
    p.kill('SIGTERM');
    const { code, signal } = await p.exited;
    expect({ code, signal }, p.output()).toEqual({ code: 0, signal: null });
    expect(p.output()).toContain('infergate: SIGTERM received, shutting down');
    expect(readMountTable().filter((m) => m.mountPoint.startsWith(`${dataDir}/`))).toEqual([]);
  });

  it('refuses to start on a corrupt state file and leaves it untouched', async () => {
    const dataDir = path.join(root, 'corrupt', 'data');
    const warm = await start('corrupt');
    warm.kill('SIGTERM');
    await warm.exited;
    // The journal's first line garbled: no torn last write, but a file that cannot be trusted.
    const stateFile = path.join(dataDir, 'state-00000001.journal');
    await writeFile(stateFile, (await readFile(stateFile, 'utf8')).replace('{"format":2,"journal":1}', '{"format": 2, "jou'));
    const before = await readFile(stateFile);
    const p = await start('corrupt', { expectStart: false });
    expect((await p.exited).code).toBe(1);
    expect(p.output()).toMatch(/infergate: error: state file .*state-00000001\.journal does not begin with a valid header line; the state-\* files were left untouched/);
    expect(await readFile(stateFile)).toEqual(before);
  });

  it('exits 1 with one line on bad config', async () => {
    const r = await runToExit(['serve', '--api-port', 'eighty'], {});
    expect(r.code).toBe(1);
    expect(r.out.trim()).toBe('infergate: error: --api-port must be a whole number, not "eighty"');
    const unknown = await runToExit(['serve', '--no-such-flag'], {});
    expect(unknown.code).toBe(1);
    expect(unknown.out).toMatch(/infergate: error: .*no-such-flag/);
  });

  it('exits 1 with one line naming the flag when a port is occupied', async () => {
    const blocker = net.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const p = await start('occupied', { expectStart: false, env: { INFERGATE_API_PORT: String(port) } });
      expect((await p.exited).code).toBe(1);
      const lines = p.output().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`port ${port} .* already in use.*--api-port`));
    } finally {
      blocker.close();
    }
  });

  it('names every busy port at once and writes nothing, so the next start creates the admin and shows its key', async () => {
    const blockers = [net.createServer(), net.createServer()];
    const apiPort = await freePort();
    const metricsPort = await freePort();
    await new Promise<void>((resolve) => blockers[0]!.listen(apiPort, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => blockers[1]!.listen(metricsPort, '127.0.0.1', resolve));
    const env = { INFERGATE_API_PORT: String(apiPort), INFERGATE_METRICS_PORT: String(metricsPort) };
    const dataDir = path.join(root, 'first-start', 'data');
    try {
      const p = await start('first-start', { expectStart: false, env });
      expect((await p.exited).code).toBe(1);
      const out = p.output();
      expect(out).toMatch(new RegExp(`port ${apiPort} .* already in use.*--api-port`));
      expect(out).toMatch(new RegExp(`port ${metricsPort} .* already in use.*--metrics-port`));
      // Nothing was written: no state with an admin account whose key nobody saw.
      expect((await readdir(dataDir).catch(() => [] as string[])).filter((n) => n.startsWith('state'))).toEqual([]);
      await expect(stat(path.join(dataDir, 'admin.key'))).rejects.toThrow();
    } finally {
      await Promise.all(blockers.map((b) => new Promise<void>((resolve) => b.close(() => resolve()))));
    }
    const p = await start('first-start', { env });
    const shown = /shown once: (\S+)/.exec(p.output())?.[1];
    expect(shown, p.output()).toBeDefined();
    expect((await readFile(path.join(dataDir, 'admin.key'), 'utf8')).trim()).toBe(shown);
    expect((await call(p, shown!, 'GET', '/whoami')).status).toBe(200);
    p.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  }, 120_000);

  it('says how to recover when admin.key is gone, and `infergate admin reset-key` makes a key that signs in', async () => {
    const dataDir = path.join(root, 'lost-key', 'data');
    const first = await start('lost-key');
    const oldKey = (await readFile(path.join(dataDir, 'admin.key'), 'utf8')).trim();
    first.kill('SIGTERM');
    await first.exited;
    await rm(path.join(dataDir, 'admin.key'));

    const second = await start('lost-key');
    expect(second.output()).toMatch(/an admin account exists but .*admin\.key does not.*infergate admin reset-key --data-dir /);
    expect(second.output()).not.toContain('shown once');
    second.kill('SIGTERM');
    await second.exited;

    const reset = await runToExit(['admin', 'reset-key', '--data-dir', dataDir], {});
    expect(reset.code, reset.out).toBe(0);
    const newKey = /shown once: (\S+)/.exec(reset.out)?.[1];
    expect(newKey).toBeDefined();
    expect((await stat(path.join(dataDir, 'admin.key'))).mode & 0o777).toBe(0o600);
    expect((await readFile(path.join(dataDir, 'admin.key'), 'utf8')).trim()).toBe(newKey);

    const third = await start('lost-key');
    expect(third.output()).toMatch(/admin key: in .*admin\.key$/m);
    expect((await call(third, newKey!, 'GET', '/whoami')).status).toBe(200);
    expect((await call(third, oldKey, 'GET', '/whoami')).status).toBe(401);
    third.kill('SIGTERM');
    await third.exited;
  }, 120_000);

  it('creates the admin account from an admin.key left by a start that stopped before creating it', async () => {
    const dataDir = path.join(root, 'half-start', 'data');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(dataDir, { recursive: true });
    const key = 'igk_left-by-an-interrupted-first-start';
    await writeFile(path.join(dataDir, 'admin.key'), key + '\n', { mode: 0o600 });
    const p = await start('half-start');
    expect(p.output()).toMatch(/admin account was created from it/);
    expect((await call(p, key, 'GET', '/whoami')).status).toBe(200);
    p.kill('SIGTERM');
    await p.exited;
  }, 120_000);

  it('exits 1 with one line naming --gateway-port when 443 may not be bound (EACCES)', async () => {
    // Root keeps its file access but loses the right to bind ports below 1024 (setpriv,
    // util-linux); an unprivileged user gets EACCES without help.
    const wrapper = process.getuid?.() === 0 ? ['setpriv', '--bounding-set', '-net_bind_service', '--inh-caps', '-net_bind_service'] : [];
    const p = await start('eacces', { expectStart: false, env: { INFERGATE_GATEWAY_PORT: '443' }, wrapper });
    expect((await p.exited).code).toBe(1);
    const lines = p.output().trim().split('\n');
    expect(lines, p.output()).toHaveLength(1);
    expect(lines[0]).toMatch(/^infergate: error: gateway: no permission to bind port 443 .*CAP_NET_BIND_SERVICE.*--gateway-port/);
  });

  it('writes one access log line per gateway request with --access-log, without the query string', async () => {
    const p = await start('access-log', { args: ['--access-log'] });
    const port = Number(/gateway \(TLS, h2 and http\/1\.1\) listening on [^:]+:(\d+)/.exec(p.output())?.[1]);
    const status = await new Promise<number>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername: 'nobody.endpoints.localhost', rejectUnauthorized: false }, () => {
        socket.write('GET /v1/models?api_key=hidden HTTP/1.1\r\nHost: nobody.endpoints.localhost\r\nConnection: close\r\n\r\n');
      });
      let answer = '';
      socket.on('data', (b: Buffer) => (answer += b.toString()));
      socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1])));
      socket.on('error', reject);
    });
    expect(status).toBe(404);
    const line = await waitFor(
      () =>
        p
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.msg === 'request'),
      5_000,
      'an access log line',
      50,
    );
    expect(line).toMatchObject({ component: 'gateway', protocol: 'http', method: 'GET', path: '/v1/models', status: 404, deployment: null });
    expect(JSON.stringify(line)).not.toContain('hidden');
    p.kill('SIGTERM');
    await p.exited;
  });

  it('serves the operator-supplied certificate for *.<domain> (--tls-cert/--tls-key), and refuses one that does not cover it', async () => {
    const operatorDir = path.join(root, 'operator-ca');
    const operatorCa = await loadOrCreateCa(operatorDir);
    const wildcard = issueServerCertificate(operatorCa, ['*.infer.example.test']);
    const certFile = path.join(operatorDir, 'wildcard.crt');
    const keyFile = path.join(operatorDir, 'wildcard.key');
    await writeFile(certFile, wildcard.certPem);
    await writeFile(keyFile, wildcard.keyPem, { mode: 0o600 });

    const p = await start('operator-cert', { args: ['--domain', 'infer.example.test', '--tls-cert', certFile, '--tls-key', keyFile] });
    expect(p.output()).toContain(`certificate from ${certFile}`);
    const port = Number(/listening on [^:]+:(\d+); certificate from/.exec(p.output())?.[1]);
    const presented = await new Promise<X509Certificate>((resolve, reject) => {
      // Trusting only the operator's CA: the handshake fails unless its certificate is served.
      const socket = tls.connect({ host: '127.0.0.1', port, servername: 'llama.infer.example.test', ca: operatorCa.certPem }, () => {
        resolve(socket.getPeerX509Certificate()!);
        socket.end();
      });
      socket.on('error', reject);
    });
    expect(presented.fingerprint256).toBe(new X509Certificate(wildcard.certPem).fingerprint256);
    p.kill('SIGTERM');
    await p.exited;

    const wrong = await start('operator-cert-wrong', { expectStart: false, args: ['--domain', 'other.example.test', '--tls-cert', certFile, '--tls-key', keyFile] });
    expect((await wrong.exited).code).toBe(1);
    expect(wrong.output().trim()).toMatch(/^infergate: error: --tls-cert .*wildcard\.crt: it does not cover \*\.other\.example\.test$/);
  });
});

