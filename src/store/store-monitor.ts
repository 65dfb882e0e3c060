// Owns knowing whether this process's store answers: a ping every second, the gauge
// `infergate_store_up` (1 answering, 0 not), one log line when it stops answering and one when
// it is back. Nothing else waits on it — each part copes with a failing store by itself (the
// gateway's last routing table, the control API's 503, the usage ledger's kept deltas) — so
// an outage is seen once here instead of once per failed call.

import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { Store } from './store.js';

export class StoreMonitor {
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;
  private answering = true;
  private downSince = 0;
  private readonly gauge: Gauge;

  constructor(
    private readonly store: Store,
    registry: Registry,
    private readonly logger: Logger,
    private readonly intervalMs = 1_000,
  ) {
    this.gauge = new Gauge({ name: 'infergate_store_up', help: 'Whether the store (Redis or the data directory) answered the last check: 1 yes, 0 no', registers: [registry], aggregator: 'min' });
    this.gauge.set(1);
  }

  start(): void {
    this.timer = setInterval(() => {
      // A ping times out on its own (the Redis command timeout); never two at once.
      this.checking ??= this.check().finally(() => (this.checking = null));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.checking;
  }

  private async check(): Promise<void> {
    try {
      await this.store.ping();
    } catch (err) {
      if (this.answering) {
        this.answering = false;
        this.downSince = Date.now();
        this.gauge.set(0);
        this.logger.error(
          { err },
          'store unreachable: gateways keep serving from their last routing table, the control API answers 503, usage is kept in memory; no deployment, scaling or credential change applies until it is back',
        );
      }
      return;
    }
    if (!this.answering) {
      this.answering = true;
      this.gauge.set(1);
      this.logger.warn({ down_ms: Date.now() - this.downSince }, 'store reachable again: routing tables and the controller resync, kept usage is flushed');
    }
  }
}
