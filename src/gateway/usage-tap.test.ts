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
    ['a plain JSON body', 'application/json', [plain], { prompt: 12, completion: 30 }],
    ['a JSON body split across chunks', 'application/json; charset=utf-8', [plain.slice(0, 9), plain.slice(9, 40), plain.slice(40)], { prompt: 12, completion: 30 }],
    ['the include_usage chunk of a stream', 'text/event-stream', [stream], { prompt: 5, completion: 2 }],
    ['a stream cut at every byte', 'text/event-stream', [...stream], { prompt: 5, completion: 2 }],
    ['CRLF line ends', 'text/event-stream', [stream.replaceAll('\n', '\r\n')], { prompt: 5, completion: 2 }],
    ['a stream without usage', 'text/event-stream', [chunk({ choices: [], usage: null }), 'data: [DONE]\n\n'], null],
    ['JSON without usage', 'application/json', ['{"object":"list","data":[]}'], null],
    ['a body that is not JSON', 'application/json', ['{"usage": nope'], null],
    ['a final line without a newline', 'text/event-stream', [chunk({ choices: [] }), `data: ${JSON.stringify({ usage: { prompt_tokens: 1, completion_tokens: 1 } })}`], { prompt: 1, completion: 1 }],
  ])('reads %s', (_what, type, parts, expected) => {
    expect(feed(type, parts)).toEqual(expected);
  });

  it('ignores bodies that cannot carry usage', () => {
    expect(usageTapFor('text/plain')).toBeNull();
    expect(usageTapFor(undefined)).toBeNull();
  });
});
