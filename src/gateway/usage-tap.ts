// Owns choosing how a response's token usage is read, and reading plain JSON bodies. Chat
// completions carry `usage: {prompt_tokens, completion_tokens}` (and, from servers with a
// prefix cache, `prompt_tokens_details: {cached_tokens}`) in a JSON body, or — for a stream
// with `stream_options.include_usage` — in the last `data:` event before `data: [DONE]`
// (sse-usage.ts; the gateway asks for that event on a client's behalf, completion-request.ts).
// A completion request answered 2xx without any usage (the engine sent none, the stream was
// cut) is estimated: prompt tokens from the request, completion tokens from the text that
// went by (usage-scan.ts). Anything else is ignored at the cost of one content-type check.

import { SseUsageTap } from './sse-usage.js';
import { estimatedUsage, GeneratedText, usageIn, type Estimation, type TokenUsage, type UsageTap } from './usage-scan.js';

export type { Estimation, TokenUsage, UsageTap } from './usage-scan.js';

/** Plain JSON bodies larger than this are not parsed for usage (chat responses are small). */
const MAX_JSON_BYTES = 1 << 20;

class JsonUsageTap implements UsageTap {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly estimation: Estimation | null) {}

  push(chunk: Buffer): Buffer {
    if (this.size <= MAX_JSON_BYTES) {
      this.chunks.push(chunk);
      this.size += chunk.length;
    }
    return chunk;
  }

  end(): null {
    return null;
  }

  finish(): TokenUsage | null {
    if (this.size === 0 || this.size > MAX_JSON_BYTES) return estimatedUsage(this.estimation, new GeneratedText());
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const text = body.toString('latin1');
    const usage = usageIn(text);
    if (usage || this.estimation === null) return usage;
    const generated = new GeneratedText();
    generated.add(text);
    return estimatedUsage(this.estimation, generated);
  }
}

/** A body the gateway cannot read (another type, or content-encoded): only the prompt is estimated. */
class OpaqueTap implements UsageTap {
  constructor(private readonly estimation: Estimation) {}
  push(chunk: Buffer): Buffer {
    return chunk;
  }
  end(): null {
    return null;
  }
  finish(): TokenUsage | null {
    return estimatedUsage(this.estimation, new GeneratedText());
  }
}

export interface TappedResponse {
  status: number;
  contentType: string | undefined;
  /** The response has a Content-Encoding other than identity: its bytes are not text. */
  encoded: boolean;
  /** The response has a Content-Length: its bytes must not change. */
  sized: boolean;
}

export interface TapRequest {
  /** The gateway asked for the stream's usage event: it is the gateway's to remove. */
  injected: boolean;
  /** The request is a completion whose usage can be estimated; null for any other request. */
  estimation: Estimation | null;
}

/** A tap for this response, or null when it cannot carry usage and nothing is estimated. */
export function usageTapFor(response: TappedResponse, request: TapRequest | null = null): UsageTap | null {
  const ok = response.status >= 200 && response.status < 300;
  // Only a completion answered 2xx is estimated: a refusal generated nothing.
  const estimation = ok ? (request?.estimation ?? null) : null;
  const type = response.contentType;
  if (type && !response.encoded) {
    if (type.includes('text/event-stream')) return new SseUsageTap({ filter: ok && !response.sized && request?.injected === true, estimation });
    if (type.includes('json')) return new JsonUsageTap(estimation);
  }
  return estimation ? new OpaqueTap(estimation) : null;
}
