// Test helper: the deployment terminal over its WebSocket — open it (or read the refusal's
// HTTP status and body), and run one command, reading frames until a pattern shows; in pipe
// mode (Authorization header) or as a browser does it (`infergate.tty.v1` with the key as a
// subprotocol entry, keystrokes on channel `0`).

import type { IncomingMessage } from 'node:http';
import { WebSocket } from 'ws';

export type Opened = { ws: WebSocket } | { status: number; body: string };

export function openTerminal(apiUrl: string, key: string, id: number, family = 'general', replica?: string): Promise<Opened> {
  const url = `${apiUrl.replace(/^http/, 'ws')}/deployments/${family}/${id}/terminal${replica !== undefined ? `?replica=${encodeURIComponent(replica)}` : ''}`;
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` } });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', reject);
  });
}

/**
 * Sends `command` and resolves with what came back once `until` matches it; rejects when the
 * terminal closes first (with the close code and reason the server gave: a shell that could
 * not start says why) or after `ms`.
 */
export function runInTerminal(ws: WebSocket, command: string, until: RegExp, ms = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const done = () => {
      clearTimeout(timer);
      ws.off('message', onMessage);
      ws.off('close', onClose);
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no ${until} in ${JSON.stringify(out)}`));
    }, ms);
    const onMessage = (data: Buffer) => {
      out += data.toString();
      if (until.test(out)) {
        done();
        resolve(out);
      }
    };
    const onClose = (code: number, reason: Buffer) => {
      done();
      reject(new Error(`the terminal closed (${code} ${reason.toString()}) before ${until} showed in ${JSON.stringify(out)}`));
    };
    ws.on('message', onMessage);
    ws.on('close', onClose);
    ws.send(command + '\n');
  });
}

/** The key as a browser sends it: a subprotocol entry. */
export const bearerProtocol = (key: string) => `base64url.bearer.infergate.${Buffer.from(key, 'utf8').toString('base64url')}`;

export type TtyOpened = { ws: WebSocket; response: IncomingMessage } | { status: number; body: string };

/** Opens `url` offering `protocols` (no Authorization unless `headers` has one). */
export function openTty(url: string, protocols: string[], headers: Record<string, string> = {}): Promise<TtyOpened> {
  const ws = new WebSocket(url, protocols, { headers });
  return new Promise((resolve, reject) => {
    let response: IncomingMessage | undefined;
    ws.once('upgrade', (res) => (response = res));
    ws.once('open', () => resolve({ ws, response: response as IncomingMessage }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', reject);
  });
}

/**
 * Types `line` and Enter on channel `0` (a terminal sends \r; the pty's line discipline makes
 * it a newline) and resolves with the output once `until` matches it.
 */
export function ttyOutput(ws: WebSocket, line: string, until: RegExp, ms = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      ws.off('message', onMessage);
      reject(new Error(`no ${until} in ${JSON.stringify(out)}`));
    }, ms);
    const onMessage = (data: Buffer) => {
      out += data.toString();
      if (until.test(out)) {
        clearTimeout(timer);
        ws.off('message', onMessage);
        resolve(out);
      }
    };
    ws.on('message', onMessage);
    ws.send(`0${line}\r`);
  });
}
