// Owns the gateway workers of `serve --gateway-workers N`: forks them through node:cluster
// (the primary accepts on the gateway port and hands connections to the workers in turn),
// gives each the configuration, waits until all listen, replaces one that dies (with a
// growing delay when replacements keep dying), gathers their metrics for the primary's
// /metrics (keeping what a dead worker had counted), and stops them on shutdown — SIGKILL for one that does not stop in time.

import cluster, { type Worker } from 'node:cluster';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Config } from '../config/config.js';
import { mergeMetrics } from '../metrics/cluster.js';
import { fromWorker, WORKER_ENV, type ToWorker, type WorkerMetrics } from './gateway-worker-protocol.js';
import { ListenError } from './listen.js';
import { selfCommand } from './self-command.js';

/** This program's entry point, which a forked worker runs (main.ts from source, main.js built). */
const MAIN_SCRIPT = (() => {
  const here = fileURLToPath(import.meta.url);
  return path.join(path.dirname(here), `main${path.extname(here)}`);
})();

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
const FIRST_RESTART_DELAY_MS = 1_000;
const MAX_RESTART_DELAY_MS = 30_000;
/** A worker that lived this long before dying was not crash-looping: its replacement starts soon. */
const STABLE_AFTER_MS = 10_000;

interface Slot {
  index: number;
  worker: Worker | null;
  ready: boolean;
  startedAt: number;
  restartDelayMs: number;
  timer: NodeJS.Timeout | null;
  /** What the worker's metrics were at the last scrape it answered. */
  lastMetrics: WorkerMetrics | null;
}

export interface WorkersOptions {
  config: Config;
  count: number;
  logger: Logger;
  registry: Registry;
}

export class GatewayWorkers {
  private readonly slots: Slot[];
  private started = false;
  private stopping = false;
  private nextRequest = 1;
  private readonly answers = new Map<number, (metrics: WorkerMetrics) => void>();
  /** The counters and histograms of workers that exited, as of their last scrape: added to every scrape after, so merged counters never go down. */
  private carried: WorkerMetrics = [];
  /** The merge of an exited worker's counters into `carried`, in progress. */
  private carrying: Promise<void> = Promise.resolve();
  private readonly restarts: Counter;

  constructor(private readonly opts: WorkersOptions) {
    this.slots = Array.from({ length: opts.count }, (_, index) => ({ index, worker: null, ready: false, startedAt: 0, restartDelayMs: FIRST_RESTART_DELAY_MS, timer: null, lastMetrics: null }));
    this.restarts = new Counter({ name: 'infergate_gateway_worker_restarts_total', help: 'Gateway workers started again after one exited unexpectedly', registers: [opts.registry] });
    const slots = this.slots;
    new Gauge({
      name: 'infergate_gateway_workers',
      help: 'Gateway worker processes listening now (of --gateway-workers)',
      registers: [opts.registry],
      collect() {
        this.set(slots.filter((s) => s.ready).length);
      },
    });
  }

  /** Forks every worker and resolves with the port once all listen; if one cannot, stops the others and fails with its reason. */
  async start(): Promise<number> {
    // The same loader flags as this process (tsx from source), with bare specifiers made absolute.
    cluster.setupPrimary({ exec: MAIN_SCRIPT, args: [], execArgv: selfCommand().slice(1, -1) });
    const results = await Promise.allSettled(this.slots.map((slot) => this.spawn(slot)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) {
      await this.stop();
      throw failed.reason instanceof Error ? failed.reason : new Error(String(failed.reason));
    }
    this.started = true;
    return (results[0] as PromiseFulfilledResult<number>).value;
  }

  private spawn(slot: Slot): Promise<number> {
    const worker = cluster.fork({ [WORKER_ENV]: String(slot.index) });
    slot.worker = worker;
    slot.ready = false;
    slot.startedAt = Date.now();
    // A message sent to a worker that died a moment ago fails with an 'error' event; unheard,
    // it would end the primary and every worker with it. Its 'exit' follows and replaces it.
    worker.on('error', (err: Error) => this.opts.logger.warn({ worker: slot.index, err: err.message }, 'gateway worker channel error'));
    const send = (message: ToWorker) => {
      if (worker.isConnected()) worker.send(message);
    };
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`gateway worker ${slot.index} did not start within ${START_TIMEOUT_MS / 1000} s`));
        worker.process.kill('SIGKILL');
      }, START_TIMEOUT_MS);
      worker.on('message', (raw: unknown) => {
        const m = fromWorker(raw);
        if (m === null) return;
        switch (m.kind) {
          case 'infergate:hello':
            send({ kind: 'infergate:config', index: slot.index, config: this.opts.config });
            return;
          case 'infergate:ready':
            clearTimeout(timer);
            slot.ready = true;
            resolve(m.port);
            return;
          case 'infergate:failed':
            clearTimeout(timer);
            // The worker's own words: the same one line a single process would print (a port in use, say).
            reject(new ListenError(m.message));
            return;
          case 'infergate:metrics':
            this.answers.get(m.id)?.(m.metrics);
        }
      });
      worker.once('exit', (code: number | null, signal: string | null) => {
        clearTimeout(timer);
        slot.worker = null;
        slot.ready = false;
        this.carry(slot);
        reject(new Error(`gateway worker ${slot.index} exited (${signal ?? `code ${code}`}) before it listened`));
        if (this.started && !this.stopping) this.replace(slot, code, signal);
      });
    });
  }

  /** Starts another worker in a slot whose worker exited, sooner when it had been running a while. */
  private replace(slot: Slot, code: number | null, signal: string | null): void {
    this.restarts.inc();
    slot.restartDelayMs = Date.now() - slot.startedAt >= STABLE_AFTER_MS ? FIRST_RESTART_DELAY_MS : Math.min(slot.restartDelayMs * 2, MAX_RESTART_DELAY_MS);
    this.opts.logger.error({ worker: slot.index, code, signal, restartInMs: slot.restartDelayMs }, 'gateway worker exited unexpectedly; starting another');
    slot.timer = setTimeout(() => {
      slot.timer = null;
      if (this.stopping) return;
      this.spawn(slot).then(
        () => this.opts.logger.info({ worker: slot.index }, 'gateway worker started again'),
        (err: Error) => this.opts.logger.error({ worker: slot.index, err: err.message }, 'gateway worker failed to start again'),
      );
    }, slot.restartDelayMs);
  }

  /** Keeps what an exited worker had counted by the last scrape, merged into what earlier ones had. */
  private carry(slot: Slot): void {
    const last = slot.lastMetrics;
    slot.lastMetrics = null;
    if (last === null) return;
    // Gauges describe a process that is gone; summaries cannot be added up.
    const counted = last.filter((m) => ['counter', 'histogram'].includes(String(m.type)));
    this.carrying = this.carrying
      .then(async () => {
        this.carried = await mergeMetrics([this.carried, counted]);
      })
      .catch((err: Error) => this.opts.logger.warn({ err: err.message }, "could not keep an exited gateway worker's counters"));
  }

  /**
   * Every listening worker's metrics, as those that answer within the timeout give them, and
   * what exited workers had counted (`carried`, counters and histograms only).
   */
  async collect(timeoutMs: number): Promise<{ answered: WorkerMetrics[]; carried: WorkerMetrics }> {
    const live = this.slots.filter((s) => s.ready && s.worker !== null && s.worker.isConnected());
    const answered = await Promise.all(
      live.map(
        (slot) =>
          new Promise<WorkerMetrics | null>((resolve) => {
            const id = this.nextRequest++;
            const timer = setTimeout(() => {
              this.answers.delete(id);
              resolve(null);
            }, timeoutMs);
            this.answers.set(id, (metrics) => {
              clearTimeout(timer);
              this.answers.delete(id);
              slot.lastMetrics = metrics;
              resolve(metrics);
            });
            slot.worker?.send({ kind: 'infergate:metrics-request', id } satisfies ToWorker);
          }),
      ),
    );
    await this.carrying;
    return { answered: answered.filter((m): m is WorkerMetrics => m !== null), carried: this.carried };
  }

  /** Asks every worker to stop (each closes its gateway and flushes its usage), SIGKILL after the timeout. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const slot of this.slots) if (slot.timer) clearTimeout(slot.timer);
    await Promise.all(
      this.slots.map(async (slot) => {
        const worker = slot.worker;
        if (worker === null || worker.isDead()) return;
        const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
        if (worker.isConnected()) worker.send({ kind: 'infergate:stop' } satisfies ToWorker);
        else worker.process.kill('SIGTERM');
        const timer = setTimeout(() => worker.process.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  /** The pids of the workers running now, by worker index (for operators' logs and tests). */
  pids(): Array<number | null> {
    return this.slots.map((s) => s.worker?.process.pid ?? null);
  }
}
