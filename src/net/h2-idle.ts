// Owns the idle timeout of HTTP/2 connections: a session with no open stream for `idleMs` is
// closed with GOAWAY (so a client knows to reconnect rather than retry on it). A socket
// timeout would not do: it also fires on a session whose only stream is a generation quietly
// waiting for its next token, and it is reset by PING frames, so a client could hold an idle
// session forever by pinging.

import type http2 from 'node:http2';

export function closeIdleSessions(server: http2.Http2Server | http2.Http2SecureServer, idleMs: number, onClose: () => void): void {
  server.on('session', (session: http2.ServerHttp2Session) => {
    let open = 0;
    let timer: NodeJS.Timeout | null = null;
    const arm = () => {
      timer = setTimeout(() => {
        timer = null;
        if (open > 0 || session.closed || session.destroyed) return;
        onClose();
        session.close();
        // A client that ignores GOAWAY and keeps the connection open is cut after a grace.
        setTimeout(() => session.destroy(), 5_000).unref();
      }, idleMs);
      timer.unref();
    };
    const disarm = () => {
      if (timer) clearTimeout(timer);
      timer = null;
    };
    session.on('stream', (stream: http2.ServerHttp2Stream) => {
      open++;
      disarm();
      stream.once('close', () => {
        if (--open === 0 && !session.closed) arm();
      });
    });
    session.once('close', disarm);
    arm();
  });
}
