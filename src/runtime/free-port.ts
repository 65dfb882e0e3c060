// Owns finding a free TCP port on loopback for a replica: bind port 0, read it, release it.
// A race with another process taking it in between is possible; the replica then fails to
// bind, exits and is restarted on a new port.

import net from 'node:net';

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
