// Owns the connection caps of a listener: a global cap and a per-client-address cap, checked
// when a connection is accepted — before a TLS handshake costs anything — so a flood from
// one address cannot take the file descriptors every other client (and, in the embedded
// default, the control API beside the gateway) needs. A refused connection is closed at
// once and counted; 0 turns a cap off (behind a load balancer every client shares its
// address, so the per-client cap is raised or turned off there).

import type net from 'node:net';
import type { ListenerMeters } from './metrics.js';

export interface ConnectionCaps {
  /** Open connections in all; 0: no cap. */
  maxConnections: number;
  /** Open connections from one client address; 0: no cap. */
  maxConnectionsPerClient: number;
}

export class ConnectionGuard {
  private openCount = 0;
  private readonly perClient = new Map<string, number>();

  constructor(
    private readonly caps: ConnectionCaps,
    private readonly meters: ListenerMeters,
  ) {
    meters.trackOpen(() => this.openCount);
  }

  get open(): number {
    return this.openCount;
  }

  /** Open connections from one address now (tests and diagnostics). */
  openFrom(address: string): number {
    return this.perClient.get(address) ?? 0;
  }

  /**
   * Runs first on every accepted connection of `server` (prepended, so the TLS or HTTP layer
   * never starts on a refused one).
   */
  attach(server: net.Server): void {
    server.prependListener('connection', (socket: net.Socket) => this.admit(socket));
  }

  /** Counts the connection, or destroys it when a cap is reached; true when admitted. */
  admit(socket: net.Socket): boolean {
    const address = socket.remoteAddress ?? '';
    const fromClient = this.perClient.get(address) ?? 0;
    const { maxConnections, maxConnectionsPerClient } = this.caps;
    const refusal = maxConnections > 0 && this.openCount >= maxConnections ? 'global_cap' : maxConnectionsPerClient > 0 && fromClient >= maxConnectionsPerClient ? 'client_cap' : null;
    if (refusal !== null) {
      this.meters.refused(refusal);
      // A reset rather than a FIN: nothing was read, and the client should not wait on it.
      socket.resetAndDestroy();
      return false;
    }
    this.openCount++;
    this.perClient.set(address, fromClient + 1);
    socket.once('close', () => {
      this.openCount--;
      const n = (this.perClient.get(address) ?? 1) - 1;
      if (n > 0) this.perClient.set(address, n);
      else this.perClient.delete(address);
    });
    return true;
  }
}
