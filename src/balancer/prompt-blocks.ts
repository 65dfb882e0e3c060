// Owns what the prefix-aware policy knows of a request's prompt, cut into fixed-size blocks,
// each named by a chained hash — the hash of a block covers every block before it, so equal
// hashes at position i mean equal prompts up to the end of block i. That is how vLLM names
// its KV-cache blocks (over tokens); the gateway has no tokenizer, so it counts characters or
// bytes: an approximation that only has to agree with itself. Only full blocks are hashed,
// as only full KV blocks are cached. Two readings of a prompt:
//   requestBlocks   the gateway's, on the body as it arrived: the bytes of its `messages`
//                   array (or `prompt` string) found by a scan, never parsed — a 200 KB prompt
//                   would otherwise cost a JSON.parse and a copy per request;
//   canonicalPrompt a canonical serialisation of an already parsed body (the Frontend's).

/** Characters per block: about 16 tokens of English text, vLLM's default block size. */
export const DEFAULT_BLOCK_CHARS = 64;
/** A prompt longer than this is hashed only this far: a longer shared prefix changes nothing. */
export const MAX_PROMPT_CHARS = 1 << 20;

// Record and unit separators keep "ab"+"c" and "a"+"bc" apart; they do not occur in chat text.
const MESSAGE_START = '\u001e';
const FIELD_SEPARATOR = '\u001f';

import { topLevelMembers } from './json-scan.js';

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The text of a message's content: a string, or the text parts of an array (others as JSON). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (Array.isArray(content)) {
    let out = '';
    for (const part of content) {
      if (isRecord(part) && part.type === 'text' && typeof part.text === 'string') out += part.text;
      else out += JSON.stringify(part);
      out += '\n';
    }
    return out;
  }
  return JSON.stringify(content);
}

/**
 * The prompt as one string, such that a conversation's next turn serialises to this string
 * followed by more: the property a prefix cache needs. Null when the body has no prompt.
 */
export function canonicalPrompt(body: unknown): string | null {
  if (!isRecord(body)) return null;
  const { messages, prompt } = body;
  if (Array.isArray(messages)) {
    let out = '';
    for (const m of messages) {
      if (!isRecord(m)) return null;
      out += MESSAGE_START + String(m.role ?? '') + FIELD_SEPARATOR + contentText(m.content);
      if (out.length >= MAX_PROMPT_CHARS) break;
    }
    return out;
  }
  if (typeof prompt === 'string') return prompt;
  return null;
}

/**
 * A block's name from the two lanes: 30 bits, so it is a small integer to V8 — a Set or Map of
 * them stores it inline, where a larger number is a heap object allocated per entry (measured:
 * recording a 200 KB prompt's blocks was the policy's largest cost). Two lanes mixed keep the
 * name well spread; at 30 bits, a block absent from a replica's index of 16,384 matches one of
 * them by chance about once in 65,000 lookups, and such a false match costs only a
 * misestimated prefill for one choice.
 */
function blockName(a: number, b: number): number {
  return ((a ^ Math.imul(b, 0x27d4eb2d)) >>> 2) & 0x3fffffff;
}

/**
 * Chained hashes of the full blocks of `text` (blockName: 30-bit names). The lanes eat the
 * text two UTF-16 code units at a time, as 32-bit words of its UTF-16LE bytes: half the
 * multiplications of a per-character loop.
 */
export function blockHashes(text: string, blockChars = DEFAULT_BLOCK_CHARS): number[] {
  const length = Math.min(text.length, MAX_PROMPT_CHARS);
  const blocks = Math.floor(length / blockChars);
  if (blocks === 0) return [];
  if (blockChars % 2 === 1) return byCodeUnit(text, blocks, blockChars);
  return byWord(utf16Words(text, blocks * blockChars), blocks, blockChars >> 1);
}

/** The first `chars` code units of `text` as 32-bit words (two code units each, little-endian). */
function utf16Words(text: string, chars: number): Int32Array {
  const bytes = Buffer.from(chars === text.length ? text : text.slice(0, chars), 'utf16le');
  if (bytes.byteOffset % 4 === 0) return new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
  return new Int32Array(new Uint8Array(bytes).buffer, 0, bytes.length >> 2);
}

/** Each block's chained name, the lanes running over whole words. */
function byWord(words: Int32Array, blocks: number, perBlock: number): number[] {
  const out = new Array<number>(blocks);
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  let w = 0;
  for (let block = 0; block < blocks; block++) {
    for (let end = w + perBlock; w < end; w++) {
      const c = words[w]!;
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
    }
    out[block] = blockName(a, b);
  }
  return out;
}

/** Odd block sizes (never the default) split a word: one code unit at a time. */
function byCodeUnit(text: string, blocks: number, blockChars: number): number[] {
  const out = new Array<number>(blocks);
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let block = 0; block < blocks; block++) {
    const end = (block + 1) * blockChars;
    for (let i = block * blockChars; i < end; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
    }
    out[block] = blockName(a, b);
  }
  return out;
}

const PROMPT_KEYS = ['messages', 'prompt'] as const;

/**
 * The prompt of a chat or text completion body as sent — the bytes of its top-level `messages`
 * array, else of its `prompt` string — found by scanning the JSON instead of parsing it; null
 * when the body is not a JSON object with either. A conversation's next turn appends to the
 * messages array, so its bytes extend the last turn's (up to the closing bracket) as long as
 * the client serialises the same way each time, which a client library does.
 */
export function promptBytes(body: Buffer): Buffer | null {
  const members = topLevelMembers(body, PROMPT_KEYS);
  if (members === null) return null;
  const { messages, prompt } = members;
  if (messages !== undefined && messages[0] === 0x5b) return messages;
  if (prompt !== undefined && prompt[0] === 0x22) return prompt;
  return null;
}

/**
 * The block hashes of a request body (JSON bytes): its prompt's bytes as sent (promptBytes), in
 * blocks of `blockChars` bytes; null when it is not a chat or completion. Scanning instead of
 * parsing, and hashing bytes four at a time, keeps a 200 KB prompt well under a millisecond.
 */
export function requestBlocks(body: Buffer, blockChars = DEFAULT_BLOCK_CHARS): number[] | null {
  const prompt = promptBytes(body);
  if (prompt === null) return null;
  const length = Math.min(prompt.length, MAX_PROMPT_CHARS);
  const blocks = Math.floor(length / blockChars);
  if (blocks === 0) return [];
  if (blockChars % 4 !== 0) return byCodeUnit(prompt.toString('latin1', 0, blocks * blockChars), blocks, blockChars);
  return byWord(alignedWords(prompt, blocks * blockChars), blocks, blockChars >> 2);
}

/** The first `bytes` bytes of `buf` as 32-bit words (copied when not 4-byte aligned). */
function alignedWords(buf: Buffer, bytes: number): Int32Array {
  if (buf.byteOffset % 4 === 0) return new Int32Array(buf.buffer, buf.byteOffset, bytes >> 2);
  const copy = new Uint8Array(bytes);
  copy.set(buf.subarray(0, bytes));
  return new Int32Array(copy.buffer, 0, bytes >> 2);
}
