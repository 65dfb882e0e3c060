// Unit tests of the load report a gateway publishes: a replica's in-flight count is reported
// while it holds requests, also once it has left the routing table (draining) — the drain in
// the control process waits for exactly that count — and not once its last request ends.

import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { Clock } from '../core/clock.js';
import { FileStore } from '../store/file-store.js';
import { InflightTracker } from './inflight.js';
import { LoadPublisher } from './load-publisher.js';
import type { Route } from './routing-table.js';

const clock: Clock = { now: () => 10_500, sleep: () => Promise.resolve() };

function publisher(inflight: InflightTracker, routes: Route[], held = 0) {
  return new LoadPublisher(
    new FileStore({ dir: '/nonexistent' }), // report() never touches the store
    inflight,
    { held: () => held },
    { routes: () => routes.values() },
    pino({ enabled: false }),
    { publisher: 'test', intervalMs: 1000, ttlMs: 3000, windowSeconds: 60 },
  );
}

describe('LoadPublisher.report', () => {
  it('reports a draining replica (gone from the routing table) while its streams run', () => {
    const inflight = new InflightTracker(clock);
    inflight.deploymentStart(1);
    inflight.replicaStart(7);
    inflight.replicaStart(7);
    const report = publisher(inflight, []).report(10_500);
    expect(report.replicas).toEqual({ '7': 2 });
    expect(report.deployments['1']).toMatchObject({ inflight: 1, held: 0 });
    inflight.replicaEnd(7);
    inflight.replicaEnd(7);
    expect(publisher(inflight, []).report(10_600).replicas).toEqual({});
  });

  it('reports a deployment with requests held at zero though nothing is in flight', () => {
    const route = { deploymentId: 4 } as Route;
    const report = publisher(new InflightTracker(clock), [route], 3).report(10_500);
    expect(report.deployments['4']).toEqual({ samples: [], held: 3, inflight: 0 });
  });
});
