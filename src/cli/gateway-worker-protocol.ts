// Owns the messages between `infergate serve` and its gateway workers over node:cluster's IPC
// channel, and the checks that a message received is one of them. A worker says hello once it
// listens to the channel; the primary answers with the configuration (so every worker runs
// exactly what the primary parsed), asks for
// metrics on each scrape and says when to stop; a worker says it listens, or why it could not.

import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { Config } from '../config/config.js';

/** Set in a worker's environment: which worker it is (0-based). */
export const WORKER_ENV = 'INFERGATE_GATEWAY_WORKER';

export type WorkerMetrics = MetricObjectWithValues<MetricValue<string>>[];

export type ToWorker =
  | { kind: 'infergate:config'; index: number; config: Config }
  | { kind: 'infergate:metrics-request'; id: number }
  | { kind: 'infergate:stop' };

export type FromWorker =
  | { kind: 'infergate:hello' }
  | { kind: 'infergate:ready'; port: number }
  | { kind: 'infergate:failed'; message: string }
  | { kind: 'infergate:metrics'; id: number; metrics: WorkerMetrics };

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** A message from the primary, or null for anything else on the channel. */
export function toWorker(value: unknown): ToWorker | null {
  const m = record(value);
  if (m === null) return null;
  switch (m.kind) {
    case 'infergate:config':
      return typeof m.index === 'number' && record(m.config) !== null ? (m as unknown as ToWorker) : null;
    case 'infergate:metrics-request':
      return typeof m.id === 'number' ? { kind: m.kind, id: m.id } : null;
    case 'infergate:stop':
      return { kind: m.kind };
    default:
      return null;
  }
}

/** A message from a worker, or null for anything else on the channel (node:cluster's own). */
export function fromWorker(value: unknown): FromWorker | null {
  const m = record(value);
  if (m === null) return null;
  switch (m.kind) {
    case 'infergate:hello':
      return { kind: m.kind };
    case 'infergate:ready':
      return typeof m.port === 'number' ? { kind: m.kind, port: m.port } : null;
    case 'infergate:failed':
      return typeof m.message === 'string' ? { kind: m.kind, message: m.message } : null;
    case 'infergate:metrics':
      return typeof m.id === 'number' && Array.isArray(m.metrics) ? { kind: m.kind, id: m.id, metrics: m.metrics as WorkerMetrics } : null;
    default:
      return null;
  }
}
