// Table tests of the command-line module the three programs share: flag > environment >
// default, switches from the environment, each reader's refusals naming the flag in the
// program's own error class, parseArgs' mistakes on one line, and the help rows.

import { describe, expect, it } from 'vitest';
import { Flags, helpText, listChoices, type Program } from './flags.js';

class DemoError extends Error {
  override name = 'DemoError';
}

const DEMO: Program = {
  name: 'demo',
  error: DemoError,
  flags: [
    { flag: 'port', env: 'DEMO_PORT', default: '8000', help: 'listen port' },
    { flag: 'name', default: '', help: 'a name' },
    { flag: 'ratio', default: '0.5', help: 'a ratio' },
    { flag: 'mode', default: 'fast', help: 'fast | slow' },
    { flag: 'size', default: '16MiB', help: 'a size' },
    { flag: 'log-level', default: 'info', help: 'pino log level' },
    { flag: 'verbose', env: 'DEMO_VERBOSE', default: '', boolean: true, help: 'say more' },
  ],
};

const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => Flags.parse(DEMO, argv, env);

describe('Flags', () => {
  const precedence: { name: string; argv: string[]; env: NodeJS.ProcessEnv; port: number }[] = [
    { name: 'the default', argv: [], env: {}, port: 8000 },
    { name: 'the environment over the default', argv: [], env: { DEMO_PORT: '9000' }, port: 9000 },
    { name: 'an empty environment value as unset', argv: [], env: { DEMO_PORT: '' }, port: 8000 },
    { name: 'the flag over the environment', argv: ['--port', '7000'], env: { DEMO_PORT: '9000' }, port: 7000 },
  ];
  for (const c of precedence) it(`takes ${c.name}`, () => expect(parse(c.argv, c.env).port('port')).toBe(c.port));

  const switches: { argv: string[]; env: NodeJS.ProcessEnv; on: boolean }[] = [
    { argv: [], env: {}, on: false },
    { argv: ['--verbose'], env: {}, on: true },
    { argv: [], env: { DEMO_VERBOSE: 'yes' }, on: true },
    { argv: [], env: { DEMO_VERBOSE: '0' }, on: false },
  ];
  for (const c of switches) it(`reads the switch from ${JSON.stringify(c)}`, () => expect(parse(c.argv, c.env).enabled('verbose')).toBe(c.on));

  const refusals: { read: (f: Flags) => unknown; argv: string[]; env?: NodeJS.ProcessEnv; message: string }[] = [
    { read: (f) => f.port('port'), argv: ['--port', 'http'], message: '--port must be a whole number, not "http"' },
    { read: (f) => f.port('port'), argv: ['--port', '70000'], message: '--port must be between 0 and 65535, not 70000' },
    { read: (f) => f.decimal('ratio', 0, 1), argv: ['--ratio=-1'], message: '--ratio must be a non-negative number, not "-1"' },
    { read: (f) => f.decimal('ratio', 0, 1), argv: ['--ratio', '1.5'], message: '--ratio must be between 0 and 1, not 1.5' },
    { read: (f) => f.oneOf('mode', ['fast', 'slow']), argv: ['--mode', 'warp'], message: '--mode must be fast or slow, not "warp"' },
    { read: (f) => f.logLevel(), argv: ['--log-level', 'loud'], message: '--log-level must be fatal, error, warn, info, debug, trace or silent, not "loud"' },
    { read: (f) => f.size('size'), argv: ['--size', '12 parsecs'], message: '--size must be a size such as 1048576, 512KiB, 16MiB or 1GiB, not "12 parsecs"' },
    { read: (f) => f.size('size'), argv: ['--size', '1'], message: '--size must be between 1KiB and 64GiB, not "1"' },
    { read: (f) => f.required('name'), argv: [], message: '--name must not be empty' },
    { read: (f) => f.enabled('verbose'), argv: [], env: { DEMO_VERBOSE: 'maybe' }, message: 'DEMO_VERBOSE must be 1, true or yes (or 0, false, no), not "maybe"' },
  ];
  for (const c of refusals) {
    it(`refuses: ${c.message}`, () => {
      const f = parse(c.argv, c.env);
      expect(() => c.read(f)).toThrow(DemoError);
      expect(() => c.read(f)).toThrow(c.message);
    });
  }

  it('reads sizes in binary and decimal units', () => {
    expect(parse(['--size', '512KiB']).size('size')).toBe(512 * 1024);
    expect(parse(['--size', '2MB']).size('size')).toBe(2_000_000);
    expect(parse([]).size('size')).toBe(16 * 1024 * 1024);
  });

  it('reports parseArgs mistakes on one line, pointing at --help', () => {
    expect(() => parse(['--nope'])).toThrow(DemoError);
    expect(() => parse(['--nope'])).toThrow(/^Unknown option '--nope'.* \(see infergate demo --help\)$/);
    expect(() => parse(['--port'])).toThrow(/^Option '--port <value>' argument missing \(see infergate demo --help\)$/);
    expect(() => parse(['stray'])).toThrow(/Unexpected argument 'stray'.*\(see infergate demo --help\)$/);
  });

  it('treats an empty optional value as null', () => {
    expect(parse([]).optional('name')).toBeNull();
    expect(parse(['--name', 'x']).optional('name')).toBe('x');
  });
});

describe('helpText', () => {
  it('prints usage, intro, one row per flag with its default and env, and the outro', () => {
    const lines = helpText(DEMO, { width: 10, intro: ['Intro.'], outro: ['Outro.'] }).split('\n');
    expect(lines.slice(0, 4)).toEqual(['usage: infergate demo [options]', '', 'Intro.', '']);
    expect(lines).toContain('  --port       listen port [default: 8000] (env DEMO_PORT)');
    expect(lines).toContain('  --name       a name');
    expect(lines.slice(-2)).toEqual(['', 'Outro.']);
  });
});

describe('listChoices', () => {
  it('lists choices as a sentence would', () => {
    expect([listChoices(['a']), listChoices(['a', 'b']), listChoices(['a', 'b', 'c'])]).toEqual(['a', 'a or b', 'a, b or c']);
  });
});
