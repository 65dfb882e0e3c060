// Bench helper: the proxies under test, each started as its own process in front of the same
// upstreams — HAProxy 2.6 (installed from Debian's packages when missing) and the infergate
// gateway (`serve --role gateway`, fed by a `--role control` process through Redis, with a
// deployment whose replicas are the upstreams, registered as the runtime would register them).

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { RedisStore } from '../../src/store/redis-store.js';
import { issueServerCertificate, type CertificateAuthority } from '../../src/pki/ca.js';
import { generalBody } from '../../test/helpers/spec-fixtures.js';
import { freePort, start, type Started } from './processes.js';

export const DOMAIN = 'bench.test';
export const ENDPOINT = 'bench-ep';
export const HOST = `${ENDPOINT}.${DOMAIN}`;
export const TOKEN = 'igt_bench_token_0123456789abcdefABCDEF';
const ADMIN_KEY = 'igk_bench-admin-key-0123456789abcdef';

function haveCommand(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Installs a Debian package when its command is missing (haproxy, wrk). */
export function ensurePackage(name: string): void {
  if (haveCommand(name)) return;
  console.log(`bench: ${name} is not installed; installing it from Debian packages (apt-get install -y ${name})`);
  execFileSync('apt-get', ['install', '-y', name], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

export async function startHaproxy(dir: string, ca: CertificateAuthority, upstreams: number[]): Promise<{ proc: Started; port: number; version: string }> {
  ensurePackage('haproxy');
  const issued = issueServerCertificate(ca, [HOST, `*.${DOMAIN}`]);
  const pem = path.join(dir, 'haproxy.pem');
  await writeFile(pem, issued.certPem + issued.keyPem, { mode: 0o600 });
  const port = await freePort();
  const cfg = path.join(dir, 'haproxy.cfg');
  await writeFile(
    cfg,
    [
      'global',
      '  nbthread 1',
      '  maxconn 4000',
      '  tune.ssl.default-dh-param 2048',
      'defaults',
      '  mode http',
      '  timeout connect 5s',
      '  timeout client 3600s',
      '  timeout server 3600s',
      '  option http-keep-alive',
      'frontend fe',
      `  bind 127.0.0.1:${port} ssl crt ${pem} alpn http/1.1`,
      '  default_backend be',
      'backend be',
      '  balance hdr(X-Session-Id)',
      '  hash-type consistent',
      '  http-reuse always',
      ...upstreams.map((p, i) => `  server up${i} 127.0.0.1:${p}`),
      '',
    ].join('\n'),
  );
  execFileSync('haproxy', ['-c', '-q', '-f', cfg]);
  // haproxy -db prints nothing when all is well: running after a second means it is up.
  const proc = await start('haproxy', ['-db', '-f', cfg], { quietMs: 1000 });
  const version = execFileSync('haproxy', ['-v']).toString().split('\n')[0] ?? '';
  if (!/version 2\.6\./.test(version)) console.log(`bench: note: the issue names HAProxy 2.6; this is ${version}`);
  return { proc, port, version };
}

export interface GatewayTarget {
  gateway: Started;
  control: Started;
  redis: Started | null;
  port: number;
  caPem: string;
  /** Ready replicas the gateway routes the bench endpoint to (its own metric). */
  routedReplicas(): Promise<number>;
  stop(): Promise<void>;
}

export async function startGateway(root: string, dir: string, upstreams: number[]): Promise<GatewayTarget> {
  const main = path.join(root, 'dist/cli/main.js');
  if (!existsSync(main)) throw new Error('dist/ is missing: run `npm run build` first (npm run bench:gateway does)');
  let redis: Started | null = null;
  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    const redisPort = await freePort();
    redis = await start('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { ready: /Ready to accept/ });
    redisUrl = `redis://127.0.0.1:${redisPort}`;
  }
  const prefix = `bench-${process.pid}-${Date.now()}`;
  const [gatewayPort, apiPort, m1, m2] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const common = ['--redis', redisUrl, '--redis-prefix', prefix, '--certs-dir', path.join(dir, 'certs'), '--domain', DOMAIN, '--log-level', 'warn'];
  const env = { INFERGATE_ADMIN_KEY: ADMIN_KEY };
  const control = await start(process.execPath, [main, 'serve', '--role', 'control', ...common, '--api-port', String(apiPort), '--metrics-port', String(m1), '--data-dir', path.join(dir, 'data-control')], { env, ready: /state in/ });
  // BENCH_GATEWAY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the measured process.
  const nodeArgs = (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const gateway = await start(process.execPath, [...nodeArgs, main, 'serve', '--role', 'gateway', ...common, '--gateway-port', String(gatewayPort), '--gateway-host', '127.0.0.1', '--metrics-port', String(m2), '--data-dir', path.join(dir, 'data-gateway')], { env, ready: /state in/ });

  const api = `http://127.0.0.1:${apiPort}`;
  const created = await fetch(`${api}/deployments/general`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    // The tests' create body, with room for the bench's concurrency and affinity on. The
    // control process's controller starts the deployment's own replica (the reference
    // engine); its model load is made to last a day so it never becomes ready: the gateway
    // must route only to the bench upstream registered below, or the figures would mix in
    // the engine's answers (it refuses the bench's model with 404).
    body: JSON.stringify({ ...generalBody(ENDPOINT, TOKEN), command: ['--startup-ms', '86400000'], max_concurrency: 64, session_affinity: true }),
  });
  const deployment = (await created.json()) as { id: number };
  if (created.status !== 201) throw new Error(`creating the bench deployment failed: ${created.status} ${JSON.stringify(deployment)}`);

  // Register the upstreams as ready replicas, as the runtime (M3) records them.
  const store = new RedisStore({ url: redisUrl, prefix });
  await store.open();
  for (const p of upstreams) {
    await store.create('replica', (id) => ({
      id,
      deployment_id: deployment.id,
      revision: 1,
      component: 'Replica',
      name: `bench-${id}`,
      address: `127.0.0.1:${p}`,
      state: 'ready' as const,
      restarts: 0,
      pid: null,
      metrics_target: null,
      updated_at: new Date().toISOString(),
    }));
  }
  await store.close();
  const caPem = await readFile(path.join(dir, 'certs', 'ca.crt'), 'utf8');
  return {
    gateway,
    control,
    redis,
    port: gatewayPort,
    caPem,
    routedReplicas: async () => {
      const text = await (await fetch(`http://127.0.0.1:${m2}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`infergate_replicas_ready{deployment="${ENDPOINT}"`));
      return line ? Number(line.split(' ').pop()) : 0;
    },
    stop: async () => {
      await gateway.stop();
      await control.stop();
      await redis?.stop();
    },
  };
}

/** The leanest Node forwarding path (bench/bare-forwarder.ts): the floor for Node here. */
export async function startBareForwarder(root: string, dir: string, ca: CertificateAuthority, upstream: number): Promise<{ proc: Started; port: number }> {
  const issued = issueServerCertificate(ca, [HOST]);
  const cert = path.join(dir, 'bare.crt');
  const key = path.join(dir, 'bare.key');
  await writeFile(cert, issued.certPem);
  await writeFile(key, issued.keyPem, { mode: 0o600 });
  const port = await freePort();
  const nodeArgs = (process.env.BENCH_FLOOR_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = await start(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(root, 'bench/bare-forwarder.ts'), String(port), String(upstream), cert, key], { ready: /listening/ });
  return { proc, port };
}
