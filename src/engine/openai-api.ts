// Owns the OpenAI-compatible surface of the engine (openai and nim flavors, and ollama's
// /v1): GET /v1/models and POST /v1/chat/completions in OpenAI's wire format —
// request validation, the non-streamed body with usage, SSE chunks with the same id and
// created on every chunk, the final usage chunk under stream_options.include_usage, and the
// replica id in system_fingerprint so a client can tell which replica answered.

import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { startGeneration, type ChoiceDelta, type Generation, type GenerationContext } from './generation.js';
import { BodyError, closed, readJsonBody, sendJson, sendOpenAIError } from '../protocol/http-io.js';
import type { KvHook } from './kv-worker.js';
import type { PrefillModel } from './prefix-cache.js';
import { countPromptTokens, generateCompletion, type Completion, type MessageLike } from './text.js';

export const OWNED_BY = 'infergate-simulator';
const ROLES = new Set(['developer', 'system', 'user', 'assistant', 'tool', 'function']);
const MAX_N = 128;

export interface ChatRequest {
  model: string;
  messages: MessageLike[];
  /** max_completion_tokens, else max_tokens; null when the request gives neither. */
  maxTokens: number | null;
  n: number;
  stream: boolean;
  includeUsage: boolean;
  /** vLLM's extension: generate exactly the token cap, never stopping on its own. */
  ignoreEos: boolean;
  /** vLLM's disaggregated-serving extension; null when absent. */
  kvTransferParams: Record<string, unknown> | null;
}

export type ParseResult = { ok: true; request: ChatRequest } | { ok: false; message: string; param: string | null };

/** Which model answers a request, or why none can (unknown model, still loading, …). */
export type ModelResolution =
  | { ok: true; model: string; label: string }
  | { ok: false; status: number; message: string; code: string | null };

export interface ModelCard {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  root: string;
  parent: null;
  description: string;
}

export interface OpenAIContext extends GenerationContext {
  replicaId: string;
  maxTokensDefault: number;
  resolve(model: string): ModelResolution;
  models(): ModelCard[];
  /** False while draining for shutdown: new work gets 503. */
  accepting(): boolean;
  /** The KV transfer connector (--kv-role prefill|decode); absent: kv_transfer_params is refused. */
  kv?: KvHook;
  /** Prefix caching and prefill cost (prefix-cache.ts); absent: ttft-ms alone, no cached tokens. */
  prefill?: PrefillModel;
}

export function modelCard(id: string, created: number): ModelCard {
  return {
    id,
    object: 'model',
    created,
    owned_by: OWNED_BY,
    root: `${OWNED_BY}/${id}`,
    parent: null,
    description: 'Simulated model served by the infergate reference engine: no GPU, no real weights, deterministic text.',
  };
}

export function handleModels(res: http.ServerResponse, ctx: OpenAIContext): void {
  sendJson(res, 200, { object: 'list', data: ctx.models() });
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const absent = (v: unknown): boolean => v === undefined || v === null;

function optionalInteger(body: Record<string, unknown>, key: string, min: number, max: number): number | null | string {
  const v = body[key];
  if (absent(v)) return null;
  if (typeof v !== 'number' || !Number.isInteger(v)) return `'${key}' must be an integer`;
  if (v < min || v > max) return `'${key}' must be between ${min} and ${max}, got ${v}`;
  return v;
}

function numberInRange(body: Record<string, unknown>, key: string, min: number, max: number): string | null {
  const v = body[key];
  if (absent(v)) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) return `'${key}' must be a number`;
  if (v < min || v > max) return `'${key}' must be between ${min} and ${max}, got ${v}`;
  return null;
}

function checkMessage(m: unknown, i: number): string | null {
  if (!isObject(m)) return `'messages[${i}]' must be an object`;
  if (typeof m.role !== 'string' || !ROLES.has(m.role)) {
    return `'messages[${i}].role' must be one of ${[...ROLES].join(', ')}`;
  }
  const content = m.content;
  if (typeof content === 'string') return null;
  if (Array.isArray(content)) {
    const bad = content.findIndex((p) => !isObject(p) || typeof p.type !== 'string');
    return bad < 0 ? null : `'messages[${i}].content[${bad}]' must be an object with a 'type'`;
  }
  if (absent(content) && m.role === 'assistant') return null;
  return `'messages[${i}].content' must be a string or an array of content parts`;
}

/** Validates a chat completion request body against OpenAI's request schema. */
export function parseChatRequest(body: unknown): ParseResult {
  const fail = (message: string, param: string | null): ParseResult => ({ ok: false, message, param });
  if (!isObject(body)) return fail('the request body must be a JSON object', null);
  if (typeof body.model !== 'string' || body.model === '') return fail("'model' is required and must be a non-empty string", 'model');
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return fail("'messages' is required and must be a non-empty array", 'messages');
  }
  for (let i = 0; i < body.messages.length; i++) {
    const problem = checkMessage(body.messages[i], i);
    if (problem) return fail(problem, `messages[${i}]`);
  }
  const maxTokens = optionalInteger(body, 'max_tokens', 1, 1_000_000);
  if (typeof maxTokens === 'string') return fail(maxTokens, 'max_tokens');
  const maxCompletion = optionalInteger(body, 'max_completion_tokens', 1, 1_000_000);
  if (typeof maxCompletion === 'string') return fail(maxCompletion, 'max_completion_tokens');
  const n = optionalInteger(body, 'n', 1, MAX_N);
  if (typeof n === 'string') return fail(n, 'n');
  if (!absent(body.stream) && typeof body.stream !== 'boolean') return fail("'stream' must be a boolean", 'stream');
  const stream = body.stream === true;
  let includeUsage = false;
  if (!absent(body.stream_options)) {
    if (!isObject(body.stream_options)) return fail("'stream_options' must be an object", 'stream_options');
    if (!stream) return fail("'stream_options' is only allowed when 'stream' is true", 'stream_options');
    const iu = body.stream_options.include_usage;
    if (!absent(iu) && typeof iu !== 'boolean') return fail("'stream_options.include_usage' must be a boolean", 'stream_options');
    includeUsage = iu === true;
  }
  if (!absent(body.kv_transfer_params) && !isObject(body.kv_transfer_params)) return fail("'kv_transfer_params' must be an object", 'kv_transfer_params');
  if (!absent(body.ignore_eos) && typeof body.ignore_eos !== 'boolean') return fail("'ignore_eos' must be a boolean", 'ignore_eos');
  for (const [key, min, max] of [
    ['temperature', 0, 2],
    ['top_p', 0, 1],
    ['presence_penalty', -2, 2],
    ['frequency_penalty', -2, 2],
  ] as const) {
    const problem = numberInRange(body, key, min, max);
    if (problem) return fail(problem, key);
  }
  return {
    ok: true,
    request: {
      model: body.model,
      messages: body.messages as MessageLike[],
      maxTokens: maxCompletion ?? maxTokens,
      n: n ?? 1,
      stream,
      includeUsage,
      ignoreEos: body.ignore_eos === true,
      kvTransferParams: isObject(body.kv_transfer_params) ? body.kv_transfer_params : null,
    },
  };
}

export async function handleChatCompletions(req: http.IncomingMessage, res: http.ServerResponse, ctx: OpenAIContext): Promise<void> {
  if (!ctx.accepting()) {
    sendOpenAIError(res, 503, 'the engine is shutting down', { headers: { 'retry-after': '1' } });
    return;
  }
  let body: unknown;
  try {
    body = await readJsonBody(req);
  } catch (err) {
    if (!(err instanceof BodyError)) throw err;
    sendOpenAIError(res, err.status, err.message);
    return;
  }
  const parsed = parseChatRequest(body);
  if (!parsed.ok) {
    sendOpenAIError(res, 400, parsed.message, { param: parsed.param });
    return;
  }
  const request = parsed.request;
  const resolved = ctx.resolve(request.model);
  if (!resolved.ok) {
    sendOpenAIError(res, resolved.status, resolved.message, {
      param: resolved.status === 404 ? 'model' : null,
      code: resolved.code,
      headers: resolved.status === 503 ? { 'retry-after': '1' } : {},
    });
    return;
  }
  const promptTokens = countPromptTokens(request.messages);
  let skipPrefill = false;
  let keepKv: (() => Record<string, unknown>) | null = null;
  if (request.kvTransferParams) {
    if (!ctx.kv) {
      sendOpenAIError(res, 400, "'kv_transfer_params' needs a KV transfer connector; this engine runs with --kv-role none", { param: 'kv_transfer_params' });
      return;
    }
    // A client that leaves while decode pulls the KV blocks cancels the pull.
    const gone = new AbortController();
    const onClose = () => gone.abort();
    res.once('close', onClose);
    const plan = await ctx.kv.prepare(request.kvTransferParams, { promptTokens, stream: request.stream, signal: gone.signal });
    res.off('close', onClose);
    if (closed(res)) return;
    if (!plan.ok) {
      sendOpenAIError(res, plan.status, plan.message, { param: plan.status === 400 ? 'kv_transfer_params' : null, code: plan.code });
      return;
    }
    skipPrefill = plan.skipPrefill;
    keepKv = plan.keep;
  }
  // A decode worker got its KV blocks from prefill: nothing to prefill or look up here.
  const prefill = skipPrefill ? undefined : ctx.prefill?.plan(request.messages, promptTokens);
  const maxTokens = request.maxTokens ?? ctx.maxTokensDefault;
  const completions = Array.from({ length: request.n }, (_, i) => generateCompletion(request.messages, i, maxTokens, request.ignoreEos));
  const reply: Reply = {
    id: `chatcmpl-${randomBytes(12).toString('hex')}`,
    created: Math.floor(Date.now() / 1000),
    model: resolved.model,
    fingerprint: ctx.replicaId,
    promptTokens,
    completions,
    skipPrefill,
    cachedTokens: prefill?.cachedTokens ?? null,
    prefillMs: prefill?.prefillMs ?? 0,
    prefilled: prefill ? () => prefill.done() : () => undefined,
  };
  if (request.stream) streamReply(res, ctx, resolved.label, reply, request.includeUsage);
  else bufferedReply(res, ctx, resolved.label, reply, keepKv);
}

interface Reply {
  id: string;
  created: number;
  model: string;
  fingerprint: string;
  promptTokens: number;
  completions: Completion[];
  skipPrefill: boolean;
  /** Prompt tokens found in the prefix cache; null: caching is off (usage says nothing of it). */
  cachedTokens: number | null;
  prefillMs: number;
  prefilled(): void;
}

function usageOf(reply: Reply) {
  const completion = reply.completions.reduce((sum, c) => sum + c.tokens.length, 0);
  const usage: Record<string, unknown> = { prompt_tokens: reply.promptTokens, completion_tokens: completion, total_tokens: reply.promptTokens + completion };
  if (reply.cachedTokens !== null) usage.prompt_tokens_details = { cached_tokens: reply.cachedTokens };
  return usage;
}

function bufferedReply(res: http.ServerResponse, ctx: OpenAIContext, label: string, reply: Reply, keepKv: (() => Record<string, unknown>) | null): void {
  const generation = startGeneration(ctx, {
    model: label,
    completions: reply.completions,
    promptTokens: reply.promptTokens,
    skipPrefill: reply.skipPrefill,
    prefillMs: reply.prefillMs,
    onPrefilled: reply.prefilled,
    onStep: () => undefined,
    onFinish() {
      if (closed(res)) return;
      // Kept only for a client still there to hand the block ids on.
      const kv = keepKv ? { kv_transfer_params: keepKv() } : {};
      sendJson(res, 200, {
        id: reply.id,
        object: 'chat.completion',
        created: reply.created,
        model: reply.model,
        system_fingerprint: reply.fingerprint,
        choices: reply.completions.map((c, index) => ({
          index,
          message: { role: 'assistant', content: c.tokens.join(''), refusal: null },
          logprobs: null,
          finish_reason: c.finishReason,
        })),
        usage: usageOf(reply),
        ...kv,
      });
    },
  });
  abortWhenGone(res, generation);
}

function streamReply(res: http.ServerResponse, ctx: OpenAIContext, label: string, reply: Reply, includeUsage: boolean): void {
  // Headers go out at once (as vLLM's streaming response does); the first chunk comes with the first token.
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  const chunk = (choices: unknown[], usage?: unknown) => {
    const body: Record<string, unknown> = {
      id: reply.id,
      object: 'chat.completion.chunk',
      created: reply.created,
      model: reply.model,
      system_fingerprint: reply.fingerprint,
      choices,
    };
    if (includeUsage) body.usage = usage ?? null;
    return `data: ${JSON.stringify(body)}\n\n`;
  };
  const choice = (index: number, delta: Record<string, string>, finishReason: string | null) => ({
    index,
    delta,
    logprobs: null,
    finish_reason: finishReason,
  });
  const generation = startGeneration(ctx, {
    model: label,
    completions: reply.completions,
    promptTokens: reply.promptTokens,
    skipPrefill: reply.skipPrefill,
    prefillMs: reply.prefillMs,
    onPrefilled: reply.prefilled,
    onStep(step: number, deltas: ChoiceDelta[]) {
      if (closed(res)) return;
      let out = '';
      if (step === 0) {
        for (let i = 0; i < reply.completions.length; i++) out += chunk([choice(i, { role: 'assistant', content: '' }, null)]);
      }
      for (const d of deltas) {
        out += chunk([choice(d.index, { content: d.text }, null)]);
        if (d.finishReason !== null) out += chunk([choice(d.index, {}, d.finishReason)]);
      }
      res.write(out);
    },
    onFinish() {
      if (closed(res)) return;
      let out = '';
      if (includeUsage) out += chunk([], usageOf(reply));
      res.end(out + 'data: [DONE]\n\n');
    },
  });
  abortWhenGone(res, generation);
}

/**
 * A client that goes away aborts its generation (freeing the slot at once), including one that
 * left while its body was read. 'close' also follows a normal end; abort() is then a no-op.
 */
export function abortWhenGone(res: http.ServerResponse, generation: Generation): void {
  if (res.destroyed) generation.abort();
  else res.on('close', () => generation.abort());
}
