// Owns the metrics of the network guards, declared once per registry so the gateway and the
// control API (one process, one registry) share them, told apart by the `listener` label:
// connections refused by a cap, connections closed by a timeout, connections open now.

import { Counter, Gauge, type Registry } from 'prom-client';

export type RefusalReason = 'global_cap' | 'client_cap';
export type ClosureReason = 'handshake_timeout' | 'header_timeout' | 'keep_alive_timeout' | 'idle_timeout';

export interface ListenerMeters {
  refused(reason: RefusalReason): void;
  closed(reason: ClosureReason): void;
  /** Reports the open count at scrape time. */
  trackOpen(count: () => number): void;
}

interface Declared {
  refused: Counter<'listener' | 'reason'>;
  closed: Counter<'listener' | 'reason'>;
  openCounts: Map<string, () => number>;
}

const declared = new WeakMap<Registry, Declared>();

function declare(registry: Registry): Declared {
  let d = declared.get(registry);
  if (d) return d;
  const openCounts = new Map<string, () => number>();
  d = {
    refused: new Counter({
      name: 'infergate_connections_refused_total',
      help: 'Connections closed on arrival because a connection cap was reached, by listener and cap (global_cap, client_cap)',
      labelNames: ['listener', 'reason'],
      registers: [registry],
    }),
    closed: new Counter({
      name: 'infergate_connections_timed_out_total',
      help: 'Connections closed by a timeout, by listener and reason (handshake_timeout, header_timeout, keep_alive_timeout for HTTP/1.1, idle_timeout for HTTP/2)',
      labelNames: ['listener', 'reason'],
      registers: [registry],
    }),
    openCounts,
  };
  new Gauge({
    name: 'infergate_open_connections',
    help: 'Client connections open now, by listener (counted from accept, before the TLS handshake)',
    labelNames: ['listener'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [listener, count] of openCounts) this.set({ listener }, count());
    },
  });
  declared.set(registry, d);
  return d;
}

/** The meters of one listener (`gateway`, `api`); a null registry measures nothing. */
export function listenerMeters(registry: Registry | null, listener: string): ListenerMeters {
  if (registry === null) return { refused: () => {}, closed: () => {}, trackOpen: () => {} };
  const d = declare(registry);
  return {
    refused: (reason) => d.refused.labels(listener, reason).inc(),
    closed: (reason) => d.closed.labels(listener, reason).inc(),
    trackOpen: (count) => d.openCounts.set(listener, count),
  };
}

/**
 * Counts every connection `server` accepts, as infergate_connections_accepted_total{listener}:
 * for a listener with no guard of its own (the metrics listener), so an operator — and the
 * registry tests — can see who connects to it, this host's container daemon included.
 */
export function countAccepted(server: { on(event: 'connection', listener: () => void): unknown }, registry: Registry, listener: string): void {
  let counter = registry.getSingleMetric('infergate_connections_accepted_total') as Counter<'listener'> | undefined;
  counter ??= new Counter({
    name: 'infergate_connections_accepted_total',
    help: 'Connections accepted, by listener (counted for the metrics listener)',
    labelNames: ['listener'],
    registers: [registry],
  });
  const child = counter.labels(listener);
  server.on('connection', () => child.inc());
}
