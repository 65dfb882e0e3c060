// `infergate usage` against a stand-in API (the client's requester replaced): the hours and the
// total as a table; a per-revision table after it only when more than one revision has usage
// in the window, with the requests that reached no replica said apart; a single revision, a
// server that sends no revisions, or -o json print as before (json as the API sent it).

import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from './commands.js';
import type { Requester } from './http-request.js';
import type { UsageView } from './usage-text.js';

const chat = { id: 3, family: 'general', name: 'chat', status: 'ready', revision: 2, serving_revision: 1, components: {}, revisions: [] };

const figures = (requests: number, errors: number, prompt: number, completion: number, gpu: number) => ({ requests, errors, prompt_tokens: prompt, completion_tokens: completion, gpu_seconds: gpu });
const hour = (at: string, f: ReturnType<typeof figures>, revisions?: Record<string, ReturnType<typeof figures>>) => ({ hour: at, ...f, rate_limited: 0, replica_seconds: {}, ...(revisions ? { revisions } : {}) });

/** Runs `infergate ARGS` against an API that knows `chat` and answers its usage with `usage`. */
async function run(usage: UsageView, args: string[]): Promise<{ printed: string; asked: string[] }> {
  let printed = '';
  const asked: string[] = [];
  const request: Requester = (url) => {
    const { pathname, search } = new URL(url);
    asked.push(pathname + search);
    const body = pathname === '/deployments/general' ? { items: [chat] } : pathname === '/deployments/orchestrated' ? { items: [] } : pathname === '/deployments/general/3/usage' ? usage : null;
    return Promise.resolve(
      body === null ? new Response(JSON.stringify({ error: { code: 'not_found', message: 'no route' } }), { status: 404 }) : new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } }),
    );
  };
  const env = { INFERGATE_CONFIG: path.join(os.tmpdir(), `infergate-absent-${process.pid}`, 'config.json') };
  const program = buildProgram({ env, out: { write: (t) => void (printed += t), isTTY: false, color: false }, readStdin: () => '', setExitCode: () => undefined, request });
  await program.parseAsync(['--api', 'http://api.test', '--key', 'key-0123456789', 'usage', 'chat', ...args], { from: 'user' });
  return { printed, asked };
}

const split: UsageView = {
  hours: [
    hour('2026-11-23T16:00:00.000Z', figures(60, 1, 600, 300, 7200.4), { '1': figures(50, 0, 500, 250, 3600.2), '2': figures(8, 1, 80, 40, 3600.2) }),
    hour('2026-11-23T17:00:00.000Z', figures(40, 0, 400, 200, 3600), { '1': figures(30, 0, 300, 150, 1800), '2': figures(10, 0, 100, 50, 1800) }),
  ],
  totals: { ...hour('total', figures(100, 1, 1000, 500, 10800.4), { '1': figures(80, 0, 800, 400, 5400.2), '2': figures(18, 1, 180, 90, 5400.2) }) },
};

describe('infergate usage', () => {
  it('prints the revisions side by side after the hours when more than one served in the window', async () => {
    const { printed, asked } = await run(split, ['--from', '2026-11-23T16:00:00Z']);
    expect(asked.at(-1)).toBe('/deployments/general/3/usage?from=2026-11-23T16%3A00%3A00Z');
    const lines = printed.trimEnd().split('\n');
    expect(lines.slice(0, 4).map((l) => l.split(/\s{2,}/))).toEqual([
      ['HOUR', 'REQUESTS', 'ERRORS', 'PROMPT', 'COMPLETION', 'GPU-SECONDS'],
      ['2026-11-23T16:00:00.000Z', '60', '1', '600', '300', '7200'],
      ['2026-11-23T17:00:00.000Z', '40', '0', '400', '200', '3600'],
      ['total', '100', '1', '1000', '500', '10800'],
    ]);
    expect(lines[4]).toBe('');
    expect(lines.slice(5, 8).map((l) => l.split(/\s{2,}/))).toEqual([
      ['REVISION', 'REQUESTS', 'ERRORS', 'PROMPT', 'COMPLETION', 'GPU-SECONDS'],
      ['1', '80', '0', '800', '400', '5400'],
      ['2', '18', '1', '180', '90', '5400'],
    ]);
    expect(lines.slice(8)).toEqual(['2 requests reached no replica (refused or given up): they count in the total only']);
  });

  it('prints the hours only for one revision, a revision without usage, or a server that counts none', async () => {
    const one: UsageView = { hours: [hour('2026-11-23T16:00:00.000Z', figures(5, 0, 50, 25, 60), { '2': figures(5, 0, 50, 25, 60) })], totals: hour('total', figures(5, 0, 50, 25, 60), { '2': figures(5, 0, 50, 25, 60), '1': figures(0, 0, 0, 0, 0) }) };
    const older: UsageView = { hours: [hour('2026-11-23T16:00:00.000Z', figures(5, 0, 50, 25, 60))], totals: hour('total', figures(5, 0, 50, 25, 60)) };
    for (const usage of [one, older]) {
      const { printed } = await run(usage, []);
      expect(printed).not.toContain('REVISION');
      expect(printed.trimEnd().split('\n')).toHaveLength(3);
    }
  });

  it('passes the revisions through as the API sent them with -o json', async () => {
    const { printed } = await run(split, ['-o', 'json']);
    expect(JSON.parse(printed)).toEqual(split);
  });
});
