// Every route of the control API (each of GET /openapi.json, the terminal's WebSocket and the
// console's files) called by the platform admin, an owner, a developer and a viewer of team-a,
// and team-b's owner aiming at team-a's records (by their ids, and by naming team-a in
// X-Infergate-Project). The answer expected is derived from the one rule table
// (domain/access.ts: ROUTE_RULES and `may`), never from a second list here:
// - allowed: no refusal by policy (no 401, no 403, no 404 saying the record or project does
//   not exist); a 400, 409 or 422 for the dummy body, or a 404 for a revision or member that is
//   not there, is an allowed call;
// - a role that may not: 403 `forbidden`;
// - another project's record or project: 404, as if it did not exist.
// A route without a rule, or a rule whose route is gone, fails here (and a route without a
// rule already fails at start-up).

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG } from '../../src/domain/catalog.js';
import { may, ROUTE_RULES, type Action, type ProjectRole, type RouteRule } from '../../src/domain/access.js';
import type { ApiResponse } from '../helpers/admin-api.js';
import { generalBody, startControl, type TestControl } from '../helpers/control.js';
import { A, callAs, setUpTwoProjects, type CallerName, type TwoProjects } from '../helpers/projects.js';
import { openTty } from '../helpers/terminal.js';

/** Routes in the table that other modules register (signing in, the audit log): checked only when registered. */
const REGISTERED_BY_OTHER_MODULES = (route: string) => / \/auth\//.test(route) || / \/audit/.test(route);
/** Signing in is its own module's to test: its routes take no caller of this matrix. */
const WALKED = (route: string, rule: RouteRule) => rule !== 'auth' && !/ \/auth\//.test(route);

const CALLERS: ReadonlyArray<{ name: CallerName; admin: boolean; role: ProjectRole | null; foreign: boolean }> = [
  { name: 'admin', admin: true, role: null, foreign: false },
  { name: 'ownerA', admin: false, role: 'owner', foreign: false },
  { name: 'developerA', admin: false, role: 'developer', foreign: false },
  { name: 'viewerA', admin: false, role: 'viewer', foreign: false },
  // team-b's owner: acts in team-b (its home project) with team-a's ids and project name.
  { name: 'ownerB', admin: false, role: 'owner', foreign: true },
];

type Outcome = 'allowed' | 'forbidden' | 'not_found';

/** Actions on the catalog and on oneself are not a project's records: the same for every project. */
const projectScoped = (action: Action) => action !== 'catalog.read' && action !== 'self';

function expected(route: string, rule: RouteRule, caller: (typeof CALLERS)[number]): Outcome {
  if (rule === 'public' || rule === 'auth') return 'allowed';
  if (caller.foreign) {
    if (route.includes('{project}')) return 'not_found';
    if (!may(caller.role, false, rule)) return 'forbidden';
    if (route.includes('{id}') && projectScoped(rule)) return 'not_found';
    return 'allowed';
  }
  return may(caller.role, caller.admin, rule) ? 'allowed' : 'forbidden';
}

const POLICY_NOT_FOUND = /does not exist|no project named/;

function check(route: string, who: string, want: Outcome, res: { status: number; body: unknown }): void {
  const error = (res.body as { error?: { code?: string; message?: string } } | undefined)?.error;
  const what = `${route} as ${who}: ${res.status} ${JSON.stringify(res.body)?.slice(0, 300)}`;
  if (want === 'allowed') {
    expect([401, 403], what).not.toContain(res.status);
    if (res.status === 404) expect(error?.message ?? '', what).not.toMatch(POLICY_NOT_FOUND);
  } else if (want === 'forbidden') {
    expect(res.status, what).toBe(403);
    expect(error?.code, what).toBe('forbidden');
  } else {
    expect(res.status, what).toBe(404);
    expect(error?.code, what).toBe('not_found');
    expect(error?.message ?? '', what).toMatch(POLICY_NOT_FOUND);
  }
}

let api: TestControl;
let p: TwoProjects;
let root: string;
let presetId: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-matrix-'));
  const consoleDir = path.join(root, 'console');
  await mkdir(path.join(consoleDir, 'assets'), { recursive: true });
  await writeFile(path.join(consoleDir, 'index.html'), '<!doctype html><html></html>');
  await writeFile(path.join(consoleDir, 'assets', 'index-abc123.js'), 'export {};\n');
  // Room for the records made along the way (paused ones keep their reservation).
  const catalog = { ...DEFAULT_CATALOG, clusters: DEFAULT_CATALOG.clusters.map((c) => ({ ...c, hardware: c.hardware.map((h) => ({ ...h, instances: 1000 })) })) };
  api = await startControl({ consoleDir, catalog, gpuQuota: 100_000 });
  p = await setUpTwoProjects(api);
  presetId = (await p.call('admin', 'GET', '/presets')).body.items[0].id;
});
afterAll(async () => {
  await api?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** `METHOD /path` of every route the OpenAPI document lists. */
async function documented(): Promise<string[]> {
  const doc = (await p.call('admin', 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(doc.paths).flatMap(([route, methods]) =>
    Object.keys(methods)
      .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
      .map((m) => `${m.toUpperCase()} ${route}`),
  );
}

const fastifyUrl = (route: string) => route.replace(/\{([A-Za-z_]+)\}/g, ':$1');
const registered = (key: string) => {
  const [method, route] = key.split(' ') as [string, string];
  return api.app.hasRoute({ method: method as 'GET', url: fastifyUrl(route) });
};

/** A record of team-a made now by its developer (or owner), for a call that would use one up. */
async function fresh(route: string): Promise<number> {
  const n = Math.random().toString(36).slice(2, 8);
  const make = async (who: CallerName, url: string, body: unknown) => {
    const res = await p.call(who, 'POST', url, body);
    expect(res.status, `${url}: ${JSON.stringify(res.body)}`).toBe(201);
    return res.body.id as number;
  };
  if (route.startsWith('/deployments/general/')) return make('developerA', '/deployments/general', generalBody(`m-${n}`, `matrix-token-${n}-0123456789`));
  if (route.startsWith('/deployments/orchestrated/')) {
    return make('developerA', '/deployments/orchestrated', { name: `m-${n}`, cluster_id: 1, model: 'org/model', hardware_instance_id: 1, min_replicas: 1, max_replicas: 1, endpoint_token_id: p.a.token });
  }
  if (route.startsWith('/vault/tokens/')) return make('developerA', '/vault/tokens', { name: `m-${n}` });
  if (route.startsWith('/vault/registry-credentials/')) return make('developerA', '/vault/registry-credentials', { name: `m-${n}`, username: 'u', password: `pw-${n}-0123456789`, registry: 'registry.team-a.example' });
  if (route.startsWith('/certificates/')) return make('developerA', '/certificates', { name: `m-${n}` });
  if (route.startsWith('/service-accounts/')) return make('ownerA', '/service-accounts', { name: `m-${n}`, role: 'viewer' });
  throw new Error(`no fresh record for ${route}`);
}

/** Calls that use up the record they name (the shared one must stay for the callers after). */
const USES_UP = /^(DELETE \/(deployments|vault|certificates|service-accounts)\/|POST \/deployments\/\w+\/\{id\}\/(pause|resume)$|POST \/certificates\/\{id\}\/revoke$)/;

async function idFor(key: string, outcome: Outcome): Promise<string> {
  const route = key.split(' ')[1]!;
  if (outcome === 'allowed' && USES_UP.test(key)) return String(await fresh(route));
  if (route.startsWith('/deployments/general/')) return String(p.a.deployment);
  if (route.startsWith('/deployments/orchestrated/')) return String(p.a.orchestrated);
  if (route.startsWith('/vault/tokens/')) return String(p.a.token);
  if (route.startsWith('/vault/registry-credentials/')) return String(p.a.registryCredential);
  if (route.startsWith('/certificates/')) return String(p.a.certificate);
  if (route.startsWith('/service-accounts/')) return String(p.a.serviceAccount);
  if (route.startsWith('/clusters/')) return '1';
  if (route.startsWith('/presets/')) return presetId;
  throw new Error(`no id for ${key}`);
}

async function concrete(key: string, outcome: Outcome): Promise<string> {
  let route = key.split(' ')[1]!;
  if (route.includes('{id}')) route = route.replace('{id}', await idFor(key, outcome));
  return route
    .replace('{n}', '1')
    .replace('{project}', A)
    .replace('{subject}', encodeURIComponent('user:nobody@example.com'))
    .replace('*', 'index-abc123.js');
}

async function callRoute(key: string, who: CallerName, outcome: Outcome, project?: string): Promise<ApiResponse> {
  const method = key.split(' ')[0]!;
  const url = await concrete(key, outcome);
  if (key.endsWith('/terminal')) {
    const headers: Record<string, string> = { authorization: `Bearer ${p.keys[who]}`, ...(project !== undefined && { 'x-infergate-project': project }) };
    const opened = await openTty(`${api.url.replace(/^http/, 'ws')}${url}`, [], headers);
    if ('ws' in opened) {
      opened.ws.close();
      return { status: 101, headers: new Headers(), body: undefined };
    }
    return { status: opened.status, headers: new Headers(), body: JSON.parse(opened.body) };
  }
  // A body the route's schema refuses (after the rule check), so an allowed call changes nothing.
  const body = ['POST', 'PUT', 'PATCH'].includes(method) ? { __matrix: true } : undefined;
  return callAs(api.url, p.keys[who], method, url, body, project);
}

describe('the rule table and the routes', () => {
  it('every route of the OpenAPI document has a rule, and every rule a route (bar those other modules register)', async () => {
    const doc = await documented();
    expect(doc.length).toBeGreaterThan(60);
    expect(doc.filter((route) => !(route in ROUTE_RULES))).toEqual([]);
    const missing = Object.keys(ROUTE_RULES).filter((route) => !REGISTERED_BY_OTHER_MODULES(route) && !registered(route));
    expect(missing).toEqual([]);
  });
});

describe('route × role × project', () => {
  it('answers every caller of every route as the rule table says', async () => {
    const routes = [...new Set([...(await documented()), ...Object.keys(ROUTE_RULES).filter(registered)])].sort();
    let walked = 0;
    for (const key of routes) {
      const rule = ROUTE_RULES[key]!;
      if (!WALKED(key, rule)) continue;
      for (const caller of CALLERS) {
        const want = expected(key.split(' ')[1]!, rule, caller);
        // The admin names team-a; everyone else acts in their home project.
        const res = await callRoute(key, caller.name, want, caller.name === 'admin' ? A : undefined);
        check(key, caller.name, want, res);
        walked++;
      }
    }
    expect(walked).toBeGreaterThan(300);
  });

  it('public routes answer without a credential, and every other route is a 401 without one', async () => {
    const routes = [...new Set([...(await documented()), ...Object.keys(ROUTE_RULES).filter(registered)])].sort();
    for (const key of routes) {
      const rule = ROUTE_RULES[key]!;
      if (!WALKED(key, rule) || key.endsWith('/terminal')) continue;
      const [method, route] = key.split(' ') as [string, string];
      const url = await concrete(key, 'not_found');
      const res = await fetch(api.url + url, { method, ...(['POST', 'PUT', 'PATCH'].includes(method) && { headers: { 'content-type': 'application/json' }, body: '{}' }) });
      if (rule === 'public') expect(res.status, `${key} (${route})`).not.toBe(401);
      else expect(res.status, key).toBe(401);
    }
  });

  it('naming another project in X-Infergate-Project is a 404 on every route but the public ones', async () => {
    const routes = [...new Set([...(await documented()), ...Object.keys(ROUTE_RULES).filter(registered)])].sort();
    for (const key of routes) {
      const rule = ROUTE_RULES[key]!;
      if (!WALKED(key, rule) || rule === 'public') continue;
      const res = await callRoute(key, 'ownerB', 'not_found', A);
      check(key, 'ownerB naming team-a', 'not_found', res);
      expect(res.body.error.message, key).toBe(`no project named ${A}`);
    }
  });
});
