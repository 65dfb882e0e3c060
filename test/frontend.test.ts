// `infergate frontend` in front of real reference engines, every one a child process: aggregated
// (one plain engine) and disaggregated (an engine with --kv-role prefill and one with
// --kv-role decode), driven by the openai SDK. Covers the alias, streamed and non-streamed
// disaggregated completions, the `kv transfer: tcp` log lines with their KV metrics on both
// workers, a dead prefill worker or KV port failing fast with a clear error, and /health
// following the workers file. Every child is tracked by pid and killed in afterAll.

import { killChildren } from './helpers/child-process.js';
import { waitFor } from './helpers/wait.js';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './helpers/ports.js';
import { spawnCli } from './helpers/serve-process.js';

const MODEL = 'org/model';
const ALIAS = 'my-alias';
const FAST = ['--startup-ms', '100', '--ttft-ms', '10', '--itl-ms', '5'];

interface Proc {
  child: ChildProcess;
  url: string;
  output(): string;
  logs(): Array<Record<string, unknown>>;
}

const children: ChildProcess[] = [];
let root: string;

afterAll(async () => {
  await killChildren(children);
  if (root) await rm(root, { recursive: true, force: true });
});


/** Spawns `infergate <args>` on a free port and waits until `readyPath` answers 200. */
async function start(args: string[], readyPath: string): Promise<Proc> {
  const port = await freePort();
  const child = spawnCli([...args, '--host', '127.0.0.1', '--port', String(port)], { REGISTRY_API_KEY: '', INFERGATE_CONFIG_FILE: '' });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`${args[0]} exited before it was ready:\n${out}`);
      return fetch(url + readyPath).then((r) => r.ok, () => false);
    },
    30_000,
    `${args[0]} to be ready`,
    25,
  );
  return {
    child,
    url,
    output: () => out,
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

const hostPort = (url: string) => url.replace('http://', '');
const client = (frontend: Proc) => new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 });
const messages = [{ role: 'user' as const, content: 'Tell me about disaggregated serving of large language models' }];

async function streamText(c: OpenAI, model: string): Promise<{ text: string; models: Set<string> }> {
  const stream = await c.chat.completions.create({ model, messages, stream: true, max_tokens: 12 });
  let text = '';
  const models = new Set<string>();
  for await (const chunk of stream) {
    models.add(chunk.model);
    text += chunk.choices[0]?.delta.content ?? '';
  }
  return { text, models };
}

let plain: Proc;
let prefill: Proc;
let decode: Proc;
let aggregated: Proc;
let disaggregated: Proc;
let disaggFile: string;
let disaggWorkers: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-frontend-'));
  [plain, prefill, decode] = await Promise.all([
    start(['engine', '--model', MODEL, ...FAST], '/health'),
    start(['engine', '--model', MODEL, '--kv-role', 'prefill', '--kv-port', String(await freePort()), ...FAST], '/health'),
    start(['engine', '--model', MODEL, '--kv-role', 'decode', ...FAST], '/health'),
  ]);
  const aggFile = path.join(root, 'aggregated.json');
  await writeFile(aggFile, JSON.stringify({ workers: [hostPort(plain.url)] }));
  disaggFile = path.join(root, 'disaggregated.json');
  disaggWorkers = JSON.stringify({ prefill: [hostPort(prefill.url)], decode: [hostPort(decode.url)] });
  await writeFile(disaggFile, disaggWorkers);
  [aggregated, disaggregated] = await Promise.all([
    start(['frontend', '--mode', 'aggregated', '--model', MODEL, '--served-model-name', ALIAS, '--workers-file', aggFile], '/health'),
    start(['frontend', '--mode', 'disaggregated', '--model', MODEL, '--workers-file', disaggFile], '/health'),
  ]);
});

describe('aggregated frontend', () => {
  it('lists the alias and streams a completion from the worker for it', async () => {
    const c = client(aggregated);
    const list = await c.models.list();
    expect(list.data.map((m) => [m.id, m.owned_by])).toEqual([[ALIAS, 'infergate-frontend']]);
    const { text, models } = await streamText(c, ALIAS);
    expect(text.length).toBeGreaterThan(0);
    expect([...models]).toEqual([MODEL]);
    // The model id works too; anything else is a 404 OpenAI error.
    expect((await streamText(c, MODEL)).text).toBe(text);
    const err = await c.chat.completions.create({ model: 'other', messages }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(404);
    expect((err as APIError).message).toContain('other');
    await expect.poll(() => aggregated.output()).toMatch(/"mode":"aggregated".*"status":200/);
  });
});

describe('disaggregated frontend', () => {
  it('serves streamed and non-streamed completions through prefill then decode', async () => {
    const c = client(disaggregated);
    const streamed = await streamText(c, MODEL);
    const reference = await streamText(client(aggregated), ALIAS);
    // Same prompt, same deterministic text as an aggregated worker gives.
    expect(streamed.text).toBe(reference.text);

    const whole = await c.chat.completions.create({ model: MODEL, messages, max_tokens: 12 });
    expect(whole.choices[0]?.message.content).toBe(reference.text);
    expect(whole.usage?.completion_tokens).toBeGreaterThan(1);
    await expect.poll(() => disaggregated.logs().filter((l) => l.decode === hostPort(decode.url) && l.prefill === hostPort(prefill.url)).length).toBeGreaterThanOrEqual(2);
  });

  it('logs one `kv transfer: tcp` line per transfer with KV metrics on both workers', async () => {
    const isTransfer = (l: Record<string, unknown>) => typeof l.msg === 'string' && l.msg.startsWith('kv transfer: tcp');
    await expect.poll(() => prefill.logs().filter(isTransfer).length).toBeGreaterThanOrEqual(2);
    await expect.poll(() => decode.logs().filter(isTransfer).length).toBeGreaterThanOrEqual(2);
    for (const line of [prefill.logs().find(isTransfer), decode.logs().find(isTransfer)]) {
      expect(line).toMatchObject({ transport: 'tcp', bytes: expect.any(Number), blocks: expect.any(Number), ms: expect.any(Number), remote: expect.any(String) });
      const { bytes, blocks, ms } = line as { bytes: number; blocks: number; ms: number };
      expect(bytes).toBeGreaterThan(0);
      expect(bytes % 2048).toBe(0);
      expect(blocks).toBe(Math.ceil(bytes / 2048 / 16));
      expect(line?.msg).toBe(`kv transfer: tcp, ${blocks} blocks, ${bytes} bytes in ${ms} ms`);
    }
  });

  it('a decode worker whose prefill KV port is dead fails the request fast with a 502', async () => {
    const dead = await freePort();
    const started = Date.now();
    const res = await fetch(`${decode.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        messages,
        stream: true,
        kv_transfer_params: { do_remote_prefill: true, remote_engine_id: 'e', remote_block_ids: [0, 1], remote_host: '127.0.0.1', remote_port: dead },
      }),
    });
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe('kv_transfer_failed');
    expect(body.error.message).toContain(`prefill worker 127.0.0.1:${dead} failed: connection refused`);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('a workers file naming a dead prefill worker makes requests fail fast with a clear error', async () => {
    const dead = await freePort();
    await writeFile(disaggFile, JSON.stringify({ prefill: [`127.0.0.1:${dead}`], decode: [hostPort(decode.url)] }));
    await expect.poll(() => disaggregated.output()).toContain(`127.0.0.1:${dead}`);
    const started = Date.now();
    const err = await client(disaggregated)
      .chat.completions.create({ model: MODEL, messages, stream: true })
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(502);
    expect((err as APIError).message).toContain(`prefill worker 127.0.0.1:${dead} is unreachable: connection refused`);
    await writeFile(disaggFile, disaggWorkers);
  });
});

describe('frontend health', () => {
  it('is 503 while the workers file lists no decode worker, 200 once it does', async () => {
    const file = path.join(root, 'health.json');
    await writeFile(file, JSON.stringify({ prefill: [], decode: [] }));
    const frontend = await start(['frontend', '--mode', 'disaggregated', '--model', MODEL, '--workers-file', file], '/v1/models');
    const first = await fetch(`${frontend.url}/health`);
    expect(first.status).toBe(503);
    expect(await first.text()).toMatch(/no prefill worker and no decode worker/);
    const refused = await client(frontend).chat.completions.create({ model: MODEL, messages }).catch((e: unknown) => e);
    expect((refused as APIError).status).toBe(503);

    await writeFile(file, JSON.stringify({ prefill: [hostPort(prefill.url)], decode: [] }));
    await expect.poll(async () => (await fetch(`${frontend.url}/health`)).text()).toMatch(/"message":"no decode worker/);
    await writeFile(file, disaggWorkers);
    await expect.poll(async () => (await fetch(`${frontend.url}/health`)).status, { timeout: 3_000 }).toBe(200);
  });
});
