// Owns counting the timeouts of an HTTP(S) listener that is not the gateway (the control API):
// a request whose headers did not arrive in time, an idle keep-alive connection closed, a TLS
// handshake that timed out. Node closes those connections itself; these listeners only count
// — except where adding a listener takes the closing over from Node ('timeout',
// 'tlsClientError'), and the connection is then closed here.

import type http from 'node:http';
import type net from 'node:net';
import type { ListenerMeters } from './metrics.js';

export function meterListener(server: http.Server, meters: ListenerMeters): void {
  server.on('clientError', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') meters.closed('header_timeout');
  });
  // Only the keep-alive timer is armed on these sockets (no server.timeout): its expiry.
  server.on('timeout', (socket: net.Socket) => {
    meters.closed('keep_alive_timeout');
    socket.destroy();
  });
  server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: net.Socket) => {
    socket.destroy();
    if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') meters.closed('handshake_timeout');
  });
}
