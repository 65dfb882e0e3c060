// The autoscaler and the activator with real processes and short windows: a min-0
// deployment goes to zero when idle, the first request after idle is held and served, six
// concurrent streams bring it to three replicas, it returns to zero when they stop, and no
// request fails in the whole run; one created with initial_replicas 0 starts no replica until
// its first request; a scale-down decided while streams run completes every stream; a full activator queue answers 503 with Retry-After, a held request that waits too
// long too.

import { waitFor } from './helpers/wait.js';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { engineBody, replicaMains, usePlatform, type Platform } from './helpers/platform.js';
import { gatewayFetch } from './helpers/tls-clients.js';

let platform: Platform;

const FLAGS = ['--autoscale-stable-window', '4', '--autoscale-panic-window', '2', '--scale-to-zero-grace', '1', '--activator-queue-size', '3', '--activator-timeout', '8'];

usePlatform('autoscale', FLAGS, (p) => (platform = p));

const TOKEN = 'tok-autoscale-0123456789';
type Counts = { status: string; components: { Replica: { ready: number; desired: number } } };

async function create(body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', '/deployments/general', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

async function metric(pattern: RegExp): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${platform.ports.metrics}/metrics`)).text();
  return Number(pattern.exec(text)?.[1] ?? 'NaN');
}

/** One streamed completion read to the end: its replica, finish reason and usage. */
async function stream(client: OpenAI, maxTokens: number) {
  const s = await client.chat.completions.create({
    model: 'sim/model',
    messages: [{ role: 'user', content: 'stream please' }],
    max_tokens: maxTokens,
    stream: true,
    stream_options: { include_usage: true },
    ignore_eos: true,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let replica = '';
  let finish: string | null = null;
  let tokens = 0;
  for await (const chunk of s) {
    replica = chunk.system_fingerprint ?? replica;
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
  }
  return { replica, finish, tokens };
}

describe('scale to zero and back', () => {
  it('holds the first request after idle, scales 0 → 3 under six streams and back to 0, failing no request', async () => {
    const id = await create(
      engineBody('elastic', TOKEN, { min_replicas: 0, max_replicas: 3, max_concurrency: 2, cooldown_period: 2, command: ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '20'] }),
    );
    const atZero = (d: Counts) => d.status === 'ready' && d.components.Replica.desired === 0 && d.components.Replica.ready === 0;
    await platform.waitFor(id, atZero, 40_000, 'elastic scaled to zero after its first replica');
    await expect.poll(() => replicaMains(platform.dataDir, 'elastic-').length, { timeout: 15_000 }).toBe(0);

    const client = platform.client('elastic', TOKEN);
    const failures: string[] = [];
    const first = await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'wake up' }], max_tokens: 4 });
    expect(first.system_fingerprint).toMatch(/^elastic-r1-\d+$/);
    expect(await metric(/infergate_activator_wait_seconds_count\{deployment="elastic",outcome="forwarded"\} (\d+)/)).toBe(1);

    let running = true;
    const served = new Set<string>();
    const worker = async () => {
      while (running) {
        try {
          const r = await stream(client, 40);
          if (r.finish !== 'length' || r.tokens !== 40) failures.push(`incomplete stream ${JSON.stringify(r)}`);
          served.add(r.replica);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    };
    const workers = Array.from({ length: 6 }, worker);
    await platform.waitFor(id, (d: Counts) => d.components.Replica.ready === 3, 30_000, 'three ready replicas under six streams');
    await expect.poll(() => served.size, { timeout: 10_000 }).toBe(3);
    running = false;
    await Promise.all(workers);
    expect(await metric(/infergate_autoscaler_decisions_total\{deployment="elastic",reason="(?:panic|scale_up)"\} (\d+)/)).toBeGreaterThan(0);

    await platform.waitFor(id, atZero, 40_000, 'back to zero after the streams stopped');
    await expect.poll(() => replicaMains(platform.dataDir, 'elastic-').length, { timeout: 15_000 }).toBe(0);
    expect(failures).toEqual([]);
  }, 120_000);
});

describe('initial_replicas 0', () => {
  it('creates a deployment at zero that starts no replica until its first request, which the activator holds and a new replica serves', async () => {
    const res = await platform.call(
      'POST',
      '/deployments/general',
      engineBody('cold', TOKEN, { min_replicas: 0, max_replicas: 2, max_concurrency: 2, initial_replicas: 0, command: ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '5'] }),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ initial_replicas: 0, min_replicas: 0 });
    const id = res.body.id as number;
    // The pass that would have started a replica has run: it wrote the count, 0, and why.
    type Cold = Counts & { status_reason: string | null };
    await platform.waitFor(id, (d: Cold) => d.status_reason?.includes('first request') === true, 20_000, 'cold reconciled at zero');
    const cold = (await platform.call('GET', `/deployments/general/${id}`)).body as Cold;
    expect(cold).toMatchObject({ status: 'pending', components: { Replica: { ready: 0, desired: 0 } } });
    expect(replicaMains(platform.dataDir, 'cold-')).toEqual([]);
    expect((await platform.call('GET', `/deployments/general/${id}/replicas`)).body).toEqual({ items: [] });

    const first = await platform.client('cold', TOKEN).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'first' }], max_tokens: 4 });
    expect(first.system_fingerprint).toMatch(/^cold-r1-\d+$/);
    expect(await metric(/infergate_activator_wait_seconds_count\{deployment="cold",outcome="forwarded"\} (\d+)/)).toBe(1);
    await platform.waitFor(id, (d: Counts) => d.status === 'ready', 20_000, 'cold ready after its first request');
  }, 60_000);
});

describe('a scale-down decided while streams run', () => {
  it('drains the replica it removes: every stream completes', async () => {
    const id = await create(
      engineBody('shrink', TOKEN, { min_replicas: 1, max_replicas: 2, max_concurrency: 2, cooldown_period: 1, command: ['--startup-ms', '200', '--ttft-ms', '10', '--itl-ms', '50'] }),
    );
    await platform.waitFor(id, (d: Counts) => d.components.Replica.ready === 1, 30_000, 'one replica');
    const client = platform.client('shrink', TOKEN);
    // A burst of short requests: twice the capacity in the panic window → two replicas.
    let bursting = true;
    const burst = Array.from({ length: 6 }, async () => {
      while (bursting) await stream(client, 10);
    });
    await platform.waitFor(id, (d: Counts) => d.components.Replica.ready === 2, 30_000, 'two replicas after a burst');
    bursting = false;
    await Promise.all(burst);
    // Both replicas idle at the gateway before the long streams, so each picks a different one.
    await waitFor(async () => (await metric(/^infergate_inflight_requests\{deployment="shrink",replica=""\} (\S+)$/m)) === 0, 5000, 'the burst to leave the gateway');

    // Two long streams: power of two choices puts one on each replica. Concurrency 2 wants
    // one replica, so the autoscaler removes one while both streams run.
    const long = [stream(client, 200), stream(client, 200)];
    await platform.waitFor(id, (d: Counts) => d.components.Replica.desired === 1, 30_000, 'the scale-down decision');
    const results = await Promise.all(long);
    expect(new Set(results.map((r) => r.replica)).size).toBe(2);
    for (const r of results) expect(r).toMatchObject({ finish: 'length', tokens: 200 });
    await expect.poll(() => replicaMains(platform.dataDir, 'shrink-').length, { timeout: 15_000 }).toBe(1);
  }, 90_000);
});

describe('the activator queue', () => {
  it('answers 503 with Retry-After when full, and when a held request waits past the timeout', async () => {
    // The nim flavor without REGISTRY_API_KEY never becomes ready: requests wait at zero.
    await create({ ...engineBody('stuck', TOKEN, { min_replicas: 0, max_replicas: 1, max_concurrency: 1 }), tag: 'nim', health_check_path: '/v1/health/ready', command: [] });
    const fetcher = gatewayFetch({ ca: platform.ca });
    const ask = () =>
      fetcher(`${platform.endpoint('stuck')}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim/model', messages: [{ role: 'user', content: 'anyone?' }] }),
      });
    const held = [ask(), ask(), ask()];
    await expect.poll(() => metric(/infergate_activator_queue_depth\{deployment="stuck"\} (\d+)/), { timeout: 5000 }).toBe(3);
    const full = await ask();
    expect(full.status).toBe(503);
    expect(full.headers.get('retry-after')).toBe('5');
    expect(((await full.json()) as { error: { message: string } }).error.message).toContain('activator queue is full');

    const timedOut = await Promise.all(held);
    for (const res of timedOut) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain('did not get a ready replica within 8 s');
    }
  });
});
