import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { envScript } from './env-script.js';

/** What /bin/sh exports after sourcing the script, read back as Node sees its environment. */
function exported(script: string): Record<string, string> {
  const out = spawnSync('/bin/sh', ['-c', `eval "$1"; exec "$2" -e 'process.stdout.write(JSON.stringify(process.env))'`, 'test', script, process.execPath], {
    env: {},
    encoding: 'utf8',
  });
  expect(out.status, out.stderr).toBe(0);
  return JSON.parse(out.stdout) as Record<string, string>;
}

describe('envScript', () => {
  it('round-trips values through a real shell, quotes, newlines, $ and backslashes included', () => {
    const env = {
      PLAIN: 'value',
      QUOTES: `it's "quoted" ''`,
      LINES: 'first\nsecond\n',
      DOLLAR: '$HOME ${PATH} $(id) `id`',
      BACKSLASH: 'a\\nb\\',
      EMPTY: '',
      UNICODE: 'naïve — 模型',
    };
    const { script, skipped } = envScript(env);
    expect(skipped).toEqual([]);
    expect(exported(script)).toMatchObject(env);
  });

  it('leaves out names no shell can export, and values with NUL', () => {
    const { script, skipped } = envScript({ 'BAD-NAME': 'x', '1ST': 'x', OK: 'y', NUL: 'a\0b' });
    expect(skipped).toEqual(['BAD-NAME', '1ST', 'NUL']);
    expect(script).toBe("export OK='y'\n");
  });

  it('cannot be made to run a command by a value', () => {
    const { script } = envScript({ X: "'; touch /tmp/never-$$; '" });
    expect(exported(script).X).toBe("'; touch /tmp/never-$$; '");
  });
});
