// Owns the byte-level reading that token accounting does on responses, without JSON.parse:
// the `usage` object of a chat completion or chunk (prompt, completion and cached tokens), and
// the generated text a response carries (counted to estimate completion tokens when no usage
// comes). Also the shape both sides share: TokenUsage, the UsageTap a forwarder feeds, and
// the estimate rule (docs/operations.md#token-usage).

export interface TokenUsage {
  prompt: number;
  completion: number;
  /** Prompt tokens the replica served from its prefix cache; 0 when it did not say. */
  cached: number;
  /**
   * Counted by the gateway (usage-tap.ts's rule) because the response reported none; absent
   * when the replica's `usage` said so.
   */
  estimated?: true;
}

/** Reads a response's token usage as its chunks go to the client. */
export interface UsageTap {
  /**
   * Looks at a chunk of the replica's body and returns the bytes to send the client now: the
   * chunk itself, or — for a stream whose usage chunk the gateway asked for — the chunk
   * without that event (an unfinished line waits for its end; it may be that event).
   */
  push(chunk: Buffer): Buffer;
  /** The replica's body ended: bytes still to send (a last line without a newline), or null. */
  end(): Buffer | null;
  /** The usage seen, once the response ended (or was cut); an estimate where it had none; null when nothing counts. */
  finish(): TokenUsage | null;
}

/** What a completion request lets the gateway estimate; null for other requests and non-2xx answers. */
export interface Estimation {
  /** Estimated prompt tokens of the request (computed only when needed). */
  promptTokens(): number;
}

/** Characters per token of the estimates: English text averages about four per token. */
export const CHARS_PER_TOKEN = 4;

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
 * Usage from the text of a chat completion or chunk: the `usage` object's counts. A scan
 * rather than JSON.parse of the whole body — parsing every response cost more CPU than the
 * rest of the usage accounting. The counts are read only inside the object that follows the
 * `"usage"` key (nested objects such as `prompt_tokens_details` included), and
 * `"usage": null` yields nothing.
 */
export function usageIn(text: string): TokenUsage | null {
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

/**
 * A string value of a key that holds generated text: chat `content` (message or delta), a
 * completion's `text`, reasoning models' `reasoning_content` / `reasoning`, and tool calls'
 * `arguments`. A key is matched with its quotes, so `"text"` never matches `"text_offset"`;
 * a quote inside a JSON string is always escaped, so text that merely mentions a key does not
 * count; values that are not strings (`"content": null`, logprobs' `"content": [...]`) do
 * not match. One regular expression over the text: measured cheaper than a search per key.
 */
const TEXT_VALUE = /"(?:content|text|reasoning_content|reasoning|arguments)"\s*:\s*"((?:[^"\\]|\\.)*)"/g;

/**
 * Generated text seen in a response: how many non-empty text values (a stream's deltas: about
 * one token each) and how many characters they hold (as JSON-escaped). The caller hands in
 * whole lines or a whole body, as latin1 text (one character per byte).
 */
export class GeneratedText {
  private deltas = 0;
  private chars = 0;

  add(text: string): void {
    TEXT_VALUE.lastIndex = 0;
    for (let m = TEXT_VALUE.exec(text); m !== null; m = TEXT_VALUE.exec(text)) {
      const length = m[1]!.length;
      if (length === 0) continue;
      this.deltas++;
      this.chars += length;
    }
  }

  /** The estimate: one token per delta, or one per CHARS_PER_TOKEN characters, whichever is more. */
  tokens(): number {
    return Math.max(this.deltas, Math.ceil(this.chars / CHARS_PER_TOKEN));
  }
}

/** The estimated usage of a response without one; null when neither side counts anything. */
export function estimatedUsage(estimation: Estimation | null, generated: GeneratedText): TokenUsage | null {
  if (estimation === null) return null;
  const prompt = estimation.promptTokens();
  const completion = generated.tokens();
  if (prompt === 0 && completion === 0) return null;
  return { prompt, completion, cached: 0, estimated: true };
}
