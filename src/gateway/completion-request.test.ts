// The request side of stream usage: which requests are completions, the splice that asks a
// stream for its usage (only where the client did not, the client's other bytes untouched),
// and the prompt estimate.

import { describe, expect, it } from 'vitest';
import { completionExchange, estimatePromptTokens, isCompletionRequest, usageOptions, withMember } from './completion-request.js';
import { BodyGate } from './request-body.js';

const CHAT = '/v1/chat/completions';
const exchange = (body: string, path = CHAT) => completionExchange('POST', path, Buffer.from(body));
const sentJson = (body: string) => JSON.parse(exchange(body)!.body!.toString()) as Record<string, unknown>;

describe('completion requests', () => {
  it.each([
    ['POST', CHAT, true],
    ['POST', '/v1/completions', true],
    ['POST', '/openai/v1/chat/completions', true],
    ['POST', '/v1/chat/completions?api-version=1', true],
    ['GET', CHAT, false],
    ['POST', '/v1/embeddings', false],
    ['POST', '/v1/chat/completions/x', false],
  ])('%s %s is one: %s', (method, path, expected) => {
    expect(isCompletionRequest(method, path)).toBe(expected);
  });

  it('is null for other requests and for no body', () => {
    expect(completionExchange('POST', '/v1/embeddings', Buffer.from('{"stream":true}'))).toBeNull();
    expect(completionExchange('POST', CHAT, null)).toBeNull();
  });
});

describe('asking a stream for its usage', () => {
  it('adds stream_options after the last member, leaving every byte before it as sent', () => {
    const body = '{"model":"m","seed":12345678901234567890,"messages":[{"role":"user","content":"héllo \\"stream_options\\""}],"stream":true}';
    const ex = exchange(body)!;
    expect(ex.injected).toBe(true);
    expect(ex.body!.toString()).toBe(body.slice(0, -1) + ',"stream_options":{"include_usage":true}}');
  });

  it('keeps pretty-printed bodies valid, and adds to the top level only', () => {
    const body = '{\n  "stream" : true,\n  "metadata": {"stream_options": {"include_usage": false}},\n  "model": "m"\n}\n';
    const sent = sentJson(body);
    expect(sent.stream_options).toEqual({ include_usage: true });
    expect(sent.metadata).toEqual({ stream_options: { include_usage: false } });
  });

  it.each([
    ['null', 'null', { include_usage: true }],
    ['empty', '{}', { include_usage: true }],
    ['include_usage false', '{"include_usage":false}', { include_usage: true }],
    ['other options kept', '{"include_usage":false,"x":[1,{"y":"}"}]}', { include_usage: true, x: [1, { y: '}' }] }],
    ['continuous usage turned off with it', '{"continuous_usage_stats":true}', { include_usage: true, continuous_usage_stats: false }],
  ])('replaces stream_options in place: %s', (_what, options, expected) => {
    const body = `{"model":"m","stream_options":${options},"stream":true,"n":1}`;
    const ex = exchange(body)!;
    expect(ex.injected).toBe(true);
    const text = ex.body!.toString();
    expect(text.startsWith('{"model":"m","stream_options":{')).toBe(true);
    expect(text.endsWith('},"stream":true,"n":1}')).toBe(true);
    expect(JSON.parse(text)).toEqual({ model: 'm', stream_options: expected, stream: true, n: 1 });
  });

  it('replaces the last of duplicate keys (the one parsers keep), an escaped key too', () => {
    expect(sentJson('{"stream":true,"stream_options":{"a":1},"stream_options":null}').stream_options).toEqual({ include_usage: true });
    const escaped = exchange('{"stream":true,"stream\\u005foptions":{}}')!.body!.toString();
    expect(escaped).toBe('{"stream":true,"stream\\u005foptions":{"include_usage":true}}');
  });

  it.each([
    ['a client that asked for usage', '{"stream":true,"stream_options":{"include_usage":true}}'],
    ['a request that is not streamed', '{"stream":false,"messages":[]}'],
    ['no stream field', '{"messages":[{"role":"user","content":"stream"}]}'],
    ['stream as a string', '{"stream":"true"}'],
    ['stream_options the engine refuses', '{"stream":true,"stream_options":"yes"}'],
    ['a body that is not JSON', '{"stream":true,'],
    ['a JSON array', '[{"stream":true}]'],
  ])('leaves alone %s', (_what, body) => {
    const buffer = Buffer.from(body);
    const ex = completionExchange('POST', CHAT, buffer)!;
    expect(ex.injected).toBe(false);
    expect(ex.body).toBe(buffer);
  });

  it('never rewrites a body streamed through the gateway', () => {
    const gate = new BodyGate({ maxBytes: 1 << 30, idleMs: 60_000 }, null);
    const ex = completionExchange('POST', CHAT, gate)!;
    expect(ex.body).toBe(gate);
    expect(ex.injected).toBe(false);
    gate.destroy();
  });

  it('adds a member to an empty object, and refuses what is not an object', () => {
    expect(withMember(Buffer.from(' { } '), 'k', '1')!.toString()).toBe(' { "k":1} ');
    expect(withMember(Buffer.from('"x"'), 'k', '1')).toBeNull();
  });

  it('turns off only what it turned on', () => {
    expect(usageOptions(undefined)).toEqual({ include_usage: true });
    expect(usageOptions({ include_usage: true, continuous_usage_stats: true })).toBeNull();
    expect(usageOptions(5)).toBeNull();
  });
});

describe('prompt estimates', () => {
  it('counts four characters of message text to a token', () => {
    const request = {
      messages: [
        { role: 'system', content: 'x'.repeat(10) },
        { role: 'user', content: [{ type: 'text', text: 'y'.repeat(6) }, { type: 'image_url', image_url: { url: 'data:...' } }] },
        { role: 'assistant', content: null },
      ],
    };
    expect(estimatePromptTokens(request)).toBe(4);
  });

  it('counts a completion prompt by characters, and token ids one each', () => {
    expect(estimatePromptTokens({ prompt: 'z'.repeat(9) })).toBe(3);
    expect(estimatePromptTokens({ prompt: ['abcd', 'efgh'] })).toBe(2);
    expect(estimatePromptTokens({ prompt: [1, 2, 3] })).toBe(3);
    expect(estimatePromptTokens({ prompt: [[1, 2], [3]] })).toBe(3);
  });

  it('is what the exchange estimates, parsed only when asked; a streamed body by its bytes', () => {
    expect(exchange('{"messages":[{"role":"user","content":"12345678"}]}')!.promptTokens()).toBe(2);
    expect(exchange('not json at all')!.promptTokens()).toBe(4);
    const gate = new BodyGate({ maxBytes: 1 << 30, idleMs: 60_000 }, null);
    const ex = completionExchange('POST', CHAT, gate)!;
    gate.write(Buffer.alloc(4000, 0x61));
    expect(ex.promptTokens()).toBe(1000);
    gate.destroy();
  });
});
