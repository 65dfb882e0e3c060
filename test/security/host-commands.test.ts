// Host commands (images the runtime does not simulate, whose command runs on this host) are
// an admin's choice on the control API: a member's create, clone or spec-changing PATCH
// that would run one is a 403 naming the server flag that opens it; scaling, credentials,
// pause, resume, rollback and delete of such a deployment stay open to members; and where
// no sandbox exists nobody may, unless the operator allows unsandboxed host commands. Nor can
// a member make a simulated image run its own code at start: NODE_OPTIONS, LD_PRELOAD and the
// other variables that load code are refused for images the runtime simulates (400 naming the
// variable), by create, PATCH or secret_env, whatever the role.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostCommandPolicy } from '../../src/domain/host-commands.js';
import { generalBody, startControl, type ApiResponse, type TestControl } from '../helpers/control.js';

const TOKEN = 'host-command-token-0001';

const hostBody = (name: string) => ({ ...generalBody(name, TOKEN), image: 'my/own-engine', tag: 'v1', command: ['/usr/bin/llama-server', '--port', '8000'] });

interface Api {
  api: TestControl;
  member: string;
}

async function startWith(policy?: HostCommandPolicy): Promise<Api> {
  const api = await startControl(policy ? { hostCommands: policy } : {});
  const created = await api.call('POST', '/service-accounts', { name: 'member', role: 'member' });
  expect(created.status).toBe(201);
  return { api, member: created.body.key };
}

function expectForbidden(res: ApiResponse, flag: string): void {
  expect(res.status).toBe(403);
  expect(res.body.error).toMatchObject({ code: 'forbidden', message: expect.stringContaining(flag) });
}

const started: Api[] = [];
const start = async (policy?: HostCommandPolicy) => {
  const a = await startWith(policy);
  started.push(a);
  return a;
};
afterAll(async () => {
  for (const a of started) await a.api.close();
});

describe('the default policy: admins only', () => {
  let a: Api;
  let hostId: number;
  beforeAll(async () => {
    a = await start();
  });

  it('answers a member creating a host-command deployment 403 naming --allow-member-host-commands', async () => {
    expectForbidden(await a.api.call('POST', '/deployments/general', hostBody('by-member'), a.member), '--allow-member-host-commands');
    expect((await a.api.call('GET', '/deployments/general')).body.items).toHaveLength(0);
  });

  it('lets an admin create one (201) and a member create a simulated one (201)', async () => {
    const admin = await a.api.call('POST', '/deployments/general', hostBody('by-admin'));
    expect(admin.status).toBe(201);
    hostId = admin.body.id;
    expect((await a.api.call('POST', '/deployments/general', generalBody('sim-member', TOKEN), a.member)).status).toBe(201);
  });

  it("refuses a member's PATCH of the command, and of a simulated deployment into a host command", async () => {
    expectForbidden(await a.api.call('PATCH', `/deployments/general/${hostId}`, { command: ['/bin/sh', '-c', 'id'] }, a.member), '--allow-member-host-commands');
    expectForbidden(await a.api.call('PATCH', `/deployments/general/${hostId}`, { env: { X: '1' } }, a.member), '--allow-member-host-commands');
    const sim = (await a.api.call('GET', '/deployments/general')).body.items.find((d: { name: string }) => d.name === 'sim-member');
    expectForbidden(
      await a.api.call('PATCH', `/deployments/general/${sim.id}`, { image: 'my/own-engine', command: ['/bin/sh'] }, a.member),
      '--allow-member-host-commands',
    );
    expect((await a.api.call('GET', `/deployments/general/${hostId}`)).body).toMatchObject({ revision: 1, command: ['/usr/bin/llama-server', '--port', '8000'] });
  });

  it("refuses a member's clone of a host-command deployment", async () => {
    expectForbidden(await a.api.call('POST', `/deployments/general/${hostId}/clone`, { name: 'copy' }, a.member), '--allow-member-host-commands');
  });

  it('lets a member scale it, change its token, pause, resume, roll back and delete it', async () => {
    const scaled = await a.api.call('PATCH', `/deployments/general/${hostId}`, { min_replicas: 2, max_replicas: 2 }, a.member);
    expect(scaled.status).toBe(200);
    expect(scaled.body).toMatchObject({ min_replicas: 2, revision: 1 });
    expect((await a.api.call('PATCH', `/deployments/general/${hostId}`, { endpoint_bearer_token: 'another-token-0002' }, a.member)).status).toBe(200);
    expect((await a.api.call('POST', `/deployments/general/${hostId}/pause`, undefined, a.member)).status).toBe(202);
    expect((await a.api.call('POST', `/deployments/general/${hostId}/resume`, undefined, a.member)).status).toBe(202);
    expect((await a.api.call('PATCH', `/deployments/general/${hostId}`, { command: ['/usr/bin/llama-server', '--port', '8001'] })).status).toBe(200);
    const back = await a.api.call('POST', `/deployments/general/${hostId}/rollback`, { revision: 1 }, a.member);
    expect(back.status).toBe(202);
    expect(back.body.revision).toBe(3);
    expect((await a.api.call('DELETE', `/deployments/general/${hostId}`, undefined, a.member)).status).toBe(202);
  });
});

describe('--allow-member-host-commands', () => {
  it('lets a member create and edit one', async () => {
    const a = await start({ sandboxed: true, allowUnsandboxed: false, allowMembers: true });
    const created = await a.api.call('POST', '/deployments/general', hostBody('member-ok'), a.member);
    expect(created.status).toBe(201);
    expect((await a.api.call('PATCH', `/deployments/general/${created.body.id}`, { command: ['/bin/true'] }, a.member)).status).toBe(200);
  });
});

describe('no sandbox on this node', () => {
  it('refuses everyone, naming --allow-unsandboxed-host-commands, even with members allowed', async () => {
    const a = await start({ sandboxed: false, allowUnsandboxed: false, allowMembers: true });
    expectForbidden(await a.api.call('POST', '/deployments/general', hostBody('admin-nosb')), '--allow-unsandboxed-host-commands');
    expectForbidden(await a.api.call('POST', '/deployments/general', hostBody('member-nosb'), a.member), '--allow-unsandboxed-host-commands');
    expect((await a.api.call('POST', '/deployments/general', generalBody('simulated', TOKEN), a.member)).status).toBe(201);
  });

  it('with --allow-unsandboxed-host-commands an admin may, a member still not', async () => {
    const a = await start({ sandboxed: false, allowUnsandboxed: true, allowMembers: false });
    expect((await a.api.call('POST', '/deployments/general', hostBody('admin-unsb'))).status).toBe(201);
    expectForbidden(await a.api.call('POST', '/deployments/general', hostBody('member-unsb'), a.member), '--allow-member-host-commands');
  });
});

describe("a simulated image cannot be made to run the member's own code", () => {
  let a: Api;
  const configFile = { filename: 'x.cjs', mount_path: '/cfg', content: "require('fs').writeFileSync('/tmp/pwned', String(process.getuid()))" };
  const attack = (name: string, env: Record<string, string>) => ({ ...generalBody(name, TOKEN), config_file: configFile, enable_model_caching: true, env });
  beforeAll(async () => {
    // Even with host commands opened to members: the rule is about the platform's own program.
    a = await start({ sandboxed: true, allowUnsandboxed: false, allowMembers: true });
  });

  it.each([
    ['NODE_OPTIONS', '--require ./cfg/x.cjs'],
    ['NODE_OPTIONS', '--import=./cfg/x.cjs'],
    ['LD_PRELOAD', './model-cache/x.so'],
    ['NODE_PATH', './cfg'],
  ])("refuses %s=%s on the reference engine: 400 naming the variable, nothing created", async (name, value) => {
    const res = await a.api.call('POST', '/deployments/general', attack(`sim-${name.toLowerCase().replace(/_/g, '-')}`, { [name]: value }), a.member);
    expect(res.status).toBe(400);
    expect(res.body.error.field ?? res.body.error.problems?.[0]?.field).toBe(`env.${name}`);
    expect(JSON.stringify(res.body)).toContain("infergate's own simulated engine");
  });

  it('refuses them by PATCH and as secret variables, and for an admin too', async () => {
    const created = await a.api.call('POST', '/deployments/general', attack('sim-ok', { MODE: 'fast' }), a.member);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    expect((await a.api.call('PATCH', `/deployments/general/${id}`, { env: { NODE_OPTIONS: '--require ./cfg/x.cjs' } }, a.member)).status).toBe(400);
    expect((await a.api.call('PATCH', `/deployments/general/${id}`, { secret_env: { LD_PRELOAD: './x.so' } }, a.member)).status).toBe(400);
    expect((await a.api.call('PATCH', `/deployments/general/${id}`, { env: { NODE_OPTIONS: '--require ./cfg/x.cjs' } })).status).toBe(400);
    expect((await a.api.call('GET', `/deployments/general/${id}`)).body).toMatchObject({ revision: 1, env: { MODE: 'fast' } });
  });

  it("lets an image that runs its own command set them: they act on that command alone, inside its sandbox", async () => {
    const res = await a.api.call('POST', '/deployments/general', { ...hostBody('own-ld'), env: { LD_PRELOAD: '/opt/lib/x.so' } }, a.member);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });
});
