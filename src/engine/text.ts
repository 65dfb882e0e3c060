// Owns the simulator's "model": deterministic text and token counting. The same messages
// (and the same choice index) always give the same completion, so tests and clients can
// compare replicas; nothing here is a language model.
//
// Token estimate (also stated in `infergate engine --help`): one word = one token, where a
// word is a run of non-whitespace characters; a prompt costs the words in every message's
// text plus 4 per message (role and separators, close to what chat templates add).
// Completion tokens are words drawn from VOCABULARY; each one after the first carries its
// leading space, so joining the tokens gives the text.

export type FinishReason = 'stop' | 'length';

export interface Completion {
  tokens: string[];
  finishReason: FinishReason;
}

/** The part of a chat message the simulator reads; content may be a string or text parts. */
export interface MessageLike {
  role?: unknown;
  content?: unknown;
}

export const PER_MESSAGE_TOKENS = 4;
export const MIN_NATURAL_TOKENS = 8;
export const MAX_NATURAL_TOKENS = 64;

export const VOCABULARY: readonly string[] = (
  'the a an of to in on for with by from at as into over under about after before between through ' +
  'model token request replica gateway engine server client stream batch queue sequence cache weight ' +
  'layer tensor kernel memory device cluster node pod region zone endpoint route session latency ' +
  'throughput budget window signal metric counter gauge histogram bucket label sample scrape alert ' +
  'policy quota limit scale replica rollout revision deploy release version image container process ' +
  'thread socket packet frame header body chunk event line record field value key index table shard ' +
  'leader follower lease lock commit log snapshot state change feed watch probe health ready live ' +
  'start stop drain retry backoff timeout deadline error warning notice trace span context span ' +
  'simple quick steady careful bright quiet early late small large fast slow warm cold fresh stale ' +
  'clear exact rough stable noisy busy idle open closed local remote shared private public secure ' +
  'runs moves holds sends reads writes waits grows shrinks keeps finds picks serves loads saves ' +
  'counts checks marks joins splits merges builds turns learns answers explains measures predicts ' +
  'river mountain forest garden harbor window lantern compass anchor bridge meadow signal orchard ' +
  'morning evening summer winter autumn spring north south east west and but or so yet then now ' +
  'here there always often rarely never perhaps indeed also still again together apart'
)
  .split(' ')
  .filter((w, i, all) => w !== '' && all.indexOf(w) === i);

/** FNV-1a, 32-bit: a tiny, stable string hash to seed the generator. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** mulberry32: a small, fast PRNG with good enough spread for picking words. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The text of one message: a string, or the `text` of its text parts. */
export function messageText(message: MessageLike): string {
  const content = message.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) =>
        part !== null && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string'
          ? (part as { text: string }).text
          : '',
      )
      .join(' ');
  }
  return '';
}

export function countWords(text: string): number {
  const words = text.trim().split(/\s+/);
  return words.length === 1 && words[0] === '' ? 0 : words.length;
}

/** Prompt tokens: words in every message's text + PER_MESSAGE_TOKENS per message. */
export function countPromptTokens(messages: readonly MessageLike[]): number {
  let total = 0;
  for (const m of messages) total += countWords(messageText(m)) + PER_MESSAGE_TOKENS;
  return total;
}

/** The seed of one choice: only role and text count, so extra fields do not change the answer. */
export function seedFor(messages: readonly MessageLike[], choiceIndex: number): number {
  const canonical = JSON.stringify(messages.map((m) => [typeof m.role === 'string' ? m.role : '', messageText(m)]));
  return fnv1a(`${canonical}#${choiceIndex}`);
}

/**
 * The completion of one choice: a natural length between MIN and MAX_NATURAL_TOKENS picked by
 * the seed, cut at maxTokens (null: no cap). Cut → finish reason "length", else "stop".
 * `ignoreEos` (vLLM's request extension) skips the natural end: exactly maxTokens tokens.
 */
export function generateCompletion(messages: readonly MessageLike[], choiceIndex: number, maxTokens: number | null, ignoreEos = false): Completion {
  const random = mulberry32(seedFor(messages, choiceIndex));
  const drawn = MIN_NATURAL_TOKENS + Math.floor(random() * (MAX_NATURAL_TOKENS - MIN_NATURAL_TOKENS + 1));
  const natural = ignoreEos && maxTokens !== null ? Number.POSITIVE_INFINITY : drawn;
  const length = maxTokens === null ? natural : Math.min(natural, maxTokens);
  const tokens: string[] = [];
  for (let i = 0; i < length; i++) {
    let word = VOCABULARY[Math.floor(random() * VOCABULARY.length)] ?? 'token';
    if (i === 0) word = word.charAt(0).toUpperCase() + word.slice(1);
    else word = ' ' + word;
    // A sentence that ended on its own gets its full stop; a cut one does not.
    if (i === natural - 1) word += '.';
    tokens.push(word);
  }
  return { tokens, finishReason: length < natural ? 'length' : 'stop' };
}
