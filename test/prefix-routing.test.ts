// routing_policy prefix_aware end to end: `infergate serve` as a child process, three replicas
// of the reference engine with its simulated prefix cache, the openai SDK through the TLS
// gateway. A conversation's next turn goes to the replica that served its previous one (its
// prefix is cached there) and reports cached tokens — with no X-Session-Id, so only the policy
// can have put it there; a session is kept; a body over the 1 MiB read-before-choice bound is
// forwarded whole; and the gateway's metrics show cached tokens, time to first chunk and the
// session decisions.

import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { engineBody, FAST_ENGINE, usePlatform, type Platform } from './helpers/platform.js';

let platform: Platform;
usePlatform('prefix-routing', [], (p) => (platform = p));

const TOKEN = 'tok-prefix-routing-0123456789';
const NAME = 'prefixed';
// A prefill cost of a real GPU's order (0.1 ms a token: ~120 ms for a 1,200-token prompt not
// cached): the policy weighs a cache hit in the time it saves, so a prefill that costs
// nothing would rightly make the cache worth nothing, and a loaded host's noise decide.
const ENGINE = [...FAST_ENGINE, '--enable-prefix-caching', 'true', '--prefill-ms-per-token', '0.1'];

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** A system prompt of its own per conversation, long enough to span many blocks. */
function systemPrompt(n: number): string {
  return Array.from({ length: 300 }, (_, i) => `rule${n}x${i}`).join(' ');
}

async function turn(client: OpenAI, messages: Message[], session?: string) {
  const stream = await client.chat.completions.create(
    { model: 'sim/model', messages, max_tokens: 4, stream: true, stream_options: { include_usage: true } },
    session ? { headers: { 'x-session-id': session } } : {},
  );
  let text = '';
  let fingerprint = '';
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    fingerprint = chunk.system_fingerprint ?? fingerprint;
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, fingerprint, cached: usage?.prompt_tokens_details?.cached_tokens ?? 0, prompt: usage?.prompt_tokens ?? 0 };
}

async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${platform.ports.metrics}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

describe('routing_policy prefix_aware', () => {
  it('sends each next turn to the replica holding the conversation, which reports cached tokens', async () => {
    const created = await platform.call(
      'POST',
      '/deployments/general',
      engineBody(NAME, TOKEN, { min_replicas: 3, max_replicas: 3, session_affinity: true, routing_policy: 'prefix_aware', command: ENGINE }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.spec?.routing_policy ?? created.body.routing_policy).toBe('prefix_aware');
    const id = created.body.id as number;
    await platform.waitFor(id, (d) => d.status === 'ready' && d.components.Replica.ready === 3, 30_000, 'three ready replicas');
    const client = platform.client(NAME, TOKEN);

    // Six conversations, first turns at once: nothing is cached yet, so the policy spreads
    // them by load (one after another, all costs would tie and chance would place them).
    const conversations = Array.from({ length: 6 }, (_, n) => ({ messages: [{ role: 'system', content: systemPrompt(n) }, { role: 'user', content: `question one of ${n}` }] as Message[], first: '' }));
    await Promise.all(
      conversations.map(async (c) => {
        const r = await turn(client, c.messages);
        c.first = r.fingerprint;
        c.messages.push({ role: 'assistant', content: r.text }, { role: 'user', content: 'and a follow-up question' });
      }),
    );
    expect(new Set(conversations.map((c) => c.first)).size).toBeGreaterThan(1);
    // Second turns, no session header: each lands where its prefix is, and is served from cache.
    for (const c of conversations) {
      const r = await turn(client, c.messages);
      expect(r.fingerprint).toBe(c.first);
      expect(r.cached).toBeGreaterThan(r.prompt / 2);
    }
  });

  it('keeps a session on its replica and counts the decisions', async () => {
    const client = platform.client(NAME, TOKEN);
    const messages: Message[] = [{ role: 'system', content: systemPrompt(99) }];
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) {
      messages.push({ role: 'user', content: `turn ${i}` });
      const r = await turn(client, messages, 'session-7');
      seen.add(r.fingerprint);
      messages.push({ role: 'assistant', content: r.text });
    }
    expect(seen.size).toBe(1);
    await expect.poll(() => metric('infergate_session_routing_total', `deployment="${NAME}",decision="new"`)).toBe(1);
    expect(await metric('infergate_session_routing_total', `deployment="${NAME}",decision="kept"`)).toBe(3);
    expect(await metric('infergate_tokens_total', `deployment="${NAME}",kind="cached"`)).toBeGreaterThan(0);
    expect(await metric('infergate_time_to_first_chunk_seconds_count', `deployment="${NAME}"`)).toBeGreaterThanOrEqual(16);
  });

  it('forwards a body over the 1 MiB bound whole, chosen for without its prompt', async () => {
    // ~1.2 MB of JSON in 80,000 words (the engine counts a word as a token: 8 s of prefill).
    const words = 80_000;
    const big = Array.from({ length: words }, (_, i) => `word${String(i % 1000).padStart(9, '0')}`).join(' ');
    expect(big.length).toBeGreaterThan(1 << 20);
    const client = platform.client(NAME, TOKEN);
    const r = await turn(client, [{ role: 'user', content: big }], 'session-big');
    // Cut anywhere, the JSON would not parse at the replica: a prompt this long came whole.
    expect(r.prompt).toBeGreaterThanOrEqual(words);
  });
});
