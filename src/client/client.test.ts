// Table tests of the client's pure parts: reading an apply file (YAML documents, lists, the
// mistakes it refuses), the fields a re-apply would PATCH (write-only secrets only when not set
// yet, an endpoint token when its last four characters differ, everything with
// --replace-secrets) and the warning naming the secrets it does not send, the environment
// `describe` prints, when a deployment counts as ready, the exit status in a terminal's close
// reason, and which API and key a command uses (flags, then environment, then the saved
// context). Also commands against a stand-in API (the client's requester replaced): `describe`
// and `ls` with the status reason under the status and shortened in the REASON column;
// `registry-credentials` (the password read from standard input or a file, never an argument,
// never printed), `describe`'s Registry line, `apply` passing registry_credential_id through
// and switching a deployment between the vault's credentials and its own, and `tokens ls`
// naming the deployments each token protects.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { CommanderError, type Command } from 'commander';
import { classifyPatch } from '../domain/patch-effect.js';
import { describeChanges, patchFor, planApply, readDesired, withheldSecrets, withheldWarnings } from './apply.js';
import { ApiClient } from './api.js';
import type { Requester } from './http-request.js';
import { buildProgram } from './commands.js';
import { commandPath, EXAMPLES } from './help.js';
import { resolveConnection, writeContexts } from './contexts.js';
import { environmentLines, flowControlText, shortReason, type Deployment } from './deployments.js';
import { ApiRefusal, UsageError } from './errors.js';
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

  describe('flow_control', () => {
    const DEFAULTS = { max_queue: 1000, max_wait_seconds: { critical: 60, standard: 30, sheddable: 5 } };
    const file = (flow_control: unknown) => ({ family: 'general' as const, name: 'a', body: { flow_control } });
    const asDefault = { ...current, flow_control: DEFAULTS, flow_control_is_default: true } as Deployment;
    const own = { ...current, flow_control: { ...DEFAULTS, max_queue: 5 }, flow_control_is_default: false } as Deployment;

    it('compares what the gateway applies: keys left out and null are the defaults', () => {
      expect(patchFor(file(null), asDefault)).toEqual({});
      expect(patchFor(file({}), asDefault)).toEqual({});
      expect(patchFor(file({ max_wait_seconds: { sheddable: 5 } }), asDefault)).toEqual({});
      expect(patchFor(file({ max_queue: 5 }), own)).toEqual({});
      expect(patchFor(file({ max_queue: 5, max_wait_seconds: { critical: 60, standard: 30, sheddable: 5 } }), own)).toEqual({});
    });

    it('sends the file’s value as written when it differs, or when it is malformed (the API says why)', () => {
      expect(patchFor(file({ max_queue: 6 }), own)).toEqual({ flow_control: { max_queue: 6 } });
      expect(patchFor(file(null), own)).toEqual({ flow_control: null });
      expect(patchFor(file({ max_queu: 5 }), asDefault)).toEqual({ flow_control: { max_queu: 5 } });
      // A server from before flow control shows none: the file's non-default value is sent.
      expect(patchFor(file({ max_queue: 5 }), current)).toEqual({ flow_control: { max_queue: 5 } });
    });
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
      const lines = describeChanges({ kind: 'patch', desired: file(patch), current: withSecret, withheld: [], plan: classifyPatch(patch, 1) });
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
    ['traffic pins revision 1, which serves (manual rollout: revision 2 at 0 %)', { serving_revision: 1, revision_replicas: [{ revision: 1, percent: 100, tags: [], ready: 1, desired: 1 }] }, true],
    ['traffic pins revision 1, revision 2 still serving', { revision_replicas: [{ revision: 1, percent: 100, tags: [], ready: 0, desired: 1 }] }, false],
    [
      'a split whose revisions all serve',
      { serving_revision: 1, revision_replicas: [{ revision: 1, percent: 90, tags: [], ready: 1, desired: 1 }, { revision: 2, percent: 10, tags: [], ready: 1, desired: 1 }] },
      true,
    ],
    [
      'a split whose canary is still starting',
      { serving_revision: 1, revision_replicas: [{ revision: 1, percent: 90, tags: [], ready: 1, desired: 1 }, { revision: 2, percent: 10, tags: [], ready: 0, desired: 1 }] },
      false,
    ],
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

/** A general deployment as the API renders it, ready and serving revision 1. */
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

interface Sent {
  method: string;
  path: string;
  body: unknown;
}

/** The stand-in API: a status and body for a request, or undefined for a 404. */
type Answer = (sent: Sent) => [number, unknown] | undefined;

/** An Answer that serves GETs from a table of paths. */
const getsFrom =
  (table: Record<string, unknown>): Answer =>
  ({ method, path: route }) =>
    method === 'GET' && table[route] !== undefined ? [200, table[route]] : undefined;

/** Requests answered by `answer` (404 for what it does not know), each recorded in `sent`. */
function standIn(answer: Answer, sent: Sent[]): Requester {
  return (url, init) => {
    const request = { method: init.method, path: new URL(url).pathname, body: typeof init.body === 'string' ? (JSON.parse(init.body) as unknown) : undefined };
    sent.push(request);
    const [status, body] = answer(request) ?? [404, { error: { code: 'not_found', message: 'no route' } }];
    return Promise.resolve(status === 204 ? new Response(null, { status }) : new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } }));
  };
}

/** Runs `infergate ARGS` against the stand-in API, with `stdin` on standard input; what it printed and every request it sent (also into `sent`). */
async function runAgainst(answer: Answer, args: string[], stdin = '', sent: Sent[] = []): Promise<{ printed: string; sent: Sent[] }> {
  let printed = '';
  const env = { INFERGATE_CONFIG: path.join(os.tmpdir(), `infergate-absent-${process.pid}`, 'config.json') };
  const program = buildProgram({ env, out: { write: (t) => void (printed += t), isTTY: false, color: false }, readStdin: () => stdin, setExitCode: () => undefined, request: standIn(answer, sent) });
  // Commander's own refusals are asserted through the error it throws, not its stderr.
  const quiet = (c: Command): void => void c.configureOutput({ writeErr: () => undefined }).commands.forEach(quiet);
  quiet(program);
  await program.parseAsync(['--api', 'http://api.test', '--key', 'key-0123456789', ...args], { from: 'user' });
  return { printed, sent };
}

describe('the status reason', () => {
  const PULLING = 'pulling 127.0.0.1:5000/team/engine:v1: 45%';
  const CREDENTIALS = 'the registry 127.0.0.1:5000 refused the credentials for 127.0.0.1:5000/team/engine: check registry_username and registry_password; retrying in 10 s';
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

  const run = async (args: string[]): Promise<string> => (await runAgainst(getsFrom(answers), args)).printed;

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
    // AGE is "-" here: these deployments carry no created_at.
    expect(lines[0]).toMatch(/^NAME\s+FAMILY\s+STATUS\s+COMPONENTS\s+REVISION\s+ENDPOINT\s+AGE\s+REASON$/);
    expect(lines[1]).toMatch(new RegExp(`^chat\\s+general\\s+pending\\s+Replica 0/1\\s+1\\s+https://chat\\.endpoints\\.localhost:8443\\s+-\\s+${PULLING.replace(/\./g, '\\.')}$`));
    expect(lines[2]).toMatch(/^embed\s+general\s+ready\s+Replica 1\/1\s+1\s+https:\/\/embed\.endpoints\.localhost:8443\s+-$/);
    expect(lines[3]).toContain(`https://vendor.endpoints.localhost:8443   -     ${shortReason(CREDENTIALS)}`);
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

describe('registry credentials', () => {
  const PASSWORD = 'registry pass-0123456789';
  const team = { id: 2, name: 'team-registry', username: 'team', registry: 'registry.example.com:5000', created_at: '2026-01-05T10:00:00.000Z', deployments: [3] };
  const numbered = { id: 5, name: '7', username: 'ci', registry: null, created_at: '2026-01-06T10:00:00.000Z', deployments: [] };
  const api: Answer = ({ method, path: route, body }) => {
    if (route === '/vault/registry-credentials' && method === 'GET') return [200, { items: [team, numbered] }];
    if (route === '/deployments/general' && method === 'GET') return [200, { items: [deployment(3, 'chat', {})] }];
    if (route === '/deployments/orchestrated' && method === 'GET') return [200, { items: [] }];
    if (route === '/vault/registry-credentials' && method === 'POST') {
      const b = body as { name: string; username: string; password: string; registry: string };
      return [201, { id: 9, name: b.name, username: b.username, registry: b.registry, created_at: '2026-01-07T10:00:00.000Z', deployments: [] }];
    }
    if (route === '/vault/registry-credentials/2' && method === 'GET') return [200, team];
    if (route === '/vault/registry-credentials/5' && method === 'PATCH') return [200, { ...numbered, registry: (body as { registry: string }).registry }];
    if (route === '/vault/registry-credentials/2' && method === 'DELETE') {
      return [409, { error: { code: 'conflict', message: 'registry credential team-registry is used by chat: point them at other credentials first (PATCH registry_credential_id)' } }];
    }
    if (route === '/vault/registry-credentials/5' && method === 'DELETE') return [204, null];
    return undefined;
  };
  const run = (args: string[], stdin = '', sent: Sent[] = []) => runAgainst(api, ['registry-credentials', ...args], stdin, sent);
  let dir: string | undefined;

  afterEach(() => {
    vi.unstubAllGlobals();
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('create reads the password from standard input (its line ending dropped, spaces kept) and never prints it', async () => {
    const { printed, sent } = await run(['create', 'ngc', '--username', '$oauthtoken', '--registry', 'nvcr.io', '--password-stdin'], `${PASSWORD}\n`);
    expect(sent).toEqual([{ method: 'POST', path: '/vault/registry-credentials', body: { name: 'ngc', username: '$oauthtoken', password: PASSWORD, registry: 'nvcr.io' } }]);
    // No part of the password is shown: the credential is told by its name, user and registry.
    expect(printed).toBe('registry credential ngc (id 9) for user $oauthtoken at nvcr.io; deployments pulling from there use it with registry_credential_id: 9\n');
    expect(printed).not.toContain('6789');
    expect(JSON.parse((await run(['create', 'ngc', '--username', 'u', '--registry', 'nvcr.io', '--password-stdin', '-o', 'json'], PASSWORD)).printed)).toMatchObject({ id: 9, registry: 'nvcr.io' });
    expect((await run(['create', 'ngc', '--username', 'u', '--registry', 'nvcr.io', '--password-stdin', '-o', 'name'], PASSWORD)).printed).toBe('ngc\n');
  });

  it('create reads the password from --password-file', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-regcred-'));
    const file = path.join(dir, 'password.txt');
    await writeFile(file, `${PASSWORD}\r\n`);
    const { sent } = await run(['create', 'team', '--username', 'team', '--registry', 'registry.example.com:5000', '--password-file', file]);
    expect(sent[0]?.body).toEqual({ name: 'team', username: 'team', password: PASSWORD, registry: 'registry.example.com:5000' });
    await expect(run(['create', 'team', '--username', 'team', '--registry', 'r.example', '--password-file', path.join(dir, 'absent.txt')])).rejects.toThrow(/cannot read --password-file .*absent\.txt/);
  });

  const refusals: [string, string[], string, RegExp][] = [
    ['no password option', ['--username', 'u', '--registry', 'r.example'], PASSWORD, /no password: pipe it in with --password-stdin or name a file with --password-file FILE/],
    ['an empty standard input', ['--username', 'u', '--registry', 'r.example', '--password-stdin'], '\n', /no password on standard input/],
    ['several lines', ['--username', 'u', '--registry', 'r.example', '--password-stdin'], 'one\ntwo\n', /more than one line/],
    ['both sources', ['--username', 'u', '--registry', 'r.example', '--password-stdin', '--password-file', 'p.txt'], PASSWORD, /not both/],
  ];
  for (const [name, args, stdin, message] of refusals) {
    it(`create refuses ${name}, sending nothing`, async () => {
      const sent: Sent[] = [];
      const attempt = run(['create', 'x', ...args], stdin, sent);
      await expect(attempt).rejects.toThrow(UsageError);
      await expect(attempt).rejects.toThrow(message);
      expect(sent).toEqual([]);
    });
  }

  it('create takes no password on the command line, and needs --username and --registry', async () => {
    const plain = run(['create', 'x', '--username', 'u', '--registry', 'r.example', '--password', PASSWORD]);
    await expect(plain).rejects.toThrow(CommanderError);
    await expect(run(['create', 'x', '--username', 'u', '--registry', 'r.example', '--password', PASSWORD])).rejects.toThrow(/unknown option '--password'/);
    await expect(run(['create', 'x', '--registry', 'r.example', '--password-stdin'], PASSWORD)).rejects.toThrow(/--username/);
    await expect(run(['create', 'x', '--username', 'u', '--password-stdin'], PASSWORD)).rejects.toThrow(/--registry/);
  });

  it('bind sends the registry host by PATCH and says where the password goes', async () => {
    const { printed, sent } = await run(['bind', '7', 'ci.example.com']);
    expect(sent.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /vault/registry-credentials', 'PATCH /vault/registry-credentials/5']);
    expect(sent[1]?.body).toEqual({ registry: 'ci.example.com' });
    expect(printed).toBe('registry credential 7 (id 5) is bound to ci.example.com: its password is sent there only\n');
  });

  it('ls shows who pulls with each (by name), never a password; -o yaml and name for scripts', async () => {
    const lines = (await run(['ls'])).printed.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+USERNAME\s+REGISTRY\s+DEPLOYMENTS\s+CREATED$/);
    // The table names the deployments; JSON and YAML keep the API's ids.
    expect(lines[1]).toMatch(/^2\s+team-registry\s+team\s+registry\.example\.com:5000\s+chat\s+2026-01-05T10:00:00\.000Z$/);
    expect(lines[2]).toMatch(/^5\s+7\s+ci\s+none: not used until an admin binds it\s+-\s+/);
    expect((await run(['ls', '-o', 'yaml'])).printed).toContain('- id: 2\n  name: team-registry\n  username: team\n');
    expect((await run(['ls', '-o', 'name'])).printed).toBe('team-registry\n7\n');
  });

  it('get finds one by id or by name (an id first; a name of digits when no id matches)', async () => {
    expect(JSON.parse((await run(['get', 'team-registry', '-o', 'json'])).printed)).toEqual(team);
    expect(JSON.parse((await run(['get', '2', '-o', 'json'])).printed)).toEqual(team);
    expect(JSON.parse((await run(['get', '7', '-o', 'json'])).printed)).toEqual(numbered);
    expect(JSON.parse((await run(['get', '5', '-o', 'json'])).printed)).toEqual(numbered);
    await expect(run(['get', 'nope'])).rejects.toThrow(/no registry credential with the id or name nope \(infergate registry-credentials ls lists them\)/);
  });

  it('rm deletes by name or id, and passes on the refusal while a deployment pulls with it', async () => {
    const { printed, sent } = await run(['rm', '7']);
    expect(sent.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /vault/registry-credentials', 'DELETE /vault/registry-credentials/5']);
    expect(printed).toBe('registry credential 7 (id 5) deleted\n');
    const refused = run(['rm', 'team-registry']);
    await expect(refused).rejects.toBeInstanceOf(ApiRefusal);
    await expect(run(['rm', 'team-registry'])).rejects.toThrow(/used by chat: point them at other credentials first/);
  });

  it('completion knows the commands and their options', async () => {
    const { printed } = await runAgainst(api, ['completion', 'bash']);
    expect(printed).toMatch(/^ {4}"registry-credentials"\) words="create bind ls get rm /m);
    expect(printed).toMatch(/^ {4}"registry-credentials create"\) words="--username --registry --password-stdin --password-file /m);
  });
});

describe('registry credentials of a deployment', () => {
  const fromVault = deployment(3, 'chat', { registry_credential_id: 2, registry_username: null, has_registry_password: false });
  const gone = deployment(4, 'gone', { registry_credential_id: 8, registry_username: null, has_registry_password: false });
  const own = deployment(5, 'own', { registry_credential_id: null, registry_username: 'team', has_registry_password: true });
  const open = deployment(6, 'open', { registry_credential_id: null, registry_username: null, has_registry_password: false });
  const table: Record<string, unknown> = {
    '/deployments/general': { items: [fromVault, gone, own, open] },
    '/deployments/orchestrated': { items: [] },
    '/vault/registry-credentials/2': { id: 2, name: 'team-registry', username: 'team', registry: 'registry.example.com', created_at: '2026-01-05T10:00:00.000Z', deployments: [3] },
  };
  for (const id of [3, 4, 5, 6]) table[`/deployments/general/${id}/replicas`] = { items: [] };
  const describeLines = async (name: string) => (await runAgainst(getsFrom(table), ['describe', name])).printed.split('\n');

  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('describe names the vault credential it pulls with, or its own user, under Components', async () => {
    expect((await describeLines('chat')).slice(2, 5)).toEqual(['Revision:    1', 'Components:  Replica 1/1', 'Registry:    credential team-registry (vault)']);
    expect(await describeLines('gone')).toContain('Registry:    credential id 8 (vault)');
    expect(await describeLines('own')).toContain('Registry:    user team (set on the deployment)');
    expect((await describeLines('open')).some((l) => l.startsWith('Registry:'))).toBe(false);
    expect(JSON.parse((await runAgainst(getsFrom(table), ['describe', 'chat', '-o', 'json'])).printed)).toMatchObject({ registry_credential_id: 2 });
  });

  it('apply -f passes registry_credential_id through on create', async () => {
    const file = 'family: general\nname: fresh\nimage: team/engine\ncontainer_port: 8000\nregistry_credential_id: 2\n';
    const created = (sent: Sent): [number, unknown] | undefined =>
      sent.method === 'POST' ? [201, deployment(7, 'fresh', { registry_credential_id: 2 })] : getsFrom(table)(sent);
    const { printed, sent } = await runAgainst(created, ['apply', '-f', '-'], file);
    expect(sent.at(-1)).toEqual({ method: 'POST', path: '/deployments/general', body: { name: 'fresh', image: 'team/engine', container_port: 8000, registry_credential_id: 2 } });
    expect(printed).toBe('general/fresh created (revision 1)\n');
  });

  const file = (body: Record<string, unknown>) => ({ family: 'general' as const, name: 'x', body: { name: 'x', ...body } });

  it('apply compares it like any field, and moving to the vault clears the deployment\'s own username and password', () => {
    expect(patchFor(file({ registry_credential_id: 2 }), fromVault)).toEqual({});
    expect(patchFor(file({ registry_credential_id: 2 }), open)).toEqual({ registry_credential_id: 2 });
    expect(patchFor(file({ registry_credential_id: 2 }), own)).toEqual({ registry_credential_id: 2, registry_username: null, registry_password: null });
    expect(patchFor(file({ registry_credential_id: 2, registry_username: null, registry_password: null }), own)).toEqual({ registry_credential_id: 2, registry_username: null, registry_password: null });
  });

  it('moving back to its own username and password sends the password (it has none) and clears the vault credential', () => {
    expect(patchFor(file({ registry_username: 'team', registry_password: 'pw' }), fromVault)).toEqual({ registry_username: 'team', registry_password: 'pw', registry_credential_id: null });
    // Named explicitly, the file decides: giving both is the API's to refuse.
    expect(patchFor(file({ registry_credential_id: 2, registry_password: 'pw' }), open)).toEqual({ registry_credential_id: 2, registry_password: 'pw' });
  });

  it('diff says a write-only secret is set or removed, never its value', () => {
    const patch = patchFor(file({ registry_credential_id: 2 }), own);
    const lines = describeChanges({ kind: 'patch', desired: file({ registry_credential_id: 2 }), current: own, withheld: [], plan: classifyPatch(patch, 1) });
    expect(lines).toEqual(['  registry_credential_id: null → 2', '  registry_username: "team" → null', '  registry_password: set → removed (value not shown)']);
    const back = patchFor(file({ registry_username: 'team', registry_password: 'never-printed' }), fromVault);
    const text = describeChanges({ kind: 'patch', desired: file({}), current: fromVault, withheld: [], plan: classifyPatch(back, 1) }).join('\n');
    expect(text).toContain('registry_password: not set → set (value not shown)');
    expect(text).not.toContain('never-printed');
  });
});

describe('secrets a re-apply cannot compare', () => {
  const TOKEN = 'tok_chat_0123456789abcdef';
  const chat = deployment(3, 'chat', { endpoint_token_id: 1, secret_env: ['HF_TOKEN'], has_registry_password: true, has_model_hub_token: false });
  const mtlsOnly = deployment(4, 'mtls', { endpoint_token_id: null });
  const file = (name: string, body: Record<string, unknown>) => ({ family: 'general' as const, name, body: { name, ...body } });

  it('sends an endpoint token only when the deployment has none: no part of a token is shown to compare', () => {
    expect(patchFor(file('mtls', { endpoint_bearer_token: TOKEN }), mtlsOnly)).toEqual({ endpoint_bearer_token: TOKEN });
    expect(patchFor(file('chat', { endpoint_bearer_token: TOKEN }), chat)).toEqual({});
    expect(patchFor(file('chat', { endpoint_bearer_token: null }), chat)).toEqual({ endpoint_bearer_token: null });
  });

  it('names each secret of the file it does not send', () => {
    const body = { endpoint_bearer_token: TOKEN, registry_password: 'pw-never-printed', model_hub_token: 'hf_new', secret_env: { HF_TOKEN: 'v', NEW_KEY: 'w' } };
    const desired = file('chat', body);
    const patch = patchFor(desired, chat);
    // The model-hub token and NEW_KEY are new to the deployment: sent. The rest it has already.
    expect(patch).toEqual({ model_hub_token: 'hf_new', secret_env: { NEW_KEY: 'w' } });
    expect(withheldSecrets(desired, patch)).toEqual(['endpoint_bearer_token', 'registry_password', 'secret_env.HF_TOKEN']);
    // Null removes; nothing of the file is lost.
    expect(withheldSecrets(file('chat', { registry_password: null }), {})).toEqual([]);
  });

  it('says so in one line per deployment, naming the fields and what to do, never a value', () => {
    const current = chat;
    const lines = withheldWarnings(
      [
        { kind: 'unchanged', desired: file('chat', {}), current, withheld: ['registry_password', 'secret_env.HF_TOKEN'] },
        { kind: 'unchanged', desired: file('embed', {}), current, withheld: ['endpoint_bearer_token'] },
        { kind: 'unchanged', desired: file('quiet', {}), current, withheld: [] },
        { kind: 'create', desired: file('new', {}) },
      ],
      'chat.yaml',
    );
    expect(lines).toEqual([
      "warning: chat: registry_password and secret_env.HF_TOKEN in chat.yaml are not sent: chat has them already, and secrets cannot be read back to compare; if they changed, apply --replace-secrets sends the file's values",
      "warning: embed: endpoint_bearer_token in chat.yaml is not sent: embed has one already, and secrets cannot be read back to compare; if it changed, apply --replace-secrets sends the file's values",
    ]);
  });

  it('--replace-secrets sends every secret the file gives; a diff shows none of their characters', () => {
    const desired = file('chat', { endpoint_bearer_token: TOKEN, registry_password: 'pw-never-printed', secret_env: { HF_TOKEN: 'v' } });
    const context = { replaceSecrets: true };
    const patch = patchFor(desired, chat, context);
    expect(patch).toEqual({ endpoint_bearer_token: TOKEN, registry_password: 'pw-never-printed', secret_env: { HF_TOKEN: 'v' } });
    expect(withheldSecrets(desired, patch)).toEqual([]);
    const text = describeChanges({ kind: 'patch', desired, current: chat, withheld: [], plan: classifyPatch(patch, 1) }).join('\n');
    expect(text).toContain('  endpoint_bearer_token: set → set (value not shown)');
    expect(text).toContain('  registry_password: set → set (value not shown)');
    expect(text).not.toMatch(/never-printed|cdef|0123456789/);
  });

  it('planApply asks the vault nothing about the bound token: a token it has is withheld, and said so', async () => {
    const answers = { '/deployments/general': { items: [chat] }, '/deployments/orchestrated': { items: [] } };
    const sent: Sent[] = [];
    const client = new ApiClient({ api: 'http://api.test', key: 'key-0123456789', source: 'test' }, { request: standIn(getsFrom(answers), sent) });
    const [step] = await planApply(client, [file('chat', { endpoint_bearer_token: TOKEN })]);
    expect(sent.map((r) => r.path)).not.toContain('/vault/tokens/1');
    expect(step).toMatchObject({ kind: 'unchanged', withheld: ['endpoint_bearer_token'] });
    const [replaced] = await planApply(client, [file('chat', { endpoint_bearer_token: TOKEN })], { replaceSecrets: true });
    expect(replaced).toMatchObject({ kind: 'patch', withheld: [], plan: { patch: { endpoint_bearer_token: TOKEN }, effect: 'at_once' } });
  });
});

describe('lists that name deployments', () => {
  const tokens = { items: [{ id: 1, name: 'shared', created_at: '2026-01-05T10:00:00.000Z', deployments: [3, 9, 4] }, { id: 2, name: 'spare', max_priority: 'sheddable', created_at: '2026-01-05T10:00:00.000Z', deployments: [] }] };
  const answers = getsFrom({
    '/vault/tokens': tokens,
    '/deployments/general': { items: [deployment(3, 'chat', {})] },
    '/deployments/orchestrated': { items: [{ ...deployment(4, 'llm', {}), family: 'orchestrated' }] },
  });

  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('tokens ls names the deployments each token protects, of both families; one gone meanwhile by its id', async () => {
    const lines = (await runAgainst(answers, ['tokens', 'ls'])).printed.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+MAX PRIORITY\s+DEPLOYMENTS\s+CREATED$/);
    expect(lines[1]).toMatch(/^1\s+shared\s+any\s+chat, id 9, llm\s+2026-01-05T10:00:00\.000Z$/);
    expect(lines[2]).toMatch(/^2\s+spare\s+sheddable\s+-\s+/);
  });

  it('-o json keeps the API\'s ids and does not ask for the deployments', async () => {
    const { printed, sent } = await runAgainst(answers, ['tokens', 'ls', '-o', 'json']);
    expect(JSON.parse(printed)).toEqual(tokens.items);
    expect(sent.map((r) => r.path)).toEqual(['/vault/tokens']);
  });
});

describe('priority caps of credentials', () => {
  const answer: Answer = ({ method, path: route, body }) => {
    const cap = (body as { max_priority?: unknown } | undefined)?.max_priority ?? null;
    if (method === 'POST' && route === '/vault/tokens') return [201, { id: 4, name: 'batch', token: 'tok_secret_value', max_priority: cap, deployments: [] }];
    if (method === 'PATCH' && route === '/vault/tokens/4') return [200, { id: 4, name: 'batch', max_priority: cap, deployments: [] }];
    if (method === 'POST' && route === '/certificates') return [201, { id: 9, name: 'app2', fingerprint_sha256: 'ab', max_priority: cap, deployment_id: 3 }];
    if (method === 'PATCH' && route === '/certificates/9') return [200, { id: 9, name: 'app2', max_priority: cap }];
    if (method === 'GET' && route === '/certificates') return [200, { items: [{ id: 9, name: 'app2', not_after: '2027-01-01', revoked: false, max_priority: 'standard', deployments: [] }] }];
    return undefined;
  };

  it('tokens create and update send max_priority (none removes it) and say the cap', async () => {
    const created = await runAgainst(answer, ['tokens', 'create', 'batch', '--max-priority', 'sheddable']);
    expect(created.sent[0]).toMatchObject({ method: 'POST', body: { name: 'batch', max_priority: 'sheddable' } });
    expect(created.printed).toBe('token batch (id 4, requests capped at sheddable); its value, shown once:\ntok_secret_value\n');
    expect((await runAgainst(answer, ['tokens', 'create', 'batch'])).sent[0]!.body).toEqual({ name: 'batch' });
    const raised = await runAgainst(answer, ['tokens', 'update', '4', '--max-priority', 'critical']);
    expect(raised.sent[0]).toMatchObject({ method: 'PATCH', path: '/vault/tokens/4', body: { max_priority: 'critical' } });
    expect(raised.printed).toBe('token batch (id 4): requests capped at critical\n');
    const removed = await runAgainst(answer, ['tokens', 'update', '4', '--max-priority', 'none']);
    expect(removed.sent[0]!.body).toEqual({ max_priority: null });
    expect(removed.printed).toBe('token batch (id 4): no cap\n');
  });

  it('refuses an unknown class and an update without --max-priority before asking the API', async () => {
    await expect(runAgainst(answer, ['tokens', 'create', 'batch', '--max-priority', 'urgent'])).rejects.toThrow(/Allowed choices are critical, standard, sheddable/);
    await expect(runAgainst(answer, ['certs', 'update', '9'])).rejects.toThrow(/--max-priority <class>' not specified/);
  });

  it('certs create, update and ls carry the cap', async () => {
    const created = await runAgainst(answer, ['certs', 'create', 'app2', '--deployment', '3', '--max-priority', 'standard']);
    expect(created.sent[0]!.body).toEqual({ name: 'app2', deployment_id: 3, max_priority: 'standard' });
    expect((await runAgainst(answer, ['certs', 'update', '9', '--max-priority', 'none'])).printed).toBe('certificate app2 (id 9): no cap\n');
    const lines = (await runAgainst(answer, ['certs', 'ls'])).printed.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+EXPIRES\s+REVOKED\s+MAX PRIORITY\s+DEPLOYMENTS$/);
    expect(lines[1]).toMatch(/^9\s+app2\s+2027-01-01\s+no\s+standard\s+-$/);
  });
});

describe('flowControlText', () => {
  const DEFAULTS = { max_queue: 1000, max_wait_seconds: { critical: 60, standard: 30, sheddable: 5 } };
  it('says the queue and each class’s longest wait, and when they are the defaults', () => {
    expect(flowControlText({ flow_control: DEFAULTS, flow_control_is_default: true })).toBe(
      'up to 1000 requests wait past saturation; longest wait critical 60 s, standard 30 s, sheddable 5 s (the defaults)',
    );
    expect(flowControlText({ flow_control: { ...DEFAULTS, max_queue: 0 }, flow_control_is_default: false })).toBe('no queue: past saturation a request gets 429 at once');
    expect(flowControlText({})).toBeNull();
  });

  it('is a line of describe', async () => {
    const chat = deployment(3, 'chat', { flow_control: { ...DEFAULTS, max_queue: 20 }, flow_control_is_default: false });
    const text = (
      await runAgainst(getsFrom({ '/deployments/general': { items: [chat] }, '/deployments/orchestrated': { items: [] }, '/deployments/general/3/replicas': { items: [] } }), ['describe', 'chat'])
    ).printed;
    expect(text).toContain('\nQueue:       up to 20 requests wait past saturation; longest wait critical 60 s, standard 30 s, sheddable 5 s\n');
  });
});

describe("a person's saved session (infergate login --sso)", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  /** A context file with a session, and a stand-in API that knows one live session token at a time. */
  async function setUp(expiresAt: string) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ig-sso-'));
    dirs.push(dir);
    const file = path.join(dir, 'config.json');
    writeContexts(file, { current: 'work', contexts: { work: { api: 'http://api.test', key: 'igs_old', refresh_token: 'igr_old', expires_at: expiresAt, user: 'alice@example.com' } } });
    const state = { live: 'igs_old', refreshable: 'igr_old', calls: [] as string[] };
    const answer = (status: number, body: unknown) => ({ status, ok: status < 300, text: async () => JSON.stringify(body), json: async () => body });
    const request: Requester = async (url, options) => {
      const route = new URL(url).pathname;
      state.calls.push(`${options.method} ${route}`);
      if (route === '/auth/token') {
        const { refresh_token } = JSON.parse(options.body ?? '{}') as { refresh_token: string };
        if (refresh_token !== state.refreshable) return answer(401, { error: { code: 'unauthenticated', message: 'the identity provider refused the refresh (invalid_grant): sign in again (infergate login --sso)' } });
        state.live = 'igs_new';
        state.refreshable = 'igr_new';
        return answer(200, { session_token: 'igs_new', refresh_token: 'igr_new', expires_at: '2999-01-01T00:00:00.000Z', user: { id: 1, email: 'alice@example.com', name: null, groups: [] } });
      }
      if (options.headers.authorization !== `Bearer ${state.live}`) return answer(401, { error: { code: 'unauthenticated', message: 'session expired' } });
      return answer(200, { name: 'alice@example.com' });
    };
    const client = () => new ApiClient(resolveConnection({}, { INFERGATE_CONFIG: file }), { request });
    const saved = async () => JSON.parse(await (await import('node:fs/promises')).readFile(file, 'utf8')) as { contexts: Record<string, { key: string; refresh_token: string; expires_at: string }> };
    return { state, client, saved, file };
  }

  it('refreshes an expired session before the call and writes both new tokens back', async () => {
    const { state, client, saved } = await setUp('2000-01-01T00:00:00.000Z');
    expect(await client().get('/whoami')).toEqual({ name: 'alice@example.com' });
    expect(state.calls).toEqual(['POST /auth/token', 'GET /whoami']);
    expect((await saved()).contexts.work).toMatchObject({ key: 'igs_new', refresh_token: 'igr_new', expires_at: '2999-01-01T00:00:00.000Z' });
  });

  it('refreshes once when the API refuses the session, and retries the call', async () => {
    const { state, client } = await setUp('2999-01-01T00:00:00.000Z');
    // Its session ended early at the service (it knows another token now).
    state.live = 'igs_other';
    expect(await client().get('/whoami')).toEqual({ name: 'alice@example.com' });
    expect(state.calls).toEqual(['GET /whoami', 'POST /auth/token', 'GET /whoami']);
  });

  it('says to sign in again when the refresh is refused', async () => {
    const { state, client } = await setUp('2000-01-01T00:00:00.000Z');
    state.refreshable = 'igr_someone_else';
    const err = await client().get('/whoami').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiRefusal);
    expect((err as ApiRefusal).message).toMatch(/could not be renewed: .*sign in again/);
  });

  it('leaves a key given by flag or environment alone: no refresh with the saved token', async () => {
    const { file } = await setUp('2000-01-01T00:00:00.000Z');
    expect(resolveConnection({}, { INFERGATE_CONFIG: file }).session).toMatchObject({ context: 'work', refreshToken: 'igr_old' });
    expect(resolveConnection({ key: 'igk_automation' }, { INFERGATE_CONFIG: file }).session).toBeUndefined();
    expect(resolveConnection({}, { INFERGATE_CONFIG: file, INFERGATE_KEY: 'igk_automation' }).session).toBeUndefined();
  });
});
