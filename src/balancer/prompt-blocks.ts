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
 * Chained hashes of the full blocks of `text`. Two 32-bit FNV-1a-style lanes with different
 * seeds make a 53-bit name, so unrelated blocks of a large index collide about never (at 10^6
 * blocks, about one chance in 10^4) while the result stays a plain number (a Map key). The
 * lanes eat the text two UTF-16 code units at a time, as 32-bit words of its UTF-16LE bytes:
 * half the multiplications of a per-character loop, which on 200 KB prompts was most of the
 * gateway's cost per request.
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
    out[block] = (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff);
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
    out[block] = (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff);
  }
  return out;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Past JSON whitespace from `i`. */
function skipSpace(b: Buffer, i: number): number {
  while (i < b.length) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** The index just past the string whose opening quote is at `i`, or -1. memchr finds each quote. */
function skipString(b: Buffer, i: number): number {
  for (let q = b.indexOf(QUOTE, i + 1); q !== -1; q = b.indexOf(QUOTE, q + 1)) {
    let slashes = 0;
    while (b[q - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return q + 1; // not escaped
  }
  return -1;
}

/** The index just past the JSON value at `i` (string, object, array, number, literal), or -1. */
function skipValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    while (i < b.length) {
      const d = b[i]!;
      if (d === QUOTE) {
        i = skipString(b, i);
        if (i === -1) return -1;
        continue;
      }
      if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return -1;
  }
  // A number or a literal: up to the next delimiter.
  while (i < b.length) {
    const d = b[i]!;
    if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) return i;
    i++;
  }
  return -1;
}

/**
 * The prompt of a chat or text completion body as sent — the bytes of its top-level `messages`
 * array, else of its `prompt` string — found by scanning the JSON instead of parsing it; null
 * when the body is not a JSON object with either. A conversation's next turn appends to the
 * messages array, so its bytes extend the last turn's (up to the closing bracket) as long as
 * the client serialises the same way each time, which a client library does.
 */
export function promptBytes(body: Buffer): Buffer | null {
  let i = skipSpace(body, 0);
  if (body[i] !== 0x7b) return null;
  i = skipSpace(body, i + 1);
  let prompt: Buffer | null = null;
  while (i < body.length && body[i] === QUOTE) {
    const keyEnd = skipString(body, i);
    if (keyEnd === -1) return null;
    const key = body.toString('latin1', i + 1, keyEnd - 1);
    i = skipSpace(body, keyEnd);
    if (body[i] !== 0x3a) return null;
    i = skipSpace(body, i + 1);
    const end = skipValue(body, i);
    if (end === -1) return null;
    if (key === 'messages' && body[i] === 0x5b) return body.subarray(i, end);
    if (key === 'prompt' && body[i] === QUOTE) prompt = body.subarray(i, end);
    i = skipSpace(body, end);
    if (body[i] === 0x2c) i = skipSpace(body, i + 1);
    else break;
  }
  if (body[i] !== 0x7d) return null;
  return prompt;
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
