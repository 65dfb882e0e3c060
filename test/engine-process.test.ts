// `infergate engine` as real child processes (one per replica, as the runtime starts them):
// readiness while the model loads, the openai SDK against the openai flavor (system_fingerprint,
// include_usage, n, deterministic text), the running/waiting gauges under --max-running 1, the
// nim flavor with and without REGISTRY_API_KEY, ollama's pull-then-chat, the shared model cache
// (cold then warm), SIGTERM and a bad flag. Every child is tracked by pid and killed in afterAll.

import { killChildren } from './helpers/child-process.js';
import { waitFor } from './helpers/wait.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './helpers/ports.js';
import { spawnCli } from './helpers/serve-process.js';
import type { ChildProcess } from 'node:child_process';

interface EngineProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  /** Parsed JSON log lines written so far. */
  logs(): Array<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** When the port first answered (performance.now()). */
  listeningAt: number;
}

const children: ChildProcess[] = [];
let root: string;

afterAll(async () => {
  await killChildren(children);
  if (root) await rm(root, { recursive: true, force: true });
});

function spawnEngine(args: string[], env: Record<string, string> = {}): { child: ChildProcess; output(): string; exited: EngineProcess['exited'] } {
  // Empty values override anything the test runner's own environment carries.
  const child = spawnCli(['engine', ...args], { REGISTRY_API_KEY: '', INFERGATE_CONFIG_FILE: '', ...env });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => out, exited };
}

/** Starts an engine on a free port and resolves once its port answers HTTP. */
async function startEngine(args: string[], env: Record<string, string> = {}): Promise<EngineProcess> {
  const port = await freePort();
  const spawned = spawnEngine(['--host', '127.0.0.1', '--port', String(port), ...args], env);
  const url = `http://127.0.0.1:${port}`;
  let gone = false;
  void spawned.exited.then(() => (gone = true));
  await waitFor(
    async () => {
      if (gone) throw new Error(`engine exited before listening:\n${spawned.output()}`);
      return fetch(`${url}/metrics`).then(
        (r) => r.ok,
        () => false,
      );
    },
    30_000,
    'the engine to listen',
  );
  return {
    ...spawned,
    url,
    listeningAt: performance.now(),
    logs: () =>
      spawned
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}



const status = (url: string) => fetch(url).then((r) => r.status);

async function gauge(url: string, name: string, model = 'sim/model'): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const prefix = `${name}{model_name="${model}",engine="0"} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}

function ndjson(text: string): Array<Record<string, unknown>> {
  expect(text.endsWith('\n')).toBe(true);
  return text
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const question = [{ role: 'user' as const, content: 'What does a gateway do with a session id?' }];

let openai: EngineProcess;
let queue: EngineProcess;
let nimNoKey: EngineProcess;
let nimKey: EngineProcess;
let ollama: EngineProcess;
/** Status of /health seen as soon as the port answered, before the 1.5 s load is over. */
let firstHealth: number;
/** A chat sent at the same moment: 503 with an OpenAI error body. */
let firstChat: { status: number; body: unknown };
let configFile: string;
let metricsPort: number;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-engine-'));
  configFile = path.join(root, 'config.json');
  await writeFile(configFile, '{"hello":"engine"}');
  const fast = ['--ttft-ms', '10', '--itl-ms', '2'];
  metricsPort = await freePort();
  [openai, queue, nimNoKey, nimKey, ollama] = await Promise.all([
    startEngine(['--startup-ms', '1500', '--replica-id', 'replica-a', ...fast]).then(async (p) => {
      firstHealth = await status(`${p.url}/health`);
      const chat = await fetch(`${p.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'sim/model', messages: question }) });
      firstChat = { status: chat.status, body: await chat.json() };
      return p;
    }),
    startEngine(['--startup-ms', '0', '--max-running', '1', '--ttft-ms', '0', '--itl-ms', '100', '--max-tokens-default', '50', '--metrics-port', String(metricsPort)], {
      INFERGATE_CONFIG_FILE: configFile,
    }),
    startEngine(['--flavor', 'nim', '--startup-ms', '200', ...fast]),
    startEngine(['--flavor', 'nim', '--startup-ms', '200', '--replica-id', 'nim-1', ...fast], { REGISTRY_API_KEY: 'test-key' }),
    startEngine(['--flavor', 'ollama', '--pull-ms', '400', ...fast]),
  ]);
});

describe('openai flavor', () => {
  it('answers /health 503 while the model loads, then 200, and says it is a simulator', async () => {
    expect(firstHealth).toBe(503);
    expect(firstChat).toEqual({
      status: 503,
      body: { error: { message: expect.stringContaining('loading'), type: 'server_error', param: null, code: null } },
    });
    await waitFor(async () => ((await status(`${openai.url}/health`)) === 200 ? true : undefined), 15_000, 'ready');
    const banner = openai.logs().find((l) => typeof l.msg === 'string' && l.msg.includes('SIMULATED openai inference server'));
    expect(banner).toBeDefined();
    expect(openai.output()).toContain('model loaded in');
    expect(openai.output()).toContain('(no model cache)');
    const models = (await (await fetch(`${openai.url}/v1/models`)).json()) as { data: Array<{ id: string; owned_by: string }> };
    expect(models.data).toEqual([expect.objectContaining({ id: 'sim/model', owned_by: 'infergate-simulator' })]);
  });

  it('serves the openai SDK: non-streamed, streamed with include_usage, n=2, deterministic text', async () => {
    await waitFor(async () => ((await status(`${openai.url}/health`)) === 200 ? true : undefined), 15_000, 'ready');
    const client = new OpenAI({ baseURL: `${openai.url}/v1`, apiKey: 'not-checked', maxRetries: 0 });

    const plain = await client.chat.completions.create({ model: 'sim/model', messages: question, max_tokens: 8 });
    expect(plain.system_fingerprint).toBe('replica-a');
    expect(plain.choices).toHaveLength(1);
    expect(plain.choices[0]!.message.role).toBe('assistant');
    expect(plain.choices[0]!.finish_reason).toBe('length');
    expect(plain.usage).toEqual({ prompt_tokens: 9 + 4, completion_tokens: 8, total_tokens: 21 });

    const again = await client.chat.completions.create({ model: 'sim/model', messages: question, max_tokens: 8 });
    expect(again.choices[0]!.message.content).toBe(plain.choices[0]!.message.content);

    const stream = await client.chat.completions.create({
      model: 'sim/model',
      messages: question,
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(plain.usage);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.every((c) => c.system_fingerprint === 'replica-a' && c.id === chunks[0]!.id)).toBe(true);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(plain.choices[0]!.message.content);
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'length')).toBe(true);

    const two = await client.chat.completions.create({ model: 'sim/model', messages: question, n: 2 });
    expect(two.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(two.choices[0]!.message.content).not.toBe(two.choices[1]!.message.content);

    await expect(client.chat.completions.create({ model: 'other', messages: question })).rejects.toMatchObject({
      status: 404,
      message: expect.stringContaining('The model `other` does not exist.'),
    });
  });
});

describe('scheduler across requests', () => {
  it('with --max-running 1, two concurrent requests show running 1 and waiting 1', async () => {
    const aborts = [new AbortController(), new AbortController()];
    const requests = aborts.map((a) =>
      fetch(`${queue.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim/model', messages: question }),
        signal: a.signal,
      }).catch(() => null),
    );
    await waitFor(
      async () => {
        const [running, waiting] = await Promise.all([gauge(queue.url, 'vllm:num_requests_running'), gauge(queue.url, 'vllm:num_requests_waiting')]);
        return running === 1 && waiting === 1;
      },
      15_000,
      'one running and one waiting',
    );
    // The same gauges on the separate --metrics-port listener.
    const extra = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(extra).toContain('vllm:num_requests_waiting{model_name="sim/model",engine="0"} 1');
    for (const a of aborts) a.abort();
    await Promise.all(requests);
    // Aborted clients free their slot and leave the queue.
    await waitFor(async () => ((await gauge(queue.url, 'vllm:num_requests_running')) === 0 ? true : undefined), 15_000, 'slots freed');
    expect(await gauge(queue.url, 'vllm:num_requests_waiting')).toBe(0);
  });

  it('logs the mounted config file with its size', () => {
    const line = queue.logs().find((l) => l.config_file === configFile);
    expect(line).toMatchObject({ bytes: 18 });
  });
});

describe('nim flavor', () => {
  it('without REGISTRY_API_KEY stays live, never ready, and logs why', async () => {
    expect(await status(`${nimNoKey.url}/v1/health/live`)).toBe(200);
    // The load gives up at once and for good (state failed): once it said so, ready never comes.
    const error = await waitFor(() => nimNoKey.logs().find((l) => l.level === 50), 15_000, 'the load to fail');
    expect(String(error.msg)).toContain('REGISTRY_API_KEY');
    const ready = await fetch(`${nimNoKey.url}/v1/health/ready`);
    expect(ready.status).toBe(503);
  });

  it('with REGISTRY_API_KEY becomes ready and serves chat completions', async () => {
    expect(await (await fetch(`${nimKey.url}/v1/health/live`)).json()).toEqual({ object: 'health.response', message: 'Service is live', status: 'live' });
    await waitFor(async () => ((await status(`${nimKey.url}/v1/health/ready`)) === 200 ? true : undefined), 15_000, 'nim ready');
    expect(await (await fetch(`${nimKey.url}/v1/health/ready`)).json()).toMatchObject({ object: 'health.response', status: 'ready' });
    const client = new OpenAI({ baseURL: `${nimKey.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const reply = await client.chat.completions.create({ model: 'sim/model', messages: question });
    expect(reply.system_fingerprint).toBe('nim-1');
    expect(reply.choices[0]!.message.content).toMatch(/\w/);
    expect(await (await fetch(`${nimKey.url}/v1/version`)).json()).toHaveProperty('release');
  });

  it('drains and exits 0 on SIGTERM', async () => {
    nimKey.child.kill('SIGTERM');
    expect(await nimKey.exited).toEqual({ code: 0, signal: null });
    expect(nimKey.output()).toContain('SIGTERM received');
  });
});

describe('ollama flavor', () => {
  it('is up at once, refuses chat before pull, pulls with NDJSON progress, then chats in NDJSON', async () => {
    const home = await fetch(`${ollama.url}/`);
    expect(await home.text()).toBe('Ollama is running');

    const early = await fetch(`${ollama.url}/api/chat`, { method: 'POST', body: JSON.stringify({ model: 'llama3.2', messages: question }) });
    expect(early.status).toBe(404);
    expect(await early.json()).toEqual({ error: 'model "llama3.2" not found, try pulling it first' });

    const pull = await fetch(`${ollama.url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: 'llama3.2' }) });
    expect(pull.headers.get('content-type')).toBe('application/x-ndjson');
    const progress = ndjson(await pull.text());
    expect(progress[0]).toEqual({ status: 'pulling manifest' });
    const layer = progress.filter((p) => /^pulling [0-9a-f]{12}$/.test(String(p.status)));
    expect(layer.length).toBeGreaterThan(3);
    expect(layer.some((p) => typeof p.completed === 'number' && typeof p.total === 'number' && String(p.digest).startsWith('sha256:'))).toBe(true);
    expect(progress.map((p) => p.status).slice(-3)).toEqual(['verifying sha256 digest', 'writing manifest', 'success']);

    const tags = (await (await fetch(`${ollama.url}/api/tags`)).json()) as { models: Array<{ name: string }> };
    expect(tags.models.map((m) => m.name)).toEqual(['llama3.2:latest']);

    const chat = await fetch(`${ollama.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'llama3.2:latest', messages: question, options: { num_predict: 5 } }),
    });
    expect(chat.status).toBe(200);
    const lines = ndjson(await chat.text());
    const final = lines.at(-1)!;
    expect(lines.slice(0, -1).every((l) => l.done === false)).toBe(true);
    expect(final).toMatchObject({ model: 'llama3.2:latest', done: true, done_reason: 'length', eval_count: 5, prompt_eval_count: 13 });
    expect(typeof final.total_duration).toBe('number');
    expect(String(final.created_at)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    expect(lines.slice(0, -1).map((l) => (l.message as { content: string }).content)).toHaveLength(5);

    const client = new OpenAI({ baseURL: `${ollama.url}/v1`, apiKey: 'ollama', maxRetries: 0 });
    const viaV1 = await client.chat.completions.create({ model: 'llama3.2', messages: question, max_tokens: 5 });
    expect(viaV1.choices[0]!.message.content).toBe(lines.map((l) => (l.message as { content: string }).content).join(''));
  });
});

describe('model cache', () => {
  it('a second engine on the same cache dir loads warm and becomes ready faster', async () => {
    const cacheDir = path.join(root, 'cache');
    const readyAfter = async (p: EngineProcess) => {
      await waitFor(async () => ((await status(`${p.url}/health`)) === 200 ? true : undefined), 15_000, 'ready');
      return performance.now() - p.listeningAt;
    };
    const args = ['--startup-ms', '1500', '--warm-load-ratio', '0.1', '--model', 'org/cached-model', '--cache-dir', cacheDir];
    const cold = await startEngine(args);
    const coldMs = await readyAfter(cold);
    expect(cold.logs().find((l) => l.cache === 'cold')?.msg).toMatch(/^model cache cold: downloaded org\/cached-model into .*org__cached-model in \d+ ms$/);

    const warm = await startEngine(args);
    const warmMs = await readyAfter(warm);
    expect(warm.logs().find((l) => l.cache === 'warm')?.msg).toMatch(/^model cache warm: loaded org\/cached-model from .* in \d+ ms$/);
    expect(warmMs).toBeLessThan(coldMs);
  });
});

describe('command line', () => {
  it('rejects an unknown flavor in one line with exit code 1', async () => {
    const p = spawnEngine(['--flavor', 'tgi']);
    expect((await p.exited).code).toBe(1);
    expect(p.output()).toMatch(/^infergate engine: error: --flavor must be openai, ollama, nim or v2, not "tgi".*\n$/);
  });
});
