import { describe, expect, it } from 'vitest';
import { usageTapFor, type TappedResponse } from './usage-tap.js';

const response = (contentType: string | undefined, more: Partial<TappedResponse> = {}): TappedResponse => ({ status: 200, contentType, encoded: false, sized: false, ...more });

const feed = (contentType: string, parts: string[]) => {
  const tap = usageTapFor(response(contentType));
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
    expect(usageTapFor(response('text/plain'))).toBeNull();
    expect(usageTapFor(response(undefined))).toBeNull();
    // A compressed body is not text: nothing is read from it.
    expect(usageTapFor(response('application/json', { encoded: true }))).toBeNull();
  });

  it('passes every chunk on unchanged when it only reads', () => {
    const tap = usageTapFor(response('text/event-stream'))!;
    const sent = [...stream].map((c) => tap.push(Buffer.from(c)).toString());
    expect(sent.join('')).toBe(stream);
    expect(tap.end()).toBeNull();
  });
});

describe('usage estimates of completion requests', () => {
  const completion = { injected: false, estimation: { promptTokens: () => 9 } };
  const json = (o: unknown) => [JSON.stringify(o)];

  it('estimates a JSON answer without usage: the prompt from the request, the completion from its text', () => {
    const tap = usageTapFor(response('application/json'), completion)!;
    for (const p of json({ choices: [{ message: { role: 'assistant', content: 'x'.repeat(40) } }] })) tap.push(Buffer.from(p));
    expect(tap.finish()).toEqual({ prompt: 9, completion: 10, cached: 0, estimated: true });
  });

  it('keeps exact usage over the estimate', () => {
    const tap = usageTapFor(response('application/json'), completion)!;
    tap.push(Buffer.from(JSON.stringify({ choices: [{ message: { content: 'x'.repeat(400) } }], usage: { prompt_tokens: 3, completion_tokens: 4 } })));
    expect(tap.finish()).toEqual({ prompt: 3, completion: 4, cached: 0 });
  });

  it('estimates nothing for a refusal, whatever it carries', () => {
    const tap = usageTapFor(response('application/json', { status: 400 }), completion)!;
    tap.push(Buffer.from(JSON.stringify({ error: { message: 'bad', type: 'invalid_request_error' } })));
    expect(tap.finish()).toBeNull();
    expect(usageTapFor(response('text/plain', { status: 503 }), completion)).toBeNull();
  });

  it('estimates the prompt of an answer it cannot read', () => {
    const tap = usageTapFor(response('application/json', { encoded: true }), completion)!;
    expect(tap.push(Buffer.from([0x1f, 0x8b, 0x08]))).toEqual(Buffer.from([0x1f, 0x8b, 0x08]));
    expect(tap.finish()).toEqual({ prompt: 9, completion: 0, cached: 0, estimated: true });
  });

  it('does not remove anything from a stream with a Content-Length', () => {
    const sized = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } })}\n\ndata: [DONE]\n\n`;
    const tap = usageTapFor(response('text/event-stream', { sized: true }), { injected: true, estimation: completion.estimation })!;
    expect(tap.push(Buffer.from(sized)).toString()).toBe(sized);
    expect(tap.finish()).toEqual({ prompt: 5, completion: 2, cached: 0 });
  });
});
