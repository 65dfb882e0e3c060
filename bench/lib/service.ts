// Bench helper: the built `infergate serve` (dist/) on free ports in a temp dir that is
// removed at the end, with a known admin key, and the calls a benchmark makes of it: create
// a general deployment, read one, and the platform CA to trust.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, onCleanup, start, type Started } from './processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BENCH_ADMIN_KEY = 'bench-admin-key-0123456789abcdef';
const ADMIN = BENCH_ADMIN_KEY;

export interface BenchService {
  proc: Started;
  ports: { api: number; gateway: number; metrics: number };
  /** Creates a general deployment; its id. */
  createGeneral(body: Record<string, unknown>): Promise<number>;
  deployment<T>(id: number): Promise<T>;
  caPem(): Promise<string>;
}

/** The environment of a bench's `infergate serve`: its data and certificates under `dir`, its ports, admin key and log level. */
export function serviceEnv(dir: string, ports: { api: number; gateway: number; metrics: number }, adminKey: string, logLevel: string): NodeJS.ProcessEnv {
  return {
    INFERGATE_DATA_DIR: path.join(dir, 'data'),
    INFERGATE_CERTS_DIR: path.join(dir, 'certs'),
    INFERGATE_API_PORT: String(ports.api),
    INFERGATE_GATEWAY_PORT: String(ports.gateway),
    INFERGATE_METRICS_PORT: String(ports.metrics),
    INFERGATE_ADMIN_KEY: adminKey,
    INFERGATE_LOG_LEVEL: logLevel,
  };
}

export async function startService(name: string, args: string[], logLevel = 'warn'): Promise<BenchService> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `infergate-bench-${name}-`));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  const ports = { api: await freePort(), gateway: await freePort(), metrics: await freePort() };
  const proc = await start(process.execPath, [path.join(root, 'dist/cli/main.js'), 'serve', ...args], {
    env: { ...serviceEnv(dir, ports, ADMIN, logLevel), INFERGATE_RUNTIME: process.env.INFERGATE_RUNTIME ?? 'local' },
    ready: /state in /,
    timeoutMs: 20_000,
  });
  const api = `http://127.0.0.1:${ports.api}`;
  const headers = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  return {
    proc,
    ports,
    async createGeneral(body) {
      const res = await fetch(`${api}/deployments/general`, { method: 'POST', headers, body: JSON.stringify({ cluster_id: 1, hardware_instance_id: 1, ...body }) });
      const created = (await res.json()) as { id: number };
      if (res.status !== 201) throw new Error(`creating the bench deployment failed: ${res.status} ${JSON.stringify(created)}`);
      return created.id;
    },
    async deployment<T>(id: number) {
      return (await (await fetch(`${api}/deployments/general/${id}`, { headers })).json()) as T;
    },
    caPem: () => readFile(path.join(dir, 'certs', 'ca.crt'), 'utf8'),
  };
}
