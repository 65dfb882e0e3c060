// Test helper: whether something accepts a TCP connection at an address, as the network
// isolation suites ask it of the host (each target must answer the host, so that what a
// replica meets is its own isolation and not an empty port).

import net from 'node:net';

/** 'open' when something accepted a TCP connection at host:port, else the error code or 'timeout' (3 s). */
export function tryConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(3000, () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve('open');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}
