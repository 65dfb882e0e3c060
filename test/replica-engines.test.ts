// The engine behaviours of the spec through the whole platform: the vendor-packaged model
// container (pending without REGISTRY_API_KEY, with logs that say why; ready with it), the
// Ollama preset (pull through the gateway, then NDJSON chat), and the logs route with and
// without enable_logging, including `follow` over SSE.

import { describe, expect, it } from 'vitest';
import { engineBody, replicaMains, usePlatform, type Platform } from './helpers/platform.js';
import { gatewayFetch } from './helpers/tls-clients.js';

let platform: Platform;
let fetcher: typeof globalThis.fetch;

usePlatform('engines', [], (p) => {
  platform = p;
  fetcher = gatewayFetch({ ca: p.ca });
});

const TOKEN = 'tok-engines-0123456789';
const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

async function create(body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', '/deployments/general', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

async function logLines(id: number, query = ''): Promise<{ line: string; replica: string; stream: string }[]> {
  const res = await platform.call('GET', `/deployments/general/${id}/logs?tail=500${query}`);
  expect(res.status).toBe(200);
  return res.body.lines;
}

const isReady = (d: { status: string }) => d.status === 'ready';

function ndjson(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('the vendor-packaged model container (preset nim)', () => {
  it('stays pending without REGISTRY_API_KEY and its logs say why; with it, ready and answering', async () => {
    const id = await create({
      name: 'vendor',
      cluster_id: 1,
      hardware_instance_id: 1,
      preset: 'nim',
      registry_password: 'registry-key-0123',
      endpoint_bearer_token: TOKEN,
    });
    const created = await platform.deployment(id);
    expect(created).toMatchObject({ container_port: 8000, protocol: 'http', health_check_path: '/v1/health/ready', registry_username: '$oauthtoken', command: [] });
    expect(JSON.stringify(created)).not.toContain('registry-key-0123');

    await expect.poll(async () => (await logLines(id)).some((l) => l.line.includes('REGISTRY_API_KEY')), { timeout: 20_000, interval: 200 }).toBe(true);
    // That line is the engine's load ending for good (state failed, ready answers 503 from
    // then on): the replica still runs but can never become ready.
    const waiting = await platform.deployment(id);
    expect(waiting.status).toBe('pending');
    expect(waiting.components.Replica).toEqual({ ready: 0, desired: 1 });
    const processes = replicaMains(platform.dataDir, 'vendor-');
    expect(processes, JSON.stringify({ processes, replicas: (await platform.call('GET', `/deployments/general/${id}/replicas`)).body })).toHaveLength(1);

    const fixed = await platform.call('PATCH', `/deployments/general/${id}`, { env: { REGISTRY_API_KEY: 'registry-key-0123' } });
    expect(fixed.body.revision).toBe(2);
    await platform.waitFor(id, isReady, 30_000, 'vendor ready');
    const completion = await platform.client('vendor', TOKEN).chat.completions.create({
      model: 'meta/llama-3.1-8b-instruct',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 5,
    });
    expect(completion.choices[0]?.message.content).toBeTruthy();
    expect(completion.system_fingerprint).toMatch(/^vendor-r2-/);
    // The first revision's logs are still there.
    expect((await logLines(id, '&revision=1')).some((l) => l.line.includes('REGISTRY_API_KEY'))).toBe(true);
  });
});

describe('the Ollama preset', () => {
  it('pulls a model through the gateway, then streams /api/chat as NDJSON; chat before the pull fails as Ollama does', async () => {
    const id = await create({ name: 'llama', cluster_id: 1, hardware_instance_id: 1, preset: 'ollama', endpoint_bearer_token: TOKEN });
    await platform.waitFor(id, isReady, 30_000, 'ollama ready');
    const base = platform.endpoint('llama');
    const chatBody = JSON.stringify({ model: 'llama3.2', messages: [{ role: 'user', content: 'why is the sky blue?' }], options: { num_predict: 6 } });

    const early = await fetcher(`${base}/api/chat`, { method: 'POST', headers: auth, body: chatBody });
    expect(early.status).toBe(404);
    expect(((await early.json()) as { error: string }).error).toContain('try pulling it first');

    const pull = await fetcher(`${base}/api/pull`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'llama3.2' }) });
    expect(pull.status).toBe(200);
    expect(pull.headers.get('content-type')).toContain('application/x-ndjson');
    const progress = ndjson(await pull.text());
    expect(progress[0]).toEqual({ status: 'pulling manifest' });
    expect(progress.some((p) => /^pulling [0-9a-f]{12}$/.test(String(p.status)) && typeof p.total === 'number')).toBe(true);
    expect(progress.at(-1)).toEqual({ status: 'success' });

    const chat = await fetcher(`${base}/api/chat`, { method: 'POST', headers: auth, body: chatBody });
    expect(chat.status).toBe(200);
    expect(chat.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = ndjson(await chat.text());
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.at(-1)).toMatchObject({ done: true, model: 'llama3.2' });
    expect(lines.slice(0, -1).every((l) => l.done === false)).toBe(true);
    expect(lines.map((l) => (l.message as { content: string }).content).join('')).not.toBe('');
  });
});

describe('logs', () => {
  it('a revision without enable_logging has no logs, and the route says so', async () => {
    const id = await create(engineBody('quiet', TOKEN, { enable_logging: false }));
    await platform.waitFor(id, isReady, 30_000, 'quiet ready');
    const res = await platform.call('GET', `/deployments/general/${id}/logs`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ logging: false, lines: [] });
    expect(res.body.message).toContain('has no logs');
  });

  it('keeps stdout, stderr and runtime lines per replica; follow delivers a line written after the call', async () => {
    const id = await create(engineBody('loud', TOKEN));
    await platform.waitFor(id, isReady, 30_000, 'loud ready');
    const lines = await logLines(id);
    expect(lines.some((l) => l.stream === 'runtime' && l.line.startsWith('started process'))).toBe(true);
    expect(lines.some((l) => l.stream === 'stdout' && l.line.includes('SIMULATED'))).toBe(true);
    expect(new Set(lines.map((l) => l.replica))).toEqual(new Set([expect.stringMatching(/^loud-r1-\d+$/)]));

    const res = await fetch(`${platform.apiUrl}/deployments/general/${id}/logs?follow=true&tail=0`, {
      headers: { authorization: `Bearer ${(await import('./helpers/platform.js')).PLATFORM_ADMIN_KEY}` },
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    // Written after the call: a request the engine logs.
    await platform.client('loud', TOKEN).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'follow me' }], max_tokens: 2 });
    let received = '';
    const deadline = Date.now() + 10_000;
    while (!received.includes('/v1/chat/completions') && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      received += new TextDecoder().decode(value);
    }
    await reader.cancel();
    expect(received).toMatch(/^data: \{/m);
    expect(received).toContain('/v1/chat/completions');
  });
});
