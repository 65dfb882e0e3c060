// Test helper: `infergate serve` processes sharing one Redis store — each with its own data
// directory under the test's root, one certs directory (every gateway serves the same CA), the
// same admin key, sealing key and domain — the control API as their admin, the deployment
// the summed-scaling scenarios share, and a streamed chat read to its end.

import { adminCaller } from './admin-api.js';
import path from 'node:path';
import OpenAI from 'openai';
import { expect } from 'vitest';
import { engineBody } from './platform.js';
import { startServe, type ServeProcess } from './serve-process.js';

export interface SharedStore {
  root: string;
  redisUrl: string;
  /** Key prefix in Redis; the process default when left out. */
  prefix?: string;
  adminKey: string;
  domain: string;
  /** Byte the 32-byte sealing key is filled with. */
  secretFill: number;
  /** --gateway-workers of every process; the default (one per core on Redis) when left out. */
  gatewayWorkers?: number;
}

/** One serve process on the shared store, its data in `<root>/<name>/data`. */
export function startOnSharedStore(store: SharedStore, name: string, args: string[] = []): Promise<ServeProcess> {
  return startServe({
    dataDir: path.join(store.root, name, 'data'),
    certsDir: path.join(store.root, 'certs'),
    args,
    env: {
      INFERGATE_REDIS_URL: store.redisUrl,
      ...(store.prefix === undefined ? {} : { INFERGATE_REDIS_PREFIX: store.prefix }),
      INFERGATE_ADMIN_KEY: store.adminKey,
      INFERGATE_SECRET_KEY: Buffer.alloc(32, store.secretFill).toString('base64'),
      INFERGATE_DOMAIN: store.domain,
      ...(store.gatewayWorkers === undefined ? {} : { INFERGATE_GATEWAY_WORKERS: String(store.gatewayWorkers) }),
    },
  });
}

export type AdminApi<T> = (method: string, route: string, body?: unknown) => Promise<{ status: number; body: T }>;

/** The admin caller (helpers/admin-api) typed to the view a test reads; `url` is read at each call (a standby's once it took over). */
export function adminApi<T>(url: () => string, adminKey: string): AdminApi<T> {
  return adminCaller(url, adminKey);
}

interface WithReplicas {
  id: number;
  components: { Replica: { ready: number; desired: number } };
}

/** Ready and desired replicas of general deployment `id`. */
export async function replicaCounts(api: AdminApi<WithReplicas>, id: number): Promise<{ ready: number; desired: number }> {
  return (await api('GET', `/deployments/general/${id}`)).body.components.Replica;
}

/**
 * "summed", the deployment of the summed-scaling scenarios: one replica at rest, up to 3, two
 * streams per replica, 50 ms between chunks so a stream of 120 outlasts the autoscaler's window.
 * Resolves with its id once its one replica is ready.
 */
export async function createSummedDeployment(api: AdminApi<WithReplicas>, token: string): Promise<number> {
  const created = await api(
    'POST',
    '/deployments/general',
    engineBody('summed', token, { min_replicas: 1, max_replicas: 3, max_concurrency: 2, cooldown_period: 30, command: ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '50'] }),
  );
  expect(created.status).toBe(201);
  const id = created.body.id;
  await expect.poll(() => replicaCounts(api, id), { timeout: 30_000 }).toEqual({ ready: 1, desired: 1 });
  return id;
}

/** A streamed chat of `maxTokens` chunks (ignore_eos) read to its end; each chunk is shown to `onChunk`. */
export async function streamChat(
  client: OpenAI,
  content: string,
  maxTokens: number,
  onChunk: (chunk: OpenAI.ChatCompletionChunk) => void = () => undefined,
): Promise<{ chunks: number; finish: string | null }> {
  const stream = await client.chat.completions.create({
    model: 'sim/model',
    messages: [{ role: 'user', content }],
    max_tokens: maxTokens,
    stream: true,
    ignore_eos: true,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let chunks = 0;
  let finish: string | null = null;
  for await (const chunk of stream) {
    chunks++;
    finish = chunk.choices[0]?.finish_reason ?? finish;
    onChunk(chunk);
  }
  return { chunks, finish };
}
