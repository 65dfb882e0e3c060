// Owns one gateway worker process (`serve --gateway-workers N` forks N through node:cluster):
// it takes the configuration from the primary, opens its own connection to Redis, usage
// ledger and metrics registry, runs the gateway role on the shared port, answers the
// primary's metrics requests, and stops when told to — or at once when the primary is gone.

import cluster from 'node:cluster';
import { pino } from 'pino';
import type { Config } from '../config/config.js';
import { createRegistry } from '../metrics/registry.js';
import { loadOrCreateCa } from '../pki/ca.js';
import { RedisStore } from '../store/redis-store.js';
import { StoreMonitor } from '../store/store-monitor.js';
import { UsageLedger } from '../store/usage-ledger.js';
import { startGateway } from './gateway-role.js';
import { toWorker, type FromWorker } from './gateway-worker-protocol.js';

/** Resolves once the message is handed to the channel, so a worker can send and then exit. */
function send(message: FromWorker): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

/** The primary's first message: what to run. */
function receiveConfig(): Promise<{ index: number; config: Config }> {
  return new Promise((resolve) => {
    const onMessage = (raw: unknown) => {
      const m = toWorker(raw);
      if (m?.kind !== 'infergate:config') return;
      process.off('message', onMessage);
      resolve({ index: m.index, config: m.config });
    };
    process.on('message', onMessage);
    // Said only now: a message sent before this listener existed would have been lost.
    void send({ kind: 'infergate:hello' });
  });
}

export async function runGatewayWorker(): Promise<void> {
  if (!cluster.isWorker) throw new Error('a gateway worker runs only as a node:cluster worker of infergate serve');
  // Ctrl-C reaches the whole process group: the primary decides when workers stop.
  process.on('SIGINT', () => {});
  const { index, config } = await receiveConfig();
  if (config.redisUrl === null) throw new Error('gateway workers share state through Redis; the primary sent no --redis');
  const logger = pino({ level: config.logLevel, base: { service: 'infergate', worker: index } });
  const closers: Array<() => Promise<void>> = [];
  let stopping: Promise<void> | null = null;
  const stop = (code: number) => {
    stopping ??= (async () => {
      for (const close of [...closers].reverse()) await close().catch((err: Error) => logger.warn({ err }, 'shutdown step failed'));
      process.exit(code);
    })();
    return stopping;
  };
  try {
    const store = new RedisStore({ url: config.redisUrl, prefix: config.redisPrefix });
    await store.open();
    closers.push(() => store.close());
    const usage = new UsageLedger(store);
    usage.start();
    closers.push(() => usage.stop());
    const registry = createRegistry();
    const monitor = new StoreMonitor(store, registry, logger.child({ component: 'store' }));
    monitor.start();
    closers.push(() => monitor.stop());
    // The primary created the CA and the gateway's certificate before forking: this reads them.
    const ca = await loadOrCreateCa(config.certsDir);
    const started = await startGateway({ config, store, logger, closers, registry, usage, ca });
    process.on('message', (raw: unknown) => {
      const m = toWorker(raw);
      if (m?.kind === 'infergate:metrics-request') {
        registry.getMetricsAsJSON().then(
          (metrics) => void send({ kind: 'infergate:metrics', id: m.id, metrics }),
          (err: Error) => logger.warn({ err }, 'metrics collection failed'),
        );
      } else if (m?.kind === 'infergate:stop') {
        void stop(0);
      }
    });
    process.once('SIGTERM', () => void stop(0));
    await send({ kind: 'infergate:ready', port: started.port });
    logger.info({ port: started.port }, 'gateway worker started');
  } catch (err) {
    await send({ kind: 'infergate:failed', message: (err as Error).message });
    await stop(1);
  }
}
