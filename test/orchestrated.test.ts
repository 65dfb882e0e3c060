// Orchestrated deployments with real processes: a Frontend (`infergate frontend`) in front of
// reference-engine workers. Aggregated: the openai SDK through the gateway and the Frontend,
// by the served model name and by the model id. Disaggregated, created through the API with
// both pools: completions work, Prefill and Decode logs carry the KV transfer lines, GET shows
// worker_pools and the three components. Killing the Frontend makes the deployment not ready
// within 5 s although the workers run, and ready again once it is back. An unsupported extra
// argument stops the worker with a log line naming it; the model-hub token reaches workers as
// a file, never in their environment, logs or responses. A traffic split runs each revision's
// own Frontend and Workers side by side, and the tag host reaches only its revision's Workers.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_DOMAIN, replicaMains, usePlatform, type Platform } from './helpers/platform.js';
import { waitFor } from './helpers/wait.js';
import { bearer, modelInfer, modelStreamInfer, v2ClientTls } from './helpers/v2-client.js';

let platform: Platform;

usePlatform('orchestrated', [], (p) => (platform = p));

const TOKEN = 'tok-orchestrated-0123456789';
const FAST = ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '5'];
type Components = Record<string, { ready: number; desired: number }>;
type View = { status: string; components: Components; worker_pools?: unknown; revision: number; revision_replicas?: { revision: number; ready: number }[]; traffic?: { tag: string | null; url: string | null }[] };

async function create(body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', '/deployments/orchestrated', { cluster_id: 1, endpoint_bearer_token: TOKEN, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

const view = async (id: number): Promise<View> => (await platform.call('GET', `/deployments/orchestrated/${id}`)).body;
async function waitForView(id: number, check: (d: View) => boolean, ms: number, what: string): Promise<View> {
  let last: View | undefined;
  return waitFor(async () => check((last = await view(id))) && last, ms, what, 100).catch((err: Error) => {
    throw new Error(`${err.message}; last view: ${JSON.stringify(last)}`);
  });
}

async function logs(id: number, component: string): Promise<string[]> {
  const res = await platform.call('GET', `/deployments/orchestrated/${id}/logs?component=${component}&tail=500`);
  return (res.body.lines as { line: string }[]).map((l) => l.line);
}

async function streamed(name: string, model: string): Promise<string> {
  const s = await platform.client(name, TOKEN).chat.completions.create({ model, messages: [{ role: 'user', content: 'hello there' }], max_tokens: 8, stream: true });
  let text = '';
  for await (const chunk of s) text += chunk.choices[0]?.delta.content ?? '';
  return text;
}

describe('orchestrated aggregated', () => {
  it('serves the openai SDK through the gateway and the Frontend, by alias and by model id; killing the Frontend makes it not ready', async () => {
    const id = await create({ name: 'agg', model: 'org/agg-model', served_model_name: 'agg', hardware_instance_id: 1, extra_args: FAST });
    const ready = await waitForView(id, (d) => d.status === 'ready', 40_000, 'agg ready');
    expect(ready.components).toEqual({ Frontend: { ready: 1, desired: 1 }, Worker: { ready: 1, desired: 1 } });
    expect(await streamed('agg', 'agg')).not.toBe('');
    expect(await streamed('agg', 'org/agg-model')).not.toBe('');
    const models = await platform.client('agg', TOKEN).models.list();
    expect(models.data.map((m) => m.id)).toContain('agg');

    const frontend = replicaMains(platform.dataDir, 'agg-r1-frontend-')[0]!;
    const killedAt = Date.now();
    process.kill(frontend.pid, 'SIGKILL');
    await waitForView(id, (d) => d.status === 'not_ready', 5000, 'not_ready after the Frontend died');
    expect(Date.now() - killedAt).toBeLessThan(5000);
    expect(replicaMains(platform.dataDir, 'agg-r1-worker-')).toHaveLength(1); // the worker still runs
    await waitForView(id, (d) => d.status === 'ready', 30_000, 'ready again after the Frontend restarted');
    expect(await streamed('agg', 'agg')).not.toBe('');
  });
});

describe('orchestrated disaggregated', () => {
  it('created through the API with both pools: completions work and the KV transfer shows in Prefill and Decode logs', async () => {
    const id = await create({
      name: 'disagg',
      model: 'org/disagg-model',
      serving_mode: 'disaggregated',
      worker_pools: { prefill: { hardware_instance_id: 1, replicas: 1 }, decode: { hardware_instance_id: 1, replicas: 1 } },
      enable_logging: true,
      extra_args: FAST,
    });
    const ready = await waitForView(id, (d) => d.status === 'ready', 40_000, 'disagg ready');
    expect(ready.worker_pools).toEqual({ prefill: { hardware_instance_id: 1, replicas: 1 }, decode: { hardware_instance_id: 1, replicas: 1 } });
    expect(ready.components).toEqual({ Frontend: { ready: 1, desired: 1 }, Prefill: { ready: 1, desired: 1 }, Decode: { ready: 1, desired: 1 } });
    expect(await streamed('disagg', 'org/disagg-model')).not.toBe('');
    const plain = await platform.client('disagg', TOKEN).chat.completions.create({ model: 'org/disagg-model', messages: [{ role: 'user', content: 'again' }], max_tokens: 4 });
    expect(plain.choices[0]?.message.content).toBeTruthy();
    for (const component of ['Prefill', 'Decode']) {
      await expect.poll(async () => (await logs(id, component)).some((l) => l.includes('kv transfer: tcp')), { timeout: 5000 }).toBe(true);
    }
  });
});

describe('orchestrated workers', () => {
  it('an unsupported extra argument stops the worker, with a log line naming it', async () => {
    const id = await create({ name: 'badarg', model: 'org/m', hardware_instance_id: 1, extra_args: [...FAST, '--no-such-flag'] });
    await expect.poll(async () => (await logs(id, 'Worker')).some((l) => l.includes('--no-such-flag')), { timeout: 20_000, interval: 250 }).toBe(true);
    const d = await view(id);
    expect(d.status).not.toBe('ready');
    expect(d.components.Worker?.ready).toBe(0);
  });

  it('the model-hub token reaches workers as a file, never in their environment, logs or responses', async () => {
    const secret = 'hf_secret_token_0123456789';
    const id = await create({ name: 'gated', model: 'org/gated', hardware_instance_id: 1, model_hub_token: secret, extra_args: FAST });
    await waitForView(id, (d) => d.status === 'ready', 40_000, 'gated ready');
    const d = await platform.call('GET', `/deployments/orchestrated/${id}`);
    expect(JSON.stringify(d.body)).not.toContain(secret);
    expect(d.body.has_model_hub_token).toBe(true);
    const worker = replicaMains(platform.dataDir, 'gated-r1-worker-')[0]!;
    expect(readFileSync(`/proc/${worker.pid}/environ`, 'latin1')).not.toContain(secret);
    const workerLogs = await logs(id, 'Worker');
    expect(workerLogs.some((l) => l.includes('model hub credential'))).toBe(true);
    expect(workerLogs.join('\n')).not.toContain(secret);
  });
});

describe('orchestrated gRPC and autoscaled workers', () => {
  it('a gRPC deployment serves ModelInfer and ModelStreamInfer through the gateway and its Frontend', async () => {
    const id = await create({ name: 'agrpc', model: 'org/grpc-model', served_model_name: 'grpc-model', protocol: 'grpc', hardware_instance_id: 1, extra_args: FAST });
    await waitForView(id, (d) => d.status === 'ready', 40_000, 'agrpc ready');
    const client = v2ClientTls(platform.ports.gateway, `agrpc.${ENDPOINT_DOMAIN}`, platform.ca);
    const unary = await modelInfer(client, 'grpc-model', 'hello', 5, bearer(TOKEN));
    expect(unary.text).not.toBe('');
    expect(unary.replica).toMatch(/^agrpc-r1-worker-\d+$/);
    const stream = await modelStreamInfer(client, 'org/grpc-model', 'stream', 4, bearer(TOKEN));
    expect(stream.tokens.join('')).not.toBe('');
    expect(stream.finals.at(-1)).toBe(true);
    expect(stream.finals.filter(Boolean)).toHaveLength(1);
    await expect(modelInfer(client, 'grpc-model', 'x', 2, bearer(null))).rejects.toMatchObject({ code: 16 });
    client.close();
  });

  it('the Worker count follows concurrency within [min, max]', async () => {
    const id = await create({ name: 'scaled', model: 'org/scaled', hardware_instance_id: 1, min_replicas: 1, max_replicas: 2, concurrency: 1, extra_args: [...FAST, '--itl-ms', '40'] });
    await waitForView(id, (d) => d.status === 'ready', 40_000, 'scaled ready');
    const client = platform.client('scaled', TOKEN);
    let running = true;
    const load = Array.from({ length: 4 }, async () => {
      while (running) {
        const s = await client.chat.completions.create({ model: 'org/scaled', messages: [{ role: 'user', content: 'busy' }], max_tokens: 30, stream: true });
        for await (const _chunk of s) void _chunk;
      }
    });
    const up = await waitForView(id, (d) => d.components.Worker?.ready === 2, 30_000, 'two workers under load');
    expect(up.components.Worker).toEqual({ ready: 2, desired: 2 });
    running = false;
    await Promise.all(load);
  }, 60_000);
});

describe('orchestrated traffic split', () => {
  it('runs both revisions with their own Frontend and Workers; the tag host reaches only the canary', async () => {
    const id = await create({ name: 'orchsplit', model: 'org/split', hardware_instance_id: 1, extra_args: FAST });
    await waitForView(id, (d) => d.status === 'ready', 40_000, 'orchsplit ready');
    const res = await platform.call('PATCH', `/deployments/orchestrated/${id}`, {
      extra_args: [...FAST, '--itl-ms', '6'],
      traffic: [
        { revision: 1, percent: 50 },
        { latest: true, percent: 50, tag: 'next' },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const both = (d: View) => [1, 2].every((n) => (d.revision_replicas ?? []).some((r) => r.revision === n && r.ready >= 1));
    const split = await waitForView(id, both, 40_000, 'both revisions ready');
    // Each revision runs its own Frontend and its own Worker.
    for (const prefix of ['orchsplit-r1-frontend-', 'orchsplit-r1-worker-', 'orchsplit-r2-frontend-', 'orchsplit-r2-worker-']) {
      expect(replicaMains(platform.dataDir, prefix), prefix).toHaveLength(1);
    }
    const ask = async (url: string): Promise<string> => {
      const c = await platform.client('orchsplit', TOKEN).withOptions({ baseURL: `${url}/v1` }).chat.completions.create({ model: 'org/split', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
      return c.system_fingerprint ?? '';
    };
    const plain = await Promise.all(Array.from({ length: 20 }, () => ask(platform.endpoint('orchsplit'))));
    expect(new Set(plain.map((f) => /-r(\d+)-worker-/.exec(f)?.[1]))).toEqual(new Set(['1', '2']));
    const tagUrl = split.traffic?.find((t) => t.tag === 'next')?.url ?? '';
    expect(tagUrl).toContain('next-orchsplit.');
    const tagged = await Promise.all(Array.from({ length: 10 }, () => ask(tagUrl)));
    expect(tagged.every((f) => f.startsWith('orchsplit-r2-worker-')), tagged.join(',')).toBe(true);
  }, 90_000);
});
