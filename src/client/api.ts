// Owns the client's conversation with the control API: JSON requests with the service-account
// key (or a person's session token, refreshed as session-refresh.ts says) as a Bearer token
// (sent with node:http, see http-request.ts), the API's error body turned
// into an ApiRefusal (exit 1) and a failed connection into Unreachable (exit 3); plus the two
// long-lived calls — a Server-Sent Events stream (logs -f) and the terminal's WebSocket (exec).

import { createRequire } from 'node:module';
import type WebSocket from 'ws';
import { ApiRefusal, Unreachable } from './errors.js';
import type { Connection } from './contexts.js';
import { nodeRequest, type Answer, type Requester } from './http-request.js';
import { refreshSession, sessionDue } from './session-refresh.js';

/** Requests that get no answer within this are given up (streams excepted). */
const REQUEST_TIMEOUT_MS = 30_000;

// ws is required when a WebSocket is opened (exec), not with this module: every other command
// starts without loading it.
const require = createRequire(import.meta.url);

export type Json = Record<string, unknown>;

function unreachable(api: string, err: unknown, timeoutMs?: number): Unreachable {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  const timedOut = (e.name === 'AbortError' || e.name === 'TimeoutError') && timeoutMs !== undefined;
  const why = timedOut ? `no answer within ${timeoutMs / 1000} s` : (e.cause?.code ?? e.code ?? e.cause?.message ?? e.message);
  return new Unreachable(`cannot reach the control API at ${api} (${why})`);
}

async function refusal(res: Answer): Promise<ApiRefusal> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string; field?: string } };
    if (body.error?.message) return new ApiRefusal(res.status, body.error.code ?? 'error', body.error.message, body.error.field ?? null);
  } catch {
    // not the API's error shape
  }
  return new ApiRefusal(res.status, 'error', `the control API answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`, null);
}

export interface ApiClientOptions {
  /** How long a request may go unanswered (default 30 s); shell completion asks with a short one. */
  timeoutMs?: number;
  /** How a request is sent (default node:http/https); the client's unit tests pass a stand-in API. */
  request?: Requester;
}

export class ApiClient {
  private readonly timeoutMs: number;
  private readonly request: Requester;

  constructor(
    readonly connection: Connection,
    options: ApiClientOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS;
    this.request = options.request ?? nodeRequest;
  }

  /**
   * One request, its answer read whole; no answer is Unreachable. A saved person's session is
   * refreshed first when it has expired, and once more when the API refuses it as expired.
   */
  private async send(method: string, route: string, body?: unknown): Promise<Answer> {
    if (sessionDue(this.connection)) await this.refresh();
    const res = await this.sendOnce(method, route, body);
    if (res.status === 401 && this.connection.session && route !== '/auth/token') {
      await this.refresh();
      return this.sendOnce(method, route, body);
    }
    return res;
  }

  private async refresh(): Promise<void> {
    try {
      await refreshSession(this.connection, this.request, this.timeoutMs);
    } catch (err) {
      if (err instanceof ApiRefusal) throw err;
      throw unreachable(this.connection.api, err, this.timeoutMs);
    }
  }

  private async sendOnce(method: string, route: string, body?: unknown): Promise<Answer> {
    try {
      return await this.request(this.url(route), {
        method,
        headers: this.headers(body !== undefined),
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      throw unreachable(this.connection.api, err, this.timeoutMs);
    }
  }

  private url(route: string): string {
    return this.connection.api + route;
  }

  private headers(json: boolean): Record<string, string> {
    return {
      authorization: `Bearer ${this.connection.key}`,
      ...(this.connection.project ? { 'x-infergate-project': this.connection.project } : {}),
      ...(json ? { 'content-type': 'application/json' } : {}),
    };
  }

  async call<T = Json>(method: string, route: string, body?: unknown): Promise<T> {
    const res = await this.send(method, route, body);
    if (!res.ok) throw await refusal(res);
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  get<T = Json>(route: string): Promise<T> {
    return this.call<T>('GET', route);
  }

  /** A GET whose answer is text (a .pem). */
  async text(route: string): Promise<string> {
    const res = await this.send('GET', route);
    if (!res.ok) throw await refusal(res);
    return res.text();
  }

  /** Each `data:` event of a Server-Sent Events stream, parsed as JSON, until `signal` aborts or the server ends it. */
  async events(route: string, onEvent: (data: unknown) => void, signal: AbortSignal): Promise<void> {
    if (sessionDue(this.connection)) await this.refresh();
    let res: Response;
    try {
      res = await fetch(this.url(route), { headers: { ...this.headers(false), accept: 'text/event-stream' }, signal });
    } catch (err) {
      if (signal.aborted) return;
      throw unreachable(this.connection.api, err);
    }
    if (!res.ok) throw await refusal(res);
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = event
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n');
          if (data !== '') onEvent(JSON.parse(data));
        }
      }
    } catch (err) {
      if (!signal.aborted) throw unreachable(this.connection.api, err);
    }
  }

  /** Opens a WebSocket on a route of the API (ws:// or wss:// as the API is http or https). */
  websocket(route: string, protocols: string[] = []): WebSocket {
    const url = this.url(route).replace(/^http/, 'ws');
    const Socket = require('ws') as typeof WebSocket;
    return new Socket(url, protocols, { headers: this.headers(false) });
  }
}
