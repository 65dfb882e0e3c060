// The engine server in-process on an ephemeral port: a client that goes away frees its slot
// at once, /metrics speaks vLLM's names (or is absent with --metrics false), unknown routes
// get JSON errors, and shutdown lets a running stream finish.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../test/helpers/ports.js';
import { parseEngineOptions } from './options.js';
import { createEngine, type Engine } from './server.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.shutdown('test')));
});

async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ engine: Engine; url: string }> {
  const options = parseEngineOptions(['--host', '127.0.0.1', '--port', '0', '--startup-ms', '0', '--shutdown-grace-ms', '2000', ...args], env);
  const engine = createEngine({ options, log: pino({ level: 'silent' }), env, release: '0.0.0-test' });
  engines.push(engine);
  const { port } = await engine.start();
  await engine.loaded;
  return { engine, url: `http://127.0.0.1:${port}` };
}

const chat = (url: string, body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim/model', messages: [{ role: 'user', content: 'hello' }], ...body }),
    signal,
  });

async function metric(url: string, series: string): Promise<number | null> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

const running = 'vllm:num_requests_running{model_name="sim/model",engine="0"}';
const waiting = 'vllm:num_requests_waiting{model_name="sim/model",engine="0"}';

async function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  await expect.poll(check, { timeout: ms, interval: 20 }).toBe(true);
}

describe('engine server', () => {
  it('frees the slot of a client that goes away and counts the abort', async () => {
    const { url } = await start(['--max-running', '1', '--ttft-ms', '0', '--itl-ms', '200', '--max-tokens-default', '50']);
    const abort = new AbortController();
    const res = await chat(url, { stream: true }, abort.signal);
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk: the sequence is running
    const queued = chat(url, { max_tokens: 1 });
    await until(async () => (await metric(url, waiting)) === 1);
    expect(await metric(url, running)).toBe(1);
    abort.abort();
    const second = await queued;
    expect(second.status).toBe(200);
    await second.json();
    expect(await metric(url, 'vllm:request_success_total{model_name="sim/model",engine="0",finished_reason="abort"}')).toBe(1);
    await until(async () => (await metric(url, running)) === 0);
  });

  it('exposes vLLM metric names with their buckets and says it is simulated', async () => {
    const { url } = await start(['--ttft-ms', '1', '--itl-ms', '1']);
    await (await chat(url, { max_tokens: 2, n: 2 })).json();
    const res = await fetch(`${url}/metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const text = await res.text();
    expect(text).toContain('# TYPE vllm:time_to_first_token_seconds histogram');
    expect(text).toContain('vllm:time_to_first_token_seconds_bucket{le="2560",model_name="sim/model",engine="0"} 1');
    expect(text).toContain('vllm:e2e_request_latency_seconds_bucket{le="7680",model_name="sim/model",engine="0"} 1');
    expect(text).toContain('vllm:generation_tokens_total{model_name="sim/model",engine="0"} 4');
    expect(text).toContain('vllm:prompt_tokens_total{model_name="sim/model",engine="0"} 5');
    expect(text).toContain('vllm:request_success_total{model_name="sim/model",engine="0",finished_reason="length"} 2');
    expect(text).toContain('infergate_engine_simulated{flavor="openai"} 1');
  });

  it('answers unknown routes and methods with JSON errors', async () => {
    const { url } = await start([]);
    const missing = await fetch(`${url}/v2/nothing`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toMatch(/no route/);
    const wrong = await fetch(`${url}/v1/chat/completions`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    const bad = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{nope' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { type: 'invalid_request_error', param: null, code: null } });
  });

  it('lets a running stream finish on shutdown, and refuses new work meanwhile', async () => {
    const { engine, url } = await start(['--ttft-ms', '0', '--itl-ms', '30', '--max-tokens-default', '10']);
    const res = await chat(url, { stream: true });
    const reader = res.body!.getReader();
    await reader.read();
    const stopped = engine.shutdown('SIGTERM');
    const late = await chat(url, { max_tokens: 1 }).then(
      (r) => r.status,
      () => 'refused',
    );
    expect([503, 'refused']).toContain(late);
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    await stopped;
  });

  it('with --metrics false exports nothing: /metrics answers 404 and --metrics-port never opens, while inference goes on', async () => {
    const port = await freePort();
    const withMetrics = await start(['--ttft-ms', '0', '--itl-ms', '0']);
    expect((await fetch(`${withMetrics.url}/metrics`)).status).toBe(200);
    const options = parseEngineOptions(['--host', '127.0.0.1', '--port', '0', '--startup-ms', '0', '--metrics', 'false', '--metrics-port', String(port), '--ttft-ms', '0', '--itl-ms', '0'], {});
    const engine = createEngine({ options, log: pino({ level: 'silent' }), env: {}, release: '0.0.0-test' });
    engines.push(engine);
    const address = await engine.start();
    await engine.loaded;
    expect(address.metricsPort).toBeNull();
    const url = `http://127.0.0.1:${address.port}`;
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/exports no metrics/);
    await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
    const answer = await chat(url, { max_tokens: 2 });
    expect(answer.status).toBe(200);
    await answer.json();
  });

  it('serves /v1/health/ready in every flavor', async () => {
    const openai = await start([]);
    expect((await fetch(`${openai.url}/v1/health/ready`)).status).toBe(200);
    const ollama = await start(['--flavor', 'ollama']);
    expect((await fetch(`${ollama.url}/v1/health/ready`)).status).toBe(200);
    const nim = await start(['--flavor', 'nim'], {});
    const ready = await fetch(`${nim.url}/v1/health/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ object: 'health.response', status: 'not_ready' });
  });

  describe('simulated prefix caching', () => {
    const system = { role: 'system', content: Array.from({ length: 200 }, (_, i) => `rule${i}`).join(' ') };
    const usageOf = async (res: Response) => ((await res.json()) as { usage: Record<string, unknown> }).usage;
    const streamedUsage = async (res: Response) => {
      const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: {'));
      return (JSON.parse(events.at(-1)!.slice(6)) as { usage: Record<string, unknown> }).usage;
    };

    it('serves a conversation\'s repeated prefix from cache, in responses, streams and metrics', async () => {
      const { url } = await start(['--enable-prefix-caching', 'true', '--block-size', '16', '--ttft-ms', '0', '--itl-ms', '0']);
      const first = await usageOf(await chat(url, { messages: [system, { role: 'user', content: 'hello there' }], max_tokens: 2 }));
      expect(first).toMatchObject({ prompt_tokens: 210, prompt_tokens_details: { cached_tokens: 0 } });
      const next = [system, { role: 'user', content: 'hello there' }, { role: 'assistant', content: 'hi' }, { role: 'user', content: 'more' }];
      const second = await usageOf(await chat(url, { messages: next, max_tokens: 2 }));
      // 210 tokens of the first prompt: 13 whole blocks of 16.
      expect(second).toMatchObject({ prompt_tokens: 220, prompt_tokens_details: { cached_tokens: 208 } });
      const streamed = await streamedUsage(await chat(url, { messages: next, max_tokens: 2, stream: true, stream_options: { include_usage: true } }));
      expect(streamed).toMatchObject({ prompt_tokens: 220, prompt_tokens_details: { cached_tokens: 208 } });

      const model = '{model_name="sim/model",engine="0"}';
      expect(await metric(url, `vllm:prefix_cache_queries_total${model}`)).toBe(210 + 220 + 220);
      expect(await metric(url, `vllm:prefix_cache_hits_total${model}`)).toBe(416);
      expect(await metric(url, `vllm:kv_cache_usage_perc${model}`)).toBeCloseTo(13 / 4096);
      expect(await (await fetch(`${url}/metrics`)).text()).toContain('vllm:cache_config_info{block_size="16",num_gpu_blocks="4096",enable_prefix_caching="True"} 1');
    });

    it('evicts at capacity: enough other prompts push the first one out', async () => {
      const { url } = await start(['--enable-prefix-caching', 'true', '--block-size', '16', '--kv-capacity-tokens', '512', '--ttft-ms', '0', '--itl-ms', '0']);
      const ask = (n: number) => chat(url, { messages: [{ role: 'user', content: Array.from({ length: 156 }, (_, i) => `p${n}w${i}`).join(' ') }], max_tokens: 1 });
      await usageOf(await ask(0));
      expect(await usageOf(await ask(0))).toMatchObject({ prompt_tokens_details: { cached_tokens: 160 } });
      for (let n = 1; n <= 3; n++) await usageOf(await ask(n)); // 4 × 10 blocks > 32
      expect(await usageOf(await ask(0))).toMatchObject({ prompt_tokens_details: { cached_tokens: 0 } });
    });

    it('says nothing of cached tokens, and exposes no prefix counters, when caching is off (the default)', async () => {
      const { url } = await start(['--ttft-ms', '0', '--itl-ms', '0']);
      const usage = await usageOf(await chat(url, { max_tokens: 1 }));
      expect(usage).not.toHaveProperty('prompt_tokens_details');
      const text = await (await fetch(`${url}/metrics`)).text();
      expect(text).not.toContain('vllm:prefix_cache_hits_total');
      expect(text).toContain('vllm:kv_cache_usage_perc{model_name="sim/model",engine="0"} 0');
    });

    it('makes an uncached prompt wait for its prefill (a lower bound: timers never fire early)', async () => {
      const { url } = await start(['--enable-prefix-caching', 'true', '--prefill-ms-per-token', '2', '--ttft-ms', '0', '--itl-ms', '0']);
      const body = { messages: [system], max_tokens: 1 };
      const t = performance.now();
      expect(await usageOf(await chat(url, body))).toMatchObject({ prompt_tokens: 204, prompt_tokens_details: { cached_tokens: 0 } });
      expect(performance.now() - t).toBeGreaterThanOrEqual(390); // 204 tokens × 2 ms
      // The second time only the last, partial block is prefilled.
      expect(await usageOf(await chat(url, body))).toMatchObject({ prompt_tokens_details: { cached_tokens: 192 } });
    });
  });
});
