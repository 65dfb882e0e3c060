// The audit log against a real control API (HTTP on loopback), on the file store and on Redis:
// entries for a create, a PATCH, a delete refused by role (403) and one refused for another
// project (404), an unknown caller (401), each with every field; no secret of a create in any
// entry nor anywhere in the store's files; no route that changes or deletes an entry, and the
// API's store refusing to write one; owners read their project's entries only, developers not
// at all, the admin every project's, with filters and pages newest first; entries written by
// one process read through another on the same Redis; old entries trimmed by the writer.

import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../src/core/clock.js';
import { DEFAULT_CATALOG } from '../src/domain/catalog.js';
import type { AuditRecord } from '../src/domain/records.js';
import { AuditLog } from '../src/control/audit-log.js';
import { indexedStore, RecordIndex } from '../src/control/record-index.js';
import { FileStore } from '../src/store/file-store.js';
import { RedisStore } from '../src/store/redis-store.js';
import type { Store } from '../src/store/store.js';
import { ADMIN_KEY, generalBody, startControl, type TestControl } from './helpers/control.js';
import { addMember } from './helpers/members.js';
import { describeWithRedis, redisUrlForTests } from './helpers/redis.js';

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- test reads fields of many views
}

function caller(url: string) {
  return async (key: string | null, method: string, route: string, opts: { body?: unknown; project?: string; requestId?: string } = {}): Promise<Answer> => {
    const headers: Record<string, string> = {};
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (opts.project) headers['x-infergate-project'] = opts.project;
    if (opts.requestId) headers['x-request-id'] = opts.requestId;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url + route, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
}

/** Every entry the admin reads, newest first, page by page. */
async function allEntries(call: ReturnType<typeof caller>, query = ''): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  let next: string | undefined;
  do {
    const page = await call(ADMIN_KEY, 'GET', `/audit?limit=500${query}${next ? `&continue=${next}` : ''}`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    out.push(...(page.body.items as AuditRecord[]));
    next = page.body.continue;
  } while (next);
  return out;
}

const SECRET_ENV = `secret-env-${randomUUID()}`;
const BEARER = `endpoint-bearer-${randomUUID()}`;
const REGISTRY_PASSWORD = `registry-pw-${randomUUID()}`;
const VAULT_PASSWORD = `vault-pw-${randomUUID()}`;

function auditScenario(name: string, shared: boolean, open: () => Promise<{ store: Store; raw: () => Promise<string>; second?: () => Promise<TestControl>; done: () => Promise<void> }>) {
  describe(name, () => {
    let api: TestControl;
    let call: ReturnType<typeof caller>;
    let raw: () => Promise<string>;
    let second: (() => Promise<TestControl>) | undefined;
    let done: () => Promise<void>;
    const keys: Record<string, string> = {};
    const secretsShown: string[] = [];
    let started = 0;

    beforeAll(async () => {
      const opened = await open();
      ({ raw, second, done } = opened);
      api = await startControl({ store: opened.store });
      call = caller(api.url);
      keys.ownerA = await addMember(opened.store, 'owner-a', 'team-a', 'owner');
      keys.devA = await addMember(opened.store, 'dev-a', 'team-a', 'developer');
      keys.viewerA = await addMember(opened.store, 'viewer-a', 'team-a', 'viewer');
      keys.ownerB = await addMember(opened.store, 'owner-b', 'team-b', 'owner');
      started = Date.now();
    });
    afterAll(async () => {
      await api?.close();
      await done?.();
    });

    let tokenId = 0;

    it('a create and a PATCH: one entry each, with every field', async () => {
      const created = await call(keys.devA!, 'POST', '/vault/tokens', { body: { name: 'chat-clients' }, requestId: 'req-create-1' });
      expect(created.status).toBe(201);
      // The entry was in the store before the answer left: a crash after a 2xx never loses it.
      expect(await raw()).toContain('req-create-1');
      tokenId = created.body.id;
      secretsShown.push(created.body.token);
      const patched = await call(keys.devA!, 'PATCH', `/vault/tokens/${tokenId}`, { body: { max_priority: 'standard' }, requestId: 'req-patch-1' });
      expect(patched.status).toBe(200);

      const entries = await allEntries(call);
      const create = entries.find((e) => e.request_id === 'req-create-1');
      expect(create).toEqual({
        id: expect.any(Number),
        time: expect.any(String),
        request_id: 'req-create-1',
        actor: { kind: 'service_account', id: expect.any(Number), name: 'dev-a' },
        role: 'developer',
        project: 'team-a',
        action: 'token.manage',
        route: 'POST /vault/tokens',
        target: { kind: 'token', id: tokenId, name: 'chat-clients' },
        result: 'allowed',
        status: 201,
        source_address: '127.0.0.1',
      });
      expect(Date.parse(create!.time)).toBeGreaterThanOrEqual(started - 1000);
      expect(Date.parse(create!.time)).toBeLessThanOrEqual(Date.now());
      const patch = entries.find((e) => e.request_id === 'req-patch-1');
      expect(patch).toMatchObject({ action: 'token.manage', route: 'PATCH /vault/tokens/{id}', target: { kind: 'token', id: tokenId, name: 'chat-clients' }, result: 'allowed', status: 200, role: 'developer', project: 'team-a' });
      // Newest first.
      expect(entries.indexOf(patch!)).toBeLessThan(entries.indexOf(create!));
      // Plain reads are not audited.
      await call(keys.devA!, 'GET', '/vault/tokens', { requestId: 'req-read-1' });
      expect((await allEntries(call)).some((e) => e.request_id === 'req-read-1')).toBe(false);
    });

    it('a delete refused by role (403) and one refused for another project (404) are entries marked refused; a plain 404 is failed', async () => {
      const byViewer = await call(keys.viewerA!, 'DELETE', `/vault/tokens/${tokenId}`, { requestId: 'req-viewer-delete' });
      expect(byViewer.status).toBe(403);
      const foreign = await call(keys.ownerB!, 'DELETE', `/vault/tokens/${tokenId}`, { project: 'team-a', requestId: 'req-foreign-delete' });
      expect(foreign.status).toBe(404);
      expect(foreign.body.error.message).toBe('no project named team-a');
      // Another project's id from the caller's own project: the answer of a missing id, an entry marked refused.
      const foreignId = await call(keys.ownerB!, 'DELETE', `/vault/tokens/${tokenId}`, { requestId: 'req-foreign-id-delete' });
      expect(foreignId.status).toBe(404);
      expect(foreignId.body.error.message).toBe(`token ${tokenId} does not exist`);
      const missing = await call(keys.devA!, 'DELETE', '/vault/tokens/99999', { requestId: 'req-missing-delete' });
      expect(missing.status).toBe(404);
      const anonymous = await call(null, 'DELETE', `/vault/tokens/${tokenId}`, { requestId: 'req-anonymous-delete' });
      expect(anonymous.status).toBe(401);

      const entries = await allEntries(call);
      const of = (id: string) => entries.find((e) => e.request_id === id);
      expect(of('req-viewer-delete')).toEqual({
        id: expect.any(Number),
        time: expect.any(String),
        request_id: 'req-viewer-delete',
        actor: { kind: 'service_account', id: expect.any(Number), name: 'viewer-a' },
        role: 'viewer',
        project: 'team-a',
        action: 'token.manage',
        route: 'DELETE /vault/tokens/{id}',
        target: { kind: 'token', id: tokenId, name: null },
        result: 'refused',
        status: 403,
        source_address: '127.0.0.1',
      });
      // The project named was not the caller's to act in: the entry names none, as the answer did.
      expect(of('req-foreign-delete')).toMatchObject({ actor: { name: 'owner-b' }, role: null, project: null, action: 'token.manage', target: { kind: 'token', id: tokenId }, result: 'refused', status: 404 });
      expect(of('req-foreign-id-delete')).toMatchObject({ actor: { name: 'owner-b' }, role: 'owner', project: 'team-b', action: 'token.manage', target: { kind: 'token', id: tokenId }, result: 'refused', status: 404 });
      expect(of('req-missing-delete')).toMatchObject({ actor: { name: 'dev-a' }, project: 'team-a', target: { kind: 'token', id: 99999 }, result: 'failed', status: 404 });
      expect(of('req-anonymous-delete')).toMatchObject({ actor: { kind: 'anonymous', id: null, name: null }, role: null, project: null, result: 'refused', status: 401 });
      // The token is still there.
      expect((await call(keys.devA!, 'GET', `/vault/tokens/${tokenId}`)).status).toBe(200);
    });

    it('creates with secret_env, registry_password, endpoint_bearer_token and a vault password leave no secret in any entry nor in the store', async () => {
      const d = await call(keys.devA!, 'POST', '/deployments/general', {
        body: { ...generalBody('secretive', BEARER), secret_env: { API_SECRET: SECRET_ENV }, registry_username: '$oauthtoken', registry_password: REGISTRY_PASSWORD },
      });
      expect(d.status, JSON.stringify(d.body)).toBe(201);
      const c = await call(keys.devA!, 'POST', '/vault/registry-credentials', { body: { name: 'team-reg', username: 'team', password: VAULT_PASSWORD, registry: 'registry.example.com' } });
      expect(c.status, JSON.stringify(c.body)).toBe(201);
      const sa = await call(ADMIN_KEY, 'POST', '/service-accounts', { body: { name: 'ci-bot' } });
      expect(sa.status).toBe(201);
      secretsShown.push(sa.body.key);
      // A refused create carries its secrets too.
      const refused = await call(keys.viewerA!, 'POST', '/deployments/general', { body: { ...generalBody('nope', BEARER), secret_env: { API_SECRET: SECRET_ENV } } });
      expect(refused.status).toBe(403);

      const entries = await allEntries(call);
      expect(entries.find((e) => e.route === 'POST /deployments/general' && e.result === 'allowed')).toMatchObject({ target: { kind: 'deployment', id: d.body.id, name: 'secretive' } });
      expect(entries.find((e) => e.route === 'POST /service-accounts')).toMatchObject({ role: 'admin', project: 'default', target: { kind: 'service_account', id: sa.body.id, name: 'ci-bot' } });
      const text = JSON.stringify(entries);
      const stored = await raw();
      for (const secret of [SECRET_ENV, BEARER, REGISTRY_PASSWORD, VAULT_PASSWORD, ...secretsShown]) {
        expect(secret.length).toBeGreaterThan(8);
        expect(text).not.toContain(secret);
        expect(stored).not.toContain(secret);
      }
      // The raw store does hold the entries: the search above looked where they are.
      expect(stored).toContain('req-viewer-delete');
    });

    it('no route changes or deletes an entry, and the API\'s store refuses to write one', async () => {
      const before = await allEntries(call);
      const id = before[0]!.id;
      for (const method of ['PUT', 'PATCH', 'DELETE', 'POST']) {
        for (const route of ['/audit', `/audit/${id}`]) {
          const res = await call(ADMIN_KEY, method, route, { body: method === 'DELETE' ? undefined : { result: 'allowed' } });
          expect(res.status, `${method} ${route}`).toBe(404);
        }
      }
      const after = await allEntries(call);
      // The attempts themselves hit no route (plain 404s, not audited): the log is as it was.
      expect(after.map((e) => e.id)).toEqual(before.map((e) => e.id));
      expect(after.find((e) => e.id === id)).toEqual(before[0]);

      const view = indexedStore(api.store, new RecordIndex(api.store, DEFAULT_CATALOG));
      await expect(view.create('audit', (n) => ({ ...before[0]!, id: n }))).rejects.toThrow(/audit log alone/);
      await expect(view.update('audit', id, 1, { ...before[0]!, result: 'allowed' })).rejects.toThrow(/audit log alone/);
      await expect(view.delete('audit', id)).rejects.toThrow(/audit log alone/);
      expect((await api.store.get('audit', id))?.value).toEqual(before[0]);
    });

    it('an owner reads their project\'s entries only; a developer is refused; the admin reads all, filtered and paged', async () => {
      const mine = await call(keys.ownerA!, 'GET', '/audit?limit=500');
      expect(mine.status).toBe(200);
      const items = mine.body.items as AuditRecord[];
      expect(items.length).toBeGreaterThan(3);
      expect(new Set(items.map((e) => e.project))).toEqual(new Set(['team-a']));

      const other = await call(keys.ownerB!, 'GET', '/audit?limit=500');
      expect(other.status).toBe(200);
      expect((other.body.items as AuditRecord[]).every((e) => e.project === 'team-b')).toBe(true);
      expect((other.body.items as AuditRecord[]).some((e) => e.actor.name === 'dev-a')).toBe(false);
      expect((await call(keys.ownerB!, 'GET', '/audit?project=team-a')).status).toBe(404);
      expect((await call(keys.ownerB!, 'GET', '/audit', { project: 'team-a' })).status).toBe(404);

      const dev = await call(keys.devA!, 'GET', '/audit', { requestId: 'req-dev-audit' });
      expect(dev.status).toBe(403);
      expect(dev.body.error.message).toMatch(/only owners may read the project's audit log; you are a developer/);
      expect((await call(keys.viewerA!, 'GET', '/audit')).status).toBe(403);
      // That refusal is itself an entry.
      expect((await allEntries(call)).find((e) => e.request_id === 'req-dev-audit')).toMatchObject({ action: 'audit.read', route: 'GET /audit', result: 'refused', status: 403, target: { kind: 'audit', id: null } });

      const all = await allEntries(call);
      // team-b: owner-b's own refused look at team-a's log (the request acted in team-b).
      expect(new Set(all.map((e) => e.project))).toEqual(new Set(['team-a', 'team-b', null, 'default']));
      const ids = all.map((e) => e.id);
      expect(ids).toEqual([...ids].sort((a, b) => b - a));
      // The admin's view of team-a: what its owner read, and the refusals made since.
      expect((await allEntries(call, '&project=team-a')).map((e) => e.id).filter((id) => id <= items[0]!.id)).toEqual(items.map((e) => e.id));

      const refused = await allEntries(call, '&result=refused');
      expect(refused.length).toBeGreaterThanOrEqual(5);
      expect(refused.every((e) => e.result === 'refused')).toBe(true);
      const byDev = await allEntries(call, '&actor=dev-a&action=token.manage');
      expect(byDev.map((e) => e.request_id)).toEqual(['req-missing-delete', 'req-patch-1', 'req-create-1']);
      const at = Date.parse(byDev[1]!.time);
      const window = await allEntries(call, `&actor=dev-a&since=${new Date(at).toISOString()}&until=${new Date(at).toISOString()}`);
      expect(window.map((e) => e.request_id)).toContain('req-patch-1');
      expect(window.every((e) => Date.parse(e.time) === at)).toBe(true);
      expect((await call(ADMIN_KEY, 'GET', '/audit?since=yesterday')).body.error).toMatchObject({ code: 'invalid_field', field: 'since' });

      // Pages of two, newest first: every entry once.
      const paged: number[] = [];
      let next: string | undefined;
      do {
        const page = await call(ADMIN_KEY, 'GET', `/audit?limit=2${next ? `&continue=${next}` : ''}`);
        expect(page.body.items.length).toBeLessThanOrEqual(2);
        if (page.body.continue) expect(page.body.remaining_item_count).toBeGreaterThan(0);
        paged.push(...page.body.items.map((e: AuditRecord) => e.id));
        next = page.body.continue;
      } while (next);
      expect(paged.length).toBeGreaterThanOrEqual(all.length);
      expect(new Set(paged).size).toBe(paged.length);
      expect(paged.slice(0, all.length)).toEqual(all.map((e) => e.id).slice(0, all.length));
    });

    it.runIf(shared)('an entry written through one control API is read through another on the same store', async () => {
      const other = await second!();
      try {
        const otherCall = caller(other.url);
        // The second process loads its copy, then follows the feed.
        expect((await otherCall(ADMIN_KEY, 'GET', '/audit?limit=1')).status).toBe(200);
        expect((await call(keys.devA!, 'POST', '/vault/tokens', { body: { name: 'from-first' }, requestId: 'req-cross-process' })).status).toBe(201);
        await expect
          .poll(async () => ((await otherCall(keys.ownerA!, 'GET', '/audit?actor=dev-a&limit=5')).body.items as AuditRecord[]).map((e) => e.request_id))
          .toContain('req-cross-process');
      } finally {
        await other.close();
      }
    });
  });
}

auditScenario('audit log on the file store', false, async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-audit-'));
  const store = new FileStore({ dir });
  await store.open();
  const raw = async () => {
    const names = await readdir(dir);
    const texts = await Promise.all(names.map((n) => readFile(path.join(dir, n), 'utf8').catch(() => '')));
    return texts.join('\n');
  };
  return { store, raw, done: () => rm(dir, { recursive: true, force: true }) };
});

describeWithRedis('audit log on Redis', () => {
  const prefix = `infergate-audit-${randomUUID()}`;
  const stores: RedisStore[] = [];
  const open = async () => {
    const s = new RedisStore({ url: redisUrlForTests()!, prefix });
    await s.open();
    stores.push(s);
    return s;
  };
  auditScenario('on one Redis', true, async () => {
    const store = await open();
    const raw = async () => {
      const { Redis } = await import('ioredis');
      const client = new Redis(redisUrlForTests()!);
      try {
        const keys = await client.keys(`${prefix}:*`);
        const parts: string[] = [];
        for (const key of keys) {
          const type = await client.type(key);
          if (type === 'hash') parts.push(JSON.stringify(await client.hgetall(key)));
          else if (type === 'string') parts.push((await client.get(key)) ?? '');
          else if (type === 'list') parts.push(JSON.stringify(await client.lrange(key, 0, -1)));
        }
        return parts.join('\n');
      } finally {
        client.disconnect();
      }
    };
    return {
      store,
      raw,
      second: async () => startControl({ store: await open() }),
      done: async () => {
        const { Redis } = await import('ioredis');
        const client = new Redis(redisUrlForTests()!);
        const keys = await client.keys(`${prefix}:*`);
        if (keys.length) await client.del(...keys);
        client.disconnect();
      },
    };
  });
});

describe('audit log retention', () => {
  it('keeps the newest entries of each project, trimmed by the writer', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-audit-retain-'));
    const store = new FileStore({ dir });
    await store.open();
    const log = new AuditLog(store, systemClock, undefined, 3);
    try {
      const entry = (project: string | null, n: number): Omit<AuditRecord, 'id'> => ({
        time: new Date().toISOString(),
        request_id: `r${n}`,
        actor: { kind: 'service_account', id: 1, name: 'a' },
        role: 'owner',
        project,
        action: 'token.manage',
        route: 'POST /vault/tokens',
        target: { kind: 'token', id: n, name: null },
        result: 'allowed',
        status: 201,
        source_address: '127.0.0.1',
      });
      for (let n = 1; n <= 6; n++) await log.append(entry('p', n));
      await log.append(entry('q', 7));
      await log.close();
      const kept = (await store.list('audit')).map((r) => r.value.request_id);
      expect(kept).toEqual(['r4', 'r5', 'r6', 'r7']);
      const page = await new AuditLog(store, systemClock).query({ project: 'p' });
      expect(page.items.map((e) => e.request_id)).toEqual(['r6', 'r5', 'r4']);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
