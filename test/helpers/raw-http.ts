// Test helper: HTTP/1.1 over a plain TCP socket, for what fetch cannot send or show —
// oversized or malformed headers, `Expect: 100-continue` and the exact bytes that come back,
// including whether the server closed the connection.

import net from 'node:net';

export interface RawConnection {
  write(data: string | Buffer): void;
  /** Everything received so far, as latin1 text. */
  received(): string;
  /** Resolves with everything received once `pattern` appears; rejects after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with everything received when the server closes the connection. */
  closed(timeoutMs?: number): Promise<string>;
  destroy(): void;
}

export function rawConnect(baseUrl: string): Promise<RawConnection> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    let data = '';
    let ended = false;
    const waiters = new Set<() => void>();
    const notify = () => {
      for (const w of [...waiters]) w();
    };
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString('latin1');
      notify();
    });
    // A reset after the answer still counts as the end of the conversation.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      ended = true;
      notify();
    });
    const until = (done: () => boolean, what: string, timeoutMs: number) =>
      new Promise<string>((res, rej) => {
        const check = () => {
          if (!done()) return;
          waiters.delete(check);
          clearTimeout(timer);
          res(data);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          rej(new Error(`timed out waiting for ${what}; received so far: ${JSON.stringify(data.slice(0, 500))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    socket.once('connect', () =>
      resolve({
        write: (chunk) => socket.write(chunk),
        received: () => data,
        waitFor: (pattern, timeoutMs = 5_000) => until(() => pattern.test(data), String(pattern), timeoutMs),
        closed: (timeoutMs = 5_000) => until(() => ended, 'the server to close the connection', timeoutMs),
        destroy: () => socket.destroy(),
      }),
    );
    socket.once('error', reject);
  });
}

/** The status code and parsed JSON body of the first response in `raw` (after any 1xx). */
export function finalResponse(raw: string): { status: number; head: string; body: unknown } {
  const responses = raw.split(/(?=HTTP\/1\.1 \d{3} )/).filter(Boolean);
  const final = responses.find((r) => !/^HTTP\/1\.1 1\d\d /.test(r)) ?? '';
  const [head = '', body = ''] = final.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  return { status, head, body: body ? JSON.parse(body) : undefined };
}
