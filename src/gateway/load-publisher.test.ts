// Unit tests of the load report a gateway publishes: a replica's in-flight count is reported
// while it holds requests, also once it has left the routing table (draining) — the drain in
// the control process waits for exactly that count — and not once its last request ends; a
// deployment's queued requests, its revisions' concurrency and steps, and the routed replicas'
// engine figures are in it, and it reads back through parseLoadReport.

import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { Clock } from '../core/clock.js';
import { FileStore } from '../store/file-store.js';
import { InflightTracker } from './inflight.js';
import { LoadPublisher, type LoadPublisherSource } from './load-publisher.js';
import { RevisionHistory } from './revision-history.js';
import { testRoute } from '../../test/helpers/route.js';
import { parseLoadReport } from '../domain/load-report.js';
import type { Route } from './routing-table.js';

const clock: Clock = { now: () => 10_500, sleep: () => Promise.resolve() };

function publisher(inflight: InflightTracker, routes: Route[], held = 0, extra: Partial<LoadPublisherSource> = {}) {
  return new LoadPublisher(
    new FileStore({ dir: '/nonexistent' }), // report() never touches the store
    {
      inflight,
      activator: { held: () => held, heldDeployments: () => (held > 0 ? routes.map((r) => r.deploymentId) : []).values() },
      table: { servingRoutes: () => routes.filter((r) => r.replicas.length > 0).values() },
      revisionHistory: new RevisionHistory(clock),
      queued: () => 0,
      queuedDeployments: () => [],
      engineSignals: () => null,
      ...extra,
    },
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
    const route = testRoute({ deploymentId: 4 });
    const report = publisher(new InflightTracker(clock), [route], 3).report(10_500);
    expect(report.deployments['4']).toEqual({ samples: [], held: 3, inflight: 0, queued: 0, revisions: {} });
  });

  it('carries queued requests, each revision\'s concurrency and steps, and the engines\' figures', () => {
    const inflight = new InflightTracker(clock);
    const history = new RevisionHistory(clock);
    inflight.deploymentStart(4);
    inflight.revisionStart(4, 2);
    history.record(4, 2, 503, 0, null);
    history.record(4, 3, 200, 12, 80);
    const route = testRoute({ deploymentId: 4, replicas: [{ id: 9, address: 'a:1', revision: 2 }, { id: 10, address: 'a:2', revision: 3 }] });
    const report = publisher(inflight, [route], 0, {
      revisionHistory: history,
      queued: (id) => (id === 4 ? 5 : 0),
      queuedDeployments: () => [4],
      engineSignals: (id) => (id === 9 ? { waiting: 3, kvCachePercent: 41, at: 10_000 } : null),
    }).report(10_500);
    const d = report.deployments['4']!;
    expect(d.queued).toBe(5);
    expect(Object.keys(d.revisions!).sort()).toEqual(['2', '3']);
    expect(d.revisions!['2']!.steps).toEqual([expect.objectContaining({ start: 10_000, requests: 1, errors: 1 })]);
    expect(d.revisions!['3']!.steps).toEqual([expect.objectContaining({ start: 10_000, requests: 1, errors: 0, completion_tokens: 12 })]);
    expect(report.engines).toEqual({ '9': { waiting: 3, kvCachePercent: 41, at: 10_000 } });
    expect(parseLoadReport(JSON.stringify(report))).toEqual(report);
  });
});
