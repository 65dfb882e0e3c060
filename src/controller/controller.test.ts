// The controller against a real file store and a fake runtime whose replicas the test makes
// ready: it starts min replicas, reports status from readiness, replaces an old revision
// only once the new one is ready, drains before stopping (on its clock), reaps leftovers,
// stands by without the lease, is fenced once deposed, and removes what deleted deployments left, on real
// directories, whatever state they were deleted in; secret environment variables are unsealed into the
// replica's environment, and one that cannot be is named in the log (never a value) and left out.
// A replica that keeps crashing makes its deployment failing, with a reason that names it, its
// restarts, its exit code and its last log line, until it is ready again; replicas, rollouts
// and handed-in decisions become the deployment's events, and a store that refuses events
// fails no pass. Traffic between revisions: revisions of a split run side by side at the
// counts the autoscaler gives each, a tag-only revision runs, a revision left out drains only
// once the split serves (or a minute after the edit, on the injected clock), pinning an older
// revision rolls back to it, a manual rollout leaves the new revision unstarted, every change
// and drained revision is an event, each replica's lifetime is counted under its revision
// too, and an orchestrated split gives each revision's Frontend a workers file with its own
// workers only. Work follows change: over a thousand deployments at zero, ticks and passes touch
// none of them (counted through the store and the runtime), one whose record changes is
// reconciled within a second, a rollout deadline fires from its timer alone, and the lease is
// renewed on time while a pass over a thousand runs; an expired lease nobody took is taken
// back at once.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../core/clock.js';
import type { DeploymentRecord, ReplicaRecord } from '../domain/records.js';
import type { TrafficTarget } from '../domain/traffic.js';
import type { Clock } from '../core/clock.js';
import { readFile } from 'node:fs/promises';
import { localShells } from '../runtime/shell-launcher.js';
import type { LeftoverReplica, ReplicaHandle, ReplicaObservation, ReplicaPhase, ReplicaRequest, Runtime } from '../runtime/runtime.js';
import { FileStore } from '../store/file-store.js';
import { deploymentRecord } from '../store/store.contract.js';
import { modify, type Store } from '../store/store.js';
import { writeStateFile } from '../../test/helpers/state-file.js';
import { UsageLedger } from '../store/usage-ledger.js';
import { orchestratedSpec } from '../../test/helpers/spec-fixtures.js';
import { logFilePath } from '../runtime/log-files.js';
import { Controller } from './controller.js';
import { LocalLeftovers, type DeploymentLeftovers } from './leftovers.js';

class FakeReplica implements ReplicaHandle {
  phase: ReplicaPhase = 'starting';
  stopped = false;
  restarts = 0;
  lastExit: ReplicaObservation['lastExit'] = null;
  pull: ReplicaObservation['pull'] = null;
  detail: string | null = null;
  address = '127.0.0.1:1';
  private readonly listeners: Array<(o: ReplicaObservation) => void> = [];
  constructor(readonly request: ReplicaRequest) {}
  get name() {
    return this.request.name;
  }
  observe(): ReplicaObservation {
    return { phase: this.phase, address: this.address, metricsTarget: null, pid: null, restarts: this.restarts, detail: this.detail, lastExit: this.lastExit, pull: this.pull };
  }
  /** Its image pull, as the Docker runtime reports it. */
  pulling(image: string) {
    this.pull = { image, state: 'pulling', reason: null, permanent: false };
    this.detail = `pulling ${image}`;
    this.set('starting');
  }
  pullFailed(reason: string, permanent: boolean) {
    this.pull = { image: this.pull?.image ?? '?', state: 'failed', reason, permanent };
    this.detail = `${reason}; retrying in 5 s`;
    this.set('starting');
  }
  /** Exited on its own with `code`; the runtime restarts it. */
  crash(code: number) {
    this.restarts++;
    this.lastExit = { code, signal: null };
    this.set('starting');
  }
  onChange(listener: (o: ReplicaObservation) => void) {
    this.listeners.push(listener);
  }
  set(phase: ReplicaPhase) {
    this.phase = phase;
    for (const l of this.listeners) l(this.observe());
  }
  async stop() {
    this.stopped = true;
    this.set('stopped');
  }
  shellContext() {
    return this.stopped ? null : { argv: ['/bin/sh'], cwd: '/tmp', env: {}, launcher: localShells };
  }
}

class FakeRuntime implements Runtime {
  readonly description = 'fake';
  readonly replicasOutliveService: boolean = false;
  readonly started: FakeReplica[] = [];
  readonly reaped: string[] = [];
  async adopt(_leftover: LeftoverReplica, _request: ReplicaRequest): Promise<ReplicaHandle | null> {
    return null;
  }
  start(request: ReplicaRequest): ReplicaHandle {
    const r = new FakeReplica(request);
    r.address = `127.0.0.1:${20000 + this.started.length}`;
    this.started.push(r);
    return r;
  }
  async reap(leftover: LeftoverReplica) {
    this.reaped.push(leftover.name);
    return true;
  }
  async sweep() {
    return [];
  }
  shellRefusal() {
    return null;
  }
}

/** Containers, as far as the controller can tell: released at a stop, taken back by name. */
class Outliving extends FakeRuntime {
  override readonly replicasOutliveService = true;
  readonly released: string[] = [];
  readonly leftRunning = new Map<string, FakeReplica>();
  override start(request: ReplicaRequest): ReplicaHandle {
    const r = super.start(request) as FakeReplica;
    return Object.assign(r, {
      release: async () => {
        this.released.push(r.name);
        this.leftRunning.set(r.name, r);
      },
    });
  }
  override async adopt(leftover: LeftoverReplica): Promise<ReplicaHandle | null> {
    const r = this.leftRunning.get(leftover.name);
    if (r === undefined) return null;
    r.restarts = leftover.restarts;
    return r;
  }
}
let dir: string;
/** The store's clock: leases expire only as a test steps it. */
let storeClock: ManualClock;
let store: FileStore;
let runtime: FakeRuntime;
let inflight: Map<number, number>;
const controllers: Controller[] = [];
/** Stores a test opened besides the shared one: closed after the controllers stop. */
const extraStores: FileStore[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-controller-'));
  storeClock = new ManualClock(Date.now());
  store = new FileStore({ dir, clock: storeClock });
  await store.open();
  runtime = new FakeRuntime();
  inflight = new Map();
});

afterEach(async () => {
  for (const c of controllers.splice(0)) await c.stop();
  for (const s of extraStores.splice(0)) await s.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

function controller(extra: Partial<ConstructorParameters<typeof Controller>[0]> = {}): Controller {
  const c = new Controller({
    store,
    runtime,
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    drainTimeoutMs: 5000,
    stopGraceMs: 100,
    load: { inflight: (id) => inflight.get(id) ?? 0 },
    tickMs: 50,
    drainSettleMs: 0,
    ...extra,
  });
  controllers.push(c);
  return c;
}

async function deploy(min: number): Promise<number> {
  const base = deploymentRecord(0, 'web');
  const created = await store.create('deployment', (id) => ({ ...base, id, scaling: { ...base.scaling, min_replicas: min, max_replicas: Math.max(min, 1) } }));
  return created.value.id;
}

const get = async (id: number) => (await store.get('deployment', id))!.value;
const replicaRecords = async () => (await store.list('replica')).map((r) => r.value);
const live = () => runtime.started.filter((r) => !r.stopped);

async function edit(id: number, tag: string): Promise<void> {
  await modify(store, 'deployment', id, (d): DeploymentRecord => {
    const spec = { ...d.spec, tag } as DeploymentRecord['spec'];
    const revision = d.revisions.length + 1;
    return { ...d, revision, spec, revisions: [...d.revisions, { ...d.revisions[0]!, revision, status: 'pending', spec }] };
  });
}

describe('Controller rollouts', () => {
  it('replaces replicas one at a time (surge 1): a new one ready, then an old one drained', async () => {
    const id = await deploy(2);
    const c = controller();
    await c.start();
    await expect.poll(() => runtime.started.length).toBe(2);
    for (const r of runtime.started) r.set('ready');
    await expect.poll(async () => (await get(id)).serving_revision).toBe(1);

    await edit(id, 'v2');
    await expect.poll(() => runtime.started.length).toBe(3);
    await c.settled(); // the passes that would start a second new replica have run
    expect(runtime.started).toHaveLength(3); // never two new at once
    expect(live()).toHaveLength(3);
    expect((await get(id)).rollout).toMatchObject({ revision: 2, from_revision: 1, state: 'in_progress' });

    runtime.started[2]!.set('ready');
    await expect.poll(() => runtime.started.length).toBe(4); // one old drained, a second new started
    await expect.poll(() => live().length).toBe(3);
    expect(runtime.started.filter((r) => r.stopped).map((r) => r.request.revision)).toEqual([1]);
    runtime.started[3]!.set('ready');
    await expect.poll(() => live().map((r) => r.request.revision)).toEqual([2, 2]);
    const done = await get(id);
    expect(done).toMatchObject({ serving_revision: 2, rollout: { state: 'complete' }, status: 'ready' });
    expect(done.revisions.map((r) => r.status)).toEqual(['retired', 'ready']);
  });

  it('a revision never ready within the deadline fails with a reason; the old one keeps serving', async () => {
    const id = await deploy(1);
    await controller({ rolloutDeadlineMs: 300 }).start();
    await expect.poll(() => runtime.started.length).toBe(1);
    runtime.started[0]!.set('ready');
    await expect.poll(async () => (await get(id)).serving_revision).toBe(1);

    await edit(id, 'broken');
    await expect.poll(async () => (await get(id)).revisions[1]?.status, { timeout: 5000 }).toBe('failed');
    const failed = await get(id);
    expect(failed.revisions[1]?.failure_reason).toContain('revision 2 did not get 1 ready replica within 0 s');
    expect(failed).toMatchObject({ status: 'ready', serving_revision: 1, rollout: { state: 'failed', revision: 2 } });
    await expect.poll(() => live().map((r) => r.request.revision)).toEqual([1]);

    // A fixing edit rolls out from the revision still serving.
    await edit(id, 'fixed');
    await expect.poll(() => live().map((r) => r.request.revision).sort()).toEqual([1, 3]);
    runtime.started.at(-1)!.set('ready');
    await expect.poll(async () => (await get(id)).serving_revision).toBe(3);
    await expect.poll(() => live().map((r) => r.request.revision)).toEqual([3]);
  });

  it('pause stops every replica and keeps the counts; resume brings them back', async () => {
    const id = await deploy(2);
    await controller().start();
    await expect.poll(() => runtime.started.length).toBe(2);
    for (const r of runtime.started) r.set('ready');
    await modify(store, 'deployment', id, (d) => ({ ...d, paused: true, status: 'paused' }));
    await expect.poll(() => live().length).toBe(0);
    expect((await get(id)).desired_replicas).toEqual({ Replica: 2 });
    await modify(store, 'deployment', id, (d) => ({ ...d, paused: false, status: 'pending' }));
    await expect.poll(() => live().length).toBe(2);
  });
});

describe('Controller', () => {
  it('starts min replicas and reports status and revision status from readiness', async () => {
    const id = await deploy(2);
    await controller().start();
    await expect.poll(() => runtime.started.length).toBe(2);
    expect(runtime.started.map((r) => r.name)).toEqual([expect.stringMatching(/^web-r1-\d+$/), expect.stringMatching(/^web-r1-\d+$/)]);
    await expect.poll(async () => (await get(id)).desired_replicas).toEqual({ Replica: 2 });
    expect((await get(id)).status).toBe('pending');

    runtime.started[0]!.set('ready');
    await expect.poll(async () => (await get(id)).status).toBe('ready');
    expect((await get(id)).revisions[0]?.status).toBe('ready');
    await expect.poll(async () => (await replicaRecords()).map((r) => r.state).sort()).toEqual(['ready', 'starting']);

    for (const r of runtime.started) r.set('starting');
    await expect.poll(async () => (await get(id)).status).toBe('not_ready');
  });

  it('keeps an old revision serving until the new one is fully ready, then drains and stops it', async () => {
    const id = await deploy(1);
    const c = controller();
    await c.start();
    await expect.poll(() => runtime.started.length).toBe(1);
    const old = runtime.started[0]!;
    old.set('ready');
    await modify(store, 'deployment', id, (d): DeploymentRecord => {
      const spec = { ...d.spec, tag: 'v2' } as DeploymentRecord['spec'];
      return { ...d, revision: 2, spec, revisions: [...d.revisions, { ...d.revisions[0]!, revision: 2, status: 'pending', spec }] };
    });
    await expect.poll(() => runtime.started.length).toBe(2);
    const fresh = runtime.started[1]!;
    expect(fresh.request).toMatchObject({ revision: 2, tag: 'v2' });
    await c.settled();
    expect(old.stopped).toBe(false);

    fresh.set('ready');
    await expect.poll(() => old.stopped).toBe(true);
    await expect.poll(async () => (await replicaRecords()).map((r) => r.revision)).toEqual([2]);
  });

  it('drains: a replica with requests in flight is stopped only when they finish', async () => {
    const clock = new ManualClock(1_000_000);
    const id = await deploy(2);
    await controller({ clock }).start();
    await expect.poll(() => runtime.started.length).toBe(2);
    for (const r of runtime.started) r.set('ready');
    const records = await replicaRecords();
    for (const r of records) inflight.set(r.id, 1);

    try {
      await modify(store, 'deployment', id, (d) => ({ ...d, scaling: { ...d.scaling, min_replicas: 1, max_replicas: 1 } }));
      await expect.poll(async () => (await replicaRecords()).some((r) => r.state === 'draining')).toBe(true);
      await expect.poll(() => clock.waiting()).toBe(1); // its drain waits on the clock for the request
      clock.advance(4900); // just short of the drain deadline
      await expect.poll(() => clock.waiting() === 1 || live().length < 2).toBe(true); // looked again, and waits again
      expect(live()).toHaveLength(2);

      const draining = (await replicaRecords()).find((r) => r.state === 'draining')!;
      inflight.set(draining.id, 0);
      clock.advance(100);
      await expect.poll(() => live().length).toBe(1);
      expect((await get(id)).revision).toBe(1);
    } finally {
      inflight.clear();
      clock.advance(60_000);
    }
  });

  it('drains on its clock: the settle pause and the drain deadline pass only as the clock is stepped', async () => {
    const clock = new ManualClock(1_000_000);
    const id = await deploy(1);
    await controller({ clock, drainSettleMs: 10_000, drainTimeoutMs: 5000 }).start();
    await expect.poll(() => runtime.started.length).toBe(1);
    runtime.started[0]!.set('ready');
    const [record] = await replicaRecords();
    inflight.set(record!.id, 1);

    try {
      await modify(store, 'deployment', id, (d) => ({ ...d, paused: true, status: 'paused' }));
      await expect.poll(async () => (await replicaRecords())[0]?.state).toBe('draining');
      await expect.poll(() => clock.waiting()).toBe(1); // the settle pause
      expect(live()).toHaveLength(1); // settling: no time has passed on the clock
      clock.advance(10_000);
      await expect.poll(() => clock.waiting() === 1 || live().length === 0).toBe(true); // now waiting on the request
      expect(live()).toHaveLength(1); // settled, and a request is still in flight
      clock.advance(5000);
      await expect.poll(() => live().length, { timeout: 2000 }).toBe(0); // the drain deadline passed: stopped anyway
    } finally {
      inflight.clear(); // so a failed run's stop() is not left draining
      clock.advance(60_000);
    }
  });

  it('reaps the replicas an earlier run left, and stops everything on delete', async () => {
    await store.create('replica', (rid) => ({
      id: rid,
      deployment_id: 99,
      revision: 1,
      component: 'Replica',
      name: 'gone-r1-1',
      address: '127.0.0.1:2',
      state: 'ready',
      restarts: 0,
      pid: 12345,
      metrics_target: null,
      updated_at: new Date().toISOString(),
    }));
    const id = await deploy(1);
    await controller().start();
    expect(runtime.reaped).toEqual(['gone-r1-1']);
    await expect.poll(() => runtime.started.length).toBe(1);
    await store.delete('deployment', id);
    await expect.poll(() => live().length).toBe(0);
    await expect.poll(async () => (await replicaRecords()).length).toBe(0);
  });

  it('keepOnStop on a runtime whose replicas outlive it: a stop releases them with their records and the lease; the next controller takes them back, restart counts carried, nothing started', async () => {
    const outliving = new Outliving();
    const id = await deploy(2);
    const first = controller({ runtime: outliving, keepOnStop: true });
    await first.start();
    await expect.poll(() => outliving.started.length).toBe(2);
    for (const r of outliving.started) r.set('ready');
    outliving.started[0]!.crash(1);
    outliving.started[0]!.set('ready');
    await expect.poll(async () => (await replicaRecords()).map((r) => [r.state, r.restarts])).toEqual([['ready', 1], ['ready', 0]]);
    const before = await replicaRecords();

    const stoppedAt = Date.now();
    expect(await first.stop()).toEqual({ kept: 2, drained: 0 });
    expect(outliving.released.sort()).toEqual(before.map((r) => r.name).sort());
    expect(outliving.started.filter((r) => r.stopped)).toEqual([]);
    // The records stay as they were (gateways keep routing to the replicas meanwhile), marked with up to when their lifetimes were counted.
    const kept = await replicaRecords();
    expect(kept.map(({ counted_until: _, updated_at: __, ...r }) => r)).toEqual(before.map(({ updated_at: __, ...r }) => r));
    for (const r of kept) expect(Math.abs(Date.parse(r.counted_until!) - stoppedAt)).toBeLessThan(2000);

    // The lease was released: the next controller acts at once, with no wait for it to run out.
    const second = controller({ runtime: outliving, keepOnStop: true });
    await second.start();
    await second.settled();
    expect(second.isLeader).toBe(true);
    expect(outliving.started).toHaveLength(2);
    expect(outliving.reaped).toEqual([]);
    // Taken back: the mark goes once this controller counts them; all else as before.
    await expect.poll(async () => (await replicaRecords()).map((r) => r.counted_until ?? null)).toEqual([null, null]);
    expect((await replicaRecords()).map(({ updated_at: _, ...r }) => r)).toEqual(before.map(({ updated_at: _, ...r }) => r));
    expect((await get(id)).status).toBe('ready');
  });

  it('a replica left running is counted in the usage ledger across the gap between the two processes, and nothing twice', async () => {
    const clock = new ManualClock(Date.parse('2026-11-23T10:00:00.000Z'));
    const ledger = new UsageLedger(store);
    const outliving = new Outliving();
    const id = await deploy(2);
    const first = controller({ runtime: outliving, keepOnStop: true, clock, usage: ledger, gpusPerReplica: () => 1 });
    await first.start();
    await expect.poll(() => outliving.started.length).toBe(2);
    for (const r of outliving.started) r.set('ready');
    clock.advance(10_000);
    await first.stop();
    clock.advance(5_000); // no control process runs; the containers do
    const second = controller({ runtime: outliving, keepOnStop: true, clock, usage: ledger, gpusPerReplica: () => 1 });
    await second.start();
    await second.settled();
    clock.advance(5_000);
    await second.stop();
    await ledger.flush();
    expect((await store.list('usage')).find((u) => u.value.deployment_id === id)?.value).toMatchObject({ gpu_seconds: 40, replica_seconds: { Replica: 40 } });
  });

  it('without keepOnStop, or on a runtime whose replicas die with the service, a stop drains them all', async () => {
    await deploy(1);
    const plain = controller({ keepOnStop: true });
    await plain.start();
    await expect.poll(() => runtime.started.length).toBe(1);
    runtime.started[0]!.set('ready');
    expect(await plain.stop()).toEqual({ kept: 0, drained: 1 });
    expect(runtime.started[0]!.stopped).toBe(true);
    expect(await replicaRecords()).toEqual([]);
  });

  it('stands by while another controller holds the lease', async () => {
    await store.holdLease('controller', 'someone-else', 60_000);
    await deploy(1);
    const c = controller();
    await c.start();
    await c.settled();
    expect(c.isLeader).toBe(false);
    expect(runtime.started).toHaveLength(0);
    await store.releaseLease('controller', 'someone-else');
    await expect.poll(() => runtime.started.length).toBe(1);
  });
});

describe('Controller lease fencing', () => {
  // Passes and renewals only when the test asks (a long tick and renewal interval): the
  // controller "stalls" in between, while the test steps the store's clock past its lease.
  let warnings: string[] = [];
  beforeEach(() => {
    warnings = [];
  });
  const stalled = () => controller({ leaseTtlMs: 200, tickMs: 60_000, leaseRenewMs: 60_000, logger: pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) }) });
  const pass = (c: Controller) => c.settled();
  /** The writes of replica records the store refused so far (each one is logged). */
  const refusals = () => warnings.filter((l) => l.includes('replica record write refused')).length;

  it("refuses a deposed leader's writes; once it sees the lease taken it stops its replicas and writes nothing", async () => {
    await deploy(1);
    const c = stalled();
    await c.start();
    runtime.started[0]!.set('ready');
    await expect.poll(async () => (await replicaRecords())[0]?.state).toBe('ready');
    storeClock.advance(300); // the leader stalls past its lease
    expect(await store.holdLease('controller', 'successor', 60_000)).toBe(2);
    runtime.started[0]!.set('starting'); // the stalled leader wakes and writes what it saw: refused
    await expect.poll(refusals).toBe(1);
    expect((await replicaRecords())[0]?.state).toBe('ready');
    await pass(c);
    expect(c.isLeader).toBe(false);
    expect(runtime.started[0]!.stopped).toBe(true);
    expect(runtime.started).toHaveLength(1); // nothing started by the deposed leader
    expect((await replicaRecords()).map((r) => r.state)).toEqual(['ready']); // the successor's to reap
  });

  it('takes an expired lease nobody else took back at once, at its first refused write: says so once per occurrence, keeps its replicas, writes again', async () => {
    await deploy(1);
    const c = stalled();
    await c.start();
    runtime.started[0]!.set('ready');
    await expect.poll(async () => (await replicaRecords())[0]?.state).toBe('ready');
    const retaken = () => warnings.filter((l) => l.includes('controller lease had expired; taken back at once')).length;

    storeClock.advance(300); // the only control process stalled past its lease; nobody took it
    runtime.started[0]!.set('starting'); // its write is refused, and the lease asked for at once
    // No pass runs and no renewal is due (both an hour away): the lease is taken back on the refusal itself.
    await expect.poll(async () => (await replicaRecords())[0]?.state).toBe('starting');
    expect(refusals()).toBe(1);
    expect(retaken()).toBe(1);
    expect(c.isLeader).toBe(true);
    expect(runtime.started[0]!.stopped).toBe(false);

    storeClock.advance(300); // a second stall: told again
    runtime.started[0]!.set('ready');
    await expect.poll(async () => (await replicaRecords())[0]?.state).toBe('ready');
    expect(retaken()).toBe(2);
    expect(warnings.some((l) => l.includes('lost') || l.includes('starting afresh'))).toBe(false);
    expect(runtime.started).toHaveLength(1);
  });

  it('starts afresh when it finds another controller held the lease meanwhile, though it holds it again now', async () => {
    await deploy(1);
    const c = stalled();
    await c.start();
    storeClock.advance(300);
    expect(await store.holdLease('controller', 'meanwhile', 150)).toBe(2);
    storeClock.advance(250); // that one went away too
    await pass(c);
    expect(c.isLeader).toBe(true);
    expect(runtime.started[0]!.stopped).toBe(true);
    expect(runtime.reaped).toContain(runtime.started[0]!.name); // its records reaped on taking over again
    await expect.poll(() => live().length).toBe(1);
  });
});

describe('Controller clean-up of deleted deployments', () => {
  const parents = () => ({ logs: path.join(dir, 'logs'), cache: path.join(dir, 'model-cache'), workers: path.join(dir, 'orchestrated') });

  /** Times the directories were listed: at each taking of the lease only. */
  let diskReads = 0;
  function cleaning(extra: Partial<ConstructorParameters<typeof Controller>[0]> = {}): Controller {
    const { logs, cache, workers } = parents();
    const local = new LocalLeftovers({ store, dirs: [logs, workers, cache] });
    const leftovers: DeploymentLeftovers = {
      onDisk: () => {
        diskReads++;
        return local.onDisk();
      },
      inStore: () => local.inStore(),
      remove: (id) => local.remove(id),
    };
    diskReads = 0;
    return controller({ leftovers, workersDir: workers, ...extra });
  }

  /**
   * Resolves once a full pass begun after this call has ended (the one after it has begun),
   * for a controller whose replicas still drain, where `settled()` would wait for the drain too.
   */
  async function aPassRan(c: Controller): Promise<void> {
    const begun = c.counters.passes;
    await expect
      .poll(() => {
        c.poke();
        return c.counters.passes;
      })
      .toBeGreaterThanOrEqual(begun + 2);
  }

  /** What a deployment that ran leaves: a replica log, its model cache, a usage row. */
  async function leave(id: number): Promise<void> {
    const { logs, cache } = parents();
    await mkdir(path.join(logs, String(id), '1', 'Replica'), { recursive: true });
    await writeFile(path.join(logs, String(id), '1', 'Replica', `web-r1-${id}.log`), '{}\n');
    await mkdir(path.join(cache, String(id)), { recursive: true });
    const ledger = new UsageLedger(store);
    ledger.add(id, Date.now(), { requests: 1 });
    await ledger.flush();
  }

  async function left(id: number): Promise<string[]> {
    const { logs, cache, workers } = parents();
    const found = Object.entries({ logs, cache, workers })
      .filter(([, parent]) => existsSync(path.join(parent, String(id))))
      .map(([what]) => what);
    if ((await store.list('usage')).some((u) => u.value.deployment_id === id)) found.push('usage');
    return found;
  }

  it('removes what a deployment deleted while paused left, and nothing of a live one', async () => {
    const paused = await deploy(1);
    await modify(store, 'deployment', paused, (d) => ({ ...d, paused: true, status: 'paused' }));
    const live = await deploy(1);
    await leave(paused);
    await leave(live);
    const c = cleaning({ leftoverScanMs: 100 });
    await c.start();
    await expect.poll(() => runtime.started.length).toBe(1);
    await c.settled(); // the first pass scanned the store too, as it does on taking the lease
    expect(await left(paused)).toEqual(['logs', 'cache', 'usage']);
    expect(diskReads).toBe(1); // directories are listed when the lease is taken, not every pass

    await store.delete('deployment', paused);
    await expect.poll(() => left(paused)).toEqual([]);
    expect(await left(live)).toEqual(['logs', 'cache', 'usage']);
    expect(diskReads).toBe(1); // the deletion came from the change feed: no directory listing

    // A usage row written after the clean-up (another process's late flush) goes at the next scan.
    await leave(paused);
    await expect.poll(() => left(paused)).toEqual([]);
    expect(await left(live)).toEqual(['logs', 'cache', 'usage']);
  });

  it('sweeps at start what deployments deleted before it ran left', async () => {
    await leave(42);
    await mkdir(path.join(parents().logs, 'not-a-deployment'), { recursive: true });
    await cleaning().start();
    await expect.poll(() => left(42)).toEqual([]);
    expect(existsSync(path.join(parents().logs, 'not-a-deployment'))).toBe(true);
  });

  it("keeps a deleted deployment's logs while its replicas drain, then removes them", async () => {
    const clock = new ManualClock(Date.now());
    const id = await deploy(1);
    const c = cleaning({ clock });
    await c.start();
    await expect.poll(() => runtime.started.length).toBe(1);
    runtime.started[0]!.set('ready');
    const [record] = await replicaRecords();
    inflight.set(record!.id, 1);
    await leave(id);

    try {
      await store.delete('deployment', id);
      await expect.poll(async () => (await replicaRecords())[0]?.state).toBe('draining');
      await aPassRan(c); // the drain waits on the clock, which stands still: it is still draining
      expect(await left(id)).toEqual(['logs', 'cache', 'usage']); // still writing its log

      inflight.set(record!.id, 0);
      clock.advance(100);
      await expect.poll(() => live().length).toBe(0);
      await expect.poll(() => left(id)).toEqual([]);
      expect(await replicaRecords()).toEqual([]);
    } finally {
      inflight.clear(); // so a failed run's stop() is not left draining
      clock.advance(60_000);
    }
  });

  it("removes a paused orchestrated deployment's workers file when it is deleted", async () => {
    const base = deploymentRecord(0, 'orch');
    const spec = orchestratedSpec();
    const created = await store.create('deployment', (id) => ({
      ...base,
      id,
      family: 'orchestrated' as const,
      spec,
      revisions: [{ ...base.revisions[0]!, spec }],
      paused: true,
      status: 'paused' as const,
    }));
    const id = created.value.id;
    await cleaning().start();
    await expect.poll(() => existsSync(path.join(parents().workers, String(id), 'workers-r1.json'))).toBe(true);
    expect(runtime.started).toHaveLength(0);

    await store.delete('deployment', id);
    await expect.poll(() => left(id)).toEqual([]);
  });
});

describe('Controller secret environment variables', () => {
  /** A deployment whose spec holds `sealed` as its secret variables (sealed here as "sealed:<value>"). */
  async function deployWithSecrets(sealed: Record<string, string>): Promise<number> {
    const base = deploymentRecord(0, 'secret');
    const spec = { ...base.spec, env: { PLAIN: 'p' }, secrets: { env: sealed } };
    const created = await store.create('deployment', (id) => ({ ...base, id, spec, revisions: [{ ...base.revisions[0]!, spec }], scaling: { ...base.scaling, min_replicas: 1 } }));
    return created.value.id;
  }
  const unseal = (s: string) => {
    if (!s.startsWith('sealed:')) throw new Error('bad seal');
    return s.slice('sealed:'.length);
  };

  it('unseals them into the replica environment beside the plain ones', async () => {
    await deployWithSecrets({ REGISTRY_API_KEY: 'sealed:registry-key-1' });
    await controller({ unseal }).start();
    await expect.poll(() => runtime.started.length).toBe(1);
    expect(runtime.started[0]!.request.env).toEqual({ PLAIN: 'p', REGISTRY_API_KEY: 'registry-key-1' });
  });

  it('starts the replica without one that cannot be unsealed, logging its name and never a value', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    await deployWithSecrets({ BROKEN: 'garbled-sealed-value', GOOD: 'sealed:good-value' });
    await controller({ unseal, logger }).start();
    await expect.poll(() => runtime.started.length).toBe(1);
    expect(runtime.started[0]!.request.env).toEqual({ PLAIN: 'p', GOOD: 'good-value' });
    const errors = lines.map((l) => JSON.parse(l) as { level: number; variable?: string; msg: string }).filter((l) => l.level >= 50);
    expect(errors).toEqual([expect.objectContaining({ variable: 'BROKEN', msg: expect.stringContaining('BROKEN cannot be unsealed') })]);
    expect(lines.join('\n')).not.toMatch(/garbled-sealed-value|good-value/);
  });
});

describe('Controller registry credentials from the vault', () => {
  const unseal = (s: string) => {
    if (!s.startsWith('sealed:')) throw new Error('bad seal');
    return s.slice('sealed:'.length);
  };
  /** A vault credential bound to `registry`, and a deployment of `image` naming it, written as any writer could. */
  async function deployWithVaultCredential(image: string, registry: string | null | undefined): Promise<number> {
    const credential = await store.create('registry_credential', (id) => ({
      id,
      name: 'corp',
      username: 'corpbot',
      sealed_password: 'sealed:corp-password',
      ...(registry === undefined ? {} : { registry }),
      created_at: new Date(0).toISOString(),
    }));
    const base = deploymentRecord(0, 'pulls');
    const spec = { ...base.spec, image, tag: 'v1', command: ['serve'], registry_credential_id: credential.value.id };
    const created = await store.create('deployment', (id) => ({ ...base, id, spec, revisions: [{ ...base.revisions[0]!, spec }], scaling: { ...base.scaling, min_replicas: 1 } }));
    return created.value.id;
  }
  const eventsOf = async (id: number) => (await store.listEvents(id)).map((e) => ({ reason: e.reason, type: e.type, message: e.message }));

  it('are sent to the registry host they are bound to', async () => {
    await deployWithVaultCredential('registry.example.com:5000/corp/engine', 'registry.example.com:5000');
    await controller({ unseal }).start();
    await expect.poll(() => runtime.started.length).toBe(1);
    expect(runtime.started[0]!.request.registryAuth).toEqual({ username: 'corpbot', password: 'corp-password' });
  });

  it('are not sent to another host, whatever wrote the spec: the pull goes without them, with a log line and an event', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const id = await deployWithVaultCredential('127.0.0.1:19555/corp/engine', 'registry.example.com:5000');
    await controller({ unseal, logger }).start();
    await expect.poll(() => runtime.started.length).toBe(1);
    expect(runtime.started[0]!.request.registryAuth).toBeNull();
    await expect.poll(() => eventsOf(id)).toContainEqual({
      reason: 'RegistryCredentialWithheld',
      type: 'warning',
      message: expect.stringMatching(/bound to the registry registry\.example\.com:5000, and image 127\.0\.0\.1:19555\/corp\/engine is pulled from 127\.0\.0\.1:19555: its password is not sent there/),
    });
    expect(lines.some((l) => /its password is not sent there/.test(l))).toBe(true);
    expect(lines.join('\n')).not.toContain('corp-password');
  });

  it('one bound to no host (an older record, unbound or not yet upgraded) is not sent at all', async () => {
    for (const registry of [null, undefined]) {
      const id = await deployWithVaultCredential(`registry.example.com/corp/engine-${String(registry)}`, registry);
      const c = controller({ unseal });
      await c.start();
      await expect.poll(() => runtime.started.filter((r) => r.request.deploymentId === id).length).toBe(1);
      expect(runtime.started.find((r) => r.request.deploymentId === id)!.request.registryAuth).toBeNull();
      await expect.poll(async () => (await eventsOf(id)).map((e) => e.reason)).toContain('RegistryCredentialUnbound');
      await c.stop();
      controllers.splice(controllers.indexOf(c), 1);
      await store.delete('deployment', id);
    }
  });
});

describe('Controller: failing, and the deployment\'s events', () => {
  const events = async (id: number) => (await store.listEvents(id)).map((e) => `${e.reason}${e.count > 1 ? ` x${e.count}` : ''}`);

  it('a replica crashing twice without becoming ready makes the deployment failing, with why; ready again, it is ready', async () => {
    const logsDir = path.join(dir, 'logs');
    const id = await deploy(1);
    await controller({ logsDir }).start();
    await expect.poll(() => runtime.started.length, { timeout: 5000 }).toBe(1);
    const r = runtime.started[0]!;
    const logFile = logFilePath(logsDir, { deploymentId: id, revision: 1, component: 'Replica', replica: r.name });
    await mkdir(path.dirname(logFile), { recursive: true });
    const line = (stream: string, text: string) => JSON.stringify({ time: new Date().toISOString(), stream, line: text });
    await writeFile(logFile, [line('stderr', 'Error: model weights not found at /models/x'), line('runtime', 'process 12 exited with code 3')].join('\n') + '\n');

    r.crash(3);
    await expect.poll(async () => (await store.listEvents(id)).some((e) => e.reason === 'ReplicaRestarted'), { timeout: 5000 }).toBe(true);
    expect((await get(id)).status).toBe('pending'); // once is not a loop
    r.crash(3);
    await expect.poll(async () => (await get(id)).status, { timeout: 5000 }).toBe('failing');
    expect((await get(id)).status_reason).toBe(
      `replica ${r.name} keeps crashing: restarted 2 times without becoming ready, last exited with code 3; last log line: "Error: model weights not found at /models/x"`,
    );
    await expect.poll(() => events(id), { timeout: 5000 }).toEqual(['ReplicaStarted', 'RolloutStarted', 'ReplicaRestarted x2', 'ReplicaFailing']);
    const failing = (await store.listEvents(id)).find((e) => e.reason === 'ReplicaFailing')!;
    expect(failing).toMatchObject({ type: 'warning', message: (await get(id)).status_reason });

    r.set('ready');
    await expect.poll(async () => (await get(id)).status, { timeout: 5000 }).toBe('ready');
    expect((await get(id)).status_reason).toBeNull();
    await expect.poll(() => events(id), { timeout: 5000 }).toEqual(['ReplicaStarted', 'RolloutStarted', 'ReplicaRestarted x2', 'ReplicaFailing', 'ReplicaReady', 'RolloutCompleted']);
    // A crash after having been ready starts the count again: one restart is not failing.
    r.crash(1);
    await expect.poll(async () => (await get(id)).status, { timeout: 5000 }).toBe('not_ready');
  });

  it('an image pull that failed for good is failing, also while it is tried again; one that may work next time is pending', async () => {
    const id = await deploy(1);
    await controller().start();
    await expect.poll(() => runtime.started.length, { timeout: 5000 }).toBe(1);
    const r = runtime.started[0]!;
    r.pulling('127.0.0.1:5000/team/engine:v9');
    r.pullFailed('the registry 127.0.0.1:5000 is unreachable: connection refused', false);
    await expect.poll(async () => (await get(id)).status_reason, { timeout: 5000 }).toContain('unreachable');
    expect((await get(id)).status).toBe('pending');

    r.pulling('127.0.0.1:5000/team/engine:v9');
    r.pullFailed('tag v9 of 127.0.0.1:5000/team/engine not found', true);
    await expect.poll(async () => (await get(id)).status, { timeout: 5000 }).toBe('failing');
    expect((await get(id)).status_reason).toBe(`replica ${r.name} cannot pull its image: tag v9 of 127.0.0.1:5000/team/engine not found; retrying in 5 s`);
    r.pulling('127.0.0.1:5000/team/engine:v9'); // the retry
    await expect.poll(async () => (await get(id)).status_reason, { timeout: 5000 }).toBe(`replica ${r.name} cannot pull its image: tag v9 of 127.0.0.1:5000/team/engine not found`);
    expect((await get(id)).status).toBe('failing');
    const told = (await store.listEvents(id)).map((e) => `${e.type} ${e.reason} x${e.count}`);
    expect(told).toEqual(expect.arrayContaining(['normal ImagePulling x3', 'warning ReplicaFailing x1']));
    expect(told.filter((t) => t.startsWith('warning PullFailed'))).toEqual(['warning PullFailed x1', 'warning PullFailed x1']); // two reasons: two events
  });

  it('tells a rolling update: started, each step, completed', async () => {
    const id = await deploy(2);
    await controller().start();
    await expect.poll(() => runtime.started.length, { timeout: 5000 }).toBe(2);
    for (const r of runtime.started) r.set('ready');
    await expect.poll(async () => (await get(id)).serving_revision, { timeout: 5000 }).toBe(1);
    await edit(id, 'v2');
    await expect.poll(() => runtime.started.length, { timeout: 5000 }).toBe(3);
    runtime.started[2]!.set('ready');
    await expect.poll(() => runtime.started.length, { timeout: 5000 }).toBe(4);
    runtime.started[3]!.set('ready');
    await expect.poll(async () => (await get(id)).serving_revision, { timeout: 5000 }).toBe(2);
    // Revision 1's completion is there already: wait for revision 2's.
    await expect.poll(async () => (await store.listEvents(id)).some((e) => e.reason === 'RolloutCompleted' && e.message.startsWith('revision 2 ')), { timeout: 5000 }).toBe(true);
    const told = (await store.listEvents(id)).filter((e) => e.reason.startsWith('Rollout')).map((e) => `${e.reason}: ${e.message}`);
    expect(told[0]).toBe('RolloutStarted: rolling out revision 1');
    expect(told).toContain('RolloutStarted: rolling out revision 2, replacing revision 1');
    expect(told.some((t) => /^RolloutStep: revision 2: 1 of 2 ready, \d replicas? of earlier revisions left$/.test(t))).toBe(true);
    expect(told.at(-1)).toMatch(/^RolloutCompleted: revision 2 serves in place of revision 1 after \d+ s$/);
  });

  it('records decisions handed in only while it leads, and a store refusing events fails no pass', async () => {
    const id = await deploy(1);
    const c = controller();
    c.recordEvent(id, { type: 'normal', reason: 'ScaledUp', message: 'before the lease' });
    await c.start();
    c.recordEvent(id, { type: 'normal', reason: 'ScaledUp', message: 'desired replicas 1 → 2' });
    await expect.poll(async () => (await store.listEvents(id)).map((e) => e.message), { timeout: 5000 }).toContain('desired replicas 1 → 2');
    expect((await store.listEvents(id)).map((e) => e.message)).not.toContain('before the lease');

    store.appendEvent = () => Promise.reject(new Error('disk full'));
    await expect.poll(() => runtime.started.length, { timeout: 5000 }).toBe(1);
    runtime.started[0]!.set('ready');
    await expect.poll(async () => (await get(id)).status, { timeout: 5000 }).toBe('ready');
  });
});

describe('Controller: traffic between revisions', () => {
  const to = (revision: number | 'latest', percent: number, tag: string | null = null): TrafficTarget =>
    revision === 'latest' ? { revision: null, latest: true, percent, tag } : { revision, latest: false, percent, tag };

  /** A general deployment with revisions 1..n (tags v1..vn), scaled within [min, max], traffic as given. */
  async function deployRevisions(n: number, traffic: TrafficTarget[] | null, o: { min?: number; max?: number; clock?: Clock } = {}): Promise<number> {
    const base = deploymentRecord(0, 'web');
    const revisions = Array.from({ length: n }, (_, i) => {
      const spec = { ...base.spec, tag: `v${i + 1}` } as DeploymentRecord['spec'];
      return { ...base.revisions[0]!, revision: i + 1, reason: i === 0 ? ('create' as const) : ('update' as const), spec };
    });
    const at = new Date((o.clock ?? systemClock).now()).toISOString();
    const created = await store.create('deployment', (id) => ({
      ...base,
      id,
      revision: n,
      spec: revisions[n - 1]!.spec,
      revisions,
      traffic,
      scaling: { ...base.scaling, min_replicas: o.min ?? 1, max_replicas: o.max ?? 4 },
      updated_at: at,
    }));
    return created.value.id;
  }

  async function setTraffic(id: number, traffic: TrafficTarget[] | null, clock: Clock = systemClock): Promise<void> {
    await modify(store, 'deployment', id, (d) => ({ ...d, traffic, updated_at: new Date(clock.now()).toISOString() }));
  }

  /** Live replicas per revision, e.g. {"1": 3, "2": 1}. */
  const perRevision = () => {
    const out: Record<string, number> = {};
    for (const r of live()) out[r.request.revision] = (out[r.request.revision] ?? 0) + 1;
    return out;
  };
  const readyAll = () => {
    for (const r of live()) if (r.phase !== 'ready') r.set('ready');
  };
  const told = async (id: number, reason: string) => (await store.listEvents(id)).filter((e) => e.reason === reason).map((e) => e.message);

  it('runs two revisions side by side at 90/10, each at the count the autoscaler gives it', async () => {
    const asked: string[] = [];
    const figures: Record<string, number> = { '1': 3, '2': 1 };
    const autoscaled = (deploymentId: number, revision: number | null) => {
      asked.push(String(revision));
      return revision === null ? 2 : figures[String(revision)];
    };
    const id = await deployRevisions(2, [to(1, 90), to(2, 10)]);
    const c = controller({ autoscaled });
    await c.start();
    await expect.poll(perRevision).toEqual({ '1': 3, '2': 1 });
    expect(asked).toEqual(expect.arrayContaining(['1', '2']));
    expect(asked).not.toContain('null');
    expect(runtime.started.filter((r) => r.request.revision === 2).map((r) => r.request.tag)).toEqual(['v2']);
    await expect.poll(async () => (await get(id)).revision_desired).toEqual({ '1': { Replica: 3 }, '2': { Replica: 1 } });
    expect((await get(id)).desired_replicas).toEqual({ Replica: 4 });

    readyAll();
    await expect.poll(async () => (await get(id)).revisions.map((r) => r.status)).toEqual(['ready', 'ready']);
    expect(await get(id)).toMatchObject({ status: 'ready', serving_revision: 1 });

    // Each revision scales on its own; the autoscaler tells the controller which deployment's figures moved.
    figures['2'] = 3;
    figures['1'] = 1;
    c.poke(id);
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 3 });
    await expect.poll(async () => (await get(id)).revision_desired).toEqual({ '1': { Replica: 1 }, '2': { Replica: 3 } });
  });

  it("counts each replica's lifetime in the usage ledger under its revision too", async () => {
    const clock = new ManualClock(Date.parse('2026-11-23T10:00:00.000Z'));
    const ledger = new UsageLedger(store);
    const id = await deployRevisions(2, [to(1, 90), to(2, 10)], { clock });
    const figures: Record<string, number> = { '1': 2, '2': 1 };
    await controller({ clock, usage: ledger, gpusPerReplica: () => 2, autoscaled: (_d, revision) => figures[String(revision)] }).start();
    await expect.poll(perRevision).toEqual({ '1': 2, '2': 1 });
    clock.advance(10_000);
    const usage = async () => {
      await ledger.flush();
      return (await store.list('usage')).find((u) => u.value.deployment_id === id)?.value;
    };
    const lived = (gpu_seconds: number) => ({ requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, gpu_seconds });
    await expect.poll(async () => (await usage())?.revisions).toEqual({ '1': lived(2 * 10 * 2), '2': lived(10 * 2) });
    expect(await usage()).toMatchObject({ gpu_seconds: 60, replica_seconds: { Replica: 30 } });
  });

  it('a tagged revision at 0 % runs, reached by its tag only', async () => {
    const id = await deployRevisions(2, [to(1, 100), to(2, 0, 'canary')], { min: 0 });
    await controller({ autoscaled: () => undefined }).start();
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 1 });
    readyAll();
    await expect.poll(async () => (await get(id)).revisions.map((r) => r.status)).toEqual(['ready', 'ready']);
    expect((await get(id)).serving_revision).toBe(1);
  });

  it('moving 10 → 50 → 100: the split keeps both, the old revision is stopped only once the new one has its count ready, then retired', async () => {
    const autoscaled = (_id: number, revision: number | null) => (revision === null ? 2 : 1);
    const id = await deployRevisions(2, [to(1, 100)]);
    const c = controller({ autoscaled });
    await c.start();
    await expect.poll(perRevision).toEqual({ '1': 2 });
    readyAll();
    await expect.poll(async () => (await get(id)).serving_revision).toBe(1);
    expect((await get(id)).revisions.map((r) => r.status)).toEqual(['ready', 'pending']); // revision 2 never ran

    await setTraffic(id, [to(1, 90), to(2, 10)]);
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 1 });
    readyAll();
    await setTraffic(id, [to(1, 50), to(2, 50)]);
    await expect.poll(async () => told(id, 'TrafficShifted')).toHaveLength(2);
    expect(perRevision()).toEqual({ '1': 1, '2': 1 });

    await setTraffic(id, [to(2, 100)]);
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 2 }); // a rolling update: the old one stays
    await c.settled();
    expect(perRevision()).toEqual({ '1': 1, '2': 2 });
    readyAll();
    await expect.poll(perRevision).toEqual({ '2': 2 });
    await expect.poll(async () => (await get(id)).revisions.map((r) => r.status)).toEqual(['retired', 'ready']);
    expect(await get(id)).toMatchObject({ serving_revision: 2, revision_desired: null, desired_replicas: { Replica: 2 } });
    await expect.poll(() => told(id, 'RevisionDrained')).toEqual(['revision 1 takes no traffic and its last replica stopped']);
    expect(await told(id, 'TrafficShifted')).toEqual([
      'revision 2 now takes 10 % of requests (revision 1: 90 %)',
      'revision 2 now takes 50 % of requests (revision 1: 50 %)',
      'revision 2 now takes 100 % of requests (revision 1: 0 %, its replicas drain)',
    ]);
  });

  it('promoting a canary keeps its count until the autoscaler decides for the deployment again: no replica for the split\'s sum', async () => {
    // The autoscaler has not decided for the deployment as a whole yet (it just left the split).
    const autoscaled = (_id: number, revision: number | null) => (revision === null ? undefined : 1);
    const id = await deployRevisions(2, [to(1, 90), to(2, 10)]);
    await controller({ autoscaled }).start();
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 1 });
    readyAll();
    await expect.poll(async () => (await get(id)).desired_replicas).toEqual({ Replica: 2 });
    await setTraffic(id, [to(2, 100)]);
    await expect.poll(perRevision).toEqual({ '2': 1 });
    expect(runtime.started.filter((r) => r.request.revision === 2)).toHaveLength(1);
    expect(await get(id)).toMatchObject({ revision_desired: null, desired_replicas: { Replica: 1 } });
  });

  it('a revision left out of the split stops only once every revision of the split has a ready replica', async () => {
    const id = await deployRevisions(3, [to(1, 90), to(2, 10)]);
    const c = controller();
    await c.start();
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 1 });
    readyAll();
    await expect.poll(async () => (await get(id)).revisions.map((r) => r.status)).toEqual(['ready', 'ready', 'pending']);

    await setTraffic(id, [to(2, 90), to(3, 10)]);
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 1, '3': 1 });
    await c.settled();
    expect(perRevision()).toEqual({ '1': 1, '2': 1, '3': 1 }); // revision 3 not ready yet: revision 1 stays
    readyAll();
    await expect.poll(perRevision).toEqual({ '2': 1, '3': 1 });
    await expect.poll(async () => (await get(id)).revisions.map((r) => r.status)).toEqual(['retired', 'ready', 'ready']);
    expect((await get(id)).serving_revision).toBe(2);
    await expect.poll(() => told(id, 'RevisionDrained')).toEqual(['revision 1 takes no traffic and its last replica stopped']);
    expect(await told(id, 'TrafficShifted')).toEqual(['revision 3 now takes 10 % of requests (revision 2: 90 %; revision 1: 0 %, its replicas drain)']);
  });

  it('…or a minute after the edit, on its clock, when the split has not got there', async () => {
    const clock = new ManualClock(Date.parse('2026-11-23T10:00:00.000Z'));
    const id = await deployRevisions(3, [to(1, 90), to(2, 10)], { clock });
    const c = controller({ clock });
    await c.start();
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 1 });
    readyAll();
    await setTraffic(id, [to(2, 90), to(3, 10)], clock);
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 1, '3': 1 });
    clock.advance(59_000);
    await c.settled();
    expect(perRevision()).toEqual({ '1': 1, '2': 1, '3': 1 });
    clock.advance(1000);
    await expect.poll(perRevision).toEqual({ '2': 1, '3': 1 });
  });

  it('pinning an older revision rolls back to its replicas by a rolling update', async () => {
    const id = await deploy(1);
    await controller().start();
    await expect.poll(() => live().length).toBe(1);
    readyAll();
    await edit(id, 'v2');
    await expect.poll(() => live().length).toBe(2);
    readyAll();
    await expect.poll(async () => (await get(id)).serving_revision).toBe(2);
    await expect.poll(perRevision).toEqual({ '2': 1 });

    await setTraffic(id, [to(1, 100)]);
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 1 });
    expect(runtime.started.at(-1)!.request).toMatchObject({ revision: 1, tag: 'latest' });
    readyAll();
    await expect.poll(perRevision).toEqual({ '1': 1 });
    await expect.poll(async () => (await get(id)).rollout).toMatchObject({ revision: 1, from_revision: 2, state: 'complete' });
    expect(await get(id)).toMatchObject({ serving_revision: 1, revision: 2 });
    expect((await get(id)).revisions.map((r) => r.status)).toEqual(['ready', 'retired']);
  });

  it('manual rollout: the new revision waits at 0 %, never started, until traffic gives it a share', async () => {
    const id = await deploy(1);
    const c = controller();
    await c.start();
    await expect.poll(() => live().length).toBe(1);
    readyAll();
    await expect.poll(async () => (await get(id)).serving_revision).toBe(1);
    await modify(store, 'deployment', id, (d): DeploymentRecord => {
      const spec = { ...d.spec, tag: 'v2' } as DeploymentRecord['spec'];
      return { ...d, revision: 2, spec, rollout_mode: 'manual', traffic: [to(1, 100)], revisions: [...d.revisions, { ...d.revisions[0]!, revision: 2, status: 'pending', spec }] };
    });
    await c.settled();
    expect(perRevision()).toEqual({ '1': 1 });
    expect((await get(id)).revisions.map((r) => r.status)).toEqual(['ready', 'pending']);
    expect((await get(id)).rollout).toMatchObject({ revision: 1, state: 'complete' });

    await setTraffic(id, [to(1, 90), to('latest', 10, 'canary')]);
    await expect.poll(perRevision).toEqual({ '1': 1, '2': 1 });
    expect(runtime.started.at(-1)!.request).toMatchObject({ revision: 2, tag: 'v2' });
  });

  it('an orchestrated split gives each revision its own Frontend and a workers file with only its own workers', async () => {
    const workers = path.join(dir, 'orchestrated');
    const base = deploymentRecord(0, 'orch');
    const revisions = [1, 2].map((n) => ({ ...base.revisions[0]!, revision: n, spec: orchestratedSpec({ model: `org/model-${n}` }) }));
    const created = await store.create('deployment', (id) => ({
      ...base,
      id,
      family: 'orchestrated' as const,
      revision: 2,
      spec: revisions[1]!.spec,
      revisions,
      traffic: [to(1, 90), to(2, 10)],
      scaling: { ...base.scaling, min_replicas: 1, max_replicas: 4 },
    }));
    const id = created.value.id;
    await controller({ workersDir: workers, autoscaled: (_d, revision) => (revision === 1 ? 2 : 1) }).start();
    const byRole = () => live().map((r) => `${r.request.revision}:${r.request.component}`).sort();
    await expect.poll(byRole).toEqual(['1:Frontend', '1:Worker', '1:Worker', '2:Frontend', '2:Worker']);
    const frontend = (revision: number) => live().find((r) => r.request.revision === revision && r.request.component === 'Frontend')!;
    const fileOf = (revision: number) => path.join(workers, String(id), `workers-r${revision}.json`);
    expect(frontend(1).request.command.join(' ')).toContain(`--workers-file ${fileOf(1)}`);
    expect(frontend(2).request.command.join(' ')).toContain(`--workers-file ${fileOf(2)}`);

    readyAll();
    const addresses = (revision: number) =>
      live()
        .filter((r) => r.request.revision === revision && r.request.component === 'Worker')
        .map((r) => r.address)
        .sort();
    const file = async (revision: number) => JSON.parse(await readFile(fileOf(revision), 'utf8').catch(() => '{}')) as unknown;
    await expect.poll(() => file(1)).toEqual({ workers: addresses(1) });
    await expect.poll(() => file(2)).toEqual({ workers: addresses(2) });
    expect(addresses(1)).toHaveLength(2);
    await expect.poll(async () => (await get(id)).status).toBe('ready');
    expect((await get(id)).revision_desired).toEqual({ '1': { Frontend: 1, Worker: 2 }, '2': { Frontend: 1, Worker: 1 } });

    // Promoted: revision 1's replicas go once revision 2 has its count, and so does its file.
    await setTraffic(id, [to(2, 100)]);
    await expect.poll(async () => {
      readyAll();
      return byRole();
    }).toEqual(['2:Frontend', '2:Worker']);
    await expect.poll(() => existsSync(fileOf(1))).toBe(false);
    await expect.poll(() => file(2)).toEqual({ workers: addresses(2) });
  });
});

describe('Controller: work follows change', () => {
  const N = 1000;
  const at = '2026-11-20T10:00:00.000Z';

  /** A general deployment at min 0 scaled to zero, in the state the controller leaves it: nothing to do. */
  function atZero(id: number): DeploymentRecord {
    const base = deploymentRecord(id, `idle-${id}`);
    return {
      ...base,
      scaling: { ...base.scaling, min_replicas: 0, max_replicas: 1, target_concurrency: 1 },
      revisions: [{ ...base.revisions[0]!, status: 'ready' }],
      status: 'ready',
      desired_replicas: { Replica: 0 },
      serving_revision: 1,
      rollout: { revision: 1, from_revision: null, state: 'complete', reason: null, started_at: at, finished_at: at },
    };
  }

  /** A file store (on the real clock) holding `deployments` and `replicas`, written in one go. */
  async function seeded(deployments: DeploymentRecord[], replicas: ReplicaRecord[] = []): Promise<FileStore> {
    const seededDir = path.join(dir, `seeded-${extraStores.length}`);
    await writeStateFile(seededDir, { deployment: deployments, replica: replicas });
    const s = new FileStore({ dir: seededDir });
    await s.open();
    extraStores.push(s);
    return s;
  }

  /**
   * The store, counting per deployment id every call that reads or writes one deployment (get,
   * update, delete, events; replica records by their deployment), every listing, and the times
   * the controller lease was held.
   */
  function counting(inner: Store) {
    const touched = new Map<number, number>();
    const lists: string[] = [];
    const holds: number[] = [];
    const touch = (id: number) => touched.set(id, (touched.get(id) ?? 0) + 1);
    const replicaOwner = new Map<number, number>();
    const counted: Store = {
      open: () => inner.open(),
      close: () => inner.close(),
      ping: () => inner.ping(),
      get: async (kind, id) => {
        if (kind === 'deployment') touch(id);
        const found = await inner.get(kind, id);
        if (kind === 'replica' && found) touch((found.value as ReplicaRecord).deployment_id);
        return found;
      },
      list: (kind) => {
        lists.push(kind);
        return inner.list(kind);
      },
      lookup: (index, key) => inner.lookup(index, key),
      create: (kind, build, options) =>
        inner.create(
          kind,
          (id) => {
            const value = build(id);
            if (kind === 'replica') {
              replicaOwner.set(id, (value as ReplicaRecord).deployment_id);
              touch((value as ReplicaRecord).deployment_id);
            }
            return value;
          },
          options,
        ),
      update: (kind, id, version, value, options) => {
        if (kind === 'deployment') touch(id);
        if (kind === 'replica') touch((value as ReplicaRecord).deployment_id);
        return inner.update(kind, id, version, value, options);
      },
      delete: (kind, id, version, options) => {
        if (kind === 'deployment') touch(id);
        const owner = kind === 'replica' ? replicaOwner.get(id) : undefined;
        if (owner !== undefined) touch(owner);
        return inner.delete(kind, id, version, options);
      },
      appendEvent: (id, event, options) => {
        touch(id);
        return inner.appendEvent(id, event, options);
      },
      listEvents: (id) => {
        touch(id);
        return inner.listEvents(id);
      },
      watch: (listener) => inner.watch(listener),
      onResync: (listener) => inner.onResync(listener),
      holdLease: (name, holder, ttlMs) => {
        holds.push(performance.now());
        return inner.holdLease(name, holder, ttlMs);
      },
      releaseLease: (name, holder) => inner.releaseLease(name, holder),
      publishReport: (topic, publisher, body, ttlMs) => inner.publishReport(topic, publisher, body, ttlMs),
      readReports: (topic) => inner.readReports(topic),
    };
    return {
      store: counted,
      /** Ids touched since the last reset, sorted. */
      touched: () => [...touched.keys()].sort((a, b) => a - b),
      lists,
      holds,
      reset() {
        touched.clear();
        lists.length = 0;
      },
    };
  }

  /** The runtime, counting its calls per deployment. */
  function countingRuntime(inner: Runtime) {
    const calls: number[] = [];
    const runtimeCounted: Runtime = {
      description: inner.description,
      replicasOutliveService: inner.replicasOutliveService,
      start: (request) => {
        calls.push(request.deploymentId);
        return inner.start(request);
      },
      adopt: (leftover, request) => {
        calls.push(request.deploymentId);
        return inner.adopt(leftover, request);
      },
      reap: (leftover) => inner.reap(leftover),
      sweep: (keep) => inner.sweep(keep),
      shellRefusal: () => inner.shellRefusal(),
    };
    return { runtime: runtimeCounted, calls };
  }

  /** A controller over `n` idle deployments, past its first (full) pass, its counters then reset. */
  async function overIdle(n: number) {
    const seededStore = await seeded(Array.from({ length: n }, (_, i) => atZero(i + 1)));
    const counted = counting(seededStore);
    const runs = countingRuntime(runtime);
    const asked = new Set<number>();
    const c = controller({
      store: counted.store,
      runtime: runs.runtime,
      tickMs: 20,
      autoscaled: (id) => {
        asked.add(id);
        return 0; // the autoscaler keeps them at zero
      },
    });
    await c.start();
    await c.settled();
    expect(c.counters.reconciled).toBeGreaterThanOrEqual(n); // the taking of the lease saw every one
    expect(asked.size).toBe(n);
    counted.reset();
    asked.clear();
    runs.calls.length = 0;
    return { c, seededStore, counted, asked, runs };
  }

  it('a pass over 1,000 idle deployments (min 0, at zero) touches none of them, tick after tick', async () => {
    const { c, counted, asked, runs } = await overIdle(N);
    const reconciled = c.counters.reconciled;
    const ticks = c.counters.ticks;
    await expect.poll(() => c.counters.ticks, { timeout: 5000 }).toBeGreaterThanOrEqual(ticks + 10);
    await c.settled(); // and a pass begun after those ticks
    expect(counted.touched()).toEqual([]); // no get, update, event or replica write of any of them
    expect(counted.lists).toEqual([]); // and no listing of them all
    expect(asked.size).toBe(0); // no figure asked for, no plan made
    expect(runs.calls).toEqual([]);
    expect(c.counters.reconciled).toBe(reconciled);
  });

  it('a deployment whose record changes is reconciled within a second while 999 others are idle', async () => {
    const { c, seededStore, counted, runs } = await overIdle(N);
    const changed = 500;
    const t0 = performance.now();
    await modify(seededStore, 'deployment', changed, (d) => ({ ...d, scaling: { ...d.scaling, min_replicas: 1 } }));
    await expect.poll(() => runs.calls, { timeout: 1000 }).toEqual([changed]);
    expect(performance.now() - t0).toBeLessThan(1000);
    await c.settled();
    expect(counted.touched()).toEqual([changed]);
    expect(counted.lists).toEqual([]);
  });

  it('a rollout deadline fires from its timer for a deployment nothing else touches', async () => {
    const clock = new ManualClock(Date.now());
    const id = await deploy(1);
    const c = controller({ clock, rolloutDeadlineMs: 10_000 });
    await c.start();
    await expect.poll(() => runtime.started.length).toBe(1);
    runtime.started[0]!.set('ready');
    await expect.poll(async () => (await get(id)).serving_revision).toBe(1);
    await edit(id, 'never-ready');
    await expect.poll(() => runtime.started.length).toBe(2);
    await c.settled();
    const reconciled = c.counters.reconciled;
    clock.advance(9_000);
    const ticks = c.counters.ticks;
    await expect.poll(() => c.counters.ticks).toBeGreaterThanOrEqual(ticks + 3);
    await c.settled();
    expect(c.counters.reconciled).toBe(reconciled); // before its deadline, ticks leave it alone
    expect((await get(id)).rollout).toMatchObject({ revision: 2, state: 'in_progress' });
    clock.advance(1_001);
    await expect.poll(async () => (await get(id)).revisions[1]?.status).toBe('failed');
    expect((await get(id)).rollout).toMatchObject({ revision: 2, state: 'failed' });
    await expect.poll(() => live().map((r) => r.request.revision)).toEqual([1]);
  });

  it('renews the lease on time while a reconcile of 1,000 runs: no gap past its TTL, no write refused', async () => {
    /** A runtime that takes 3 ms of the thread to take back each replica (a container runtime inspects and probes each). */
    class SlowAdopts extends FakeRuntime {
      adopted = 0;
      override async adopt(leftover: LeftoverReplica, request: ReplicaRequest): Promise<ReplicaHandle | null> {
        const until = performance.now() + 3;
        while (performance.now() < until);
        this.adopted++;
        const r = new FakeReplica(request);
        r.address = `127.0.0.1:${30000 + this.adopted}`;
        r.phase = 'ready';
        this.started.push(r);
        return r;
      }
    }
    const deployments = Array.from({ length: N }, (_, i) => {
      const d = atZero(i + 1);
      return { ...d, scaling: { ...d.scaling, min_replicas: 1 }, desired_replicas: { Replica: 1 } };
    });
    const replicas: ReplicaRecord[] = deployments.map((d) => ({
      id: d.id,
      deployment_id: d.id,
      revision: 1,
      component: 'Replica',
      name: `${d.name}-r1-${d.id}`,
      address: `127.0.0.1:${30000 + d.id}`,
      state: 'ready',
      restarts: 0,
      pid: null,
      metrics_target: null,
      updated_at: at,
    }));
    const seededStore = await seeded(deployments, replicas);
    const counted = counting(seededStore);
    const slow = new SlowAdopts();
    const logged: string[] = [];
    const ttlMs = 1000;
    const c = controller({
      store: counted.store,
      runtime: slow,
      tickMs: 100,
      leaseTtlMs: ttlMs,
      autoscaled: () => 1,
      logger: pino({ level: 'warn' }, { write: (line: string) => logged.push(line) }),
    });
    const began = performance.now();
    await c.start(); // takes back every replica, then reconciles every deployment
    await c.settled();
    const took = performance.now() - began;
    expect(slow.adopted).toBe(N);
    expect(c.counters.reconciled).toBeGreaterThanOrEqual(N);
    expect(took).toBeGreaterThan(2 * ttlMs); // the work outlasted the lease: without renewals of its own it would have run out
    const holds = counted.holds.filter((t) => t >= began);
    const gaps = holds.slice(1).map((t, i) => t - holds[i]!);
    expect(holds.length).toBeGreaterThan(took / ttlMs);
    expect(Math.max(...gaps)).toBeLessThan(ttlMs);
    expect(logged.filter((l) => /lost|refused|expired|afresh/.test(l))).toEqual([]);
    expect(c.isLeader).toBe(true);

    // Stopped with its store closed first: draining a thousand replicas through a store that
    // rewrites its whole file per write would take the test a minute, and shows nothing here.
    controllers.splice(controllers.indexOf(c), 1);
    extraStores.splice(extraStores.indexOf(seededStore), 1);
    await seededStore.close();
    await c.stop();
  });
});
