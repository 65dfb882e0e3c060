// Autoscaling on LLM signals with real processes (`infergate serve` with short windows, the
// reference engine as replicas, which reports vLLM's gauges on /metrics):
//   - queue_depth: an engine that runs one sequence at a time queues the rest; the deployment
//     scales up once its waiting queue passes the target, while in-flight concurrency stays far
//     below its own target (max_concurrency 100);
//   - ttft: an engine whose first token takes 300 ms scales up against a 100 ms p90 objective,
//     one request at a time (concurrency 1);
// and each decision says which signal drove it (events, activity).

import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { engineBody, usePlatform, type Platform } from './helpers/platform.js';

let platform: Platform;

usePlatform('autoscale-signals', ['--autoscale-stable-window', '4', '--autoscale-panic-window', '2'], (p) => (platform = p));

const TOKEN = 'tok-signals-0123456789';
type View = { components: { Replica: { ready: number; desired: number } }; autoscaling_metric: string; autoscaling_target: number | null };
type Event = { reason: string; message: string };

async function create(body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', '/deployments/general', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

async function stream(client: OpenAI, maxTokens: number): Promise<void> {
  const s = await client.chat.completions.create({
    model: 'sim/model',
    messages: [{ role: 'user', content: 'queue me' }],
    max_tokens: maxTokens,
    stream: true,
    ignore_eos: true,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  for await (const _chunk of s) void _chunk;
}

async function events(id: number): Promise<Event[]> {
  const res = await platform.call('GET', `/deployments/general/${id}/events`);
  return res.body.items as Event[];
}

/** Keeps `width` streams going until stop() is called; collects failures. */
function load(client: OpenAI, width: number, maxTokens: number) {
  let running = true;
  const failures: string[] = [];
  const done = Promise.all(
    Array.from({ length: width }, async () => {
      while (running) {
        try {
          await stream(client, maxTokens);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    }),
  );
  return {
    failures,
    async stop() {
      running = false;
      await done;
    },
  };
}

describe('queue_depth', () => {
  it('scales up when the engine queue passes the target while concurrency stays below its own', async () => {
    const id = await create(
      engineBody('queued', TOKEN, {
        min_replicas: 1,
        max_replicas: 3,
        max_concurrency: 100,
        autoscaling_metric: 'queue_depth',
        autoscaling_target: 2,
        cooldown_period: 30,
        // One sequence at a time: every other request waits in the engine's queue.
        command: ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '20', '--max-running', '1'],
      }),
    );
    const created = await platform.waitFor(id, (d: View) => d.components.Replica.ready === 1, 30_000, 'one replica');
    expect(created).toMatchObject({ autoscaling_metric: 'queue_depth', autoscaling_target: 2 });
    const streams = load(platform.client('queued', TOKEN), 8, 30);
    try {
      // 8 in flight against a target of 100 would never scale on concurrency; 7 waiting on one replica does.
      const scaled = await platform.waitFor(id, (d: View) => d.components.Replica.desired >= 2, 30_000, 'a scale-up on queue depth');
      expect(scaled.components.Replica.desired).toBeGreaterThanOrEqual(2);
      await expect.poll(async () => (await events(id)).find((e) => e.reason === 'ScaledUp')?.message ?? '', { timeout: 10_000 }).toContain('queue_depth');
      const activity = await platform.call('GET', `/deployments/general/${id}/activity`);
      expect(activity.body).toMatchObject({ metric: 'queue_depth', target: 2 });
      expect(activity.body.points.some((p: { signal: number | null }) => (p.signal ?? 0) > 2)).toBe(true);
    } finally {
      await streams.stop();
    }
    expect(streams.failures).toEqual([]);
  }, 90_000);
});

describe('ttft', () => {
  it('scales up when the observed p90 time to first token passes the objective', async () => {
    const id = await create(
      engineBody('slowfirst', TOKEN, {
        min_replicas: 1,
        max_replicas: 2,
        max_concurrency: 100,
        autoscaling_metric: 'ttft',
        autoscaling_target: 100,
        cooldown_period: 30,
        command: ['--startup-ms', '300', '--ttft-ms', '300', '--itl-ms', '5'],
      }),
    );
    await platform.waitFor(id, (d: View) => d.components.Replica.ready === 1, 30_000, 'one replica');
    // One request at a time: concurrency 1, far below 100; only the first-token time is high.
    const streams = load(platform.client('slowfirst', TOKEN), 1, 3);
    try {
      await platform.waitFor(id, (d: View) => d.components.Replica.desired === 2, 30_000, 'a scale-up on ttft');
      await expect.poll(async () => (await events(id)).find((e) => e.reason === 'ScaledUp')?.message ?? '', { timeout: 10_000 }).toContain('ttft');
    } finally {
      await streams.stop();
    }
    expect(streams.failures).toEqual([]);
  }, 90_000);
});
