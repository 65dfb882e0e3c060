// Owns how the client sends a request and reads the whole answer: node:http or node:https, not
// fetch. Node's fetch loads undici and compiles its WebAssembly HTTP parser on first use, which
// cost a short command such as `infergate ls` about 150 ms — more than everything else it does.
// Streams (logs -f) still use fetch, where that cost is paid once for a long call.

import type { IncomingMessage } from 'node:http';

/** The answer to a request, read whole: the part of fetch's Response the client uses. */
export interface Answer {
  status: number;
  ok: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
}

export interface RequestOptions {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** Sends one request; rejects as fetch does when there is no answer (refused, reset, timed out). */
export type Requester = (url: string, options: RequestOptions) => Promise<Answer>;

export const nodeRequest: Requester = async (url, options) => {
  const target = new URL(url);
  // https (and tls) are loaded only for an https API.
  const transport = target.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const headers = options.body !== undefined ? { ...options.headers, 'content-length': String(Buffer.byteLength(options.body)) } : options.headers;
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = transport.request(target, { method: options.method, headers, signal: options.signal }, resolve);
    req.once('error', reject);
    req.end(options.body);
  });
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const status = response.statusCode ?? 0;
  return { status, ok: status >= 200 && status < 300, text: () => Promise.resolve(text), json: () => Promise.resolve(JSON.parse(text) as unknown) };
};
