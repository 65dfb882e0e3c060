// Table tests of the client's pure parts: reading an apply file (YAML documents, lists, the
// mistakes it refuses), the fields a re-apply would PATCH (write-only secrets never, secret
// variables only when not set yet), the environment `describe` prints, when a
// deployment counts as ready, the exit status in a terminal's close reason, and which API and
// key a command uses (flags, then environment, then the saved context). Also `describe` and
// `ls` against a stand-in API (fetch replaced): the status reason under the status, and
// shortened in the REASON column.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { Command } from 'commander';
import { classifyPatch } from '../domain/patch-effect.js';
import { describeChanges, patchFor, readDesired } from './apply.js';
import { buildProgram } from './commands.js';
import { commandPath, EXAMPLES } from './help.js';
import { resolveConnection, writeContexts } from './contexts.js';
import { environmentLines, shortReason, type Deployment } from './deployments.js';
import { UsageError } from './errors.js';
import { exitStatusOf, isReady } from './watch.js';

const fromText = (text: string) => readDesired('deploy.yaml', () => text);

describe('readDesired', () => {
  it('reads YAML documents, a list, and an {items} object alike', () => {
    const docs = fromText('family: general\nname: a\n---\nfamily: orchestrated\nname: b\nmodel: org/m\n');
    expect(docs.map((d) => [d.family, d.name])).toEqual([['general', 'a'], ['orchestrated', 'b']]);
    expect(docs[1]!.body).toEqual({ name: 'b', model: 'org/m' });
    expect(fromText('[{"family": "general", "name": "a"}]')).toHaveLength(1);
    expect(fromText('items:\n  - {family: general, name: a}\n  - {family: general, name: b}\n')).toHaveLength(2);
  });

  const refusals: [string, RegExp][] = [
    ['name: a\n', /deployment 1: family must be general or orchestrated, not null/],
    ['family: batch\nname: a\n', /family must be general or orchestrated, not "batch"/],
    ['family: general\n', /deployment 1: name is required/],
    ['- {family: general, name: a}\n- {family: general, name: a}\n', /a is described twice/],
    ['family: general\nname: [unclosed\n', /^deploy\.yaml: /],
    ['', /describes no deployment/],
    ['- 42\n', /deployment 1 is not an object/],
  ];
  for (const [text, message] of refusals) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      expect(() => fromText(text)).toThrow(UsageError);
      expect(() => fromText(text)).toThrow(message);
    });
  }
});

describe('patchFor', () => {
  const current = { name: 'a', max_replicas: 2, command: ['--x'], env: { A: '1' }, has_registry_password: true } as unknown as Deployment;
  it('sends only the fields the file names that differ, never the name or a secret', () => {
    const desired = { family: 'general' as const, name: 'a', body: { name: 'a', max_replicas: 3, command: ['--x'], env: { A: '1' }, endpoint_bearer_token: 'tok', registry_password: 'pw' } };
    expect(patchFor(desired, current)).toEqual({ max_replicas: 3 });
  });
  it('finds nothing to change when the file matches, key order aside', () => {
    expect(patchFor({ family: 'general', name: 'a', body: { env: { A: '1' }, command: ['--x'] } }, current)).toEqual({});
  });

  describe('secret environment variables', () => {
    const withSecret = { ...current, secret_env: ['REGISTRY_API_KEY', 'HF_TOKEN'] } as Deployment;
    const file = (body: Record<string, unknown>) => ({ family: 'general' as const, name: 'a', body });

    it('leaves one the deployment has alone (it cannot be read back), sets one it lacks, removes one set to null', () => {
      expect(patchFor(file({ secret_env: { HF_TOKEN: 'hf_1', REGISTRY_API_KEY: 'k' } }), withSecret)).toEqual({});
      expect(patchFor(file({ secret_env: { HF_TOKEN: 'hf_1', NEW_KEY: 'n', GONE: null } }), withSecret)).toEqual({ secret_env: { NEW_KEY: 'n' } });
      expect(patchFor(file({ secret_env: { HF_TOKEN: null } }), withSecret)).toEqual({ secret_env: { HF_TOKEN: null } });
    });

    it('reads a name that is always secret in env as the API stores it: a secret, not a plain difference', () => {
      const recipe = file({ env: { A: '1', REGISTRY_API_KEY: 'k' } });
      expect(patchFor(recipe, withSecret)).toEqual({});
      expect(patchFor(recipe, { ...current, secret_env: [] } as Deployment)).toEqual({ secret_env: { REGISTRY_API_KEY: 'k' } });
      expect(patchFor(file({ env: { A: '2', REGISTRY_API_KEY: 'k' } }), withSecret)).toEqual({ env: { A: '2' } });
    });

    it('says which are set or removed in a diff, never their values', () => {
      const patch = { secret_env: { NEW_KEY: 'value-never-printed', HF_TOKEN: null } };
      const lines = describeChanges({ kind: 'patch', desired: file(patch), current: withSecret, plan: classifyPatch(patch, 1) });
      expect(lines).toEqual(['  secret_env: set NEW_KEY; remove HF_TOKEN (values not shown)']);
    });
  });
});

describe('environmentLines', () => {
  it('shows plain variables with their values and secret ones as set, by name', () => {
    expect(environmentLines({ env: { MODE: 'fast' }, secret_env: ['REGISTRY_API_KEY', 'A_KEY'] })).toEqual(['  A_KEY (secret, set)', '  MODE=fast', '  REGISTRY_API_KEY (secret, set)']);
    expect(environmentLines({ env: {}, secret_env: [] })).toEqual(['  none']);
  });
});

describe('isReady', () => {
  const base = { paused: false, status: 'ready', rollout: null, serving_revision: 2, revision: 2, components: { Replica: { ready: 1, desired: 1 } } } as unknown as Deployment;
  const cases: [string, Partial<Deployment>, boolean][] = [
    ['ready and serving its revision', {}, true],
    ['paused', { paused: true }, false],
    ['still pending', { status: 'pending' }, false],
    ['rolling out', { rollout: { state: 'in_progress' } }, false],
    ['serving an older revision', { serving_revision: 1 }, false],
    ['scaled to zero (nothing wanted)', { components: { Replica: { ready: 0, desired: 0 } } }, true],
  ];
  for (const [name, over, ready] of cases) it(name, () => expect(isReady({ ...base, ...over } as Deployment)).toBe(ready));
});

describe('exitStatusOf', () => {
  it('reads the status the server put in the close reason', () => {
    expect(exitStatusOf(1000, 'the shell exited with status 3')).toBe(3);
    expect(exitStatusOf(1000, 'the shell exited with status 0')).toBe(0);
    expect(exitStatusOf(1000, '')).toBe(0);
    expect(exitStatusOf(1001, 'the replica stopped')).toBe(1);
  });
});

describe('resolveConnection', () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  it('takes flags, then the environment, then the saved context; an empty variable is unset', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-contexts-'));
    const file = path.join(dir, 'config.json');
    writeContexts(file, { current: 'dev', contexts: { dev: { api: 'http://dev:8080/', key: 'dev-key' }, prod: { api: 'https://prod', key: 'prod-key' } } });
    const env = { INFERGATE_CONFIG: file };
    expect(resolveConnection({}, env)).toMatchObject({ api: 'http://dev:8080', key: 'dev-key' });
    expect(resolveConnection({ context: 'prod' }, env)).toMatchObject({ api: 'https://prod', key: 'prod-key' });
    expect(resolveConnection({}, { ...env, INFERGATE_API: 'http://env', INFERGATE_KEY: '' })).toMatchObject({ api: 'http://env', key: 'dev-key' });
    expect(resolveConnection({ api: 'http://flag', key: 'flag-key' }, { ...env, INFERGATE_API: 'http://env' })).toMatchObject({ api: 'http://flag', key: 'flag-key' });
    expect(() => resolveConnection({ context: 'staging' }, env)).toThrow(/no context "staging"/);
    expect(() => resolveConnection({}, { INFERGATE_CONFIG: path.join(dir!, 'none.json') })).toThrow(/not logged in/);
  });
});

describe('help', () => {
  it('has examples for every command, and no example for a command that does not exist', () => {
    const program = buildProgram({ env: {}, out: { write: () => undefined, isTTY: false, color: false }, readStdin: () => '', setExitCode: () => undefined });
    const paths: string[] = [];
    const walk = (cmd: Command) => {
      for (const sub of cmd.commands) {
        paths.push(commandPath(sub));
        walk(sub);
      }
    };
    walk(program);
    expect(paths.filter((p) => !EXAMPLES[p])).toEqual([]);
    expect(Object.keys(EXAMPLES).filter((p) => !paths.includes(p))).toEqual([]);
  });
});

describe('the status reason', () => {
  const PULLING = 'pulling 127.0.0.1:5000/team/engine:v1: 45%';
  const CREDENTIALS = 'the registry 127.0.0.1:5000 refused the credentials for 127.0.0.1:5000/team/engine: check registry_username and registry_password; retrying in 10 s';
  const deployment = (id: number, name: string, over: Partial<Deployment>): Deployment => ({
    id,
    family: 'general',
    name,
    status: 'ready',
    status_reason: null,
    paused: false,
    endpoint_url: `${name}.endpoints.localhost:8443`,
    revision: 1,
    serving_revision: 1,
    rollout: null,
    components: { Replica: { ready: 1, desired: 1 } },
    revisions: [{ revision: 1, status: 'serving', reason: 'create', created_at: '2026-01-05T10:00:00.000Z', failure_reason: null }],
    env: {},
    secret_env: [],
    ...over,
  });
  const chat = deployment(3, 'chat', { status: 'pending', status_reason: PULLING, serving_revision: null, components: { Replica: { ready: 0, desired: 1 } } });
  const embed = deployment(4, 'embed', {});
  const vendor = deployment(5, 'vendor', { status: 'pending', status_reason: CREDENTIALS, serving_revision: null, components: { Replica: { ready: 0, desired: 1 } } });
  const answers: Record<string, unknown> = {
    '/deployments/general': { items: [vendor, embed, chat] },
    '/deployments/orchestrated': { items: [] },
    '/deployments/general/3/replicas': { items: [{ id: 7, name: 'chat-r1-7', component: 'Replica', state: 'starting', restarts: 0, revision: 1 }] },
    '/deployments/general/4/replicas': { items: [{ id: 8, name: 'embed-r1-8', component: 'Replica', state: 'ready', restarts: 0, revision: 1 }] },
  };

  afterEach(() => {
    vi.unstubAllGlobals();
  });

  /** Runs `infergate ARGS` against the stand-in API and returns what it printed. */
  async function run(args: string[]): Promise<string> {
    vi.stubGlobal('fetch', (url: string) => {
      const body = answers[new URL(url).pathname];
      return Promise.resolve(new Response(JSON.stringify(body ?? { error: { code: 'not_found', message: 'no route' } }), { status: body ? 200 : 404, headers: { 'content-type': 'application/json' } }));
    });
    let printed = '';
    const env = { INFERGATE_CONFIG: path.join(os.tmpdir(), `infergate-absent-${process.pid}`, 'config.json') };
    const program = buildProgram({ env, out: { write: (t) => void (printed += t), isTTY: false, color: false }, readStdin: () => '', setExitCode: () => undefined });
    await program.parseAsync(['--api', 'http://api.test', '--key', 'key-0123456789', ...args], { from: 'user' });
    return printed;
  }

  it('describe prints it right under the status, and nothing when there is none', async () => {
    const text = await run(['describe', 'chat']);
    expect(text.split('\n').slice(0, 4)).toEqual([
      'Name:        chat (general, id 3)',
      'Status:      pending',
      `Reason:      ${PULLING}`,
      'Revision:    1',
    ]);
    expect(await run(['describe', 'embed'])).not.toContain('Reason:');
  });

  it('is part of the object in -o json and yaml', async () => {
    expect(JSON.parse(await run(['describe', 'chat', '-o', 'json']))).toMatchObject({ status: 'pending', status_reason: PULLING });
    expect(await run(['get', 'embed', '-o', 'yaml'])).toContain('status_reason: null\n');
  });

  it('ls shows it shortened in the last column, keeping its start and its end', async () => {
    const lines = (await run(['ls'])).trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+FAMILY\s+STATUS\s+COMPONENTS\s+REVISION\s+ENDPOINT\s+REASON$/);
    expect(lines[1]).toMatch(new RegExp(`^chat\\s+general\\s+pending\\s+Replica 0/1\\s+1\\s+https://chat\\.endpoints\\.localhost:8443\\s+${PULLING.replace(/\./g, '\\.')}$`));
    expect(lines[2]).toMatch(/^embed\s+general\s+ready\s+Replica 1\/1\s+1\s+https:\/\/embed\.endpoints\.localhost:8443$/);
    expect(lines[3]).toContain(`https://vendor.endpoints.localhost:8443   ${shortReason(CREDENTIALS)}`);
  });

  it('shortReason keeps short reasons whole and cuts long ones in the middle, between words, to 60 characters at most', () => {
    expect(shortReason(null)).toBe('');
    expect(shortReason(PULLING)).toBe(PULLING);
    expect(shortReason(CREDENTIALS)).toBe('the registry 127.0.0.1:5000 refused … retrying in 10 s');
    const notFound = 'tag v9 of 127.0.0.1:5000/team/engine not found in 127.0.0.1:5000; retrying in 5 s';
    expect(shortReason(notFound)).toBe('tag v9 of 127.0.0.1:5000/team/engine … retrying in 5 s');
    const unbroken = `pulling ${'x'.repeat(100)}: 45%`;
    expect(shortReason(unbroken).length).toBeLessThanOrEqual(60);
    expect(shortReason(unbroken)).toMatch(/^pulling x+ … x+: 45%$/);
  });
});
