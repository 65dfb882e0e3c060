// Deterministic text: same messages and choice → same tokens; length bounds; token counts.
import { describe, expect, it } from 'vitest';
import {
  MAX_NATURAL_TOKENS,
  MIN_NATURAL_TOKENS,
  VOCABULARY,
  countPromptTokens,
  fnv1a,
  generateCompletion,
} from './text.js';

const messages = (text: string) => [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: text },
];

describe('generateCompletion', () => {
  it('is deterministic per messages and choice index', () => {
    const a = generateCompletion(messages('hello there'), 0, null);
    const b = generateCompletion(messages('hello there'), 0, null);
    expect(a).toEqual(b);
    expect(generateCompletion(messages('hello there'), 1, null).tokens).not.toEqual(a.tokens);
    expect(generateCompletion(messages('hello where'), 0, null).tokens).not.toEqual(a.tokens);
  });

  it('ignores message fields other than role and text', () => {
    const plain = generateCompletion([{ role: 'user', content: 'hi' }], 0, null);
    const extra = generateCompletion([{ role: 'user', content: 'hi', name: 'bob' } as { role: string; content: string }], 0, null);
    const parts = generateCompletion([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], 0, null);
    expect(extra).toEqual(plain);
    expect(parts).toEqual(plain);
  });

  it('has a natural length between 8 and 64 tokens and stops on its own', () => {
    const lengths = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const c = generateCompletion(messages(`prompt ${i}`), 0, null);
      expect(c.tokens.length).toBeGreaterThanOrEqual(MIN_NATURAL_TOKENS);
      expect(c.tokens.length).toBeLessThanOrEqual(MAX_NATURAL_TOKENS);
      expect(c.finishReason).toBe('stop');
      expect(c.tokens.at(-1)).toMatch(/\.$/);
      lengths.add(c.tokens.length);
    }
    expect(lengths.size).toBeGreaterThan(20);
  });

  it('is cut at max tokens with finish reason length, and the cut is a prefix', () => {
    const full = generateCompletion(messages('tell me a story'), 0, null);
    const cut = generateCompletion(messages('tell me a story'), 0, 3);
    expect(cut.tokens).toHaveLength(3);
    expect(cut.finishReason).toBe('length');
    expect(full.tokens.slice(0, 2)).toEqual(cut.tokens.slice(0, 2));
    const roomy = generateCompletion(messages('tell me a story'), 0, 1000);
    expect(roomy).toEqual(full);
  });

  it('makes one word per token, with a leading space after the first', () => {
    const c = generateCompletion(messages('words'), 0, null);
    expect(c.tokens[0]).not.toMatch(/^ /);
    for (const t of c.tokens.slice(1)) expect(t).toMatch(/^ \S+$/);
    expect(c.tokens.join('').split(' ')).toHaveLength(c.tokens.length);
  });
});

describe('token counting', () => {
  it('counts words in every message plus 4 per message', () => {
    expect(countPromptTokens(messages('hello there world'))).toBe(3 + 3 + 2 * 4);
    expect(countPromptTokens([{ role: 'assistant', content: null }])).toBe(4);
    expect(countPromptTokens([{ role: 'user', content: [{ type: 'text', text: 'a b' }, { type: 'image_url' }] }])).toBe(6);
  });

  it('has a vocabulary of about 200 distinct words and a stable hash', () => {
    expect(VOCABULARY.length).toBeGreaterThanOrEqual(180);
    expect(new Set(VOCABULARY).size).toBe(VOCABULARY.length);
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
  });
});

describe('ignore_eos', () => {
  it('generates exactly max_tokens, cut by length, whatever the natural length', () => {
    const c = generateCompletion([{ role: 'user', content: 'short' }], 0, 200, true);
    expect(c.tokens).toHaveLength(200);
    expect(c.finishReason).toBe('length');
  });
});
