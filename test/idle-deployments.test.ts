// A thousand deployments at zero in a real file store: the gateway's routing table, after its
// first read, re-reads only the record a change names and rebuilds only the routes it touches
// (counted through the store); the autoscaler, after deciding each once, decides for none of
// the idle ones on later ticks and reads nothing of them (counted through the store and its
// decisions metric), still scales one up from zero when requests are held for it, and answers
// an idle deployment's activity as its 15 minutes of zeros.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { ActivityRecorder, ACTIVITY_BUCKETS } from '../src/autoscaler/activity.js';
import { Autoscaler } from '../src/autoscaler/autoscaler.js';
import type { DeploymentRecord, ReplicaRecord } from '../src/domain/records.js';
import { RoutingTable, type TableChange } from '../src/gateway/routing-table.js';
import { FileStore } from '../src/store/file-store.js';
import { modify } from '../src/store/store.js';
import { deploymentRecord, tokenRecord } from '../src/store/store.contract.js';
import { countingStore } from './helpers/counting-store.js';

const N = 1000;
let dir: string;
let store: FileStore;
const ids: number[] = [];

/** A general deployment at min 0 that the controller has already brought to zero. */
const atZero = (id: number): DeploymentRecord => {
  const base = deploymentRecord(id, `idle-${id}`);
  return { ...base, status: 'ready', scaling: { ...base.scaling, min_replicas: 0, max_replicas: 3, target_concurrency: 1, cooldown_period: 30 }, desired_replicas: { Replica: 0 } };
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-idle-'));
  store = new FileStore({ dir });
  await store.open();
  for (let i = 0; i < N; i++) ids.push((await store.create('deployment', atZero)).value.id);
}, 300_000);

afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe(`the routing table over ${N} deployments at zero`, () => {
  it('re-reads only the record a change names and rebuilds only the routes it touches', async () => {
    const counted = countingStore(store);
    const table = new RoutingTable(counted.store, 'endpoints.test');
    const changes: TableChange[] = [];
    table.onChange((_, change) => changes.push(change));
    try {
      await table.start();
      expect(table.size).toBe(N);
      const first = changes.length;

      // One deployment's record changes: that record is read, that route rebuilt.
      const target = ids[N / 2]!;
      expect(changes[0]?.full).toBe(true);
      counted.reset();
      changes.length = 0;
      await modify(store, 'deployment', target, (d) => ({ ...d, limits: { max_request_body_bytes: 1024, rate_limit: null, flow_control: null } }));
      await table.settled();
      expect(counted.reads.lists).toEqual([]);
      expect(counted.reads.gets).toEqual([{ kind: 'deployment', id: target }]);
      expect(changes.map((c) => [c.full, [...c.deployments.keys()]])).toEqual([[false, [target]]]);
      expect(first).toBe(1);
      expect(table.lookupDeployment(target)?.maxBodyBytes).toBe(1024);

      // One of its replicas turns ready: the replica is read, that deployment's route gains it.
      const replica = await store.create('replica', (id): ReplicaRecord => ({
        id,
        deployment_id: ids[7]!,
        revision: 1,
        component: 'Replica',
        name: `idle-r1-${id}`,
        address: '127.0.0.1:4999',
        state: 'starting',
        restarts: 0,
        pid: null,
        metrics_target: null,
        updated_at: new Date(0).toISOString(),
      }));
      await table.settled();
      counted.reset();
      changes.length = 0;
      await modify(store, 'replica', replica.value.id, (r) => ({ ...r, state: 'ready' }));
      await table.settled();
      expect(counted.reads).toEqual({ gets: [{ kind: 'replica', id: replica.value.id }], lists: [] });
      expect(changes.map((c) => [...c.deployments.keys()])).toEqual([[ids[7]]]);
      expect(table.lookupDeployment(ids[7]!)?.replicas.map((r) => r.id)).toEqual([replica.value.id]);
      expect([...table.servingRoutes()].map((r) => r.deploymentId)).toEqual([ids[7]]);

      // A token nobody binds: read, and no route rebuilt.
      counted.reset();
      changes.length = 0;
      const token = await store.create('token', (id) => tokenRecord(id, 'unbound'));
      await table.settled();
      expect(counted.reads).toEqual({ gets: [{ kind: 'token', id: token.value.id }], lists: [] });
      expect(changes.map((c) => c.deployments.size)).toEqual([0]);
      await store.delete('replica', replica.value.id);
      await store.delete('token', token.value.id);
      await table.settled();
    } finally {
      table.stop();
    }
  });
});

describe(`the autoscaler over ${N} deployments at zero`, () => {
  it('decides for none of the idle ones and reads nothing of them per tick, scales one from zero on held requests, and shows an idle one\'s 15 minutes as zeros', async () => {
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00.000Z'));
    const counted = countingStore(store);
    const registry = new Registry();
    const activity = new ActivityRecorder(clock);
    const held = new Map<number, number>();
    const told: Array<ReadonlySet<number>> = [];
    const autoscaler = new Autoscaler({
      store: counted.store,
      load: {
        samples: () => [],
        held: (id) => held.get(id) ?? 0,
        revisionSamples: () => [],
        queued: () => 0,
        replicaSignals: () => null,
        revisionSteps: () => [],
        busy: () => [...held].filter(([, n]) => n > 0).map(([id]) => id),
      },
      clock,
      windows: { stableMs: 10_000, panicMs: 2_000, scaleToZeroGraceMs: 0 },
      logger: pino({ level: 'silent' }),
      registry,
      onChange: (changed) => told.push(changed),
      activity,
      tickMs: 3_600_000,
    });
    const decisions = async () => (await registry.getSingleMetric('infergate_autoscaler_decisions_total')!.get()).values.reduce((s, v) => s + v.value, 0);
    try {
      autoscaler.start();
      await autoscaler.tickNow();
      // The first tick reads everything and decides each deployment once (news to the controller): each is at rest at zero.
      expect(await decisions()).toBe(N);
      expect(told.map((s) => s.size)).toEqual([N]);
      expect(autoscaler.desiredFor(ids[3]!, null)).toBe(0);
      expect(autoscaler.activeDeployments().size).toBe(0);

      told.length = 0;
      counted.reset();
      for (let i = 0; i < 5; i++) {
        clock.advance(1000);
        await autoscaler.tickNow();
      }
      expect(counted.reads).toEqual({ gets: [], lists: [] });
      expect(await decisions()).toBe(N);
      expect(told).toEqual([]);
      // What the controller applies for an idle deployment stays its last decision.
      expect(autoscaler.desiredFor(ids[3]!, null)).toBe(0);

      // Requests held for one of them: it is read, decided, and scaled from zero as before.
      const woken = ids[42]!;
      held.set(woken, 2);
      clock.advance(1000);
      await autoscaler.tickNow();
      expect(counted.reads).toEqual({ gets: [{ kind: 'deployment', id: woken }], lists: [] });
      expect(autoscaler.decision(woken)).toMatchObject({ desired: 2, reason: 'activate' });
      expect(told).toEqual([new Set([woken])]);
      expect(await decisions()).toBe(N + 1);
      expect([...autoscaler.activeDeployments()]).toEqual([woken]);

      // Fifteen minutes of ticks: the idle ones still cost nothing, and their activity is 180 steps of zeros.
      held.clear();
      counted.reset();
      for (let s = 0; s < 900; s++) {
        clock.advance(1000);
        await autoscaler.tickNow();
      }
      expect(counted.reads.lists).toEqual([]);
      expect(counted.reads.gets.every((g) => g.id === woken)).toBe(true);
      const view = activity.view((await store.get('deployment', ids[3]!))!.value);
      expect(view.points).toHaveLength(ACTIVITY_BUCKETS);
      expect(new Set(view.points.map(({ t: _, ...rest }) => JSON.stringify(rest)))).toEqual(
        new Set([JSON.stringify({ in_flight: 0, in_flight_max: 0, held: 0, desired: 0, ready: 0, signal: 0 })]),
      );
      // Consecutive 5-second steps up to now.
      const times = view.points.map((p) => Date.parse(p.t));
      expect(times.every((t, i) => i === 0 || t - times[i - 1]! === 5000)).toBe(true);
      expect(clock.now() - times.at(-1)!).toBeLessThan(5000);
    } finally {
      await autoscaler.stop();
    }
  }, 120_000);
});
