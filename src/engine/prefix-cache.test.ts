// The simulated prefix cache: token ids consistent with the engine's count, chained block
// names (a prefix, not a block's content, is what matches), whole blocks only, hit and query
// counters, and least-recently-used eviction at capacity.
import { describe, expect, it } from 'vitest';
import { blockNames, PrefillModel, PrefixCache, promptTokenIds } from './prefix-cache.js';
import { countPromptTokens, type MessageLike } from './text.js';

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');
const chat = (...contents: string[]): MessageLike[] => contents.map((content, i) => ({ role: i === 0 ? 'system' : 'user', content }));

describe('promptTokenIds', () => {
  it('has as many ids as the engine counts prompt tokens, and depends on roles and words only', () => {
    const messages = chat(words(37, 'a'), '  spaced\tout\nwords ');
    expect(promptTokenIds(messages).length).toBe(countPromptTokens(messages));
    expect(promptTokenIds(chat('x y'))).toEqual(promptTokenIds(chat('x   y')));
    expect(promptTokenIds([{ role: 'user', content: 'x' }])).not.toEqual(promptTokenIds([{ role: 'assistant', content: 'x' }]));
  });
});

describe('PrefixCache', () => {
  const blockSize = 4;

  it('finds a repeated prefix in whole blocks, and counts queries and hits in tokens', () => {
    const cache = new PrefixCache(blockSize, 1000);
    const first = promptTokenIds(chat(words(30, 'sys'), 'hello'));
    expect(cache.lookup(first)).toBe(0);
    cache.insert(blockNames(first, blockSize));
    const next = promptTokenIds(chat(words(30, 'sys'), 'hello', 'and more words here'));
    const cached = cache.lookup(next);
    // 30 + 4 + 1 + 4 = 39 tokens of the first prompt: 9 whole blocks (36 tokens).
    expect(cached).toBe(36);
    expect(cache.stats).toEqual({ queries: first.length + next.length, hits: 36 });
  });

  it('matches prefixes, not block contents: the same words after a different start miss', () => {
    const cache = new PrefixCache(blockSize, 1000);
    cache.insert(blockNames(promptTokenIds(chat(words(20, 'a'), words(20, 'shared'))), blockSize));
    // Only the first block matches: the system message's framing tokens, the same in both.
    expect(cache.lookup(promptTokenIds(chat(words(20, 'b'), words(20, 'shared'))))).toBe(4);
  });

  it('evicts the least recently used blocks at capacity; a prefix used again survives', () => {
    const cache = new PrefixCache(blockSize, 10 * blockSize); // 10 blocks
    // Different roles, so not even the framing block is shared: 16 tokens, 4 blocks each.
    const a = promptTokenIds([{ role: 'a', content: words(12, 'a') }]);
    const b = promptTokenIds([{ role: 'b', content: words(12, 'b') }]);
    const c = promptTokenIds([{ role: 'c', content: words(12, 'c') }]);
    cache.insert(blockNames(a, blockSize));
    cache.insert(blockNames(b, blockSize));
    expect(cache.usage()).toBeCloseTo(0.8);
    expect(cache.lookup(a)).toBe(16); // a is now the most recently used
    cache.insert(blockNames(c, blockSize)); // 12 blocks: the two oldest (b's) go
    expect(cache.size).toBe(10);
    expect(cache.lookup(a)).toBe(16);
    expect(cache.lookup(c)).toBe(16);
    // b's first two blocks went: its last two are still held but unreachable, a prefix being a chain.
    expect(cache.lookup(b)).toBe(0);
  });
});

describe('PrefillModel', () => {
  it('costs the uncached tokens only, and caches the prompt once its prefill is done', () => {
    const model = new PrefillModel(new PrefixCache(4, 1000), 0.5);
    const messages = chat(words(60, 'sys'));
    const first = model.plan(messages, countPromptTokens(messages));
    expect(first).toMatchObject({ cachedTokens: 0, prefillMs: 32 });
    expect(model.plan(messages, 64).cachedTokens).toBe(0); // not done yet: nothing cached
    first.done();
    expect(model.plan(messages, 64)).toMatchObject({ cachedTokens: 64, prefillMs: 0 });
  });

  it('without a cache, costs every token and reports no cached count', () => {
    expect(new PrefillModel(null, 0.25).plan(chat('a b c'), 7)).toMatchObject({ cachedTokens: null, prefillMs: 1.75 });
  });
});
