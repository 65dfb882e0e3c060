// Owns what the gateway does to an OpenAI-style completion request (`POST …/v1/chat/completions`
// or `…/v1/completions`) on its way to a replica, so that every answer can be counted: a
// streamed one (`"stream": true`) whose client did not ask for usage gets
// `stream_options.include_usage: true` added to its JSON body — the engine then ends the
// stream with a usage event, which sse-usage.ts reads and removes — and every one can have its
// prompt tokens estimated when the answer reports no usage (usage-scan.ts has the rule).
//
// Only a body the gateway holds whole (sized, up to 1 MiB: request-body.ts) is rewritten; a
// streamed body goes on untouched. The rewrite is a splice of the client's bytes, never a
// re-serialisation: numbers, key order, escapes and duplicate keys stay as the client sent
// them, and only the top-level `stream_options` member is replaced (or one added at the end).

import { BodyGate, type Body } from './request-body.js';
import { CHARS_PER_TOKEN, type Estimation } from './usage-scan.js';
import { nameIs, topLevelMembers, walkMembers } from '../balancer/json-scan.js';

const COMPLETION_PATHS = ['/v1/chat/completions', '/v1/completions'];
const STREAM_MARK = Buffer.from('"stream"', 'latin1');
const STREAM_KEY = ['stream'] as const;
const TRUE = Buffer.from('true', 'latin1');

/** A member's raw value is the JSON literal true. */
const isTrue = (value: Buffer | undefined): boolean => value !== undefined && value.equals(TRUE);

export interface CompletionExchange extends Estimation {
  /** The body to forward: the client's, or the rewritten one (Content-Length must follow it). */
  body: Body;
  /** The gateway added `include_usage`: the stream's usage event is not the client's. */
  injected: boolean;
  /** The request's `model`, parsed on first call (for traces only: a large prompt costs a parse); absent: body not held. */
  model?: () => string | null;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A POST to a chat completions or completions path (any prefix before `/v1`, no query). */
export function isCompletionRequest(method: string | undefined, path: string): boolean {
  if (method !== 'POST') return false;
  const query = path.indexOf('?');
  const bare = query === -1 ? path : path.slice(0, query);
  return COMPLETION_PATHS.some((p) => bare.endsWith(p));
}

/**
 * The request as it goes to the replica, or null when it is no completion request. A streamed
 * request whose `stream_options.include_usage` is not true is rewritten to ask for usage.
 */
export function completionExchange(method: string | undefined, path: string, body: Body): CompletionExchange | null {
  if (!isCompletionRequest(method, path) || body === null) return null;
  if (body instanceof BodyGate) {
    // Not held, so not parsed: its size stands for the prompt (a body this large is mostly prompt).
    return { body, injected: false, promptTokens: () => Math.ceil(body.bytesReceived / CHARS_PER_TOKEN) };
  }
  let parsed: unknown;
  let read = false;
  const request = (): unknown => {
    if (!read) {
      read = true;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
    }
    return parsed;
  };
  const promptTokens = (): number => {
    const r = request();
    return isRecord(r) ? estimatePromptTokens(r) : Math.ceil(body.length / CHARS_PER_TOKEN);
  };
  const model = (): string | null => {
    const r = request();
    return isRecord(r) && typeof r.model === 'string' ? r.model : null;
  };
  // Most requests are not streamed: a substring search spares them the scan, and the scan the
  // parse (a 200 KB prompt with "stream": false is not parsed at all).
  if (body.indexOf(STREAM_MARK) !== -1 && isTrue(topLevelMembers(body, STREAM_KEY)?.stream)) {
    const r = request();
    const options = isRecord(r) && r.stream === true ? usageOptions(r.stream_options) : null;
    const rewritten = options === null ? null : withMember(body, 'stream_options', JSON.stringify(options));
    if (rewritten) return { body: rewritten, injected: true, promptTokens, model };
  }
  return { body, injected: false, promptTokens, model };
}

/**
 * The `stream_options` to send so the stream ends with its usage, or null when the client
 * asked for it already (or sent something the engine will refuse anyway). vLLM's
 * `continuous_usage_stats` puts usage on every chunk once `include_usage` is on; a client that
 * set it without `include_usage` got none, so it is turned off with it.
 */
export function usageOptions(options: unknown): Record<string, unknown> | null {
  if (options === undefined || options === null) return { include_usage: true };
  if (!isRecord(options) || options.include_usage === true) return null;
  const out: Record<string, unknown> = { ...options, include_usage: true };
  if (options.continuous_usage_stats === true) out.continuous_usage_stats = false;
  return out;
}

/**
 * Estimated prompt tokens of a request: one per CHARS_PER_TOKEN characters of its messages'
 * text (string contents and text parts) or of a completion's `prompt` strings; a prompt given
 * as token ids counts one per id.
 */
export function estimatePromptTokens(request: Record<string, unknown>): number {
  let chars = 0;
  let ids = 0;
  const { messages, prompt } = request;
  if (Array.isArray(messages)) {
    for (const m of messages) {
      if (!isRecord(m)) continue;
      if (typeof m.content === 'string') chars += m.content.length;
      else if (Array.isArray(m.content)) {
        for (const part of m.content) if (isRecord(part) && typeof part.text === 'string') chars += part.text.length;
      }
    }
  } else if (typeof prompt === 'string') {
    chars = prompt.length;
  } else if (Array.isArray(prompt)) {
    for (const p of prompt) {
      if (typeof p === 'string') chars += p.length;
      else if (typeof p === 'number') ids++;
      else if (Array.isArray(p)) ids += p.length;
    }
  }
  return Math.ceil(chars / CHARS_PER_TOKEN) + ids;
}

/**
 * `body` (a JSON object) with its top-level member `key` set to `value` (JSON text): the last
 * such member's value replaced — the one JSON.parse and engines keep — or the member added
 * after the last one. Null when the body is not an object (balancer/json-scan.ts walks it).
 */
export function withMember(body: Buffer, key: string, value: string): Buffer | null {
  let member: [number, number] | null = null;
  const walked = walkMembers(body, (rawName, start, end) => {
    if (nameIs(rawName, key)) member = [start, end];
  });
  if (walked === null) return null;
  const found = member as [number, number] | null;
  const { close, lastEnd } = walked;
  const insert = Buffer.from(found ? value : `${lastEnd === -1 ? '' : ','}"${key}":${value}`, 'utf8');
  const [from, to] = found ?? (lastEnd === -1 ? [close, close] : [lastEnd, lastEnd]);
  return Buffer.concat([body.subarray(0, from), insert, body.subarray(to)]);
}
