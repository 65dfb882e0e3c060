// The control API's lists, paged as Kubernetes pages them (docs/control-api.md, "Paged
// lists"): limit and continue on every collection, pages in id order, tokens refused when
// they were not made for the list, pages that stay stable while deployments come and go, a
// deployment found by name — and creates that read no list of records to check names,
// credentials and quota.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCatalog } from '../src/domain/catalog.js';
import type { Kind } from '../src/domain/records.js';
import { FileStore } from '../src/store/file-store.js';
import type { Store } from '../src/store/store.js';
import { generalBody, startControl, type TestControl } from './helpers/control.js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

let api: TestControl;
let dir: string;
const lists: Kind[] = [];

const catalog = parseCatalog({ clusters: [{ id: 1, name: 'big', orchestration_enabled: true, hardware: [{ id: 1, name: 'g1', gpus_per_instance: 1, instances: 1000 }] }] });
const body = (name: string) => ({ ...generalBody(name, `tok-${name}-0123456789abcdef`), min_replicas: 0, max_replicas: 1 });
const orchestrated = (name: string) => ({
  name,
  cluster_id: 1,
  model: 'org/model',
  serving_mode: 'aggregated',
  hardware_instance_id: 1,
  min_replicas: 1,
  max_replicas: 1,
  endpoint_bearer_token: `tok-${name}-0123456789abcdef`,
});

/** The file store, counting each list() by kind. */
function countingLists(inner: FileStore): Store {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'list') return (kind: Kind) => (lists.push(kind), target.list(kind));
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

interface PageAnswer {
  items: { id: number; name: string }[];
  continue?: string;
  remaining_item_count?: number;
}

async function page(route: string): Promise<PageAnswer> {
  const res = await api.call('GET', route);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as PageAnswer;
}

/** Every page of a list, `limit` at a time; `between` runs after each page. */
async function walk(route: string, limit: number, between: () => Promise<void> = async () => {}): Promise<PageAnswer[]> {
  const pages: PageAnswer[] = [];
  const sep = route.includes('?') ? '&' : '?';
  let next: string | undefined;
  do {
    const p = await page(`${route}${sep}limit=${limit}${next ? `&continue=${encodeURIComponent(next)}` : ''}`);
    pages.push(p);
    next = p.continue;
    await between();
  } while (next !== undefined);
  return pages;
}

const ids = (pages: PageAnswer[]) => pages.flatMap((p) => p.items.map((d) => d.id));

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-lists-'));
  const store = new FileStore({ dir });
  api = await startControl({ catalog, gpuQuota: 100_000, store: countingLists(store) });
  for (let i = 0; i < 23; i++) {
    const res = await api.call('POST', '/deployments/general', body(`p-${String(i).padStart(2, '0')}`));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  for (const name of ['o-1', 'o-2']) {
    const res = await api.call('POST', '/deployments/orchestrated', orchestrated(name));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('paged lists', () => {
  it('page a family’s deployments in id order, with continue and remaining_item_count until the last page', async () => {
    const all = await page('/deployments/general');
    expect(all.items).toHaveLength(23);
    expect(all.continue).toBeUndefined();
    expect(all.remaining_item_count).toBeUndefined();

    const pages = await walk('/deployments/general', 10);
    expect(pages.map((p) => p.items.length)).toEqual([10, 10, 3]);
    expect(pages.map((p) => p.remaining_item_count)).toEqual([13, 3, undefined]);
    expect(pages[2]!.continue).toBeUndefined();
    expect(ids(pages)).toEqual(all.items.map((d) => d.id).sort((a, b) => a - b));
    expect(pages[0]!.items[0]).toEqual(all.items[0]); // a page's items are the list's items

    const other = await walk('/deployments/orchestrated', 1);
    expect(other.flatMap((p) => p.items.map((d) => d.name))).toEqual(['o-1', 'o-2']);
  });

  it('refuse a limit outside 1–500, and a continue token edited, made up or made for another list, naming the parameter', async () => {
    for (const limit of ['0', '501', 'ten', '-1', '1.5']) {
      const res = await api.call('GET', `/deployments/general?limit=${limit}`);
      expect(res.status, limit).toBe(400);
      expect(res.body.error.field).toBe('limit');
    }
    const token = (await page('/deployments/general?limit=5')).continue!;
    const edited = Buffer.from(Buffer.from(token, 'base64url').toString().replace(/\.(\d+)\./, (_, n: string) => `.${Number(n) + 1}.`)).toString('base64url');
    const ofTokens = (await page('/vault/tokens?limit=1')).continue!;
    const ofOrchestrated = (await page('/deployments/orchestrated?limit=1')).continue!;
    for (const bad of [edited, token.slice(0, -3), 'garbage!', 'bm90IGEgdG9rZW4', ofTokens, ofOrchestrated]) {
      const res = await api.call('GET', `/deployments/general?limit=5&continue=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_field', field: 'continue' });
    }
  });

  it('stay stable while deployments are created and deleted between pages: each once, in order, new ones at the end or not at all', async () => {
    const before = (await page('/deployments/general')).items.map((d) => d.id);
    const victim = before[before.length - 2]!; // deleted before its page is read
    let step = 0;
    const created: number[] = [];
    const pages = await walk('/deployments/general', 4, async () => {
      step++;
      const made = await api.call('POST', '/deployments/general', body(`during-${step}`));
      expect(made.status).toBe(201);
      created.push(made.body.id as number);
      if (step === 1) expect((await api.call('DELETE', `/deployments/general/${victim}`)).status).toBe(202);
    });
    const seen = ids(pages);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(seen.filter((id) => before.includes(id))).toEqual(before.filter((id) => id !== victim));
    const late = seen.filter((id) => !before.includes(id));
    expect(late.every((id) => created.includes(id))).toBe(true);
    expect(late.length).toBeGreaterThan(0);
    // Everything created is there afterwards.
    const after = (await page('/deployments/general')).items.map((d) => d.id);
    expect(created.every((id) => after.includes(id))).toBe(true);
    for (const id of created) expect((await api.call('DELETE', `/deployments/general/${id}`)).status).toBe(202);
  });

  it('find one deployment by name, in its own family only', async () => {
    expect((await page('/deployments/general?name=p-05')).items.map((d) => d.name)).toEqual(['p-05']);
    expect((await page('/deployments/general?name=nobody')).items).toEqual([]);
    expect((await page('/deployments/general?name=o-1')).items).toEqual([]);
    expect((await page('/deployments/orchestrated?name=o-1')).items.map((d) => d.name)).toEqual(['o-1']);
  });

  it('page tokens, certificates, registry credentials and service accounts the same way', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await api.call('POST', '/certificates', { name: `paged-cert-${i}` })).status).toBe(201);
      expect((await api.call('POST', '/service-accounts', { name: `paged-bot-${i}` })).status).toBe(201);
      expect((await api.call('POST', '/vault/registry-credentials', { name: `paged-reg-${i}`, username: 'u', password: `pw-${i}-0123456789`, registry: 'registry.example.com' })).status).toBe(201);
    }
    for (const route of ['/vault/tokens', '/certificates', '/vault/registry-credentials', '/service-accounts']) {
      const all = await page(route);
      expect(all.continue).toBeUndefined();
      const pages = await walk(route, 2);
      expect(pages.length, route).toBeGreaterThan(1);
      expect(pages.flatMap((p) => p.items), route).toEqual(all.items);
      const bad = await api.call('GET', `${route}?limit=2&continue=${encodeURIComponent((await page('/deployments/general?limit=1')).continue!)}`);
      expect(bad.body.error?.field, route).toBe('continue');
    }
    // A token page still names the deployments bound to each token.
    const tokens = (await page('/vault/tokens?limit=3')).items as unknown as { deployments: number[] }[];
    expect(tokens.every((t) => t.deployments.length === 1)).toBe(true);
  });

  it('are described in the OpenAPI document', async () => {
    const doc = (await api.call('GET', '/openapi.json', undefined, null)).body;
    for (const route of ['/deployments/general', '/deployments/orchestrated', '/vault/tokens', '/certificates', '/vault/registry-credentials', '/service-accounts']) {
      const names = (doc.paths[route].get.parameters as { name: string; in: string }[]).filter((p) => p.in === 'query').map((p) => p.name);
      expect(names, route).toEqual(expect.arrayContaining(['limit', 'continue']));
      expect(Object.keys(doc.paths[route].get.responses['200'].content['application/json'].schema.properties), route).toEqual(
        expect.arrayContaining(['items', 'continue', 'remaining_item_count']),
      );
    }
  });
});

describe('creates', () => {
  it('read no list of deployments, tokens, certificates, accounts or registry credentials to check names, credentials and quota', async () => {
    await api.call('POST', '/deployments/general', body('warm-up'));
    lists.length = 0;
    for (let i = 0; i < 5; i++) expect((await api.call('POST', '/deployments/general', body(`counted-${i}`))).status).toBe(201);
    const taken = await api.call('POST', '/deployments/general', body('counted-0'));
    expect(taken.status).toBe(409);
    expect(lists.filter((kind) => kind !== 'replica')).toEqual([]);
  });
});
