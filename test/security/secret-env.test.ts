// Secret environment variables, end to end: the vendor-packaged container's registry key, given
// as its recipe says (env REGISTRY_API_KEY=<key>) by a member account, is sealed at rest and
// never returned — not by the deployment, the lists, the revisions, a clone's answer or a
// refusal — while the replica still gets it (the reference engine's nim flavor is ready only
// with it). Records written before secret variables existed, with the key in plain env, are
// sealed when the control API starts, and the store compacted so no older line keeps them.

import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileStore } from '../../src/store/file-store.js';
import { deploymentRecord } from '../../src/store/store.contract.js';
import { generalSpec } from '../helpers/spec-fixtures.js';
import { startControl, type TestControl } from '../helpers/control.js';
import { usePlatform, type Platform } from '../helpers/platform.js';

const REGISTRY_KEY = 'nvapi-registry-key-5c3f9a0e7d21b4';

/** Every file the file store keeps its state in (snapshot, journals), as one text. */
async function stateText(dataDir: string): Promise<string> {
  const files = (await readdir(dataDir)).filter((n) => n.startsWith('state-')).sort();
  return (await Promise.all(files.map((f) => readFile(path.join(dataDir, f), 'utf8')))).join('');
}
const TOKEN = 'tok-secret-env-0123456789';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON answer read loosely
type Json = any;

describe('the vendor container’s registry key, given in env as the recipe says', { timeout: 60_000 }, () => {
  let platform: Platform;
  let memberKey = '';
  usePlatform('secret-env', [], (p) => (platform = p));

  /** Every answer the member got, as text: none may hold the key. */
  const answers: string[] = [];
  async function member(method: string, route: string, body?: unknown): Promise<{ status: number; body: Json }> {
    const res = await fetch(platform.apiUrl + route, {
      method,
      headers: { authorization: `Bearer ${memberKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    answers.push(text);
    return { status: res.status, body: JSON.parse(text) as Json };
  }

  let id = 0;
  beforeAll(async () => {
    const account = await platform.call('POST', '/service-accounts', { name: 'vendor-member', role: 'member' });
    expect(account.status).toBe(201);
    memberKey = account.body.key;
    const created = await member('POST', '/deployments/general', {
      name: 'vendor',
      cluster_id: 1,
      hardware_instance_id: 1,
      preset: 'nim',
      registry_password: REGISTRY_KEY,
      env: { REGISTRY_API_KEY: REGISTRY_KEY },
      endpoint_bearer_token: TOKEN,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    id = created.body.id;
  });

  it('reaches the replica: the nim flavor loads its model and serves', async () => {
    const ready = await platform.waitFor(id, (d) => d.status === 'ready', 30_000, 'vendor ready');
    expect(ready.serving_revision).toBe(1);
    const answer = await platform.client('vendor', TOKEN).chat.completions.create({ model: 'meta/llama-3.1-8b-instruct', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    expect(answer.choices[0]?.message.content).toBeTruthy();
  });

  it('is listed by name only in the deployment, the list, the revisions and a clone’s answer', async () => {
    const detail = await member('GET', `/deployments/general/${id}`);
    expect(detail.body).toMatchObject({ env: {}, secret_env: ['REGISTRY_API_KEY'], has_registry_password: true });
    const listed = (await member('GET', '/deployments/general')).body.items.find((d: Json) => d.id === id);
    expect(listed).toMatchObject({ env: {}, secret_env: ['REGISTRY_API_KEY'] });
    await member('GET', '/deployments/orchestrated');
    const revisions = await member('GET', `/deployments/general/${id}/revisions`);
    expect(revisions.body.items.map((r: Json) => r.spec.secret_env)).toEqual([['REGISTRY_API_KEY']]);
    for (const r of revisions.body.items) expect((await member('GET', `/deployments/general/${id}/revisions/${r.revision}`)).body.spec.secret_env).toEqual(['REGISTRY_API_KEY']);
    const clone = await member('POST', `/deployments/general/${id}/clone`, { name: 'vendor-copy', endpoint_bearer_token: TOKEN });
    expect(clone.status, JSON.stringify(clone.body)).toBe(201);
    expect(clone.body).toMatchObject({ env: {}, secret_env: ['REGISTRY_API_KEY'] });
    // Refusals name the field, never the value: an edit with the key and a bad name beside it.
    const refused = await member('PATCH', `/deployments/general/${id}`, { env: { REGISTRY_API_KEY: REGISTRY_KEY, 'BAD-NAME': 'x' } });
    expect(refused.status).toBe(400);
    const twice = await member('PATCH', `/deployments/general/${id}`, { env: { REGISTRY_API_KEY: REGISTRY_KEY }, secret_env: { REGISTRY_API_KEY: REGISTRY_KEY } });
    expect(twice.body.error).toMatchObject({ field: 'secret_env.REGISTRY_API_KEY' });
    expect(answers.length).toBeGreaterThanOrEqual(8);
    for (const text of answers) expect(text).not.toContain(REGISTRY_KEY);
  });

  it('is sealed in the store’s state file, and in no log line', async () => {
    const state = await stateText(platform.dataDir);
    expect(state).toContain('"REGISTRY_API_KEY"'); // the name, with its sealed value
    expect(state).not.toContain(REGISTRY_KEY);
    const logs = await platform.call('GET', `/deployments/general/${id}/logs?tail=500`);
    expect(logs.status).toBe(200);
    expect(JSON.stringify(logs.body)).not.toContain(REGISTRY_KEY);
    expect(platform.serve.output()).not.toContain(REGISTRY_KEY);
  });
});

describe('records from before secret variables, with the key in plain env', () => {
  let dir: string;
  let api: TestControl | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-legacy-env-'));
    const store = new FileStore({ dir });
    await store.open();
    const base = deploymentRecord(0, 'legacy');
    const spec = generalSpec({ env: { MODE: 'fast', REGISTRY_API_KEY: REGISTRY_KEY } });
    const older = generalSpec({ tag: 'v1', env: { REGISTRY_API_KEY: REGISTRY_KEY } });
    await store.create('deployment', (id) => ({
      ...base,
      id,
      spec,
      revision: 2,
      revisions: [
        { ...base.revisions[0]!, status: 'retired' as const, spec: older },
        { ...base.revisions[0]!, revision: 2, reason: 'update' as const, spec },
      ],
    }));
    await store.close();
    expect(await stateText(dir)).toContain(REGISTRY_KEY);
  });
  afterAll(async () => {
    await api?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('are sealed when the control API starts: no plaintext on disk, nothing in an answer, the revision unchanged', async () => {
    api = await startControl({ store: new FileStore({ dir }) });
    expect(await stateText(dir)).not.toContain(REGISTRY_KEY);
    const d = (await api.call('GET', '/deployments/general')).body.items[0];
    expect(d).toMatchObject({ name: 'legacy', revision: 2, env: { MODE: 'fast' }, secret_env: ['REGISTRY_API_KEY'] });
    const history = await api.call('GET', `/deployments/general/${d.id}/revisions`);
    expect(history.body.items.map((r: Json) => [r.revision, r.spec.env, r.spec.secret_env])).toEqual([
      [1, {}, ['REGISTRY_API_KEY']],
      [2, { MODE: 'fast' }, ['REGISTRY_API_KEY']],
    ]);
    const stored = (await api.store.get('deployment', d.id))!.value;
    // The current spec is still the very spec of its revision.
    expect(stored.spec).toEqual(stored.revisions[1]!.spec);
    expect(JSON.stringify([d, history.body])).not.toContain(REGISTRY_KEY);
  });
});
