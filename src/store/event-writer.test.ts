// The event writer over a real file store: events land in order, stamped with its clock,
// without the caller waiting; a store that refuses them is logged once per run of failures
// and never throws to the caller; a reason that is not one CamelCase word is refused; long
// messages are cut.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { EventWriter } from './event-writer.js';
import { FileStore } from './file-store.js';
import { deploymentRecord } from './store.contract.js';

let dir: string;
let store: FileStore;
const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));
let logged: Array<{ level: number; msg: string }>;
const logger = () =>
  pino({ level: 'debug' }, { write: (line: string) => void logged.push(JSON.parse(line) as { level: number; msg: string }) });

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-events-'));
  store = new FileStore({ dir });
  await store.open();
  logged = [];
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('EventWriter', () => {
  it('writes in order, stamped with its clock, while the caller goes on', async () => {
    const id = (await store.create('deployment', (n) => deploymentRecord(n, 'web'))).value.id;
    const writer = new EventWriter(store, clock, logger());
    writer.record(id, { type: 'normal', reason: 'ScaledUp', message: 'desired replicas 1 → 2' });
    clock.advance(1000);
    writer.record(id, { type: 'warning', reason: 'ReplicaRestarted', message: 'x'.repeat(5000) });
    expect(await store.listEvents(id)).toEqual([]); // nothing awaited yet: queued
    await writer.flush();
    const events = await store.listEvents(id);
    expect(events.map((e) => [e.time, e.reason])).toEqual([
      ['2026-03-01T12:00:00.000Z', 'ScaledUp'],
      ['2026-03-01T12:00:01.000Z', 'ReplicaRestarted'],
    ]);
    expect(events[1]!.message.length).toBe(1024);
  });

  it('never throws when the store refuses: warns once per run of failures, then writes again', async () => {
    const id = (await store.create('deployment', (n) => deploymentRecord(n, 'web'))).value.id;
    const writer = new EventWriter(store, clock, logger());
    const append = store.appendEvent.bind(store);
    store.appendEvent = () => Promise.reject(new Error('disk full'));
    for (let i = 0; i < 3; i++) writer.record(id, { type: 'normal', reason: 'ScaledUp', message: `lost ${i}` });
    await writer.flush();
    expect(logged.filter((l) => l.level === 40).map((l) => l.msg)).toEqual(['event not recorded: the store refused or could not take it; events are dropped until it can']);
    store.appendEvent = append;
    writer.record(id, { type: 'normal', reason: 'ScaledDown', message: 'kept' });
    await writer.flush();
    expect((await store.listEvents(id)).map((e) => e.message)).toEqual(['kept']);
  });

  it('refuses a reason that is not one CamelCase word', async () => {
    const id = (await store.create('deployment', (n) => deploymentRecord(n, 'web'))).value.id;
    const writer = new EventWriter(store, clock, logger());
    writer.record(id, { type: 'normal', reason: 'scaled up', message: 'x' });
    await writer.flush();
    expect(await store.listEvents(id)).toEqual([]);
    expect(logged.some((l) => l.level === 50)).toBe(true);
  });
});
