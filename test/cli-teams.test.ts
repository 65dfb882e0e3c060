// The command-line client's team commands against a real control API (HTTP on loopback), one
// child process per command: `projects` lists, creates, sets the quota of and removes projects
// (the admin); `members add|ls|rm` in the project --project names, an owner's, refused to a
// developer in the API's words; a project the caller is not in is a "no project named"; a
// context's project (`context set-project`) is sent with every command; `audit` shows an
// owner their project's entries, filtered, as a table and as JSON, the admin every project's,
// and refuses a developer.

import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../src/domain/records.js';
import { killChildren, runToEnd, type ChildRun } from './helpers/child-process.js';
import { ADMIN_KEY, startControl, type TestControl } from './helpers/control.js';
import { addMember, addProject } from './helpers/members.js';
import { spawnCli } from './helpers/serve-process.js';

let api: TestControl;
let home: string;
let env: Record<string, string>;
const keys: Record<string, string> = {};
const children: ChildProcess[] = [];

beforeAll(async () => {
  api = await startControl();
  await addProject(api.store, 'default');
  await addProject(api.store, 'team-a', [{ subject: 'user:lead@example.com', role: 'owner' }], 8);
  await addProject(api.store, 'team-b');
  keys.ownerA = await addMember(api.store, 'owner-a', 'team-a', 'owner');
  keys.devA = await addMember(api.store, 'dev-a', 'team-a', 'developer');
  home = await mkdtemp(path.join(os.tmpdir(), 'infergate-cli-teams-'));
  env = { INFERGATE_CONFIG: path.join(home, 'config.json'), NO_COLOR: '1', INFERGATE_API: api.url, INFERGATE_KEY: ADMIN_KEY, INFERGATE_PROJECT: '' };
});
afterAll(async () => {
  await killChildren(children);
  await api?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<ChildRun> {
  const child = spawnCli(args, { ...env, ...extraEnv });
  children.push(child);
  return runToEnd(child);
}

const as = (key: string) => ({ INFERGATE_KEY: key });

describe('infergate projects', () => {
  it('lists the projects (the admin: all), creates one with a quota, changes the quota and removes it', async () => {
    const ls = await cli(['projects']);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/^NAME\s+ROLE\s+GPU QUOTA\s+GPUS RESERVED\s+CREATED$/m);
    expect(ls.stdout).toMatch(/^team-a\s+-\s+8\s+0\s/m);
    expect(ls.stdout).toMatch(/^team-b\s+-\s+cluster\s+0\s/m);

    const created = await cli(['projects', 'create', 'team-c', '--gpu-quota', '4']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toBe('project team-c created (GPU quota: 4)\n');
    const quota = await cli(['projects', 'quota', 'team-c', '16']);
    expect(quota.stdout).toBe('project team-c: GPU quota 16\n');
    const json = JSON.parse((await cli(['projects', 'ls', '-o', 'json'])).stdout) as Array<{ name: string; gpu_quota: number | null }>;
    expect(json.find((p) => p.name === 'team-c')?.gpu_quota).toBe(16);
    expect((await cli(['projects', 'rm', 'team-c'])).stdout).toBe('project team-c deleted\n');
    expect((await cli(['projects', '-o', 'name'])).stdout.split('\n')).not.toContain('team-c');

    const bad = await cli(['projects', 'create', 'Team_C']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/a project name is lowercase letters/);
  });

  it('an owner sees only their projects, and may not create one', async () => {
    const ls = await cli(['projects', '-o', 'json'], as(keys.ownerA!));
    expect((JSON.parse(ls.stdout) as Array<{ name: string; role: string }>).map((p) => [p.name, p.role])).toEqual([['team-a', 'owner']]);
    const refused = await cli(['projects', 'create', 'mine'], as(keys.ownerA!));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/only the platform admin may create projects/);
  });
});

describe('infergate service-accounts', () => {
  it("an owner makes the project's accounts with a role; only the admin makes an admin account", async () => {
    const made = await cli(['--project', 'team-a', 'service-accounts', 'create', 'ci-viewer', '--role', 'viewer'], as(keys.ownerA!));
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/^service account ci-viewer \(viewer of team-a, id \d+\); its key, shown once:\nigk_/);
    const ls = await cli(['--project', 'team-a', 'service-accounts', 'ls'], as(keys.ownerA!));
    expect(ls.stdout).toMatch(/^\d+\s+ci-viewer\s+viewer\s+team-a\s/m);
    const admin = await cli(['--project', 'team-a', 'service-accounts', 'create', 'ops', '--role', 'admin'], as(keys.ownerA!));
    expect(admin.code).toBe(1);
    const byAdmin = await cli(['service-accounts', 'create', 'ops', '--role', 'admin']);
    expect(byAdmin.stdout).toMatch(/^service account ops \(platform admin, id \d+\)/);
  });
});

describe('infergate whoami', () => {
  it('says what the role may and may not do in the project, from the rule table the API enforces', async () => {
    const dev = await cli(['--project', 'team-a', 'whoami'], as(keys.devA!));
    expect(dev.code, dev.stderr).toBe(0);
    expect(dev.stdout).toMatch(/^dev-a \(developer\) in project team-a at /m);
    const [, may = ''] = /^may: (.*)$/m.exec(dev.stdout) ?? [];
    const [, mayNot = ''] = /^may not: (.*)$/m.exec(dev.stdout) ?? [];
    expect(may.split('; ')).toEqual(expect.arrayContaining(['change deployments', 'open a terminal in a replica', "download a certificate's private key"]));
    expect(mayNot.split('; ')).toEqual(expect.arrayContaining(['manage members and their roles', "read the project's audit log", 'deploy a command that runs on the host']));
    const admin = await cli(['whoami']);
    expect(admin.stdout).toMatch(/^may: .*create projects/m);
    expect(admin.stdout).not.toMatch(/^may not:/m);
  });
});

describe('infergate members', () => {
  it('an owner adds, lists and removes members of the project --project names', async () => {
    const add = await cli(['--project', 'team-a', 'members', 'add', 'alice@example.com', '--role', 'developer'], as(keys.ownerA!));
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toBe('user:alice@example.com is developer of team-a\n');
    const group = await cli(['--project', 'team-a', 'members', 'add', 'group:ml-platform', '--role', 'viewer'], as(keys.ownerA!));
    expect(group.code, group.stderr).toBe(0);
    const ls = await cli(['--project', 'team-a', 'members', 'ls'], as(keys.ownerA!));
    expect(ls.stdout).toMatch(/^SUBJECT\s+ROLE$/m);
    expect(ls.stdout).toMatch(/^user:alice@example\.com\s+developer$/m);
    expect(ls.stdout).toMatch(/^group:ml-platform\s+viewer$/m);
    const rm = await cli(['--project', 'team-a', 'members', 'rm', 'group:ml-platform'], as(keys.ownerA!));
    expect(rm.stdout).toBe('group:ml-platform removed from team-a\n');
    const json = JSON.parse((await cli(['--project', 'team-a', 'members', '-o', 'json'], as(keys.ownerA!))).stdout) as Array<{ subject: string }>;
    expect(json.map((m) => m.subject)).toEqual(['user:alice@example.com', 'user:lead@example.com']);
  });

  it('a developer reads members but may not change them; another project is not there', async () => {
    expect((await cli(['--project', 'team-a', 'members'], as(keys.devA!))).code).toBe(0);
    const refused = await cli(['--project', 'team-a', 'members', 'add', 'bob@example.com', '--role', 'owner'], as(keys.devA!));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/only owners may manage members and their roles; you are a developer/);
    const foreign = await cli(['--project', 'team-b', 'members', 'ls'], as(keys.ownerA!));
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/no project named team-b/);
    const subject = await cli(['--project', 'team-a', 'members', 'add', 'bob', '--role', 'owner'], as(keys.ownerA!));
    expect(subject.code).toBe(2);
    expect(subject.stderr).toMatch(/a member is user:<e-mail address> or group:<group name>/);
  });

  it('a context keeps a project (context set-project) and sends it with every command', async () => {
    await writeFile(env.INFERGATE_CONFIG!, JSON.stringify({ current: 'lead', contexts: { lead: { api: api.url, key: keys.ownerA } } }), { mode: 0o600 });
    const ctxEnv = { INFERGATE_API: '', INFERGATE_KEY: '' };
    const set = await cli(['context', 'set-project', 'team-a'], ctxEnv);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe('context lead acts in project team-a\n');
    expect(JSON.parse(await readFile(env.INFERGATE_CONFIG!, 'utf8')).contexts.lead.project).toBe('team-a');
    const add = await cli(['members', 'add', 'carol@example.com', '--role', 'viewer'], ctxEnv);
    expect(add.stdout).toBe('user:carol@example.com is viewer of team-a\n');
    // --project still wins over the context's.
    expect((await cli(['--project', 'team-b', 'members'], ctxEnv)).stderr).toMatch(/no project named team-b/);
    const cleared = await cli(['context', 'set-project'], ctxEnv);
    expect(cleared.stdout).toBe('context lead acts in its home project\n');
    expect(JSON.parse(await readFile(env.INFERGATE_CONFIG!, 'utf8')).contexts.lead.project).toBeUndefined();
  });
});

describe('infergate audit', () => {
  it("shows an owner their project's entries, filtered, as a table and as JSON", async () => {
    const table = await cli(['--project', 'team-a', 'audit'], as(keys.ownerA!));
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^TIME\s+ACTOR\s+ROLE\s+PROJECT\s+ACTION\s+TARGET\s+RESULT\s+STATUS$/m);
    expect(table.stdout).toMatch(/owner-a\s+owner\s+team-a\s+member\.manage\s+member user:alice@example\.com\s+allowed\s+200/);
    // Newest first: the removal of the group comes before its addition.
    const lines = table.stdout.split('\n');
    const removed = lines.findIndex((l) => /member group:ml-platform\s+allowed\s+204/.test(l));
    const added = lines.findIndex((l) => /member group:ml-platform\s+allowed\s+200/.test(l));
    expect(removed).toBeGreaterThan(0);
    expect(added).toBeGreaterThan(removed);

    const refused = JSON.parse((await cli(['--project', 'team-a', 'audit', '--result', 'refused', '--since', '1h', '-o', 'json'], as(keys.ownerA!))).stdout) as { items: AuditRecord[] };
    expect(refused.items.length).toBeGreaterThan(0);
    expect(refused.items.every((e) => e.result === 'refused' && e.project === 'team-a')).toBe(true);
    expect(refused.items.find((e) => e.actor.name === 'dev-a')).toMatchObject({ action: 'member.manage', route: 'PUT /projects/{project}/members/{subject}', status: 403, target: { kind: 'member', id: 'user:bob@example.com' } });

    const byActor = JSON.parse((await cli(['--project', 'team-a', 'audit', '--actor', 'dev-a', '--limit', '1', '-o', 'json'], as(keys.ownerA!))).stdout) as { items: AuditRecord[]; continue?: string };
    expect(byActor.items).toHaveLength(1);
    expect(byActor.items[0]!.actor.name).toBe('dev-a');
    const future = JSON.parse((await cli(['--project', 'team-a', 'audit', '--since', '2999-01-01T00:00:00Z', '-o', 'json'], as(keys.ownerA!))).stdout) as { items: AuditRecord[] };
    expect(future.items).toEqual([]);
    const badTime = await cli(['audit', '--since', 'yesterday'], as(keys.ownerA!));
    expect(badTime.code).toBe(2);
    expect(badTime.stderr).toMatch(/--since must be a time ago/);
  });

  it("shows the admin every project's entries or one project's, and refuses a developer", async () => {
    const all = JSON.parse((await cli(['audit', '--limit', '500', '-o', 'json'])).stdout) as { items: AuditRecord[] };
    const projects = new Set(all.items.map((e) => e.project));
    expect(projects.has('team-a')).toBe(true);
    expect(projects.has(null)).toBe(true); // the admin's project creation
    expect(all.items.some((e) => e.action === 'project.manage' && e.target?.id === 'team-c')).toBe(true);
    const one = JSON.parse((await cli(['--project', 'team-a', 'audit', '--limit', '500', '-o', 'json'])).stdout) as { items: AuditRecord[] };
    expect(one.items.length).toBeGreaterThan(0);
    expect(one.items.every((e) => e.project === 'team-a')).toBe(true);
    const everywhere = JSON.parse((await cli(['--project', 'team-a', 'audit', '-A', '--limit', '500', '-o', 'json'])).stdout) as { items: AuditRecord[] };
    expect(everywhere.items.length).toBeGreaterThan(one.items.length);

    const dev = await cli(['--project', 'team-a', 'audit'], as(keys.devA!));
    expect(dev.code).toBe(1);
    expect(dev.stderr).toMatch(/only owners may read the project's audit log; you are a developer/);
  });
});
