// Owns the reference engine's simulated automatic prefix caching, modelled on vLLM's: a
// prompt is a token sequence, cut into full blocks of --block-size tokens; each block is named
// by a chained hash (the hash of a block covers the one before it, so equal names mean equal
// prefixes, never just equal block contents); a request reuses the leading blocks whose names
// are cached and prefills only the rest; blocks stay cached until the KV capacity
// (--kv-capacity-tokens) is full and are then evicted least recently used first. Counters
// of tokens asked for and tokens found are vLLM's prefix_cache_queries/hits.
//
// Simplification: blocks are never pinned by running sequences (vLLM frees a block for
// eviction only when no running sequence holds it); KV usage is blocks cached / capacity.

import { PER_MESSAGE_TOKENS, messageText, type MessageLike } from './text.js';

/** FNV-1a step over a 32-bit value. */
function mix(h: number, v: number): number {
  h = Math.imul(h ^ (v & 0xff), 0x01000193);
  h = Math.imul(h ^ ((v >>> 8) & 0xff), 0x01000193);
  h = Math.imul(h ^ ((v >>> 16) & 0xff), 0x01000193);
  return Math.imul(h ^ (v >>> 24), 0x01000193) >>> 0;
}

function wordHash(text: string, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const isSpace = (c: number): boolean => c === 32 || c === 10 || c === 9 || c === 13 || c === 12 || c === 11;

/**
 * The prompt as token ids, consistent with the engine's token count (words, plus
 * PER_MESSAGE_TOKENS framing tokens per message, the first naming the role): one pass, no
 * intermediate strings per word.
 */
export function promptTokenIds(messages: readonly MessageLike[]): Uint32Array {
  const ids: number[] = [];
  for (const m of messages) {
    const role = typeof m.role === 'string' ? m.role : '';
    ids.push(wordHash(`<|${role}|>`, 0, role.length + 4));
    for (let k = 1; k < PER_MESSAGE_TOKENS; k++) ids.push(k);
    const text = messageText(m);
    let start = -1;
    for (let i = 0; i <= text.length; i++) {
      const space = i === text.length || isSpace(text.charCodeAt(i));
      if (!space && start === -1) start = i;
      else if (space && start !== -1) {
        ids.push(wordHash(text, start, i));
        start = -1;
      }
    }
  }
  return Uint32Array.from(ids);
}

/** Chained names of the full blocks of `tokens`: 53-bit numbers from two 32-bit lanes. */
export function blockNames(tokens: Uint32Array, blockSize: number): number[] {
  const names: number[] = [];
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let end = blockSize; end <= tokens.length; end += blockSize) {
    for (let i = end - blockSize; i < end; i++) {
      a = mix(a, tokens[i]!);
      b = mix(b, tokens[i]! ^ 0x9e3779b9);
    }
    names.push((a & 0x1fffff) * 0x100000000 + b);
  }
  return names;
}

export interface PrefixCacheStats {
  /** Prompt tokens looked up. */
  queries: number;
  /** Of those, tokens found cached. */
  hits: number;
}

export class PrefixCache {
  /** Block name → present; Map order is the LRU order (oldest first). */
  private readonly blocks = new Map<number, true>();
  readonly capacityBlocks: number;
  readonly stats: PrefixCacheStats = { queries: 0, hits: 0 };

  constructor(
    readonly blockSize: number,
    capacityTokens: number,
  ) {
    if (!(blockSize >= 1)) throw new RangeError(`a block holds at least one token, not ${blockSize}`);
    this.capacityBlocks = Math.max(1, Math.floor(capacityTokens / blockSize));
  }

  /**
   * How many leading tokens of a prompt are cached (whole blocks only), counted in the stats;
   * the blocks found become the most recently used.
   */
  lookup(tokens: Uint32Array, names = blockNames(tokens, this.blockSize)): number {
    let found = 0;
    while (found < names.length && this.blocks.has(names[found]!)) found++;
    for (let i = 0; i < found; i++) this.touch(names[i]!);
    this.stats.queries += tokens.length;
    this.stats.hits += found * this.blockSize;
    return found * this.blockSize;
  }

  /** The prompt's blocks are now in the cache (after its prefill), evicting the least recently used. */
  insert(names: readonly number[]): void {
    for (const name of names) this.touch(name);
    while (this.blocks.size > this.capacityBlocks) {
      const oldest = this.blocks.keys().next();
      if (oldest.done) break;
      this.blocks.delete(oldest.value);
    }
  }

  /** Cached blocks over capacity, 0..1 (vLLM's kv_cache_usage_perc). */
  usage(): number {
    return this.blocks.size / this.capacityBlocks;
  }

  get size(): number {
    return this.blocks.size;
  }

  private touch(name: number): void {
    this.blocks.delete(name);
    this.blocks.set(name, true);
  }
}

/** What serving one prompt costs before its first token, and what it leaves in the cache. */
export interface PrefillPlan {
  /** Tokens served from the cache; null when prefix caching is off (usage then says nothing). */
  cachedTokens: number | null;
  /** Time on the prefill lane for the uncached tokens. */
  prefillMs: number;
  /** The prefill is done: its blocks are cached from now on. */
  done(): void;
}

/** The engine's prefill model: the prefix cache (when enabled) and the cost per uncached token. */
export class PrefillModel {
  constructor(
    readonly cache: PrefixCache | null,
    private readonly msPerToken: number,
  ) {}

  plan(messages: readonly MessageLike[], promptTokens: number): PrefillPlan {
    if (this.cache === null) return { cachedTokens: null, prefillMs: promptTokens * this.msPerToken, done: () => undefined };
    const cache = this.cache;
    const tokens = promptTokenIds(messages);
    const names = blockNames(tokens, cache.blockSize);
    const cached = cache.lookup(tokens, names);
    return { cachedTokens: cached, prefillMs: (tokens.length - cached) * this.msPerToken, done: () => cache.insert(names) };
  }
}
