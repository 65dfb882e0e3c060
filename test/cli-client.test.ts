// The command-line client against a real `infergate serve` on free ports, as an operator uses
// it: login with the key on stdin, then ls; apply of a file with two deployments, re-applied
// unchanged, then with a replica change (scaled in place) and a command change (revision 2);
// wait --for ready; logs -f printing a line written after it started; exec with the exit
// status passed on; usage as JSON; a refusal printing its field with exit 1; an unreachable
// API with exit 3; a usage error with exit 2; lists read page by page (ls --chunk-size, one
// page with --limit and the next with --continue).

import { killChildren, runToEnd, type ChildRun } from './helpers/child-process.js';
import { waitFor } from './helpers/wait.js';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generalBody } from './helpers/control.js';
import { freePort } from './helpers/ports.js';
import { FAST_ENGINE, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from './helpers/platform.js';
import { CLI, spawnCli } from './helpers/serve-process.js';

let platform: Platform;
usePlatform('cli', ['--autoscale-stable-window', '4', '--autoscale-panic-window', '2', '--drain-timeout', '2', '--stop-grace', '2'], (p) => (platform = p));

let home: string;
let env: Record<string, string>;
const children: ChildProcess[] = [];

beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'infergate-cli-'));
  env = { INFERGATE_CONFIG: path.join(home, 'config', 'infergate.json'), NO_COLOR: '1', INFERGATE_API: '', INFERGATE_KEY: '' };
});
afterAll(async () => {
  await killChildren(children);
  await rm(home, { recursive: true, force: true });
});

type Run = ChildRun;

/** Runs `infergate …` to its end. */
function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  const child = spawnCli(args, { ...env, ...extraEnv });
  children.push(child);
  return runToEnd(child);
}

/** spawnCli's stdin is closed; login reads the key from it, so this one gets a pipe. */
async function login(): Promise<Run> {
  const { spawn } = await import('node:child_process');
  const child = spawn(CLI[0] as string, [...CLI.slice(1), 'login', '--api', platform.apiUrl], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  child.stdin.end(`${PLATFORM_ADMIN_KEY}\n`);
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

function spec(name: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { family: 'general', ...generalBody(name, `tok_${name}_0123456789abcdef`), command: FAST_ENGINE, env: { GREETING: `hello from ${name}` }, ...over };
}

async function writeSpecs(file: string, docs: Record<string, unknown>[]): Promise<string> {
  const target = path.join(home, file);
  // YAML, as operators keep it: one document per deployment.
  const { stringify } = await import('yaml');
  await writeFile(target, docs.map((d) => stringify(d)).join('---\n'));
  return target;
}

describe('infergate client', () => {
  it('logs in with the key on stdin (file mode 0600), then lists and says who it is', async () => {
    const r = await login();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/logged in to http:\/\/127\.0\.0\.1:\d+ as admin \(admin\)/);
    expect((await stat(env.INFERGATE_CONFIG!)).mode & 0o777).toBe(0o600);
    const ls = await cli(['ls']);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toBe('nothing here\n');
    const me = await cli(['whoami', '-o', 'json']);
    expect(JSON.parse(me.stdout)).toMatchObject({ name: 'admin', role: 'admin' });
  });

  it('applies two deployments, re-applies unchanged, scales in place, then makes revision 2', async () => {
    const file = await writeSpecs('two.yaml', [spec('cli-a'), spec('cli-b')]);
    const first = await cli(['apply', '-f', file, '--wait', '--timeout', '60']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('general/cli-a created (revision 1)');
    expect(first.stdout).toContain('general/cli-b created (revision 1)');
    expect(first.stdout).toMatch(/cli-a is ready \(revision 1; Replica 1\/1\)/);

    const again = await cli(['apply', '-f', file]);
    expect(again.stdout).toBe('general/cli-a unchanged\ngeneral/cli-b unchanged\n');

    const scaled = await writeSpecs('scaled.yaml', [spec('cli-a', { max_replicas: 3 }), spec('cli-b')]);
    const plan = await cli(['apply', '-f', scaled, '--dry-run']);
    expect(plan.stdout).toContain('general/cli-a: Scales in place; no new revision (max_replicas).');
    const diff = await cli(['diff', '-f', scaled]);
    expect(diff.stdout).toContain('  max_replicas: 2 → 3');
    const scaledRun = await cli(['apply', '-f', scaled]);
    expect(scaledRun.stdout).toContain('general/cli-a scaled in place, no new revision (max_replicas)');
    expect(JSON.parse((await cli(['get', 'cli-a', '-o', 'json'])).stdout)).toMatchObject({ revision: 1, max_replicas: 3 });

    const changed = await writeSpecs('changed.yaml', [spec('cli-a', { max_replicas: 3, command: [...FAST_ENGINE, '--max-running', '4'] }), spec('cli-b')]);
    const revised = await cli(['apply', '-f', changed]);
    expect(revised.code, revised.stderr).toBe(0);
    expect(revised.stdout).toContain('general/cli-a revision 2 rolling out (command changed)');
    expect(revised.stdout).toContain('general/cli-b unchanged');

    const waited = await cli(['wait', 'cli-a', '--for', 'ready', '--timeout', '60']);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toMatch(/^cli-a is ready \(revision 2; Replica \d\/\d\)\n$/);
    const revisions = await cli(['revisions', 'cli-a', '-o', 'json']);
    expect((JSON.parse(revisions.stdout) as { revision: number }[]).map((r) => r.revision)).toEqual([1, 2]);
  }, 120_000);

  it('follows logs: a line written after `logs -f` started is printed', async () => {
    const child = spawnCli(['logs', 'cli-b', '-f', '--tail', '0'], env);
    children.push(child);
    let stdout = '';
    child.stdout?.on('data', (b: Buffer) => (stdout += b.toString()));
    // With --tail 0 nothing from before is printed: a request line can only come from the
    // stream. Requests are made until one shows, since the CLI takes a moment to connect.
    const client = platform.client('cli-b', 'tok_cli-b_0123456789abcdef');
    await waitFor(
      async () => {
        await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }] });
        return /POST \/v1\/chat\/completions 200/.test(stdout);
      },
      20_000,
      'a request line from the log stream',
      500,
    ).catch(() => undefined); // the expectation below says what was printed instead
    expect(stdout).toMatch(/^cli-b-r1-\d+ .*POST \/v1\/chat\/completions 200/m);
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(0);
  }, 30_000);

  it('runs one command in a replica with exec, passing its output and exit status on', async () => {
    const printed = await cli(['exec', 'cli-b', '--', 'printenv', 'GREETING']);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toBe('hello from cli-b\n');
    const failing = await cli(['exec', 'cli-b', '--', 'sh', '-c', 'exit 3']);
    expect(failing.code).toBe(3);
  }, 30_000);

  it('prints usage as JSON', async () => {
    // Usage is flushed to the store every couple of seconds, so the requests made above show
    // up within a flush or two, not at once: the CLI is asked until they do.
    type Usage = { totals: { requests: number }; hours: unknown[] };
    const parsed = await waitFor(
      async () => {
        const usage = await cli(['usage', 'cli-b', '-o', 'json']);
        expect(usage.code, usage.stderr).toBe(0);
        const body = JSON.parse(usage.stdout) as Usage;
        return body.totals.requests >= 1 && body;
      },
      15_000,
      'the requests above in usage',
      250,
    );
    expect(parsed.hours.length).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it('prints a refusal with its field and exits 1; a wrong command line exits 2; an unreachable API exits 3', async () => {
    const bad = await writeSpecs('bad.yaml', [spec('cli-bad', { min_replicas: 5, max_replicas: 2 })]);
    const refused = await cli(['apply', '-f', bad]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^infergate: error: max_replicas .+ \(400 [a-z_]+\)\ninfergate: field: max_replicas\n$/);

    const usage = await cli(['scale', 'cli-a']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('give --min, --max, --autoscaling-metric or --autoscaling-target');
    const missing = await cli(['get']);
    expect(missing.code).toBe(2);

    const port = await freePort();
    const down = await cli(['ls', '--api', `http://127.0.0.1:${port}`, '--key', 'whatever-key-0123456789']);
    expect(down.code).toBe(3);
    expect(down.stderr).toMatch(/cannot reach the control API at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });

  it('manages tokens and certificates, and lists clusters and presets, in each output format', async () => {
    const token = await cli(['tokens', 'create', 'cli-token', '-o', 'json']);
    expect(token.code, token.stderr).toBe(0);
    const created = JSON.parse(token.stdout) as { id: number; token: string };
    expect(created.token.length).toBeGreaterThan(16);
    expect((await cli(['tokens', 'ls', '-o', 'name'])).stdout).toContain('cli-token\n');
    expect((await cli(['tokens', 'rm', String(created.id)])).stdout).toBe(`token ${created.id} deleted\n`);
    const cert = await cli(['certs', 'create', 'cli-cert', '-o', 'yaml']);
    const certId = Number(/^id: (\d+)$/m.exec(cert.stdout)?.[1]);
    const pem = await cli(['certs', 'pem', String(certId)]);
    expect(pem.stdout).toMatch(/-----BEGIN CERTIFICATE-----[\s\S]+-----BEGIN (RSA |EC )?PRIVATE KEY-----/);
    const clusters = await cli(['clusters']);
    expect(clusters.stdout.split('\n')[0]).toMatch(/^CLUSTER\s+HARDWARE\s+GPUS\s+INSTANCES$/);
    expect((await cli(['presets', '-o', 'name'])).stdout).toMatch(/^vllm$/m);
    const zsh = await cli(['completion', 'zsh']);
    expect(zsh.stdout).toMatch(/^#compdef infergate/);
  }, 60_000);

  it('deletes and waits until it is gone; completion scripts name the commands', async () => {
    const deleted = await cli(['delete', 'cli-a', '--wait', '--timeout', '60']);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe('cli-a deleted\ncli-a is deleted; its replicas drain and stop in the background\n');
    const ls = await cli(['ls', '-o', 'name']);
    expect(ls.stdout).toBe('cli-b\n');
    const bash = await cli(['completion', 'bash']);
    expect(bash.stdout).toContain('complete -F _infergate infergate');
    expect(bash.stdout).toMatch(/^ {4}""\) words="[^"]*\bapply\b[^"]*\blogs\b[^"]*\bexec\b/m);
    expect(bash.stdout).toMatch(/^ {4}"tokens"\) words="create ls rm /m);
  }, 90_000);

  it('follows pages: ls reads every page, --limit prints one and --continue the next, get asks for one name', async () => {
    const names = ['cli-p1', 'cli-p2', 'cli-p3', 'cli-p4', 'cli-p5'];
    for (const name of names) {
      const made = await platform.call('POST', '/deployments/general', { ...generalBody(name, `tok_${name}_0123456789abcdef`), command: FAST_ENGINE, min_replicas: 0, max_replicas: 1 });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
    }
    const everything = ['cli-b', ...names];
    const all = await cli(['ls', '--chunk-size', '2', '-o', 'name']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe(everything.map((n) => `${n}\n`).join(''));

    const first = await cli(['ls', '--limit', '4', '-o', 'name']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.split('\n').filter(Boolean)).toHaveLength(4);
    const token = /^more deployments: infergate ls --limit 4 --continue (\S+)$/m.exec(first.stderr)?.[1];
    expect(token, first.stderr).toBeDefined();
    const second = await cli(['ls', '--limit', '4', '--continue', token!, '-o', 'name']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toMatch(/more deployments/);
    expect([...first.stdout.split('\n'), ...second.stdout.split('\n')].filter(Boolean).sort()).toEqual(everything);

    const page = JSON.parse((await cli(['ls', '--limit', '2', '-o', 'json'])).stdout) as { items: { name: string }[]; continue?: string };
    expect(page.items).toHaveLength(2);
    expect(page.continue).toMatch(/^general:/);
    const bad = await cli(['ls', '--limit', '2', '--continue', 'general:tampered']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/continue/);

    const got = await cli(['get', 'cli-p3', '-o', 'json']);
    expect(JSON.parse(got.stdout)).toMatchObject({ name: 'cli-p3', family: 'general' });
    for (const name of names) expect((await cli(['delete', name])).code).toBe(0);
  }, 90_000);
});
