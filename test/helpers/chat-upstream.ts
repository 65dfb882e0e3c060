// Test helper: a replica stand-in that speaks enough of the OpenAI chat completions API
// for gateway tests — plain and streamed responses with `usage`, its name
// in `system_fingerprint` — and records what reached it: headers, and streams the client
// abandoned; the gateway's own once-a-second scrape of /metrics is answered 404 and not
// recorded (it is not a forwarded request). Streams can be held after their first chunk until the test releases them.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isGatewayScrape } from './recording-upstream.js';

export interface SeenRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
}

export interface ChatUpstream {
  name: string;
  address: string;
  seen: SeenRequest[];
  /** Streams whose client went away before the last chunk, with when the upstream noticed. */
  abandoned: number[];
  /** Streams currently open. */
  open: number;
  /** Lets every held stream go on past its first chunk. */
  release(): void;
  close(): Promise<void>;
}

export interface ChatUpstreamOptions {
  name: string;
  /** Content chunks per stream (default 5) and the pause between them (default 5 ms). */
  chunks?: number;
  chunkDelayMs?: number;
  /** Hold streams after the first chunk until release() (default false). */
  hold?: boolean;
  /** Completion tokens reported in usage (default: the number of chunks). */
  promptTokens?: number;
}

interface ChatBody {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: Array<{ content?: string }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startChatUpstream(opts: ChatUpstreamOptions): Promise<ChatUpstream> {
  const chunks = opts.chunks ?? 5;
  const delay = opts.chunkDelayMs ?? 5;
  const promptTokens = opts.promptTokens ?? 7;
  let releaseHeld: () => void = () => undefined;
  let held = new Promise<void>((r) => (releaseHeld = r));
  const state: ChatUpstream = {
    name: opts.name,
    address: '',
    seen: [],
    abandoned: [],
    open: 0,
    release: () => releaseHeld(),
    close: async () => {
      releaseHeld();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  const stream = async (res: http.ServerResponse, body: ChatBody) => {
    state.open += 1;
    let finished = false;
    res.on('close', () => {
      state.open -= 1;
      if (!finished) state.abandoned.push(Date.now());
    });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const base = { id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1, model: body.model ?? 'test', system_fingerprint: opts.name };
    const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    for (let i = 0; i < chunks && !res.destroyed; i++) {
      send({ ...base, choices: [{ index: 0, delta: { content: `t${i} ` }, finish_reason: i === chunks - 1 ? 'stop' : null }], usage: null });
      if (i === 0 && opts.hold) await held;
      else await sleep(delay);
    }
    if (res.destroyed) return;
    if (body.stream_options?.include_usage) {
      send({ ...base, choices: [], usage: { prompt_tokens: promptTokens, completion_tokens: chunks, total_tokens: promptTokens + chunks } });
    }
    res.write('data: [DONE]\n\n');
    finished = true;
    res.end();
  };

  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    if (isGatewayScrape(req)) {
      res.writeHead(404).end();
      return;
    }
    state.seen.push({ method: req.method ?? '', path, headers: req.headers });
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      if (req.method === 'POST' && path === '/v1/chat/completions') {
        const body = JSON.parse(raw || '{}') as ChatBody;
        if (body.stream) return void stream(res, body);
        const text = Array.from({ length: chunks }, (_, i) => `t${i}`).join(' ');
        const out = JSON.stringify({
          id: 'chatcmpl-test',
          object: 'chat.completion',
          created: 1,
          model: body.model ?? 'test',
          system_fingerprint: opts.name,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
          usage: { prompt_tokens: promptTokens, completion_tokens: chunks, total_tokens: promptTokens + chunks },
        });
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(out);
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': opts.name });
      res.end(JSON.stringify({ upstream: opts.name, path, body: raw }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  held = opts.hold ? held : Promise.resolve();
  return state;
}
