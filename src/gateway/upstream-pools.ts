// Owns the gateway's connections to replicas: one undici Pool (keep-alive, no pipelining) per
// replica address, created on first use and closed once the address leaves the routing
// table. Timeouts are generous and configurable: a long generation before the first byte, or
// a stream that is quiet between tokens, must not be cut.

import { Pool } from 'undici';
import { DEFAULTS } from '../config/defaults.js';

export interface UpstreamTimeouts {
  /** Longest wait for response headers, ms; 0 disables it. */
  headersMs: number;
  /** Longest silence between two body chunks, ms; 0 disables it. */
  idleMs: number;
  /** Longest wait to open a connection to a replica (HTTP and gRPC), ms. */
  connectMs: number;
  /** Longest wait for a gRPC replica's first response message (its response headers), ms; 0 disables it. */
  firstMessageMs: number;
}

export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly timeouts: UpstreamTimeouts = DEFAULTS.gateway.upstream) {}

  get(address: string): Pool {
    let pool = this.pools.get(address);
    if (!pool) {
      pool = new Pool(`http://${address}`, {
        pipelining: 1,
        keepAliveTimeout: 10_000,
        headersTimeout: this.timeouts.headersMs,
        bodyTimeout: this.timeouts.idleMs,
        connectTimeout: this.timeouts.connectMs,
      });
      this.pools.set(address, pool);
    }
    return pool;
  }

  /** Closes pools of addresses no longer routed to; requests in flight on them finish first. */
  retain(addresses: ReadonlySet<string>): void {
    for (const [address, pool] of this.pools) {
      if (addresses.has(address)) continue;
      this.pools.delete(address);
      pool.close().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
  }
}
