// The command-line client as a new user lives it, against a real `infergate serve`, one child
// process per command: `ls` shows each deployment's AGE; `tokens ls` names the deployments each
// token protects; a secret apply cannot compare — an endpoint token too, of which no part is
// shown — is named in a warning on stderr and sent with --replace-secrets (a rotated token is
// then accepted at the gateway, the old one refused); and the bash completion script
// completes deployment names from the API — nothing, and soon, when the API is down or silent.

import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { generalBody } from './helpers/control.js';
import { DIST_MAIN, ROOT } from './helpers/dist-build.js';
import { FAST_ENGINE, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from './helpers/platform.js';
import { freePort } from './helpers/ports.js';
import { spawnCli } from './helpers/serve-process.js';
import { killChildren, runToEnd, type ChildRun } from './helpers/child-process.js';

let platform: Platform;
usePlatform('cli-usability', ['--drain-timeout', '2', '--stop-grace', '2'], (p) => (platform = p));

let home: string;
let env: Record<string, string>;
const children: ChildProcess[] = [];

beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'infergate-cli-usability-'));
  env = { INFERGATE_CONFIG: path.join(home, 'config.json'), NO_COLOR: '1', INFERGATE_API: platform.apiUrl, INFERGATE_KEY: PLATFORM_ADMIN_KEY };
});
afterAll(async () => {
  await killChildren(children);
  await rm(home, { recursive: true, force: true });
});

type Run = ChildRun;

function collect(child: ChildProcess): Promise<Run> {
  children.push(child);
  return runToEnd(child);
}

const cli = (args: string[]): Promise<Run> => collect(spawnCli(args, env));

const TOKEN_A = 'tok_use-a_0123456789abcdef';
const ROTATED_A = 'tok_use-a_rotated_0123456789';

/** A deployment file as a user keeps it: the API's create body plus family, in YAML. */
async function writeSpec(file: string, docs: Record<string, unknown>[]): Promise<string> {
  const target = path.join(home, file);
  await writeFile(target, docs.map((d) => stringify(d)).join('---\n'));
  return target;
}

function useA(token: string, secret: string): Record<string, unknown> {
  return { family: 'general', ...generalBody('use-a', token), max_replicas: 1, command: FAST_ENGINE, secret_env: { API_SECRET: secret } };
}

/** use-a's file without one field: a field left out keeps its value. */
function useAWithout(field: 'endpoint_bearer_token' | 'secret_env', token: string, secret: string): Record<string, unknown> {
  const { [field]: _left, ...rest } = useA(token, secret);
  return rest;
}

/** A deployment bound to a vault token by id, with no replica running (min 0). */
function boundTo(name: string, tokenId: number): Record<string, unknown> {
  const { endpoint_bearer_token: _value, ...body } = generalBody(name, 'unused-0123456789');
  return { family: 'general', ...body, min_replicas: 0, max_replicas: 1, command: FAST_ENGINE, endpoint_token_id: tokenId };
}

/** The cell of a table row under a header, for the borderless tables the client prints. */
function cell(table: string, rowStart: string, header: string): string {
  const lines = table.trimEnd().split('\n');
  const at = lines[0]!.indexOf(header);
  const row = lines.find((l) => l.startsWith(`${rowStart} `));
  if (at < 0 || !row) throw new Error(`no ${header} for ${rowStart} in:\n${table}`);
  return row.slice(at).split(/\s{2,}/)[0]!.trim();
}

/** The status a chat request with `token` gets through the gateway. */
async function statusWith(token: string): Promise<number> {
  try {
    await platform.client('use-a', token).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }] });
    return 200;
  } catch (err) {
    return (err as { status?: number }).status ?? 0;
  }
}

describe('infergate for a new user', () => {
  let fileA: string;

  it('ls shows how old each deployment is (AGE); tokens ls names the deployments each token protects', async () => {
    const token = await cli(['tokens', 'create', 'shared', '-o', 'json']);
    expect(token.code, token.stderr).toBe(0);
    const shared = JSON.parse(token.stdout) as { id: number };
    const bound = await cli(['apply', '-f', await writeSpec('bound.yaml', [boundTo('use-b', shared.id), boundTo('use-c', shared.id)])]);
    expect(bound.code, bound.stderr).toBe(0);
    fileA = await writeSpec('use-a.yaml', [useA(TOKEN_A, 'first-secret-value')]);
    const created = await cli(['apply', '-f', fileA, '--wait', '--timeout', '90']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('general/use-a created (revision 1)');

    const ls = await cli(['ls']);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout.split('\n')[0]).toMatch(/^NAME\s+FAMILY\s+STATUS\s+COMPONENTS\s+REVISION\s+ENDPOINT\s+AGE\s+REASON$/);
    for (const name of ['use-a', 'use-b', 'use-c']) expect(cell(ls.stdout, name, 'AGE')).toMatch(/^\d+[sm]$/);

    const tokens = await cli(['tokens', 'ls']);
    expect(tokens.code, tokens.stderr).toBe(0);
    expect(cell(tokens.stdout, String(shared.id), 'DEPLOYMENTS')).toBe('use-b, use-c');
    // A token given by value on create is kept in the vault as <deployment>-endpoint.
    const own = tokens.stdout.split('\n').find((l) => /\suse-a-endpoint\s/.test(l));
    expect(own, tokens.stdout).toMatch(/\suse-a-endpoint\s+any\s+use-a\s/);
    // No part of a token is shown.
    expect(tokens.stdout).not.toContain('cdef');
  }, 150_000);

  it('re-applying a file whose endpoint token changed names it in a warning; --replace-secrets sends it: the new token is accepted, the old one refused', async () => {
    await expect.poll(() => statusWith(TOKEN_A), { timeout: 20_000 }).toBe(200);
    const rotated = await writeSpec('use-a-token.yaml', [useAWithout('secret_env', ROTATED_A, '')]);
    const warned = await cli(['apply', '-f', rotated]);
    expect(warned.code, warned.stderr).toBe(0);
    expect(warned.stdout).toBe('general/use-a unchanged\n');
    expect(warned.stderr).toBe(
      `infergate: warning: use-a: endpoint_bearer_token in ${rotated} is not sent: use-a has one already, and secrets cannot be read back to compare; ` +
        "if it changed, apply --replace-secrets sends the file's values\n",
    );
    const diff = await cli(['diff', '-f', rotated, '--replace-secrets']);
    expect(diff.stdout).toContain('  endpoint_bearer_token: set → set (value not shown)');
    expect(diff.stdout + diff.stderr).not.toMatch(/rotated|6789|cdef/);
    const applied = await cli(['apply', '-f', rotated, '--replace-secrets']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toBe('general/use-a changed at once, no revision (endpoint_bearer_token)\n');
    expect(applied.stderr).toBe('');
    await expect.poll(() => statusWith(ROTATED_A), { timeout: 20_000 }).toBe(200);
    await expect.poll(() => statusWith(TOKEN_A), { timeout: 20_000 }).toBe(401);
  }, 90_000);

  it('a secret apply cannot compare is named in one warning line on stderr; --replace-secrets sends it', async () => {
    const changed = await writeSpec('use-a.yaml', [useAWithout('endpoint_bearer_token', ROTATED_A, 'second-secret-value')]);
    const warned = await cli(['apply', '-f', changed]);
    expect(warned.code, warned.stderr).toBe(0);
    expect(warned.stdout).toBe('general/use-a unchanged\n');
    expect(warned.stderr).toBe(
      `infergate: warning: use-a: secret_env.API_SECRET in ${changed} is not sent: use-a has one already, and secrets cannot be read back to compare; ` +
        "if it changed, apply --replace-secrets sends the file's values\n",
    );
    expect(warned.stderr).not.toContain('second-secret-value');
    // diff and --dry-run say the same before anything is sent.
    expect((await cli(['apply', '-f', changed, '--dry-run'])).stderr).toContain('secret_env.API_SECRET');

    const replaced = await cli(['apply', '-f', changed, '--replace-secrets']);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stdout).toBe('general/use-a revision 2 rolling out (secret_env changed)\n');
    expect(replaced.stderr).toBe('');
  }, 60_000);

  describe('bash completion', () => {
    let script: string;
    let bin: string;

    beforeAll(async () => {
      const generated = await cli(['completion', 'bash']);
      expect(generated.code, generated.stderr).toBe(0);
      script = path.join(home, 'infergate.bash');
      await writeFile(script, generated.stdout);
      // `infergate` on PATH, as an installed one would be: this checkout's compiled CLI.
      bin = path.join(home, 'bin');
      await mkdir(bin, { recursive: true });
      await writeFile(path.join(bin, 'infergate'), `#!/bin/sh\nexec "${process.execPath}" "${DIST_MAIN}" "$@"\n`);
      await chmod(path.join(bin, 'infergate'), 0o755);
    });

    /** What <Tab> offers at the end of `line` in bash: the script sourced, the completion function called as bash would. */
    async function complete(line: string): Promise<string[]> {
      const program = [
        'source "$1"',
        'COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}',
        'read -ra COMP_WORDS <<< "$COMP_LINE"',
        '[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")',
        'COMP_CWORD=$((${#COMP_WORDS[@]} - 1))',
        '_infergate',
        'printf "%s\\n" "${COMPREPLY[@]}"',
      ].join('\n');
      const child = spawn('bash', ['-c', program, 'bash', script, line], {
        cwd: ROOT,
        env: { ...process.env, ...env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const done = await collect(child);
      expect(done.code, done.stderr).toBe(0);
      return done.stdout.split('\n').filter(Boolean);
    }

    it('completes deployment names for the commands that take one, from the API', async () => {
      expect(await complete('infergate describe use-')).toEqual(['use-a', 'use-b', 'use-c']);
      expect(await complete('infergate describe use-b')).toEqual(['use-b']);
      // -f is --follow for logs (no value), so the next word is the name.
      expect(await complete('infergate logs -f ')).toEqual(expect.arrayContaining(['use-a', 'use-b', 'use-c']));
      expect(await complete('infergate --context nowhere --api http://unused.invalid describe ')).toEqual([]);
      // Only the first argument is a name: clone's second is a new one.
      const second = await complete('infergate clone use-a ');
      expect(second).toContain('--token');
      expect(second.some((w) => w.startsWith('use-'))).toBe(false);
      expect(await complete('infergate get use-a -o ')).toEqual(['table', 'json', 'yaml', 'name']);
      expect(await complete('infergate tokens ')).toEqual(expect.arrayContaining(['create', 'ls', 'rm']));
    }, 60_000);

    it('offers nothing, and soon, when the API is down or does not answer', async () => {
      expect(await complete(`infergate --api http://127.0.0.1:${await freePort()} describe `)).toEqual([]);
      const silent = net.createServer(() => undefined);
      const port = await freePort();
      await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', resolve));
      try {
        const started = Date.now();
        expect(await complete(`infergate --api http://127.0.0.1:${port} describe `)).toEqual([]);
        // A request's usual limit is 30 s; completion gives up after 1.5 s (plus start-up).
        expect(Date.now() - started).toBeLessThan(15_000);
      } finally {
        silent.close();
      }
    }, 60_000);
  });
});
