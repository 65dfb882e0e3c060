// The start-up upgrade into the `default` project, over a real file store and, when there is
// one, two clients of one Redis upgrading at the same time: the project made once, every
// owned record moved, legacy members made developers, admins left admins, unique keys left
// as they were, a second run a no-op, and records of other projects never touched.

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import type { Kind } from '../domain/records.js';
import { FileStore } from '../store/file-store.js';
import { RedisStore } from '../store/redis-store.js';
import type { Store } from '../store/store.js';
import { deploymentRecord, serviceAccountRecord, tokenRecord } from '../store/store.contract.js';
import { describeWithRedis, redisUrlForTests } from '../../test/helpers/redis.js';
import { PROJECT_NAME_INDEX, upgradeToProjects } from './project-upgrades.js';

const clock = new ManualClock(Date.parse('2026-11-28T12:00:00.000Z'));
const CREATED = '2025-01-01T00:00:00.000Z';

/** A store as today's code leaves it: nothing names a project, one member and one admin account. */
async function seedBeforeProjects(store: Store): Promise<void> {
  const token = await store.create('token', (id) => tokenRecord(id, 'chat-endpoint', 'hash-chat'), { unique: [{ index: 'token-hash', key: 'hash-chat' }, { index: 'token-name', key: 'chat-endpoint' }] });
  const d = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), auth: { token_id: token.value.id, client_certificate_id: null, private_endpoint: false } }), {
    unique: [{ index: 'deployment-name', key: 'chat' }],
  });
  await store.create('registry_credential', (id) => ({ id, name: 'ghcr', username: 'bot', sealed_password: 'sealed', registry: 'ghcr.io', created_at: CREATED }), { unique: [{ index: 'registry-credential-name', key: 'ghcr' }] });
  await store.create('certificate', (id) => ({ id, name: 'chat-client', deployment_id: d.value.id, serial: '01', fingerprint_sha256: 'ab', certificate_pem: 'pem', sealed_key: 'sealed', not_after: CREATED, revoked_at: null, created_at: CREATED }), {
    unique: [{ index: 'certificate-name', key: 'chat-client' }],
  });
  await store.create('usage', (id) => ({ id, deployment_id: d.value.id, hour: '2026-11-28T11:00:00.000Z', requests: 3, errors: 0, prompt_tokens: 1, completion_tokens: 2, gpu_seconds: 0, replica_seconds: {}, updated_at: CREATED }), {
    unique: [{ index: 'usage-hour', key: `${d.value.id}:2026-11-28T11:00:00.000Z` }],
  });
  await store.create('service_account', (id) => ({ ...serviceAccountRecord(id, 'ci'), hint: undefined }), { unique: [{ index: 'service-account-key', key: 'key-ci' }] });
  await store.create('service_account', (id) => ({ id, name: 'ops', role: 'admin', key_hash: 'key-ops', created_at: CREATED }), { unique: [{ index: 'service-account-key', key: 'key-ops' }] });
}

const OWNED: Kind[] = ['deployment', 'token', 'registry_credential', 'certificate', 'usage'];

/** `others`: ids of deployments of other projects, left out of the check. */
async function expectUpgraded(store: Store, others: ReadonlySet<number> = new Set()): Promise<void> {
  const projects = (await store.list('project')).map((p) => p.value);
  expect(projects).toEqual([{ id: expect.any(Number), name: 'default', gpu_quota: null, members: [], created_at: '2026-11-28T12:00:00.000Z', updated_at: '2026-11-28T12:00:00.000Z' }]);
  expect(await store.lookup(PROJECT_NAME_INDEX, 'default')).toEqual({ kind: 'project', id: projects[0]!.id });
  for (const kind of OWNED) {
    const records = (await store.list(kind)).map((r) => r.value as { id: number; project?: string }).filter((r) => kind !== 'deployment' || !others.has(r.id));
    expect(records.length, kind).toBeGreaterThan(0);
    for (const r of records) expect(r.project, kind).toBe('default');
  }
  const accounts = Object.fromEntries((await store.list('service_account')).map((a) => [a.value.name, a.value]));
  expect(accounts.ci).toMatchObject({ role: 'developer', project: 'default', key_hash: 'key-ci' });
  expect(accounts.ops).toMatchObject({ role: 'admin', project: null, key_hash: 'key-ops' });
  // Unique keys are the bare names they were: nothing re-keyed.
  expect(await store.lookup('deployment-name', 'chat')).toMatchObject({ kind: 'deployment' });
  expect(await store.lookup('deployment-name', 'default/chat')).toBeUndefined();
  expect(await store.lookup('token-name', 'chat-endpoint')).toMatchObject({ kind: 'token' });
  expect(await store.lookup('service-account-key', 'key-ci')).toMatchObject({ kind: 'service_account' });
}

describe('upgradeToProjects on a file store', () => {
  let dir: string | undefined;
  let store: FileStore | undefined;
  afterEach(async () => {
    await store?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('moves everything into default once; a second run changes nothing', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-project-upgrade-'));
    store = new FileStore({ dir });
    await store.open();
    await seedBeforeProjects(store);
    // A record of another project (written by a newer process) is never touched.
    const foreign = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), project: 'team-a' }), { unique: [{ index: 'deployment-name', key: 'team-a/chat' }] });

    const first = await upgradeToProjects(store, clock);
    expect(first).toEqual({ createdDefault: true, moved: { deployment: 1, token: 1, registry_credential: 1, certificate: 1, usage: 1 }, accounts: 2 });
    await expectUpgraded(store, new Set([foreign.value.id]));
    expect((await store.get('deployment', foreign.value.id))).toMatchObject({ version: 1, value: { project: 'team-a' } });

    const versions = new Map((await Promise.all(OWNED.map((k) => store!.list(k)))).flat().map((r) => [r.value.id, r.version]));
    const second = await upgradeToProjects(store, clock);
    expect(second).toEqual({ createdDefault: false, moved: { deployment: 0, token: 0, registry_credential: 0, certificate: 0, usage: 0 }, accounts: 0 });
    const after = new Map((await Promise.all(OWNED.map((k) => store!.list(k)))).flat().map((r) => [r.value.id, r.version]));
    expect(after).toEqual(versions);
  });

  it('runs twice at once in one process without a second project or a lost write', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-project-upgrade-'));
    store = new FileStore({ dir });
    await store.open();
    await seedBeforeProjects(store);
    const [a, b] = await Promise.all([upgradeToProjects(store, clock), upgradeToProjects(store, clock)]);
    expect(Number(a.createdDefault) + Number(b.createdDefault)).toBe(1);
    await expectUpgraded(store);
  });
});

describeWithRedis('upgradeToProjects on Redis, two processes at once', () => {
  const prefix = `infergate-test-${randomUUID()}`;
  const stores: RedisStore[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    const redis = new Redis(redisUrlForTests()!);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('makes one default project and moves every record once between them', async () => {
    for (let i = 0; i < 2; i++) {
      const s = new RedisStore({ url: redisUrlForTests()!, prefix });
      await s.open();
      stores.push(s);
    }
    await seedBeforeProjects(stores[0]!);
    const [a, b] = await Promise.all(stores.map((s) => upgradeToProjects(s, clock)));
    expect(Number(a!.createdDefault) + Number(b!.createdDefault)).toBe(1);
    // Each record was written by exactly one of them.
    for (const kind of ['deployment', 'token', 'registry_credential', 'certificate', 'usage'] as const) expect(a!.moved[kind] + b!.moved[kind], kind).toBe(1);
    expect(a!.accounts + b!.accounts).toBe(2);
    await expectUpgraded(stores[1]!);
  });
});
