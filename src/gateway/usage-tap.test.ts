import { describe, expect, it } from 'vitest';
import { usageTapFor } from './usage-tap.js';

const feed = (contentType: string, parts: string[]) => {
  const tap = usageTapFor(contentType);
  if (!tap) return 'no tap';
  for (const p of parts) tap.push(Buffer.from(p));
  return tap.finish();
};

describe('usage tap', () => {
  const plain = JSON.stringify({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 } });
  const chunk = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
  const stream = [
    chunk({ choices: [{ delta: { content: 'a' } }], usage: null }),
    chunk({ choices: [{ delta: { content: 'b' } }], usage: null }),
    chunk({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } }),
    'data: [DONE]\n\n',
  ].join('');

  it.each([
    ['a plain JSON body', 'application/json', [plain], { prompt: 12, completion: 30, cached: 0 }],
    ['a JSON body split across chunks', 'application/json; charset=utf-8', [plain.slice(0, 9), plain.slice(9, 40), plain.slice(40)], { prompt: 12, completion: 30, cached: 0 }],
    ['the include_usage chunk of a stream', 'text/event-stream', [stream], { prompt: 5, completion: 2, cached: 0 }],
    ['a stream cut at every byte', 'text/event-stream', [...stream], { prompt: 5, completion: 2, cached: 0 }],
    ['CRLF line ends', 'text/event-stream', [stream.replaceAll('\n', '\r\n')], { prompt: 5, completion: 2, cached: 0 }],
    ['a stream without usage', 'text/event-stream', [chunk({ choices: [], usage: null }), 'data: [DONE]\n\n'], null],
    ['JSON without usage', 'application/json', ['{"object":"list","data":[]}'], null],
    ['a body that is not JSON', 'application/json', ['{"usage": nope'], null],
    // vLLM's order: the details object after completion_tokens, or (other servers) before it.
    ['cached tokens (prompt_tokens_details)', 'application/json', [JSON.stringify({ usage: { prompt_tokens: 40, total_tokens: 45, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 32 } } })], { prompt: 40, completion: 5, cached: 32 }],
    ['cached tokens before completion_tokens', 'text/event-stream', [chunk({ choices: [], usage: { prompt_tokens: 40, prompt_tokens_details: { cached_tokens: 16 }, completion_tokens: 5 } })], { prompt: 40, completion: 5, cached: 16 }],
    ['a final line without a newline', 'text/event-stream', [chunk({ choices: [] }), `data: ${JSON.stringify({ usage: { prompt_tokens: 1, completion_tokens: 1 } })}`], { prompt: 1, completion: 1, cached: 0 }],
  ])('reads %s', (_what, type, parts, expected) => {
    expect(feed(type, parts)).toEqual(expected);
  });

  it('ignores bodies that cannot carry usage', () => {
    expect(usageTapFor('text/plain')).toBeNull();
    expect(usageTapFor(undefined)).toBeNull();
  });
});
