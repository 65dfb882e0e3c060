// Every streamed chat completion is counted, through a real gateway (TLS on loopback) in front
// of the reference engine: a stream whose client did not set `stream_options.include_usage`
// gets the engine's usage event asked for and removed by the gateway — the client receives the
// bytes the engine sends without it — while its tokens reach the usage view and
// `infergate_tokens_total`; a client that asked still gets its usage chunk; with
// `tokens_per_minute` streams meet 429 once the budget is spent; a stream the client cuts is
// counted by estimate. The same holds behind the orchestrated Frontend, aggregated and
// disaggregated (prefill then decode workers).

import https from 'node:https';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEngineOptions } from '../src/engine/options.js';
import { createEngine, type Engine } from '../src/engine/server.js';
import { createFrontend, type Frontend } from '../src/orchestrated/frontend.js';
import { parseFrontendOptions } from '../src/orchestrated/options.js';
import { hostOf, startGatewayEnv, tokenFor, type GatewayEnv } from './helpers/gateway-env.js';
import { freePort } from './helpers/ports.js';
import { gatewayFetch } from './helpers/tls-clients.js';

const MODEL = 'sim/model';
const silent = pino({ level: 'silent' });
let env: GatewayEnv;
let root: string;
const engines: Engine[] = [];
const frontends: Frontend[] = [];
const ids: Record<string, number> = {};
let engineUrl: string;

async function startEngine(args: string[] = []): Promise<string> {
  const options = parseEngineOptions(['--host', '127.0.0.1', '--port', '0', '--startup-ms', '0', '--ttft-ms', '0', '--itl-ms', '2', '--shutdown-grace-ms', '0', ...args], {});
  const engine = createEngine({ options, log: silent, env: {}, release: '0.0.0-test' });
  engines.push(engine);
  const { port } = await engine.start();
  await engine.loaded;
  return `127.0.0.1:${port}`;
}

async function startFrontend(mode: 'aggregated' | 'disaggregated', workers: Record<string, string[]>): Promise<string> {
  const file = path.join(root, `${mode}.json`);
  await writeFile(file, JSON.stringify(workers));
  const frontend = createFrontend(parseFrontendOptions(['--host', '127.0.0.1', '--port', '0', '--mode', mode, '--model', MODEL, '--workers-file', file, '--log-level', 'silent'], {}), silent);
  frontends.push(frontend);
  return `127.0.0.1:${await frontend.start()}`;
}

async function deploy(name: string, address: string, overrides: Record<string, unknown> = {}): Promise<void> {
  ids[name] = await env.deploy(name, overrides);
  await env.addReplica(ids[name], address);
  await env.waitForReplicas(name, 1);
}

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-stream-usage-'));
  env = await startGatewayEnv({ withUsage: true });
  const engine = await startEngine();
  engineUrl = `http://${engine}`;
  const [prefill, decode] = await Promise.all([startEngine(['--kv-role', 'prefill', '--kv-port', String(await freePort())]), startEngine(['--kv-role', 'decode'])]);
  const aggregated = await startFrontend('aggregated', { workers: [engine] });
  const disaggregated = await startFrontend('disaggregated', { prefill: [prefill], decode: [decode] });
  await deploy('su-plain', engine);
  await deploy('su-limited', engine, { rate_limit: { tokens_per_minute: 30 } });
  await deploy('su-aggregated', aggregated);
  await deploy('su-disaggregated', disaggregated);
});

afterAll(async () => {
  await env?.close();
  for (const f of frontends) await f.stop();
  for (const e of engines) await e.shutdown('test');
  if (root) await rm(root, { recursive: true, force: true });
});

const request = (content: string, extra: Record<string, unknown> = {}) => ({ model: MODEL, messages: [{ role: 'user' as const, content }], max_tokens: 8, stream: true, ...extra });

/** A streamed request through the gateway, read as raw bytes; `cutAfter` closes it after that many body chunks. */
function gatewayStream(name: string, body: unknown, cutAfter?: number): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: env.port,
        servername: hostOf(name),
        ca: env.ca.certPem,
        method: 'POST',
        path: '/v1/chat/completions',
        agent: false,
        headers: { host: hostOf(name), authorization: `Bearer ${tokenFor(name)}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        let text = '';
        let chunks = 0;
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
          if (cutAfter !== undefined && ++chunks >= cutAfter) {
            res.destroy();
            resolve({ status: res.statusCode ?? 0, text, headers: res.headers });
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The same request straight to the engine. */
async function engineAnswer(body: unknown): Promise<string> {
  const res = await fetch(`${engineUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return res.text();
}

/** What the engine reports for these messages (its completions are seeded by them). */
async function engineUsage(content: string, maxTokens = 8): Promise<{ prompt_tokens: number; completion_tokens: number }> {
  const answer = JSON.parse(await engineAnswer(request(content, { stream: false, max_tokens: maxTokens }))) as { usage: { prompt_tokens: number; completion_tokens: number } };
  return answer.usage;
}

/** A stream with its per-request fields (id, created, fingerprint) made equal. */
const normalized = (text: string) => text.replace(/"id":"[^"]*"/g, '"id":"x"').replace(/"created":\d+/g, '"created":0').replace(/"system_fingerprint":"[^"]*"/g, '"system_fingerprint":"x"');

async function usageTotals(name: string): Promise<{ requests: number; prompt_tokens: number; completion_tokens: number; rate_limited: number }> {
  await env.usage!.flush();
  const view = await env.api.call('GET', `/deployments/general/${ids[name]}/usage`);
  expect(view.status).toBe(200);
  return view.body.totals;
}

async function tokensMetric(name: string, kind: string): Promise<number> {
  const text = await env.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith('infergate_tokens_total{') && l.includes(`deployment="${name}"`) && l.includes(`kind="${kind}"`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

const client = (name: string) => new OpenAI({ apiKey: tokenFor(name), baseURL: `https://${hostOf(name)}:${env.port}/v1`, fetch: gatewayFetch({ ca: env.ca.certPem }), maxRetries: 0 });

describe('streams without include_usage', () => {
  it('are counted in the usage view and the metrics, and the client gets exactly what the engine sends without usage', async () => {
    const content = 'count this stream please';
    const expected = await engineUsage(content);
    const before = await usageTotals('su-plain');
    const metricBefore = await tokensMetric('su-plain', 'completion');

    const res = await gatewayStream('su-plain', request(content));
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('"usage"');
    expect(res.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(normalized(res.text)).toBe(normalized(await engineAnswer(request(content))));

    const after = await usageTotals('su-plain');
    expect(after.prompt_tokens - before.prompt_tokens).toBe(expected.prompt_tokens);
    expect(after.completion_tokens - before.completion_tokens).toBe(expected.completion_tokens);
    expect((await tokensMetric('su-plain', 'completion')) - metricBefore).toBe(expected.completion_tokens);
  });

  it('reach the openai SDK as plain content chunks, none without choices', async () => {
    const stream = await client('su-plain').chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'sdk stream' }], max_tokens: 6, stream: true });
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.choices.length).toBe(1);
      expect(chunk.usage).toBeUndefined();
      text += chunk.choices[0]!.delta.content ?? '';
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text.length).toBeGreaterThan(0);
  });

  it('a client that asked for usage still gets its usage chunk, counted once', async () => {
    const content = 'I asked for usage';
    const expected = await engineUsage(content);
    const before = await usageTotals('su-plain');
    const stream = await client('su-plain').chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 8, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    expect(usage).toMatchObject(expected);
    const after = await usageTotals('su-plain');
    expect(after.completion_tokens - before.completion_tokens).toBe(expected.completion_tokens);
  });

  it('a stream the client cuts is counted by estimate: its prompt and what was generated so far', async () => {
    const before = await usageTotals('su-plain');
    const content = 'a long answer that the client will not wait for';
    const res = await gatewayStream('su-plain', request(content, { max_tokens: 2000, ignore_eos: true }), 3);
    expect(res.status).toBe(200);
    await expect.poll(async () => (await usageTotals('su-plain')).requests - before.requests, { timeout: 5000 }).toBe(1);
    const after = await usageTotals('su-plain');
    expect(after.prompt_tokens - before.prompt_tokens).toBe(Math.ceil(content.length / 4));
    const completion = after.completion_tokens - before.completion_tokens;
    expect(completion).toBeGreaterThan(0);
    expect(completion).toBeLessThan(2000);
  });
});

describe('tokens_per_minute', () => {
  it('refuses streams with 429 once their tokens spent the budget, with and without include_usage', async () => {
    const content = 'spend the budget';
    const usage = await engineUsage(content, 6);
    const perStream = usage.prompt_tokens + usage.completion_tokens;
    // Budget 30 per minute; the bucket refills half a token a second, so a stream must not land it near 0.
    const admitted = Math.ceil(30 / perStream);
    expect(admitted * perStream - 30, `a stream of ${perStream} tokens leaves the bucket too close to 0`).toBeGreaterThanOrEqual(2);
    const statuses: number[] = [];
    for (let i = 0; i <= admitted; i++) {
      const extra = { max_tokens: 6, ...(i % 2 === 1 ? { stream_options: { include_usage: true } } : {}) };
      const res = await gatewayStream('su-limited', request(content, extra));
      statuses.push(res.status);
      if (res.status === 429) {
        expect(JSON.parse(res.text)).toMatchObject({ error: { code: 'rate_limited' } });
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      }
    }
    expect(statuses).toEqual([...Array<number>(admitted).fill(200), 429]);
    const totals = await usageTotals('su-limited');
    expect(totals.rate_limited).toBe(1);
    expect(totals.prompt_tokens + totals.completion_tokens).toBe(admitted * perStream);
  });
});

describe('behind the orchestrated Frontend', () => {
  it.each(['su-aggregated', 'su-disaggregated'])('%s: the injected stream_options reaches the worker, its usage is counted and removed', async (name) => {
    const content = `through the frontend of ${name}`;
    const before = await usageTotals(name);
    const res = await gatewayStream(name, request(content));
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('"usage"');
    expect(res.text).toContain('"content"');
    expect(res.text.endsWith('data: [DONE]\n\n')).toBe(true);
    const after = await usageTotals(name);
    expect(after.prompt_tokens - before.prompt_tokens).toBeGreaterThan(0);
    expect(after.completion_tokens - before.completion_tokens).toBe((await engineUsage(content)).completion_tokens);
    // The counts are the engine's, not an estimate: the prompt as the engine counts it.
    expect(after.prompt_tokens - before.prompt_tokens).toBe((await engineUsage(content)).prompt_tokens);
  });
});
