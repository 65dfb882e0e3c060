// Test helper: the whole platform as real processes — `infergate serve` as a child process
// on free ports with its own data and certs directories, its replicas as grandchildren
// (the reference engine) — plus what tests need around it: the control API with the admin
// key, waiting for a deployment state, the openai SDK on an endpoint URL through the
// gateway, and the replica processes of a data dir read from the process list (/proc).

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import OpenAI from 'openai';
import { adminCaller, type AdminCall } from './admin-api.js';
import { ENDPOINT_DOMAIN, seedCerts } from './certs-template.js';
import { removePods, scopeOf } from './pods.js';
import { freePort } from './ports.js';
import { waitFor } from './wait.js';
import { startServe, type ServeProcess } from './serve-process.js';
import { gatewayFetch } from './tls-clients.js';
import { removeTempDir } from './temp-dirs.js';

export const PLATFORM_ADMIN_KEY = 'platform-admin-key-0123456789';

/** Fast reference-engine knobs for tests: short model load, quick tokens. */
export const FAST_ENGINE = ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '3'];

export interface PlatformDirs {
  dataDir: string;
  certsDir: string;
  ports: { api: number; gateway: number; metrics: number };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export interface Platform extends PlatformDirs {
  serve: ServeProcess;
  apiUrl: string;
  ca: string;
  call: AdminCall;
  deployment(id: number): Promise<Json>;
  waitFor(id: number, check: (d: Json) => boolean, ms: number, what: string): Promise<Json>;
  client(name: string, token: string): OpenAI;
  endpoint(name: string): string;
  /** SIGTERM and wait for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
}

export async function platformDirs(root: string, name: string): Promise<PlatformDirs> {
  return {
    dataDir: path.join(root, name, 'data'),
    certsDir: path.join(root, name, 'certs'),
    ports: { api: await freePort(), gateway: await freePort(), metrics: await freePort() },
  };
}

export { ENDPOINT_DOMAIN };

export async function startPlatform(dirs: PlatformDirs, args: string[] = []): Promise<Platform> {
  // The run's CA and gateway certificate, unless this platform has its own from a previous start.
  if (!existsSync(dirs.certsDir)) await seedCerts(inject('certsTemplate'), dirs.certsDir);
  const serve = await startServe({
    dataDir: dirs.dataDir,
    certsDir: dirs.certsDir,
    args,
    env: {
      INFERGATE_API_PORT: String(dirs.ports.api),
      INFERGATE_GATEWAY_PORT: String(dirs.ports.gateway),
      INFERGATE_METRICS_PORT: String(dirs.ports.metrics),
      INFERGATE_ADMIN_KEY: PLATFORM_ADMIN_KEY,
      INFERGATE_DOMAIN: ENDPOINT_DOMAIN,
    },
  });
  const ca = await readFile(path.join(dirs.certsDir, 'ca.crt'), 'utf8');
  const call: Platform['call'] = adminCaller(serve.apiUrl, PLATFORM_ADMIN_KEY);
  const deployment = async (id: number) => (await call('GET', `/deployments/general/${id}`)).body;
  return {
    ...dirs,
    serve,
    apiUrl: serve.apiUrl,
    ca,
    call,
    deployment,
    async waitFor(id, check, ms, what) {
      let last: Json;
      try {
        await waitFor(async () => check((last = await deployment(id))), ms, what, 100);
      } catch (err) {
        throw new Error(`${(err as Error).message}; last view: ${JSON.stringify(last)}`);
      }
      return last;
    },
    endpoint: (name) => `https://${name}.${ENDPOINT_DOMAIN}:${dirs.ports.gateway}`,
    client(name, token) {
      return new OpenAI({ apiKey: token, baseURL: `https://${name}.${ENDPOINT_DOMAIN}:${dirs.ports.gateway}/v1`, fetch: gatewayFetch({ ca }), maxRetries: 0 });
    },
    async stop() {
      serve.kill('SIGTERM');
      return (await serve.exited).code;
    },
  };
}

/**
 * One platform for a test file: started in beforeAll in its own temp dir (with `args` for
 * `infergate serve`), handed to `ready`, and stopped in afterAll — SIGTERM, then SIGKILL for
 * any replica process still there and its pods removed — with the temp dir removed.
 */
export function usePlatform(name: string, args: string[], ready: (p: Platform) => void): void {
  let root: string | undefined;
  let platform: Platform | undefined;
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), `infergate-${name}-`));
    platform = await startPlatform(await platformDirs(root, name), args);
    ready(platform);
  });
  afterAll(async () => {
    if (platform) {
      platform.serve.kill('SIGTERM');
      await platform.serve.exited;
      // A clean stop leaves nothing; a test that killed the service leaves processes and pods.
      killLeftoverReplicas(platform.dataDir);
    }
    if (root) await removeTempDir(root);
  });
}

/**
 * Live processes started as replicas of the service whose data dir is `dataDir`, children
 * included (a replica run from source has tsx's esbuild service as a child, with the same
 * environment): `main` marks the replica's own process, whose parent is not a replica.
 */
export function replicaProcesses(dataDir: string): { pid: number; replica: string; main: boolean }[] {
  const marker = `INFERGATE_REPLICA_ROOT=${path.join(dataDir, 'replicas')}/`;
  const found: { pid: number; replica: string; ppid: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let environ: string;
    let stat: string;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue;
    }
    const vars = environ.split('\0');
    if (!vars.some((v) => v.startsWith(marker))) continue;
    const id = vars.find((v) => v.startsWith('INFERGATE_REPLICA_ID='));
    // stat: "pid (comm) state ppid ...": comm may contain spaces, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    found.push({ pid: Number(entry), replica: id?.slice('INFERGATE_REPLICA_ID='.length) ?? '', ppid });
  }
  const pids = new Set(found.map((p) => p.pid));
  return found.map(({ pid, replica, ppid }) => ({ pid, replica, main: !pids.has(ppid) }));
}

/**
 * Kills what a killed service left of its replicas (by pid, found in /proc), and removes its
 * pods (network namespaces, named with its scope: the file store's in `dataDir`, or `scope`
 * for a service on Redis — scopeOf in pods.ts). One may exit between being listed and being
 * killed (ESRCH): it is gone, which is what was wanted.
 */
export function killLeftoverReplicas(dataDir: string, scope = scopeOf(dataDir)): void {
  for (const r of replicaProcesses(dataDir)) {
    try {
      process.kill(r.pid, 'SIGKILL');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }
  removePods(scope);
}

/** The replicas' own processes (one per running replica), children left out. */
export function replicaMains(dataDir: string, prefix = ''): { pid: number; replica: string }[] {
  return replicaProcesses(dataDir).filter((p) => p.main && p.replica.startsWith(prefix));
}

/** A general create body for the reference engine, with fast knobs. */
export function engineBody(name: string, token: string, o: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    cluster_id: 1,
    hardware_instance_id: 1,
    image: 'infergate/reference-engine',
    tag: 'openai',
    container_port: 8000,
    health_check_path: '/health',
    endpoint_bearer_token: token,
    command: FAST_ENGINE,
    min_replicas: 1,
    max_replicas: 1,
    ...o,
  };
}

/**
 * One streamed completion read to its end through `client`, generating `maxTokens` tokens
 * (ignore_eos): the replica that served it (system_fingerprint). Throws when the stream ended
 * without its finish reason — a cut counts as a failed request.
 */
export async function streamReplica(client: OpenAI, maxTokens: number): Promise<string> {
  const s = await client.chat.completions.create({
    model: 'sim/model',
    messages: [{ role: 'user', content: 'keep going' }],
    max_tokens: maxTokens,
    stream: true,
    ignore_eos: true,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let replica = '';
  let finish: string | null = null;
  for await (const chunk of s) {
    replica = chunk.system_fingerprint ?? replica;
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  if (finish !== 'length') throw new Error(`stream from ${replica} ended without its finish reason`);
  return replica;
}

