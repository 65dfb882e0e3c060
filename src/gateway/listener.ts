// Owns the gateway's listening socket: one tls.Server for every endpoint. It caps connections
// (in all and per client address) before they cost a handshake, terminates TLS with the
// certificate chosen by SNI within a handshake timeout, asks for (never requires) a client
// certificate, hands each connection to an HTTP/1.1 or an HTTP/2 server object by ALPN, and
// enforces the client-side timeouts (headers, keep-alive, idle HTTP/2 sessions). What a
// request then goes through is the pipeline's (pipeline.ts); this module never looks inside one.

import http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { Logger } from 'pino';
import type { ConnectionGuard } from '../net/connection-guard.js';
import { closeIdleSessions } from '../net/h2-idle.js';
import type { listenerMeters } from '../net/metrics.js';
import type { DownstreamRequest, DownstreamResponse } from './downstream.js';
import type { Rejection } from './phases.js';
import { writeParserRefusal } from './respond.js';

export interface ClientTimeouts {
  tlsHandshakeMs: number;
  /** An HTTP/1.1 connection idle between requests. */
  keepAliveMs: number;
  /** An HTTP/2 connection with no open stream. */
  h2IdleMs: number;
  /** From the connection (or the previous response) to a request's complete headers. */
  headersMs: number;
}

export interface ListenerOptions {
  /** The default certificate and key, and the CA client certificates must chain to. */
  certPem: string;
  keyPem: string;
  caPem: string;
  /**
   * A per-host certificate for an SNI name, or null for the default one; a promise when the
   * handshake is to wait for it (a host the default certificate does not name).
   */
  contextFor(servername: string): tls.SecureContext | null | Promise<tls.SecureContext | null>;
  timeouts: ClientTimeouts;
  guard: ConnectionGuard;
  meters: ReturnType<typeof listenerMeters>;
  log: Logger;
  handle(req: DownstreamRequest, res: DownstreamResponse): void;
  /**
   * A request the HTTP/1.1 parser refused before it became one: answered here (respond.ts),
   * then reported so it is counted as every other request is.
   */
  parserRefused(r: Rejection, socket: Duplex): void;
}

export interface Listener {
  server: tls.Server;
  /** Stops accepting and ends every connection, open requests included. */
  close(): Promise<void>;
}

/** What the HTTP/1.1 parser's error means to the client. */
function parserRefusal(code: string | undefined, headersMs: number): Rejection {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, code: 'request_timeout', message: `the request headers did not arrive within ${Math.round(headersMs / 1000)} s` };
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, code: 'headers_too_large', message: 'the request headers are larger than 16 KiB' };
  return { status: 400, code: 'invalid_request', message: `the request is not valid HTTP/1.1 (${code ?? 'parse error'})` };
}

function http1Server(opts: ListenerOptions): http.Server {
  const { timeouts, meters, handle } = opts;
  const h1 = http.createServer(
    {
      // Generations can be long and streams quiet: no request timeout cuts them. Headers must
      // still arrive in time (slow-loris), and an idle keep-alive connection ends.
      requestTimeout: 0,
      headersTimeout: timeouts.headersMs,
      keepAliveTimeout: timeouts.keepAliveMs,
      // How often Node looks for connections past headersTimeout (its default is 30 s).
      connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(timeouts.headersMs / 4))),
    },
    handle,
  );
  // `100 Continue` is sent by the body phase, after authentication, not by Node on arrival.
  h1.on('checkContinue', handle);
  // With a 'timeout' listener Node leaves the idle keep-alive socket to it: counted, then closed.
  h1.on('timeout', (socket: net.Socket) => {
    meters.closed('keep_alive_timeout');
    socket.destroy();
  });
  h1.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') meters.closed('header_timeout');
    const refusal = parserRefusal(err.code, timeouts.headersMs);
    writeParserRefusal(socket, refusal);
    opts.parserRefused(refusal, socket);
  });
  return h1;
}

function http2Server(opts: ListenerOptions): http2.Http2Server {
  // nghttp2 resets a stream past its header-pair limit without an answer; it is raised here
  // so the request reaches the header check and gets a 431 it can read.
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: 256 }, maxHeaderListPairs: 8 * 128 });
  h2.on('request', opts.handle);
  h2.on('checkContinue', opts.handle);
  closeIdleSessions(h2, opts.timeouts.h2IdleMs, () => opts.meters.closed('idle_timeout'));
  return h2;
}

export function createListener(opts: ListenerOptions): Listener {
  const h1 = http1Server(opts);
  const h2 = http2Server(opts);
  const defaultContext = tls.createSecureContext({ cert: opts.certPem, key: opts.keyPem, ca: opts.caPem });
  const server = tls.createServer(
    {
      cert: opts.certPem,
      key: opts.keyPem,
      ca: opts.caPem,
      ALPNProtocols: ['h2', 'http/1.1'],
      minVersion: 'TLSv1.2',
      // Node's default is 120 s: a connection that never sends a ClientHello holds a socket.
      handshakeTimeout: opts.timeouts.tlsHandshakeMs,
      // http.createServer turns Nagle off for its sockets, a plain TLS server does not; with it
      // on, a response written in two pieces waits ~40 ms for the client's delayed ACK.
      noDelay: true,
      // Ask for a client certificate, never require one: bearer clients have none.
      requestCert: true,
      rejectUnauthorized: false,
      SNICallback: (servername, cb) => {
        const chosen = opts.contextFor(servername);
        // The handshake timeout still bounds a wait; Node drops the answer of a socket closed meanwhile.
        if (chosen instanceof Promise) chosen.then((c) => cb(null, c ?? defaultContext), () => cb(null, defaultContext));
        else cb(null, chosen ?? defaultContext);
      },
    },
    (socket) => {
      if (socket.alpnProtocol === 'h2') h2.emit('connection', socket);
      else h1.emit('connection', socket);
    },
  );
  opts.guard.attach(server);
  // Every connection, from before its handshake, so close() can end them all.
  const openSockets = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    if (socket.destroyed) return; // refused by a connection cap
    openSockets.add(socket);
    socket.once('close', () => openSockets.delete(socket));
  });
  // With a listener here Node no longer closes the connection of a failed handshake (a
  // handshake timeout included): it must be destroyed, or it stays open.
  server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: tls.TLSSocket) => {
    socket.destroy();
    if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') opts.meters.closed('handshake_timeout');
    opts.log.debug({ err }, 'TLS handshake failed');
  });
  // The HTTP/1.1 server object never listens itself; this starts its header-timeout checks.
  server.on('listening', () => h1.emit('listening'));

  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        h1.closeAllConnections();
        h1.close(() => undefined);
        h2.close();
        for (const socket of openSockets) socket.destroy();
      }),
  };
}
