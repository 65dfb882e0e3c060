// Test helper: the deployment terminal over its WebSocket — open it (or read the refusal's
// HTTP status and body), and run one command, reading frames until a pattern shows.

import { WebSocket } from 'ws';

export type Opened = { ws: WebSocket } | { status: number; body: string };

export function openTerminal(apiUrl: string, key: string, id: number, family = 'general'): Promise<Opened> {
  const url = `${apiUrl.replace(/^http/, 'ws')}/deployments/${family}/${id}/terminal`;
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

/** Sends `command` and resolves with what came back once `until` matches it. */
export function runInTerminal(ws: WebSocket, command: string, until: RegExp, ms = 10_000): Promise<string> {
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
    ws.send(command + '\n');
  });
}
