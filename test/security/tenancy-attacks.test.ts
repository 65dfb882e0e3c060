// The attacks one project's member could make on another's resources through the control API
// (a real HTTP control API, port 0): a terminal in another project's deployment (its secret
// environment), another project's client certificate and key, replacing another project's
// endpoint token, lifting another project's token cap and pausing, resuming, cloning and
// deleting its deployments, and naming its credentials from one's own deployment. Each is a 404
// across projects — the same answer as an id that does not exist — and allowed within the
// project for the role that should have it. A viewer never gets a secret, a key, a terminal or
// logs, and a deployment whose logs are off has none for anyone.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ShellProvider } from '../../src/domain/ports.js';
import { localShells } from '../../src/runtime/shell-launcher.js';
import { modify } from '../../src/store/store.js';
import { generalBody, startControl, type TestControl } from '../helpers/control.js';
import { A, REGISTRY_PASSWORD_A, SECRET_A, setUpTwoProjects, TOKEN_A, type TwoProjects } from '../helpers/projects.js';
import { openTerminal, openTty, runInTerminal } from '../helpers/terminal.js';

let api: TestControl;
let p: TwoProjects;
let dir: string;
/** Deployment ids a shell was looked for: a refused terminal must never get this far. */
const shellsAskedFor: number[] = [];

const shells: ShellProvider = {
  shellRefusal: () => null,
  shellTarget: (deploymentId) => {
    shellsAskedFor.push(deploymentId);
    return {
      replica: 'chat-r1-1',
      launcher: localShells,
      argv: ['/bin/sh'],
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ALICE_SECRET: SECRET_A, HOME: dir },
      onGone: () => undefined,
    };
  },
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-tenancy-'));
  api = await startControl({ shells });
  p = await setUpTwoProjects(api);
  // No controller runs here: made ready by hand so the terminal route would open a shell.
  await modify(api.store, 'deployment', p.a.deployment, (d) => ({ ...d, status: 'ready' }));
});
afterAll(async () => {
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The 404 of an id that does not exist, for comparison: another project's id must read the same. */
async function missing(method: string, route: string, body?: unknown) {
  const res = await p.call('ownerB', method, route.replace(/\/\d+(\/|$)/, '/999999$1'), body);
  expect(res.status).toBe(404);
  return (res.body.error.message as string).replace('999999', '<id>');
}

async function refusedAsMissing(method: string, route: string, body?: unknown) {
  const res = await p.call('ownerB', method, route, body);
  expect(res.status, JSON.stringify(res.body)).toBe(404);
  expect(res.body.error.code).toBe('not_found');
  const id = /\/(\d+)(\/|$)/.exec(route)![1]!;
  expect((res.body.error.message as string).replace(id, '<id>')).toBe(await missing(method, route, body));
}

describe('(a) a terminal in another project’s deployment', () => {
  it('is a 404 before any shell is looked for; the developer of the project gets one that sees its secret, the viewer a 403', async () => {
    const across = await openTerminal(api.url, p.keys.ownerB, p.a.deployment);
    expect(across).toMatchObject({ status: 404 });
    expect('body' in across && JSON.parse(across.body).error.message).toBe(`general deployment ${p.a.deployment} does not exist`);
    // Even naming the project (a browser's WebSocket names it in the query): the caller is not in it.
    const terminalUrl = (query: string) => `${api.url.replace(/^http/, 'ws')}/deployments/general/${p.a.deployment}/terminal${query}`;
    const named = await openTty(terminalUrl(`?project=${A}`), [], { authorization: `Bearer ${p.keys.ownerB}` });
    expect(named).toMatchObject({ status: 404 });
    expect('body' in named && JSON.parse(named.body).error.message).toBe(`no project named ${A}`);
    expect(shellsAskedFor).toEqual([]);
    // The admin names team-a that way and gets its shell.
    const admin = await openTty(terminalUrl(`?project=${A}`), [], { authorization: `Bearer ${p.keys.admin}` });
    if (!('ws' in admin)) throw new Error(`refused: ${admin.status} ${admin.body}`);
    admin.ws.close();
    shellsAskedFor.length = 0;

    const viewer = await openTerminal(api.url, p.keys.viewerA, p.a.deployment);
    expect(viewer).toMatchObject({ status: 403 });
    expect(shellsAskedFor).toEqual([]);

    const own = await openTerminal(api.url, p.keys.developerA, p.a.deployment);
    if (!('ws' in own)) throw new Error(`refused: ${own.status} ${own.body}`);
    expect(await runInTerminal(own.ws, 'echo "x${ALICE_SECRET}y"', /x.+y/)).toContain(`x${SECRET_A}y`);
    own.ws.close();
    expect(shellsAskedFor.every((id) => id === p.a.deployment)).toBe(true);
  });
});

describe('(b) another project’s client certificate and key', () => {
  it('GET /certificates/{id}/pem and /certificates/{id} are 404s as for a missing id; the developer downloads it, the viewer may not', async () => {
    await refusedAsMissing('GET', `/certificates/${p.a.certificate}/pem`);
    await refusedAsMissing('GET', `/certificates/${p.a.certificate}`);
    expect((await p.call('ownerB', 'GET', `/certificates/${p.a.certificate}/pem`, undefined, A)).status).toBe(404);
    const listed = await p.call('ownerB', 'GET', '/certificates');
    expect(listed.body.items.map((c: { id: number }) => c.id)).not.toContain(p.a.certificate);

    const pem = await p.call('developerA', 'GET', `/certificates/${p.a.certificate}/pem`);
    expect(pem.status).toBe(200);
    expect(pem.body).toMatch(/-----BEGIN [A-Z ]*PRIVATE KEY-----/);
    const viewer = await p.call('viewerA', 'GET', `/certificates/${p.a.certificate}/pem`);
    expect(viewer.status).toBe(403);
    expect(viewer.body.error.code).toBe('forbidden');
  });
});

describe('(c) replacing another project’s endpoint token', () => {
  it('PATCH endpoint_bearer_token of another project’s deployment is a 404 and changes nothing; the project’s developer may', async () => {
    const before = (await p.call('developerA', 'GET', `/deployments/general/${p.a.deployment}`)).body.endpoint_token_id;
    await refusedAsMissing('PATCH', `/deployments/general/${p.a.deployment}`, { endpoint_bearer_token: 'bob-took-over-0123456789' });
    expect((await p.call('developerA', 'GET', `/deployments/general/${p.a.deployment}`)).body.endpoint_token_id).toBe(before);
    const own = await p.call('developerA', 'PATCH', `/deployments/general/${p.a.deployment}`, { endpoint_bearer_token: 'alice-rotated-0123456789' });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(own.body.endpoint_token_id).not.toBe(before);
    // The new token is the project's, as every token a deployment mints.
    const minted = await p.call('developerA', 'GET', `/vault/tokens/${own.body.endpoint_token_id}`);
    expect(minted.status).toBe(200);
    await refusedAsMissing('GET', `/vault/tokens/${own.body.endpoint_token_id}`);
  });

  it('a deployment of one project cannot bind another project’s token by value', async () => {
    const res = await p.call('ownerB', 'POST', '/deployments/general', generalBody('steal', TOKEN_A));
    // TOKEN_A was replaced above; the vault still holds it as team-a's.
    expect(res.status).toBe(400);
    expect(res.body.error.field).toBe('endpoint_bearer_token');
  });
});

describe('(d) another project’s token cap and deployments', () => {
  it('PATCH max_priority of another project’s token is a 404; pause, resume, clone and delete of its deployment are 404s', async () => {
    await refusedAsMissing('PATCH', `/vault/tokens/${p.a.token}`, { max_priority: null });
    await refusedAsMissing('DELETE', `/vault/tokens/${p.a.token}`);
    for (const action of ['pause', 'resume']) await refusedAsMissing('POST', `/deployments/general/${p.a.deployment}/${action}`);
    await refusedAsMissing('POST', `/deployments/general/${p.a.deployment}/clone`, { name: 'stolen' });
    await refusedAsMissing('DELETE', `/deployments/general/${p.a.deployment}`);
    await refusedAsMissing('DELETE', `/deployments/orchestrated/${p.a.orchestrated}`);
    await refusedAsMissing('GET', `/deployments/general/${p.a.deployment}/logs`);
    expect((await p.call('developerA', 'GET', `/deployments/general/${p.a.deployment}`)).body.paused).toBe(false);
    expect((await p.call('ownerB', 'GET', '/deployments/general?name=chat')).body.items).toEqual([]);
    expect((await p.call('ownerB', 'GET', '/deployments/general?limit=1')).body.items).toEqual([]);
    // A page token of team-a's list is not one of team-b's.
    const page = await p.call('developerA', 'GET', '/deployments/general?limit=1');
    expect(page.body.continue).toBeDefined();
    const reused = await p.call('ownerB', 'GET', `/deployments/general?limit=1&continue=${page.body.continue}`);
    expect(reused.status).toBe(400);
    expect(reused.body.error.field).toBe('continue');
  });

  it('within the project the developer lifts the cap, pauses, resumes, clones and deletes; the viewer may do none of it', async () => {
    for (const [method, route, body] of [
      ['PATCH', `/vault/tokens/${p.a.token}`, { max_priority: 'high' }],
      ['POST', `/deployments/general/${p.a.deployment}/pause`, undefined],
      ['POST', `/deployments/general/${p.a.deployment}/clone`, { name: 'viewer-clone' }],
      ['DELETE', `/deployments/general/${p.a.deployment}`, undefined],
    ] as const) {
      const res = await p.call('viewerA', method, route, body);
      expect(res.status, `${method} ${route}`).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    expect((await p.call('developerA', 'PATCH', `/vault/tokens/${p.a.token}`, { max_priority: null })).status).toBe(200);
    expect((await p.call('developerA', 'POST', `/deployments/general/${p.a.deployment}/pause`)).status).toBe(202);
    expect((await p.call('developerA', 'POST', `/deployments/general/${p.a.deployment}/resume`)).status).toBe(202);
    const clone = await p.call('developerA', 'POST', `/deployments/general/${p.a.deployment}/clone`, { name: 'chat-copy' });
    expect(clone.status, JSON.stringify(clone.body)).toBe(201);
    expect((await p.call('developerA', 'DELETE', `/deployments/general/${clone.body.id}`)).status).toBe(202);
  });

  it('names are per project: team-b has its own chat; it cannot name team-a’s token, certificate or registry credential', async () => {
    const chat = await p.call('ownerB', 'POST', '/deployments/general', generalBody('chat', 'bob-own-token-0123456789'));
    expect(chat.status, JSON.stringify(chat.body)).toBe(201);
    const refusals: Array<[string, Record<string, unknown>]> = [
      ['endpoint_token_id', { ...generalBody('b-token', 'x'), endpoint_bearer_token: undefined, endpoint_token_id: p.a.token }],
      ['client_certificate_id', { ...generalBody('b-cert', 'x'), endpoint_bearer_token: undefined, client_certificate_id: p.a.certificate }],
      ['registry_credential_id', { ...generalBody('b-reg', 'bob-own-token-0123456789'), image: 'registry.team-a.example/engine', command: ['true'], registry_credential_id: p.a.registryCredential }],
    ];
    for (const [field, body] of refusals) {
      const res = await p.call('ownerB', 'POST', '/deployments/general', body);
      expect(res.status, `${field}: ${JSON.stringify(res.body)}`).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      const problems = (res.body.error.details ?? [res.body.error]) as Array<{ field: string; message: string }>;
      expect(problems.find((x) => x.field === field)?.message, JSON.stringify(res.body)).toMatch(/does not exist|not in the vault/);
    }
    const cert = await p.call('ownerB', 'POST', '/certificates', { name: 'for-a', deployment_id: p.a.deployment });
    expect(cert.status).toBe(400);
    expect(cert.body.error.message).toBe(`deployment ${p.a.deployment} does not exist; GET /deployments/general or /deployments/orchestrated lists them`);
  });
});

describe('a viewer', () => {
  it('reads the project but never a secret, a key, a password, a token value, logs, a terminal or a PEM', async () => {
    const reads = [
      '/deployments/general',
      `/deployments/general/${p.a.deployment}`,
      `/deployments/general/${p.a.deployment}/revisions`,
      `/deployments/general/${p.a.deployment}/revisions/1`,
      '/deployments/orchestrated',
      '/vault/tokens',
      `/vault/tokens/${p.a.token}`,
      '/vault/registry-credentials',
      `/vault/registry-credentials/${p.a.registryCredential}`,
      '/certificates',
      `/certificates/${p.a.certificate}`,
      '/service-accounts',
      `/service-accounts/${p.a.serviceAccount}`,
      '/quota',
      `/projects/${A}`,
      `/projects/${A}/members`,
      '/whoami',
    ];
    for (const route of reads) {
      const res = await p.call('viewerA', 'GET', route);
      expect(res.status, `${route}: ${JSON.stringify(res.body)}`).toBe(200);
      const text = JSON.stringify(res.body);
      for (const secret of [SECRET_A, REGISTRY_PASSWORD_A, TOKEN_A, p.a.tokenValue, p.keys.viewerA, p.keys.developerA]) expect(text, route).not.toContain(secret);
      expect(text, route).not.toMatch(/PRIVATE KEY|sealed|key_hash|"hash"/);
    }
    const detail = await p.call('viewerA', 'GET', `/deployments/general/${p.a.deployment}`);
    expect(detail.body.secret_env).toEqual(['ALICE_SECRET']);

    for (const route of [`/deployments/general/${p.a.deployment}/logs`, `/certificates/${p.a.certificate}/pem`]) {
      const res = await p.call('viewerA', 'GET', route);
      expect(res.status, route).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    // Making a token or a service account hands out its value: not a viewer's either.
    expect((await p.call('viewerA', 'POST', '/vault/tokens', { name: 'mine' })).status).toBe(403);
    expect((await p.call('viewerA', 'POST', '/service-accounts', { name: 'mine' })).status).toBe(403);
    expect(await openTerminal(api.url, p.keys.viewerA, p.a.deployment)).toMatchObject({ status: 403 });
  });

  it('a deployment deployed with its logs off has none, for the developer and the admin alike', async () => {
    const quiet = await p.call('developerA', 'POST', '/deployments/general', { ...generalBody('quiet', 'quiet-token-0123456789'), enable_logging: false });
    expect(quiet.status).toBe(201);
    for (const who of ['developerA', 'admin'] as const) {
      const res = await p.call(who, 'GET', `/deployments/general/${quiet.body.id}/logs`, undefined, A);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ logging: false, lines: [] });
    }
    expect((await p.call('viewerA', 'GET', `/deployments/general/${quiet.body.id}/logs`)).status).toBe(403);
  });
});
