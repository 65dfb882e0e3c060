// Owns the ollama flavor: the server is up at once ("Ollama is running") and
// serves only models that were pulled; /api/pull streams NDJSON progress in Ollama's status
// order, /api/chat streams NDJSON ChatResponse lines ending in done:true, and a chat for a
// model not pulled fails as Ollama's does (404, "try pulling it first"). Names without a tag
// mean ":latest". A pull "downloads" for pull-ms, or pull-ms × warm-load-ratio when the model
// cache (or this process) already has the model, and fills the shared cache like a load does.

import { createHash } from 'node:crypto';
import type http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { startGeneration, type GenerationContext, type GenerationTimings } from './generation.js';
import { BodyError, closed, readJsonBody, sendJson } from '../protocol/http-io.js';
import { isCached, modelCacheDir, writeCacheEntry } from './model-loader.js';
import { abortWhenGone, modelCard, type ModelCard, type ModelResolution } from './openai-api.js';
import { MODEL_NAME_RE } from './options.js';
import { countPromptTokens, generateCompletion, type MessageLike } from './text.js';

/** What /api/version reports: an Ollama API level, marked as the simulator's. */
export const OLLAMA_VERSION = '0.12.0-infergate-simulator';
const PROGRESS_INTERVAL_MS = 60;
const NDJSON = 'application/x-ndjson';

export interface PulledModel {
  name: string;
  digest: string;
  size: number;
  modifiedAt: string;
}

/** `llama3.2` → `llama3.2:latest`; null when the name cannot be a model name. */
export function normalizeOllamaName(raw: string): string | null {
  const name = raw.trim();
  if (!MODEL_NAME_RE.test(name)) return null;
  const leaf = name.slice(name.lastIndexOf('/') + 1);
  if (leaf === '' || leaf.endsWith(':')) return null;
  return leaf.includes(':') ? name : `${name}:latest`;
}

interface Layer {
  digest: string;
  total: number;
}

/** The layers a pull "downloads": deterministic per name, sized like a small GGUF model. */
export function pullLayers(name: string): Layer[] {
  const digest = (part: string) => 'sha256:' + createHash('sha256').update(`infergate-simulator:${name}:${part}`).digest('hex');
  const seed = parseInt(digest('size').slice(7, 15), 16);
  return [
    { digest: digest('weights'), total: 1_000_000_000 + (seed % 3_000_000_000) },
    { digest: digest('template'), total: 1_429 },
    { digest: digest('license'), total: 7_711 },
    { digest: digest('params'), total: 96 },
  ];
}

/** Models this process has pulled (Ollama keeps them until removed; we keep them until exit). */
export class OllamaModels {
  private readonly pulled = new Map<string, PulledModel>();

  has(name: string): boolean {
    return this.pulled.has(name);
  }

  add(name: string): void {
    const layers = pullLayers(name);
    this.pulled.set(name, {
      name,
      digest: (layers[0]?.digest ?? '').slice(7),
      size: layers.reduce((sum, l) => sum + l.total, 0),
      modifiedAt: new Date().toISOString(),
    });
  }

  list(): PulledModel[] {
    return [...this.pulled.values()];
  }

  names(): string[] {
    return [...this.pulled.keys()];
  }

  cards(): ModelCard[] {
    return this.list().map((m) => modelCard(m.name, Math.floor(Date.parse(m.modifiedAt) / 1000)));
  }

  /** For the OpenAI-compatible /v1 routes: only pulled models answer. */
  resolve(requested: string): ModelResolution {
    const name = normalizeOllamaName(requested);
    if (name !== null && this.pulled.has(name)) return { ok: true, model: requested, label: name };
    return { ok: false, status: 404, message: notPulledMessage(requested), code: null };
  }
}

export function notPulledMessage(requested: string): string {
  return `model ${JSON.stringify(requested)} not found, try pulling it first`;
}

export interface OllamaContext extends GenerationContext {
  models: OllamaModels;
  cacheDir: string | null;
  pullMs: number;
  warmRatio: number;
  maxTokensDefault: number;
  accepting(): boolean;
  log: Logger;
  /** Registers work the shutdown drain waits for; call the returned function when it ends. */
  beginWork(): () => void;
}

/** Ollama's error shape: `{"error":"..."}` with a plain status. */
function ollamaError(res: http.ServerResponse, status: number, message: string): void {
  sendJson(res, status, { error: message });
}

/** RFC 3339 with nanoseconds, as Go's time.Time marshals (sub-millisecond digits from the monotonic clock). */
export function rfc3339Nano(date = new Date()): string {
  const sub = Math.floor((performance.now() % 1) * 1_000_000)
    .toString()
    .padStart(6, '0');
  return date.toISOString().replace(/\.(\d{3})Z$/, `.$1${sub}Z`);
}

async function readBody(req: http.IncomingMessage, res: http.ServerResponse): Promise<Record<string, unknown> | null> {
  try {
    const body = await readJsonBody(req);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      ollamaError(res, 400, 'request body must be a JSON object');
      return null;
    }
    return body as Record<string, unknown>;
  } catch (err) {
    if (!(err instanceof BodyError)) throw err;
    ollamaError(res, err.status, err.message);
    return null;
  }
}

export function handleRoot(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': 17 });
  res.end('Ollama is running');
}

export function handleVersion(res: http.ServerResponse): void {
  sendJson(res, 200, { version: OLLAMA_VERSION });
}

export function handleTags(res: http.ServerResponse, ctx: OllamaContext): void {
  sendJson(res, 200, {
    models: ctx.models.list().map((m) => ({
      name: m.name,
      model: m.name,
      modified_at: m.modifiedAt,
      size: m.size,
      digest: m.digest,
      details: {
        parent_model: '',
        format: 'gguf',
        family: 'infergate-simulator',
        families: ['infergate-simulator'],
        parameter_size: 'simulated',
        quantization_level: 'none',
      },
    })),
  });
}

export async function handlePull(req: http.IncomingMessage, res: http.ServerResponse, ctx: OllamaContext): Promise<void> {
  if (!ctx.accepting()) return ollamaError(res, 503, 'server is shutting down');
  const body = await readBody(req, res);
  if (body === null) return;
  const raw = typeof body.model === 'string' && body.model !== '' ? body.model : typeof body.name === 'string' ? body.name : '';
  if (raw === '') return ollamaError(res, 400, 'model is required');
  const name = normalizeOllamaName(raw);
  if (name === null) return ollamaError(res, 400, 'invalid model name');
  const stream = body.stream !== false;

  const dir = ctx.cacheDir === null ? null : modelCacheDir(ctx.cacheDir, name);
  const warm = ctx.models.has(name) || (dir !== null && (await isCached(dir)));
  const durationMs = warm ? ctx.pullMs * ctx.warmRatio : ctx.pullMs;
  const layers = pullLayers(name);
  const cancel = new AbortController();
  if (res.destroyed) cancel.abort();
  else res.on('close', () => cancel.abort());
  const endWork = ctx.beginWork();

  const line = (obj: unknown) => {
    if (stream && !closed(res)) res.write(JSON.stringify(obj) + '\n');
  };
  try {
    if (stream) {
      res.writeHead(200, { 'content-type': NDJSON });
      res.flushHeaders();
    }
    line({ status: 'pulling manifest' });
    const [weights, ...small] = layers as [Layer, ...Layer[]];
    const status = `pulling ${weights.digest.slice(7, 19)}`;
    line({ status, digest: weights.digest, total: weights.total });
    const started = performance.now();
    for (;;) {
      await sleep(Math.min(PROGRESS_INTERVAL_MS, durationMs), undefined, { signal: cancel.signal });
      const fraction = durationMs === 0 ? 1 : Math.min(1, (performance.now() - started) / durationMs);
      line({ status, digest: weights.digest, total: weights.total, completed: Math.floor(weights.total * fraction) });
      if (fraction >= 1) break;
    }
    for (const layer of small) {
      line({ status: `pulling ${layer.digest.slice(7, 19)}`, digest: layer.digest, total: layer.total, completed: layer.total });
    }
    line({ status: 'verifying sha256 digest' });
    line({ status: 'writing manifest' });
    if (dir !== null && !(await isCached(dir))) await writeCacheEntry(dir, name);
    ctx.models.add(name);
    const ms = Math.round(performance.now() - started);
    const cache = dir === null ? undefined : warm ? 'warm' : 'cold';
    if (cache === 'warm') ctx.log.info({ model: name, cache, dir, pull_ms: ms }, `model cache warm: pulled ${name} from ${dir} in ${ms} ms`);
    else if (cache === 'cold') ctx.log.info({ model: name, cache, dir, pull_ms: ms }, `model cache cold: pulled ${name} into ${dir} in ${ms} ms`);
    else ctx.log.info({ model: name, pull_ms: ms }, `pulled ${name} in ${ms} ms (no model cache)`);
    if (closed(res)) return;
    if (stream) res.end(JSON.stringify({ status: 'success' }) + '\n');
    else sendJson(res, 200, { status: 'success' });
  } catch (err) {
    if (cancel.signal.aborted) {
      ctx.log.info({ model: name }, `pull of ${name} cancelled: the client went away`);
      return; // Ollama drops the pull too
    }
    if (closed(res)) return;
    const message = `pull failed: ${(err as Error).message}`;
    if (res.headersSent) res.end(JSON.stringify({ error: message }) + '\n');
    else ollamaError(res, 500, message);
  } finally {
    endWork();
  }
}

function checkMessages(messages: unknown): string | null {
  if (messages === undefined || messages === null) return null;
  if (!Array.isArray(messages)) return 'messages must be an array';
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as { role?: unknown; content?: unknown } | null;
    if (m === null || typeof m !== 'object') return `messages[${i}] must be an object`;
    if (typeof m.role !== 'string') return `messages[${i}].role must be a string`;
    if (m.content !== undefined && typeof m.content !== 'string') return `messages[${i}].content must be a string`;
  }
  return null;
}

/** options.num_predict: >0 caps the answer, <0 means no cap (Ollama's "until done"), absent or 0 the default. */
function maxTokensOf(options: unknown, fallback: number): number | null | string {
  if (options === undefined || options === null) return fallback;
  if (typeof options !== 'object' || Array.isArray(options)) return 'options must be an object';
  const v = (options as { num_predict?: unknown }).num_predict;
  if (v === undefined || v === null || v === 0) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v)) return 'options.num_predict must be an integer';
  return v < 0 ? null : v;
}

const ns = (ms: number) => Math.max(0, Math.round(ms * 1_000_000));

function finalMetrics(t: GenerationTimings, promptTokens: number, evalCount: number) {
  const end = t.finishedAt ?? performance.now();
  const start = t.startedAt ?? t.arrivedAt;
  const first = t.firstTokenAt ?? end;
  return {
    total_duration: ns(end - t.arrivedAt),
    // Ollama counts waiting for the runner as load time; here that is waiting for a slot.
    load_duration: ns(start - t.arrivedAt),
    prompt_eval_count: promptTokens,
    prompt_eval_duration: ns(first - start),
    eval_count: evalCount,
    eval_duration: ns(end - first),
  };
}

export async function handleChat(req: http.IncomingMessage, res: http.ServerResponse, ctx: OllamaContext): Promise<void> {
  if (!ctx.accepting()) return ollamaError(res, 503, 'server is shutting down');
  const body = await readBody(req, res);
  if (body === null) return;
  if (typeof body.model !== 'string' || body.model === '') return ollamaError(res, 400, 'model is required');
  const requested = body.model;
  const name = normalizeOllamaName(requested);
  if (name === null || !ctx.models.has(name)) return ollamaError(res, 404, notPulledMessage(requested));
  const problem = checkMessages(body.messages);
  if (problem) return ollamaError(res, 400, problem);
  const maxTokens = maxTokensOf(body.options, ctx.maxTokensDefault);
  if (typeof maxTokens === 'string') return ollamaError(res, 400, maxTokens);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    return ollamaError(res, 400, 'stream must be a boolean');
  }
  const stream = body.stream !== false;
  const messages = (body.messages ?? []) as MessageLike[];
  const base = () => ({ model: requested, created_at: rfc3339Nano() });

  if (messages.length === 0) {
    // Ollama answers an empty chat by loading the model: one done line, reason "load".
    sendJson(res, 200, { ...base(), message: { role: 'assistant', content: '' }, done_reason: 'load', done: true });
    return;
  }
  const completion = generateCompletion(messages, 0, maxTokens);
  const promptTokens = countPromptTokens(messages);
  if (stream) {
    res.writeHead(200, { 'content-type': NDJSON });
    res.flushHeaders();
  }
  const generation = startGeneration(ctx, {
    model: name,
    completions: [completion],
    promptTokens,
    onStep(_step, deltas) {
      if (!stream || closed(res)) return;
      const out = deltas.map((d) => JSON.stringify({ ...base(), message: { role: 'assistant', content: d.text }, done: false }) + '\n');
      res.write(out.join(''));
    },
    onFinish() {
      if (closed(res)) return;
      const final = {
        ...base(),
        message: { role: 'assistant', content: stream ? '' : completion.tokens.join('') },
        done_reason: completion.finishReason,
        done: true,
        ...finalMetrics(generation.timings, promptTokens, completion.tokens.length),
      };
      if (stream) res.end(JSON.stringify(final) + '\n');
      else sendJson(res, 200, final);
    },
  });
  abortWhenGone(res, generation);
}
