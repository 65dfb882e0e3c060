// Chat completion request validation and the model card shape.
import { describe, expect, it } from 'vitest';
import { modelCard, parseChatRequest } from './openai-api.js';

const ok = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

describe('parseChatRequest', () => {
  it('accepts a minimal request with defaults', () => {
    expect(parseChatRequest(ok)).toEqual({
      ok: true,
      request: { model: 'm', messages: ok.messages, maxTokens: null, n: 1, stream: false, includeUsage: false, ignoreEos: false, kvTransferParams: null },
    });
  });

  it('reads kv_transfer_params and refuses a non-object one', () => {
    expect(parseChatRequest({ ...ok, kv_transfer_params: { do_remote_decode: true } })).toMatchObject({ ok: true, request: { kvTransferParams: { do_remote_decode: true } } });
    expect(parseChatRequest({ ...ok, kv_transfer_params: 'yes' })).toMatchObject({ ok: false, param: 'kv_transfer_params' });
  });

  it('reads ignore_eos and refuses a non-boolean one', () => {
    expect(parseChatRequest({ ...ok, ignore_eos: true })).toMatchObject({ ok: true, request: { ignoreEos: true } });
    expect(parseChatRequest({ ...ok, ignore_eos: 'yes' })).toMatchObject({ ok: false, param: 'ignore_eos' });
  });

  it('prefers max_completion_tokens over max_tokens and reads stream options', () => {
    const r = parseChatRequest({ ...ok, max_tokens: 5, max_completion_tokens: 7, n: 3, stream: true, stream_options: { include_usage: true } });
    expect(r).toMatchObject({ ok: true, request: { maxTokens: 7, n: 3, stream: true, includeUsage: true } });
    expect(parseChatRequest({ ...ok, max_tokens: 5, max_completion_tokens: null })).toMatchObject({ request: { maxTokens: 5 } });
  });

  it('accepts content parts and an assistant message without content', () => {
    const messages = [
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: null },
      { role: 'user', content: 'more' },
    ];
    expect(parseChatRequest({ model: 'm', messages }).ok).toBe(true);
  });

  it.each([
    [null, null, /JSON object/],
    [[], null, /JSON object/],
    [{ messages: ok.messages }, 'model', /'model' is required/],
    [{ model: 5, messages: ok.messages }, 'model', /'model' is required/],
    [{ model: 'm' }, 'messages', /'messages' is required/],
    [{ model: 'm', messages: [] }, 'messages', /non-empty/],
    [{ model: 'm', messages: ['hi'] }, 'messages[0]', /must be an object/],
    [{ model: 'm', messages: [{ role: 'robot', content: 'x' }] }, 'messages[0]', /role/],
    [{ model: 'm', messages: [{ role: 'user' }] }, 'messages[0]', /content/],
    [{ ...ok, max_tokens: 0 }, 'max_tokens', /between 1/],
    [{ ...ok, max_tokens: 1.5 }, 'max_tokens', /integer/],
    [{ ...ok, n: 129 }, 'n', /between 1 and 128/],
    [{ ...ok, n: '2' }, 'n', /integer/],
    [{ ...ok, stream: 'yes' }, 'stream', /boolean/],
    [{ ...ok, stream_options: { include_usage: true } }, 'stream_options', /only allowed when 'stream' is true/],
    [{ ...ok, stream: true, stream_options: { include_usage: 1 } }, 'stream_options', /boolean/],
    [{ ...ok, temperature: 3 }, 'temperature', /between 0 and 2/],
  ])('rejects %j', (body, param, message) => {
    const r = parseChatRequest(body);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.param).toBe(param);
      expect(r.message).toMatch(message);
    }
  });
});

describe('modelCard', () => {
  it('says the model is simulated', () => {
    const card = modelCard('sim/model', 1);
    expect(card).toMatchObject({ id: 'sim/model', object: 'model', created: 1, owned_by: 'infergate-simulator' });
    expect(card.root).toContain('infergate-simulator');
    expect(card.description).toMatch(/simulated/i);
  });
});
