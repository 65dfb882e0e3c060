// Test helper: hand-written HTTP over real TLS to the gateway, for the shapes no well-behaved
// client library sends (smuggling, odd framing, duplicate headers, pipelining, upgrades).
// `RawConnection` is one TLS socket (ALPN http/1.1 unless told otherwise) with an incremental
// HTTP/1.1 response parser: write bytes, wait for N responses or for the close. `h2Connect` /
// `h2Request` are a thin HTTP/2 client (ALPN h2) that can set any pseudo-header or header.

import http2 from 'node:http2';
import tls from 'node:tls';

export interface RawResponse {
  status: number;
  reason: string;
  /** Header names lowercased, values in arrival order. */
  headers: Record<string, string[]>;
  /** Status line and header lines exactly as received. */
  head: string;
  body: string;
}

export interface TlsTarget {
  port: number;
  /** SNI; null sends none. */
  servername: string | null;
  ca: string;
  /** Client certificate and key, e.g. both from one .pem. */
  cert?: string;
  key?: string;
  alpn?: string[];
  /** Check the server certificate against `servername` (default true; never without SNI). */
  checkName?: boolean;
}

const skipNameCheck = (t: TlsTarget) => t.servername === null || t.checkName === false;

/** Completes the TLS handshake; server-name checks are skipped only when no SNI is sent. */
function connectTls(t: TlsTarget): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port: t.port,
      ...(t.servername === null ? {} : { servername: t.servername }),
      ...(skipNameCheck(t) ? { checkServerIdentity: () => undefined } : {}),
      ca: t.ca,
      cert: t.cert,
      key: t.key,
      ALPNProtocols: t.alpn ?? ['http/1.1'],
    });
    socket.once('secureConnect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

export class RawConnection {
  readonly responses: RawResponse[] = [];
  /** Every byte received, latin1. */
  raw = '';
  closed = false;
  /** Bytes after a 101 or anything the parser could not frame. */
  unparsed = '';
  private buffer = '';
  private stopParsing = false;
  private waiters: Array<() => void> = [];

  private constructor(readonly socket: tls.TLSSocket) {
    socket.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      this.raw += text;
      this.buffer += text;
      this.parse();
      this.wake();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      this.parse(true);
      this.wake();
    });
  }

  static async open(t: TlsTarget): Promise<RawConnection> {
    return new RawConnection(await connectTls(t));
  }

  write(bytes: string | Buffer): void {
    this.socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
  }

  /** Resolves once `count` responses in total were parsed, the socket closed, or `ms` passed. */
  async waitFor(count: number, ms = 2000): Promise<RawResponse[]> {
    const deadline = Date.now() + ms;
    while (this.responses.length < count && !this.closed && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.responses;
  }

  /** Resolves when the peer closed the connection, or false after `ms`. */
  async waitClosed(ms = 2000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!this.closed && Date.now() < deadline) await this.waitFor(Number.MAX_SAFE_INTEGER, deadline - Date.now());
    return this.closed;
  }

  close(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private parse(atClose = false): void {
    while (!this.stopParsing && this.buffer.length > 0) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end === -1) break;
      const head = this.buffer.slice(0, end);
      const [statusLine, ...lines] = head.split('\r\n');
      const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine ?? '');
      if (!m) {
        this.stopParsing = true;
        break;
      }
      const status = Number(m[1]);
      const headers: Record<string, string[]> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon === -1) continue;
        const name = line.slice(0, colon).trim().toLowerCase();
        (headers[name] ??= []).push(line.slice(colon + 1).trim());
      }
      const rest = this.buffer.slice(end + 4);
      let body: string;
      let consumed: number;
      if (status < 200 || status === 204 || status === 304) {
        body = '';
        consumed = 0;
        if (status === 101) this.stopParsing = true;
      } else if (headers['transfer-encoding']?.some((v) => /chunked/i.test(v))) {
        const chunked = parseChunked(rest);
        if (!chunked) break;
        ({ body, consumed } = chunked);
      } else if (headers['content-length']) {
        const length = Number(headers['content-length'][0]);
        if (rest.length < length) break;
        body = rest.slice(0, length);
        consumed = length;
      } else {
        // Close-delimited.
        if (!atClose) break;
        body = rest;
        consumed = rest.length;
      }
      this.responses.push({ status, reason: m[2] ?? '', headers, head, body });
      this.buffer = rest.slice(consumed);
    }
    if (this.stopParsing) {
      this.unparsed += this.buffer;
      this.buffer = '';
    }
  }
}

function parseChunked(data: string): { body: string; consumed: number } | null {
  let at = 0;
  let body = '';
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd === -1) return null;
    const size = parseInt(data.slice(at, lineEnd).split(';')[0]!, 16);
    if (Number.isNaN(size)) return null;
    at = lineEnd + 2;
    if (size === 0) {
      // Trailers (none expected) end with an empty line.
      const trailerEnd = data.indexOf('\r\n', at);
      if (trailerEnd === -1) return null;
      return { body, consumed: trailerEnd + 2 };
    }
    if (data.length < at + size + 2) return null;
    body += data.slice(at, at + size);
    at += size + 2;
  }
}

/** Opens one connection, writes `payload`, waits for `count` responses (or the close). */
export async function rawExchange(t: TlsTarget, payload: string | Buffer, count = 1, ms = 2000): Promise<RawConnection> {
  const conn = await RawConnection.open(t);
  conn.write(payload);
  await conn.waitFor(count, ms);
  return conn;
}

export interface H2Result {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: string;
  trailers: http2.IncomingHttpHeaders | null;
  /** Set when the stream was reset or errored instead of answered. */
  error: string | null;
}

export function h2Connect(t: Omit<TlsTarget, 'alpn'>): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://127.0.0.1:${t.port}`, {
      servername: t.servername ?? '',
      ...(skipNameCheck(t) ? { checkServerIdentity: () => undefined } : {}),
      ca: t.ca,
      cert: t.cert,
      key: t.key,
    });
    session.once('connect', () => {
      session.off('error', reject);
      session.on('error', () => undefined);
      resolve(session);
    });
    session.once('error', reject);
  });
}

/** One stream on a session; resolves when it ends, is reset, or after `ms`. */
export function h2Request(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string | Buffer, ms = 3000): Promise<H2Result> {
  return new Promise((resolve) => {
    const result: H2Result = { status: 0, headers: {}, body: '', trailers: null, error: null };
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(headers, { endStream: body === undefined });
    } catch (err) {
      result.error = (err as Error).message;
      return resolve(result);
    }
    const timer = setTimeout(() => {
      result.error = 'timeout';
      stream.close(http2.constants.NGHTTP2_CANCEL);
    }, ms);
    stream.on('response', (h) => {
      result.headers = h;
      result.status = Number(h[':status']);
    });
    stream.on('trailers', (t) => (result.trailers = t));
    stream.setEncoding('latin1');
    stream.on('data', (c: string) => (result.body += c));
    stream.on('error', (err) => (result.error ??= err.message));
    stream.on('close', () => {
      clearTimeout(timer);
      if (result.status === 0 && result.error === null) result.error = `closed with code ${stream.rstCode}`;
      resolve(result);
    });
    if (body !== undefined) stream.end(body);
  });
}
