// Owns what the prefix-aware policy knows of a request's prompt: a canonical serialisation of
// a chat completion's `messages` (or a completion's `prompt`), cut into fixed-size blocks of
// characters, each named by a chained hash — the hash of a block covers every block before
// it, so equal hashes at position i mean equal prompts up to the end of block i. That is how
// vLLM names its KV-cache blocks (over tokens); the gateway has no tokenizer, so it counts
// characters: an approximation that only has to agree with itself. Only full blocks are
// hashed, as only full KV blocks are cached.

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

/** The block hashes of a request body (JSON bytes), or null when it is not a chat or completion. */
export function requestBlocks(body: Buffer, blockChars = DEFAULT_BLOCK_CHARS): number[] | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  const prompt = canonicalPrompt(parsed);
  return prompt === null ? null : blockHashes(prompt, blockChars);
}
