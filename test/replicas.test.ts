// General inference deployments that really run: `infergate serve` as a child process, the
// reference engine as its replicas, the openai SDK as the client through the TLS gateway.
// Create → ready → completions from both replicas (and from one with a session id) →
// PATCH scales in place without a revision → DELETE stops every process and the host 404s.
// Also: kill -9 of a replica under load, and the logs route with and without logging.

import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { engineBody, replicaMains, replicaProcesses, usePlatform, type Platform } from './helpers/platform.js';
import { gatewayFetch } from './helpers/tls-clients.js';

let platform: Platform;

usePlatform('replicas', [], (p) => (platform = p));

const TOKEN = 'tok-replicas-0123456789';
const ask = { model: 'sim/model', messages: [{ role: 'user' as const, content: 'say something' }], max_tokens: 4 };

async function create(body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', '/deployments/general', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

const readyCount = (n: number) => (d: { status: string; components: { Replica: { ready: number } } }) => d.status === 'ready' && d.components.Replica.ready === n;

describe('a general deployment of the reference engine', () => {
  it('becomes ready, serves the openai SDK from both replicas, sticks a session, scales in place and is deleted', async () => {
    const id = await create(engineBody('chat', TOKEN, { min_replicas: 2, max_replicas: 2, session_affinity: true }));
    await platform.waitFor(id, readyCount(2), 30_000, 'two ready replicas');
    const client = platform.client('chat', TOKEN);

    const seen = new Set<string>();
    for (let i = 0; i < 24 && seen.size < 2; i++) {
      const completion = await client.chat.completions.create(ask);
      expect(completion.choices[0]?.message.content).toBeTruthy();
      seen.add(completion.system_fingerprint ?? '');
    }
    expect([...seen].sort()).toEqual([expect.stringMatching(/^chat-r1-\d+$/), expect.stringMatching(/^chat-r1-\d+$/)]);

    const sticky = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const completion = await client.chat.completions.create(ask, { headers: { 'x-session-id': 'session-42' } });
      sticky.add(completion.system_fingerprint ?? '');
    }
    expect(sticky.size).toBe(1);

    const up = await platform.call('PATCH', `/deployments/general/${id}`, { max_replicas: 3, min_replicas: 3 });
    expect(up.status).toBe(200);
    expect(up.body.revision).toBe(1);
    const three = await platform.waitFor(id, readyCount(3), 30_000, 'three ready replicas');
    expect(three.revisions).toHaveLength(1);
    expect(three.components.Replica).toEqual({ ready: 3, desired: 3 });

    await platform.call('PATCH', `/deployments/general/${id}`, { min_replicas: 1, max_replicas: 1 });
    await platform.waitFor(id, (d) => d.components.Replica.ready === 1 && d.components.Replica.desired === 1, 30_000, 'one replica');
    await expect.poll(() => replicaMains(platform.dataDir, 'chat-').length, { timeout: 15_000 }).toBe(1);
    expect((await client.chat.completions.create(ask)).system_fingerprint).toMatch(/^chat-r1-/);

    expect((await platform.call('DELETE', `/deployments/general/${id}`)).status).toBe(202);
    const fetcher = gatewayFetch({ ca: platform.ca });
    await expect
      .poll(async () => (await fetcher(`${platform.endpoint('chat')}/v1/models`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, { timeout: 5000 })
      .toBe(404);
    await expect.poll(() => replicaProcesses(platform.dataDir).filter((p) => p.replica.startsWith('chat-')), { timeout: 20_000 }).toEqual([]);
  });
});

describe('stopping a replica', () => {
  it('drains first: a scale-down while streams run lets every stream finish', async () => {
    const id = await create(engineBody('drain', TOKEN, { min_replicas: 2, max_replicas: 2, command: ['--startup-ms', '200', '--ttft-ms', '10', '--itl-ms', '40'] }));
    await platform.waitFor(id, readyCount(2), 30_000, 'two ready replicas');
    const client = platform.client('drain', TOKEN);
    let firstChunks = 0;
    const stream = async () => {
      // ignore_eos (vLLM's extension, which the engine honours) makes every stream 60 tokens long.
      const s = await client.chat.completions.create({ ...ask, max_tokens: 60, stream: true, stream_options: { include_usage: true }, ignore_eos: true } as OpenAI.ChatCompletionCreateParamsStreaming);
      let replica = '';
      let finish: string | null = null;
      let tokens = 0;
      for await (const chunk of s) {
        if (replica === '') firstChunks++;
        replica = chunk.system_fingerprint ?? replica;
        if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
        if (chunk.usage) tokens = chunk.usage.completion_tokens;
      }
      return { replica, finish, tokens };
    };
    // Two concurrent streams land on both replicas (power of two choices picks the idle one).
    const streams = [stream(), stream()];
    // Both streams routed (each has its first chunk) before the scale-down.
    await expect.poll(() => firstChunks, { timeout: 10_000 }).toBe(2);
    const patched = await platform.call('PATCH', `/deployments/general/${id}`, { min_replicas: 1, max_replicas: 1 });
    expect(patched.status).toBe(200);
    const results = await Promise.all(streams);
    expect(new Set(results.map((r) => r.replica)).size).toBe(2);
    for (const r of results) expect(r).toMatchObject({ finish: 'length', tokens: 60 });
    await platform.waitFor(id, (d) => d.components.Replica.ready === 1, 30_000, 'one replica left');
    const stopped = async () => ((await platform.call('GET', `/deployments/general/${id}/logs?tail=500`)).body.lines as { line: string }[]).some((l) => l.line.startsWith('stopping: SIGTERM'));
    await expect.poll(stopped, { timeout: 10_000 }).toBe(true);
  });
});
