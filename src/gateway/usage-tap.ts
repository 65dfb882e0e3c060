// Owns reading token usage out of responses as they stream past, without holding them back:
// every chunk is forwarded first and only looked at afterwards. Chat completions carry
// `usage: {prompt_tokens, completion_tokens}` (and, from servers with a prefix cache,
// `prompt_tokens_details: {cached_tokens}`) in a plain JSON body, or — for a stream with
// `stream_options.include_usage` — in the last `data:` event before `data: [DONE]`
// (the OpenAI chat completions format). Anything else is ignored at the cost of one content-type check.

export interface TokenUsage {
  prompt: number;
  completion: number;
  /** Prompt tokens the replica served from its prefix cache; 0 when it did not say. */
  cached: number;
}

export interface UsageTap {
  /** Looks at a chunk already sent to the client. */
  push(chunk: Buffer): void;
  /** The usage seen, once the response ended; null when there was none. */
  finish(): TokenUsage | null;
}

/** Plain JSON bodies larger than this are not parsed for usage (chat responses are small). */
const MAX_JSON_BYTES = 1 << 20;
const USAGE_MARK = '"usage"';

const PROMPT = /"prompt_tokens"\s*:\s*(\d+)/;
const COMPLETION = /"completion_tokens"\s*:\s*(\d+)/;
const CACHED = /"cached_tokens"\s*:\s*(\d+)/;

/** The end of the object that opens at `open` (its closing brace, or the text's end). */
function objectEnd(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b) depth++;
    else if (c === 0x7d && --depth === 0) return i + 1;
  }
  return text.length;
}

/**
 * Usage from the text of a chat completion or chunk: the `usage` object's two counts. A scan
 * rather than JSON.parse of the whole body — parsing every response cost more CPU than the
 * rest of the usage accounting. The counts are read only inside the object that follows the
 * `"usage"` key (nested objects such as `prompt_tokens_details` included), and
 * `"usage": null` yields nothing.
 */
function usageIn(text: string): TokenUsage | null {
  const at = text.lastIndexOf(USAGE_MARK);
  if (at === -1) return null;
  let i = at + USAGE_MARK.length;
  while (text[i] === ' ' || text[i] === ':' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r') i++;
  if (text[i] !== '{') return null;
  const object = text.slice(i, objectEnd(text, i));
  const p = PROMPT.exec(object);
  const c = COMPLETION.exec(object);
  if (!p && !c) return null;
  const cached = CACHED.exec(object);
  return { prompt: p ? Number(p[1]) : 0, completion: c ? Number(c[1]) : 0, cached: cached ? Number(cached[1]) : 0 };
}

class JsonUsageTap implements UsageTap {
  private chunks: Buffer[] = [];
  private size = 0;

  push(chunk: Buffer): void {
    if (this.size > MAX_JSON_BYTES) return;
    this.chunks.push(chunk);
    this.size += chunk.length;
  }

  finish(): TokenUsage | null {
    if (this.size === 0 || this.size > MAX_JSON_BYTES) return null;
    const text = this.chunks.length === 1 ? this.chunks[0]!.toString('latin1') : Buffer.concat(this.chunks).toString('latin1');
    return usageIn(text);
  }
}

/**
 * Scans SSE `data:` lines. Only the unfinished tail of the last line is kept between chunks,
 * and a line is parsed only when it mentions usage with an object value, so a long stream
 * costs a substring search per chunk.
 */
class SseUsageTap implements UsageTap {
  private tail = '';
  private found: TokenUsage | null = null;

  push(chunk: Buffer): void {
    const text = this.tail + chunk.toString('utf8');
    const lastNewline = text.lastIndexOf('\n');
    if (lastNewline === -1) {
      this.tail = text.length > MAX_JSON_BYTES ? '' : text;
      return;
    }
    this.tail = text.slice(lastNewline + 1);
    if (!text.includes(USAGE_MARK)) return;
    for (const line of text.slice(0, lastNewline).split('\n')) this.scanLine(line);
  }

  private scanLine(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!line.startsWith('data:') || !line.includes(USAGE_MARK)) return;
    const usage = usageIn(line);
    if (usage) this.found = usage;
  }

  finish(): TokenUsage | null {
    if (this.tail) this.scanLine(this.tail);
    return this.found;
  }
}

/** A tap for a response with this content type, or null when it cannot carry usage. */
export function usageTapFor(contentType: string | undefined): UsageTap | null {
  if (!contentType) return null;
  if (contentType.includes('text/event-stream')) return new SseUsageTap();
  if (contentType.includes('json')) return new JsonUsageTap();
  return null;
}
