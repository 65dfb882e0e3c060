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
import { topLevelMembers } from '../balancer/json-scan.js';

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

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

function skipSpace(t: string, i: number): number {
  while (i < t.length && isSpace(t.charCodeAt(i))) i++;
  return i;
}

/** The index after the string that opens at `i`, or -1. */
function stringEnd(t: string, i: number): number {
  for (let j = i + 1; j < t.length; j++) {
    const c = t.charCodeAt(j);
    if (c === 0x5c) j++;
    else if (c === 0x22) return j + 1;
  }
  return -1;
}

/** The index after the JSON value that starts at `i`, or -1. */
function valueEnd(t: string, i: number): number {
  const c = t.charCodeAt(i);
  if (c === 0x22) return stringEnd(t, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < t.length; j++) {
      const d = t.charCodeAt(j);
      if (d === 0x22) {
        j = stringEnd(t, j) - 1;
        if (j < 0) return -1;
      } else if (d === 0x7b || d === 0x5b) depth++;
      else if ((d === 0x7d || d === 0x5d) && --depth === 0) return j + 1;
    }
    return -1;
  }
  let j = i;
  while (j < t.length) {
    const d = t.charCodeAt(j);
    if (d === 0x2c || d === 0x7d || d === 0x5d || isSpace(d)) break;
    j++;
  }
  return j > i ? j : -1;
}

function keyIs(raw: string, key: string): boolean {
  if (raw === `"${key}"`) return true;
  if (!raw.includes('\\')) return false;
  try {
    return JSON.parse(raw) === key;
  } catch {
    return false;
  }
}

/**
 * `body` (a JSON object) with its top-level member `key` set to `value` (JSON text): the last
 * such member's value replaced — the one JSON.parse and engines keep — or the member added
 * after the last one. Null when the body is not an object. Scanned as latin1, so string
 * indices are byte offsets; JSON's structural characters are all ASCII.
 */
export function withMember(body: Buffer, key: string, value: string): Buffer | null {
  const t = body.toString('latin1');
  let i = skipSpace(t, 0);
  if (t.charCodeAt(i) !== 0x7b) return null;
  i = skipSpace(t, i + 1);
  let member: [number, number] | null = null;
  let lastEnd = -1;
  if (t.charCodeAt(i) !== 0x7d) {
    for (;;) {
      if (t.charCodeAt(i) !== 0x22) return null;
      const nameEnd = stringEnd(t, i);
      if (nameEnd < 0) return null;
      const name = t.slice(i, nameEnd);
      i = skipSpace(t, nameEnd);
      if (t.charCodeAt(i) !== 0x3a) return null;
      i = skipSpace(t, i + 1);
      const end = valueEnd(t, i);
      if (end < 0) return null;
      if (keyIs(name, key)) member = [i, end];
      lastEnd = end;
      i = skipSpace(t, end);
      const c = t.charCodeAt(i);
      if (c === 0x2c) {
        i = skipSpace(t, i + 1);
        continue;
      }
      if (c === 0x7d) break;
      return null;
    }
  }
  const insert = Buffer.from(member ? value : `${lastEnd === -1 ? '' : ','}"${key}":${value}`, 'utf8');
  const [from, to] = member ?? (lastEnd === -1 ? [i, i] : [lastEnd, lastEnd]);
  return Buffer.concat([body.subarray(0, from), insert, body.subarray(to)]);
}
