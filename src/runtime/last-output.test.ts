// What a replica last said: the last stdout or stderr line of its log file (the runtime's own
// notes skipped, a torn line skipped), found from the end of a large file; null without a log;
// terminal escapes and control characters taken out, a long line cut.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { logFilePath } from './log-files.js';
import { lastOutputLine, printable } from './last-output.js';

let dir: string;
const at = { deploymentId: 3, revision: 1, component: 'Replica', replica: 'web-r1-7' };
const entry = (stream: string, line: string) => JSON.stringify({ time: '2026-03-01T12:00:00.000Z', stream, line });

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-last-output-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('lastOutputLine', () => {
  it('is the last line the process wrote, not the runtime\'s notes, read from the end of a large file', async () => {
    const file = logFilePath(dir, at);
    await mkdir(path.dirname(file), { recursive: true });
    const filler = Array.from({ length: 5000 }, (_, i) => entry('stdout', `loading shard ${i}`));
    await writeFile(file, [...filler, entry('stderr', '  Error: CUDA out of memory  '), entry('stdout', ''), entry('runtime', 'process 9 exited with code 1'), '{"torn'].join('\n'));
    expect(await lastOutputLine(dir, at)).toBe('Error: CUDA out of memory');
  });

  it('is null without a log (logging off) or with nothing the process said', async () => {
    expect(await lastOutputLine(dir, at)).toBeNull();
    const file = logFilePath(dir, at);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, entry('runtime', 'started process 9') + '\n');
    expect(await lastOutputLine(dir, at)).toBeNull();
  });
});

describe('printable', () => {
  it.each([
    ['plain', 'Error: no GPU', 'Error: no GPU'],
    ['colour codes', '\x1b[31mError:\x1b[0m no GPU', 'Error: no GPU'],
    ['a title-setting sequence', '\x1b]0;pwned\x07Error', 'Error'],
    ['C0 and C1 controls', 'a\rb\x00c\u009bd\x7f', 'abcd'],
    ['nothing left', '\x1b[2J', ''],
  ])('%s', (_name, line, expected) => {
    expect(printable(line)).toBe(expected);
  });

  it('cuts a long line to 300 characters', () => {
    const cut = printable('x'.repeat(1000));
    expect(cut).toHaveLength(300);
    expect(cut.endsWith('…')).toBe(true);
  });
});
