// The "Call it" snippets run as copied, against a real `infergate serve` (local runtime, the
// reference engine, the default domain): the platform CA from GET /ca.crt and a private
// endpoint's .pem saved beside them as the snippets name them, the curl snippet run by bash,
// the JavaScript one by node as its first line says (openai, and undici for a client certificate, from this checkout), the Python one
// compiled (the openai Python package is not installed here). Each sends the model the API
// announces as `served_model`, and the answers name it: an orchestrated deployment's served
// model name (not its model-hub id), a simulated vLLM's --served-model-name, the reference
// engine's own model. The token is read from ENDPOINT_TOKEN, or filled in when given; a
// private endpoint is called with its client certificate alone; `infergate describe` prints
// the same curl snippet.

import { spawn } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callSnippets, type Snippet, type SnippetDeployment } from '../src/domain/call-snippets.js';
import { engineBody, FAST_ENGINE, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from './helpers/platform.js';
import { spawnCli } from './helpers/serve-process.js';
import { runToEnd } from './helpers/child-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TOKEN = 'tok-snippets-0123456789';

let platform: Platform;
usePlatform('snippets', [], (p) => (platform = p));

let dir: string;
const ids: Record<string, { family: string; id: number }> = {};

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program in the snippets' directory to its end; its environment is `env` plus PATH and HOME only. */
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(command, args, { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return runToEnd(child);
}

async function view(name: string): Promise<SnippetDeployment & Record<string, unknown>> {
  const { family, id } = ids[name]!;
  return (await platform.call('GET', `/deployments/${family}/${id}`)).body;
}

async function create(family: string, body: Record<string, unknown>): Promise<void> {
  const res = await platform.call('POST', `/deployments/${family}`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  ids[body.name as string] = { family, id: res.body.id };
}

const snippet = (snippets: Snippet[], kind: Snippet['kind']): string => snippets.find((s) => s.kind === kind)!.text;

/** Runs the curl snippet with bash and reads its JSON answer. */
async function curlAnswer(text: string, env: Record<string, string>): Promise<{ model: string; choices: { message: { content: string } }[] }> {
  const r = await run('bash', ['-c', text], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/**
 * Writes the JavaScript snippet as an ES module beside the CA and runs it with node as its
 * first line says: with NODE_EXTRA_CA_CERTS when it names one.
 */
async function runJs(file: string, text: string, env: Record<string, string>): Promise<Run> {
  await writeFile(path.join(dir, file), text);
  const trust = /NODE_EXTRA_CA_CERTS=(\S+) node /.exec(text.split('\n')[0] ?? '');
  return run(process.execPath, [file], trust ? { ...env, NODE_EXTRA_CA_CERTS: path.join(dir, trust[1]!) } : env);
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-snippets-'));
  // The snippets import openai (and undici for a client certificate): this checkout's, as a user's project would have them.
  await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  await create('general', engineBody('chat', TOKEN));
  await create('general', { ...engineBody('vllm', TOKEN), image: 'vllm/vllm-openai', tag: 'latest', command: ['vllm', 'serve', 'org/vllm-model', '--served-model-name', 'vllm-alias', ...FAST_ENGINE] });
  await create('general', { ...engineBody('private', TOKEN), endpoint_bearer_token: undefined, private_endpoint: true });
  await create('orchestrated', {
    name: 'orch',
    cluster_id: 1,
    hardware_instance_id: 1,
    model: 'org/orch-model',
    served_model_name: 'orch-alias',
    endpoint_bearer_token: TOKEN,
    extra_args: FAST_ENGINE,
  });
  for (const name of Object.keys(ids)) {
    await vi.waitFor(
      async () => {
        const d = await view(name);
        if (d.status !== 'ready') throw new Error(`${name} is ${String(d.status)}: ${String(d.status_reason)}`);
      },
      { timeout: 60_000, interval: 200 },
    );
  }
  // The files the snippets name, saved as they name them.
  const ca = await platform.call('GET', '/ca.crt');
  expect(ca.status).toBe(200);
  await writeFile(path.join(dir, 'ca.crt'), String(ca.body));
  const priv = await view('private');
  const pem = await platform.call('GET', `/certificates/${String(priv.client_certificate_id)}/pem`);
  expect(pem.status).toBe(200);
  await writeFile(path.join(dir, 'private-client.pem'), String(pem.body));
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('GET /ca.crt', () => {
  it("is the platform CA's certificate, served without a key (what a snippet's first line fetches)", async () => {
    const res = await fetch(`${platform.apiUrl}/ca.crt`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/x-pem-file');
    const body = await res.text();
    expect(body).toBe(platform.ca);
    expect(body).not.toContain('PRIVATE KEY');
  });
});

describe('the snippets, run as copied', () => {
  it('general on the reference engine: curl answers for sim/model with ENDPOINT_TOKEN, or with the token filled in; JavaScript streams; Python compiles', async () => {
    const d = await view('chat');
    expect(d.served_model).toBe('sim/model');
    expect(d.endpoint_path_url).toBe(`https://localhost:${platform.ports.gateway}/endpoints/chat`);
    const snippets = callSnippets(d);

    const answer = await curlAnswer(snippet(snippets, 'curl'), { ENDPOINT_TOKEN: TOKEN });
    expect(answer.model).toBe('sim/model');
    expect(answer.choices[0]?.message.content).toBeTruthy();
    // Filled in: nothing in the environment.
    const filled = await curlAnswer(snippet(callSnippets(d, { token: TOKEN }), 'curl'), {});
    expect(filled.choices[0]?.message.content).toBeTruthy();
    // Without the variable the gateway refuses: the snippet really reads it.
    const r = await run('bash', ['-c', snippet(snippets, 'curl')]);
    expect(JSON.parse(r.stdout).error.message).toMatch(/this endpoint requires Authorization: Bearer <token>|bearer token is not valid/);

    const js = await runJs('chat.mjs', snippet(snippets, 'javascript'), { ENDPOINT_TOKEN: TOKEN });
    expect(js.code, js.stderr).toBe(0);
    expect(js.stdout.trim()).not.toBe('');

    await writeFile(path.join(dir, 'chat.py'), snippet(snippets, 'python'));
    const py = await run('python3', ['-m', 'py_compile', 'chat.py']);
    expect(py.code, py.stderr).toBe(0);
  });

  it("orchestrated: the served model name is what the snippets send and what the answers say, not the model-hub id", async () => {
    const d = await view('orch');
    expect(d.served_model).toBe('orch-alias');
    const snippets = callSnippets(d, { token: TOKEN });
    const answer = await curlAnswer(snippet(snippets, 'curl'), {});
    expect(answer.model).toBe('orch-alias');
    expect(answer.choices[0]?.message.content).toBeTruthy();
    // The JavaScript snippet, with the model logged from each streamed chunk.
    const js = snippet(snippets, 'javascript').replace("process.stdout.write(chunk.choices[0]?.delta?.content ?? '')", "process.stdout.write(`[${chunk.model}]`)");
    const streamed = await runJs('orch.mjs', js, {});
    expect(streamed.code, streamed.stderr).toBe(0);
    expect(streamed.stdout).toContain('[orch-alias]');
    expect(streamed.stdout).not.toContain('org/orch-model');
  });

  it('a simulated vLLM with --served-model-name answers under that name', async () => {
    const d = await view('vllm');
    expect(d.served_model).toBe('vllm-alias');
    const answer = await curlAnswer(snippet(callSnippets(d), 'curl'), { ENDPOINT_TOKEN: TOKEN });
    expect(answer.model).toBe('vllm-alias');
  });

  it('a private endpoint: curl and JavaScript present the client certificate and key, with no token', async () => {
    const d = await view('private');
    expect(d.endpoint_token_id).toBeNull();
    const snippets = callSnippets(d);
    expect(snippet(snippets, 'curl')).toContain('--cert private-client.pem');
    const answer = await curlAnswer(snippet(snippets, 'curl'), {});
    expect(answer.choices[0]?.message.content).toBeTruthy();
    const js = await runJs('private.mjs', snippet(snippets, 'javascript'), {});
    expect(js.code, js.stderr).toBe(0);
    expect(js.stdout.trim()).not.toBe('');
    await writeFile(path.join(dir, 'private.py'), snippet(snippets, 'python'));
    expect((await run('python3', ['-m', 'py_compile', 'private.py'])).code).toBe(0);
  });

  it('with the API origin known, the curl snippet fetches the CA itself: it answers from an empty directory', async () => {
    const d = await view('chat');
    const text = snippet(callSnippets(d, { apiUrl: platform.apiUrl }), 'curl');
    expect(text.split('\n').find((l) => !l.startsWith('#'))).toBe(`curl -sSfo ca.crt ${platform.apiUrl}/ca.crt`);
    const empty = await mkdtemp(path.join(os.tmpdir(), 'infergate-snippet-empty-'));
    try {
      const child = spawn('bash', ['-c', text], { cwd: empty, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ENDPOINT_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] });
      const r = await runToEnd(child);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).choices[0].message.content).toBeTruthy();
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('`infergate describe` prints the curl snippet, and it runs as printed', async () => {
    const child = spawnCli(['describe', 'chat'], { INFERGATE_API: platform.apiUrl, INFERGATE_KEY: PLATFORM_ADMIN_KEY, INFERGATE_CONFIG: path.join(dir, 'no-config.json'), NO_COLOR: '1' });
    let out = '';
    child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    const lines = out.split('\n');
    const start = lines.indexOf('Call it:');
    expect(start).toBeGreaterThan(0);
    const end = lines.indexOf('', start);
    const printed = lines.slice(start + 1, end).join('\n');
    expect(printed).toContain(`https://localhost:${platform.ports.gateway}/endpoints/chat/v1/chat/completions`);
    const answer = await curlAnswer(printed, { ENDPOINT_TOKEN: TOKEN });
    expect(answer.model).toBe('sim/model');
  });
});
