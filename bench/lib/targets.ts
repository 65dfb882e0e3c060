// Bench helper: the proxies under test, each started as its own process in front of the same
// upstreams — HAProxy 2.6 (installed from Debian's packages when missing) and the infergate
// gateway (`serve --role gateway`, fed by a `--role control` process through Redis). The
// upstreams are the bench deployment's own replicas, started the way a user would start them:
// a general deployment whose command runs bench/upstream.ts on $PORT. HAProxy, the bare
// forwarder and the direct runs are pointed at the same replica addresses. More deployments
// of the same upstream (another routing policy) and more gateway processes (another
// environment, e.g. tracing) can be added to the same control plane.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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
  const started = await startBalancedHaproxy(dir, 'haproxy', ca, [HOST, `*.${DOMAIN}`], upstreams, ['balance hdr(X-Session-Id)', 'hash-type consistent']);
  if (!/version 2\.6\./.test(started.version)) console.log(`bench: note: the issue names HAProxy 2.6; this is ${started.version}`);
  return started;
}

/**
 * HAProxy, one thread, TLS at the front for `hosts` (HTTP/1.1), plain HTTP keep-alive to the
 * upstreams on 127.0.0.1, with the given `balance` lines (e.g. `balance leastconn`).
 */
export async function startBalancedHaproxy(
  dir: string,
  name: string,
  ca: CertificateAuthority,
  hosts: string[],
  upstreams: number[],
  balance: string[],
): Promise<{ proc: Started; port: number; version: string }> {
  ensurePackage('haproxy');
  const issued = issueServerCertificate(ca, hosts);
  const pem = path.join(dir, `${name}.pem`);
  await writeFile(pem, issued.certPem + issued.keyPem, { mode: 0o600 });
  const port = await freePort();
  const cfg = path.join(dir, `${name}.cfg`);
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
      ...balance.map((l) => `  ${l}`),
      '  http-reuse always',
      ...upstreams.map((p, i) => `  server up${i} 127.0.0.1:${p}`),
      '',
    ].join('\n'),
  );
  execFileSync('haproxy', ['-c', '-q', '-f', cfg]);
  // haproxy -db prints nothing when all is well: running after a second means it is up.
  const proc = await start('haproxy', ['-db', '-f', cfg], { quietMs: 1000 });
  const version = execFileSync('haproxy', ['-v']).toString().split('\n')[0] ?? '';
  return { proc, port, version };
}

export interface GatewayTarget {
  /** Ports of the deployment's ready replicas (bench/upstream.ts), on 127.0.0.1. */
  upstreams: number[];
  gateway: Started;
  control: Started;
  redis: Started | null;
  port: number;
  caPem: string;
  /** Ready replicas the gateway routes the bench endpoint (or the named one) to (its own metric). */
  routedReplicas(endpoint?: string): Promise<number>;
  /** The gateway's Prometheus text. */
  metrics(): Promise<string>;
  /**
   * Another `--role gateway` process on the same store and upstreams, with this many gateway
   * workers and these variables added to its environment (undefined: removed).
   */
  addGateway(workers: number, env?: NodeJS.ProcessEnv): Promise<ExtraGateway>;
  /** Another deployment of the bench upstream on the same control plane, ready and routed by the gateway. */
  addDeployment(opts: { name: string; token: string; replicas: number; spec?: Record<string, unknown> }): Promise<BenchDeployment>;
  stop(): Promise<void>;
}

export interface BenchDeployment {
  name: string;
  /** SNI and Host of its endpoint. */
  host: string;
  token: string;
  /** Its ready replicas' ports on 127.0.0.1. */
  upstreams: number[];
}

/** Requests the gateway answered for an endpoint, all statuses (infergate_requests_total). */
export function requestsAnswered(metricsText: string, endpoint = ENDPOINT): number {
  let total = 0;
  for (const line of metricsText.split('\n')) {
    if (line.startsWith('infergate_requests_total{') && line.includes(`deployment="${endpoint}"`)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

export interface ExtraGateway {
  proc: Started;
  port: number;
  workers: number;
  /** The process and its gateway workers (its children), whose CPU the requests cost. */
  pids(): number[];
  routedReplicas(endpoint?: string): Promise<number>;
  metrics(): Promise<string>;
}

/** The pids of a process's children (a serve primary's gateway workers). */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function routedFrom(metricsPort: number, endpoint = ENDPOINT): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`infergate_replicas_ready{deployment="${endpoint}"`));
  return line ? Number(line.split(' ').pop()) : 0;
}

export async function startGateway(root: string, dir: string, replicas: number): Promise<GatewayTarget> {
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
  const env = { INFERGATE_ADMIN_KEY: ADMIN_KEY, INFERGATE_RUNTIME: 'local' };
  // The upstream is this checkout's own program, run as a host command. It runs unsandboxed so
  // the figures are the same with or without bubblewrap and wherever the checkout lives (the
  // sandbox's user may not be able to read a private one); the network path, which is what is
  // measured, does not change with the sandbox.
  const control = await start(
    process.execPath,
    [main, 'serve', '--role', 'control', ...common, '--api-port', String(apiPort), '--metrics-port', String(m1), '--data-dir', path.join(dir, 'data-control'), '--sandbox', 'none', '--allow-unsandboxed-host-commands'],
    { env, ready: /state in/ },
  );
  // BENCH_GATEWAY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the measured process.
  const nodeArgs = (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // One gateway process in this process by default: the figures are of one gateway process.
  const gateway = await start(
    process.execPath,
    [...nodeArgs, main, 'serve', '--role', 'gateway', ...common, '--gateway-workers', '1', '--gateway-port', String(gatewayPort), '--gateway-host', '127.0.0.1', '--metrics-port', String(m2), '--data-dir', path.join(dir, 'data-gateway')],
    { env, ready: /state in/ },
  );
  const extras: Started[] = [];
  const addGateway = async (workers: number, extraEnv: NodeJS.ProcessEnv = {}): Promise<ExtraGateway> => {
    const [port, metricsPort] = await Promise.all([freePort(), freePort()]);
    const args = ['serve', '--role', 'gateway', ...common, '--gateway-workers', String(workers), '--gateway-port', String(port), '--gateway-host', '127.0.0.1', '--metrics-port', String(metricsPort)];
    const proc = await start(process.execPath, [...nodeArgs, main, ...args, '--data-dir', path.join(dir, `data-gateway-${extras.length + 2}`)], { env: { ...env, ...extraEnv }, ready: /state in/ });
    extras.push(proc);
    return {
      proc,
      port,
      workers,
      pids: () => [proc.pid, ...childPids(proc.pid)],
      routedReplicas: (endpoint?: string) => routedFrom(metricsPort, endpoint),
      metrics: async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
    };
  };

  const api = `http://127.0.0.1:${apiPort}`;
  const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
  const tsx = fileURLToPath(import.meta.resolve('tsx'));
  /** A deployment of bench/upstream.ts with `replicas` replicas; the ports its ready replicas listen on. */
  const createUpstreams = async (name: string, token: string, replicas: number, spec: Record<string, unknown>): Promise<number[]> => {
    const created = await fetch(`${api}/deployments/general`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        ...generalBody(name, token),
        image: 'bench/upstream',
        tag: '1',
        container_port: 8000,
        health_check_path: '/',
        command: [process.execPath, '--import', tsx, path.join(root, 'bench/upstream.ts'), '$PORT'],
        env: { CHUNKS: '50', DELAY_MS: '5' },
        enable_logging: false,
        min_replicas: replicas,
        max_replicas: replicas,
        session_affinity: true,
        ...spec,
      }),
    });
    const deployment = (await created.json()) as { id: number };
    if (created.status !== 201) throw new Error(`creating the bench deployment ${name} failed: ${created.status} ${JSON.stringify(deployment)}`);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const d = (await (await fetch(`${api}/deployments/general/${deployment.id}`, { headers })).json()) as { status: string; components: { Replica?: { ready: number } } } & Record<string, unknown>;
      if (d.status === 'ready' && d.components.Replica?.ready === replicas) {
        for (const [field, value] of Object.entries(spec)) {
          // What the deployment reports, not what was asked: a field it drops would not be measured.
          if (JSON.stringify(d[field]) !== JSON.stringify(value)) throw new Error(`the bench deployment ${name} reports ${field} ${JSON.stringify(d[field])}, not ${JSON.stringify(value)}`);
        }
        break;
      }
      if (Date.now() > deadline) throw new Error(`the bench deployment ${name}'s ${replicas} upstream replicas were not ready within 60 s: ${JSON.stringify(d)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    // Their addresses, as the runtime recorded them: HAProxy and the direct runs use the same ones.
    const store = new RedisStore({ url: redisUrl, prefix });
    await store.open();
    const ready = (await store.list('replica')).map((r) => r.value).filter((r) => r.deployment_id === deployment.id && r.state === 'ready' && r.address !== null);
    await store.close();
    const ports = ready.map((r) => Number(String(r.address).split(':').pop()));
    if (ports.length !== replicas) throw new Error(`expected ${replicas} ready upstream replicas of ${name} in the store, found ${ports.length}`);
    return ports;
  };
  const upstreams = await createUpstreams(ENDPOINT, TOKEN, replicas, {});
  const caPem = await readFile(path.join(dir, 'certs', 'ca.crt'), 'utf8');
  return {
    upstreams,
    gateway,
    control,
    redis,
    port: gatewayPort,
    caPem,
    routedReplicas: (endpoint?: string) => routedFrom(m2, endpoint),
    metrics: async () => (await fetch(`http://127.0.0.1:${m2}/metrics`)).text(),
    addGateway,
    addDeployment: async ({ name, token, replicas: count, spec = {} }) => {
      const ports = await createUpstreams(name, token, count, spec);
      // The gateway learns of ready replicas through the store.
      const deadline = Date.now() + 10_000;
      while ((await routedFrom(m2, name)) !== count) {
        if (Date.now() > deadline) throw new Error(`the gateway did not route ${name} to its ${count} replicas within 10 s`);
        await new Promise((r) => setTimeout(r, 100));
      }
      return { name, host: `${name}.${DOMAIN}`, token, upstreams: ports };
    },
    stop: async () => {
      for (const extra of extras) await extra.stop();
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
