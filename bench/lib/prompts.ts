// Bench helper: long chat prompts for the prefix-aware routing load — a few dozen distinct
// system prompts of about the requested size (pseudo-English, seeded, so every run sends the
// same bytes), each shared by a group of sessions whose user turns differ. Bodies are built
// once, up front, as the Buffers the load generator sends: building 200 KB per request in the
// generator's process would take CPU from the gateway on a two-core machine.

import { mulberry32 } from '../../src/engine/text.js';

export interface PromptRequest {
  body: Buffer;
  session: string;
}

export interface PromptSet {
  requests: PromptRequest[];
  /** Distinct system prompts. */
  groups: number;
  meanBodyBytes: number;
}

const WORDS = (
  'the of and to in is that for it as with was on be by this are from or an at which not have has but were they their can all more one ' +
  'model request replica cache prefix token context policy session gateway latency answer question system user document section table ' +
  'value field record service deployment account invoice customer order product support contract clause party term notice period ' +
  'shall must may should will within after before under over between each every any such other same following above below ' +
  'data report summary result figure number total average rate price cost time date year month week day hour minute second'
).split(' ');

/** mulberry32 (the reference engine's generator), so the prompts are the same bytes in every run. */
const seeded = mulberry32;

function prose(random: () => number, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  let sentence = 0;
  while (length < chars) {
    let word = WORDS[Math.floor(random() * WORDS.length)]!;
    if (sentence === 0) word = word[0]!.toUpperCase() + word.slice(1);
    sentence++;
    if (sentence > 8 && random() < 0.15) {
      word += random() < 0.1 ? '.\n\n' : '. ';
      sentence = 0;
    } else word += ' ';
    parts.push(word);
    length += word.length;
  }
  return parts.join('');
}

/**
 * `groups` system prompts, `variants` user turns each (sessions `g<i>-s<j>`), bodies of about
 * `bodyBytes`: a POST /v1/chat/completions, non-streamed, with a system and a user message.
 */
export function longPrompts(opts: { groups: number; variants: number; bodyBytes: number }): PromptSet {
  const requests: PromptRequest[] = [];
  for (let g = 0; g < opts.groups; g++) {
    const random = seeded(0x5eed + g);
    const system = `You are assistant ${g} of the bench. Follow the handbook below.\n\n${prose(random, Math.max(0, opts.bodyBytes - 2_000))}`;
    for (let v = 0; v < opts.variants; v++) {
      const user = `Question ${v} for assistant ${g}: ${prose(random, 200 + Math.floor(random() * 1_200))}?`;
      const body = JSON.stringify({
        model: 'bench',
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ],
        max_tokens: 16,
        stream: false,
      });
      requests.push({ body: Buffer.from(body), session: `g${g}-s${v}` });
    }
  }
  // Interleaved, so consecutive requests belong to different groups as concurrent users would.
  const order = requests.map((r, i) => ({ r, k: (i % opts.variants) * opts.groups + Math.floor(i / opts.variants) }));
  order.sort((a, b) => a.k - b.k);
  const sorted = order.map((x) => x.r);
  return { requests: sorted, groups: opts.groups, meanBodyBytes: Math.round(sorted.reduce((a, r) => a + r.body.length, 0) / Math.max(1, sorted.length)) };
}
