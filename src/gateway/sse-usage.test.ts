// The SSE usage tap on its own: a stream the gateway asked usage for comes out byte for byte as
// the stream the engine sends without it — split at any byte, with CRLF line ends, in the
// compact and the spaced JSON styles, for chat and legacy completions — while its usage is
// read; nothing but the usage event (and an unfinished line) waits; estimates when no usage
// came; and a tap that only reads changes nothing.

import { describe, expect, it } from 'vitest';
import { SseUsageTap } from './sse-usage.js';

type Style = 'compact' | 'spaced';

/** JSON as vLLM and JavaScript write it (compact), or as Python's json.dumps does (", " and ": "). */
const json = (v: unknown, style: Style): string => {
  if (style === 'compact') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((x) => json(x, style)).join(', ')}]`;
  if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${json(x, style)}`).join(', ')}}`;
  return JSON.stringify(v);
};

interface StreamOptions {
  includeUsage: boolean;
  style?: Style;
  eol?: string;
  kind?: 'chat' | 'text';
  tokens?: string[];
}

/** A stream as the reference engine (OpenAI's format) writes it, with or without include_usage. */
function engineStream({ includeUsage, style = 'compact', eol = '\n', kind = 'chat', tokens = ['Hello', ' there', ', é', ' world'] }: StreamOptions): string[] {
  const base = { id: 'chatcmpl-1', object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion', created: 1, model: 'm', system_fingerprint: 'fp' };
  const event = (choices: unknown[], usage?: unknown) => {
    const body: Record<string, unknown> = { ...base, choices };
    if (includeUsage) body.usage = usage ?? null;
    return `data: ${json(body, style)}${eol}${eol}`;
  };
  const choice = (text: string, finish: string | null) =>
    kind === 'chat' ? { index: 0, delta: text === '' && finish === null ? { role: 'assistant', content: '' } : finish ? {} : { content: text }, logprobs: null, finish_reason: finish } : { index: 0, text, logprobs: null, finish_reason: finish };
  const events = [event([choice('', null)])];
  for (const t of tokens) events.push(event([choice(t, null)]));
  events.push(event([choice('', 'stop')]));
  if (includeUsage) events.push(event([], { prompt_tokens: 7, completion_tokens: tokens.length, total_tokens: 7 + tokens.length }));
  events.push(`data: [DONE]${eol}${eol}`);
  return events;
}

const filtering = (prompt = 0) => new SseUsageTap({ filter: true, estimation: { promptTokens: () => prompt } });

/** Feeds the parts; returns what the client got and the usage read. */
function run(tap: SseUsageTap, parts: Buffer[]): { sent: Buffer; usage: ReturnType<SseUsageTap['finish']> } {
  const out: Buffer[] = parts.map((p) => tap.push(p));
  const last = tap.end();
  if (last) out.push(last);
  return { sent: Buffer.concat(out), usage: tap.finish() };
}

const splitAt = (b: Buffer, cuts: number[]): Buffer[] => {
  const parts: Buffer[] = [];
  let from = 0;
  for (const c of cuts) {
    parts.push(b.subarray(from, c));
    from = c;
  }
  parts.push(b.subarray(from));
  return parts;
};

describe('SSE usage tap that removes the usage the gateway asked for', () => {
  const cases: Array<[string, Omit<StreamOptions, 'includeUsage'>]> = [
    ['compact chat', {}],
    ['CRLF line ends', { eol: '\r\n' }],
    ['Python-style spacing', { style: 'spaced' }],
    ['legacy completions', { kind: 'text' }],
    ['spaced, CRLF, completions', { style: 'spaced', eol: '\r\n', kind: 'text' }],
  ];

  it.each(cases)('%s: the client gets the stream without include_usage, at every split point', (_what, options) => {
    const asked = Buffer.from(engineStream({ ...options, includeUsage: true }).join(''));
    const plain = Buffer.from(engineStream({ ...options, includeUsage: false }).join(''));
    expect(asked.equals(plain)).toBe(false);
    for (let cut = 0; cut <= asked.length; cut++) {
      const { sent, usage } = run(filtering(), splitAt(asked, [cut]));
      expect(sent.toString('latin1'), `split at ${cut}`).toBe(plain.toString('latin1'));
      expect(usage).toEqual({ prompt: 7, completion: 4, cached: 0 });
    }
  });

  it.each(cases)('%s: byte by byte, and in three pieces anywhere', (_what, options) => {
    const asked = Buffer.from(engineStream({ ...options, includeUsage: true }).join(''));
    const plain = Buffer.from(engineStream({ ...options, includeUsage: false }).join(''));
    const bytes = [...asked].map((b) => Buffer.from([b]));
    expect(run(filtering(), bytes).sent.equals(plain)).toBe(true);
    for (let a = 1; a < asked.length; a += 11) {
      for (let b = a; b <= asked.length; b += 17) {
        const { sent, usage } = run(filtering(), splitAt(asked, [a, b]));
        expect(sent.equals(plain), `split at ${a}, ${b}`).toBe(true);
        expect(usage?.completion).toBe(4);
      }
    }
  });

  it('holds back nothing but the usage event: each whole event goes out as it comes', () => {
    const asked = engineStream({ includeUsage: true });
    const plain = engineStream({ includeUsage: false });
    const tap = filtering();
    const sent = asked.map((e) => tap.push(Buffer.from(e)).toString());
    // The usage event (second to last) is the only one that produced nothing.
    expect(sent).toEqual([...plain.slice(0, -1), '', plain.at(-1)]);
    expect(tap.end()).toBeNull();
    expect(tap.finish()).toEqual({ prompt: 7, completion: 4, cached: 0 });
  });

  it('a usage event split across chunks waits for its end and is dropped; [DONE] follows at once', () => {
    const asked = engineStream({ includeUsage: true });
    const usageEvent = asked.at(-2)!;
    const tap = filtering();
    for (const e of asked.slice(0, -2)) tap.push(Buffer.from(e));
    const cuts = [9, 40, usageEvent.length - 2, usageEvent.length - 1];
    let from = 0;
    for (const c of cuts) {
      expect(tap.push(Buffer.from(usageEvent.slice(from, c))).length).toBe(0);
      from = c;
    }
    expect(tap.push(Buffer.from(usageEvent.slice(from) + asked.at(-1)!)).toString()).toBe('data: [DONE]\n\n');
    expect(tap.finish()).toEqual({ prompt: 7, completion: 4, cached: 0 });
  });

  it('an unfinished content line goes out whole once its newline comes', () => {
    const [, first] = engineStream({ includeUsage: true });
    const expected = engineStream({ includeUsage: false })[1]!;
    const tap = filtering();
    expect(tap.push(Buffer.from(first!.slice(0, 30))).length).toBe(0);
    expect(tap.push(Buffer.from(first!.slice(30))).toString()).toBe(expected);
  });

  it('a line too long to be the usage event goes on without waiting for its end', () => {
    const long = `data: {"choices":[{"delta":{"content":"${'x'.repeat(70_000)}"}}],"usage":null}\n\n`;
    const tap = filtering();
    const first = tap.push(Buffer.from(long.slice(0, 69_000)));
    const second = tap.push(Buffer.from(long.slice(69_000, 69_500)));
    expect(first.length + second.length).toBe(69_500);
    expect(tap.push(Buffer.from(long.slice(69_500))).toString()).toBe(long.slice(69_500));
  });

  it('an event with other fields keeps them and its blank line; usage on a chunk with choices and a lone {"usage":null} stay', () => {
    const tap = filtering();
    const withId = 'id: 7\ndata: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}\n\n';
    expect(tap.push(Buffer.from(withId)).toString()).toBe('id: 7\n\n');
    const onChoice = 'data: {"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":3,"completion_tokens":4}}\n\n';
    expect(tap.push(Buffer.from(onChoice)).toString()).toBe(onChoice);
    expect(tap.push(Buffer.from('data: {"usage":null}\n\n')).toString()).toBe('data: {"usage":null}\n\n');
    expect(tap.finish()).toEqual({ prompt: 3, completion: 4, cached: 0 });
  });

  it('estimates a stream cut before its usage: the prompt as the request says, one token per delta', () => {
    const asked = engineStream({ includeUsage: true, tokens: ['a', 'b', 'c', 'd', 'e', 'f'] });
    const { usage } = run(filtering(12), asked.slice(0, 5).map((e) => Buffer.from(e)));
    expect(usage).toEqual({ prompt: 12, completion: 4, cached: 0, estimated: true });
  });

  it('estimates long deltas by characters, four to a token', () => {
    const { usage } = run(filtering(1), engineStream({ includeUsage: false, tokens: ['x'.repeat(40), 'y'.repeat(40)] }).map((e) => Buffer.from(e)));
    expect(usage).toEqual({ prompt: 1, completion: 20, cached: 0, estimated: true });
  });

  it('counts tool-call arguments and reasoning as generated text, and nothing else', () => {
    const events = [
      'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n',
      'data: {"choices":[{"delta":{"reasoning_content":"hmm"}}]}\n\n',
      'data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\\"q\\":"}}]}}]}\n\n',
      'data: {"choices":[{"delta":{"content":"say \\"text\\": ok"}}],"logprobs":{"content":[{"token":"x"}]}}\n\n',
      'data: [DONE]\n\n',
    ];
    const { usage } = run(filtering(), events.map((e) => Buffer.from(e)));
    // Three deltas of 3 + 7 + 16 characters (as escaped in JSON): 26 / 4 → 7 tokens; the empty role delta, the
    // logprobs' content array and the quoted "text" inside the content count for nothing.
    expect(usage).toEqual({ prompt: 0, completion: 7, cached: 0, estimated: true });
  });
});

describe('SSE usage tap that only reads', () => {
  it('sends every chunk as it came, the usage event included, and reads it', () => {
    const asked = Buffer.from(engineStream({ includeUsage: true }).join(''));
    const tap = new SseUsageTap({ filter: false, estimation: null });
    const parts = splitAt(asked, [5, 100, 101, 300]);
    const sent = parts.map((p) => tap.push(p));
    sent.forEach((s, i) => expect(s).toBe(parts[i]));
    expect(tap.end()).toBeNull();
    expect(tap.finish()).toEqual({ prompt: 7, completion: 4, cached: 0 });
  });

  it('estimates nothing without an estimation (not a completion request)', () => {
    const tap = new SseUsageTap({ filter: false, estimation: null });
    tap.push(Buffer.from(engineStream({ includeUsage: false }).join('')));
    expect(tap.finish()).toBeNull();
  });
});
