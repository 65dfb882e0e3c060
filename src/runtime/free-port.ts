// Owns finding a free TCP port on loopback for a replica: bind port 0, read it, release it.
// A race with another process taking it in between is possible; the replica then fails to
// bind, exits and is restarted on a new port. A port held inside a pod is not in use on the
// host, so the host would offer it again: PortBook keeps the ports of the runtime's own
// replicas, so two members of one pod never get the same one.

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

/** The ports this runtime's replicas hold: each is free on the host and held by no other replica of the runtime. */
export class PortBook {
  private readonly held = new Set<number>();

  async take(): Promise<number> {
    for (let attempt = 0; attempt < 100; attempt++) {
      const port = await freePort();
      if (this.held.has(port)) continue;
      this.held.add(port);
      return port;
    }
    throw new Error(`no free port: the host kept offering the ${this.held.size} ports replicas hold`);
  }

  give(port: number | null): void {
    if (port !== null) this.held.delete(port);
  }
}
