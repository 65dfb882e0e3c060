// The client reading paged lists, against a stand-in API that pages as the control API does
// (limit, continue, name) and records every request: `ls` follows `continue` to the last page,
// --chunk-size items at a time; `ls --limit N` prints one page across both families and the
// command for the next; `get NAME` asks for that name only; the credential lists follow pages
// too; and a server from before paging (which ignores the parameters) still works.

import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Command } from 'commander';
import { ApiClient } from './api.js';
import { buildProgram } from './commands.js';
import { listAll, type Deployment } from './deployments.js';
import { UsageError } from './errors.js';
import type { Requester } from './http-request.js';

interface Row {
  id: number;
  name: string;
  family?: string;
}

const view = (r: Row): Deployment =>
  ({
    id: r.id,
    family: r.family ?? 'general',
    name: r.name,
    status: 'ready',
    status_reason: null,
    paused: false,
    endpoint_url: `${r.name}.endpoints.localhost`,
    revision: 1,
    serving_revision: 1,
    rollout: null,
    components: {},
    revisions: [],
    created_at: '2026-01-05T10:00:00.000Z',
  }) as unknown as Deployment;

/** A page of `rows` (ascending ids) as the control API answers `query`; `paged: false` answers as a server from before paging. */
function pageOf(rows: Row[], query: URLSearchParams, paged: boolean): unknown {
  if (!paged) return { items: rows.map(view) };
  const name = query.get('name');
  const after = query.has('continue') ? Number(/^t(\d+)$/.exec(query.get('continue')!)?.[1] ?? NaN) : 0;
  if (Number.isNaN(after)) return undefined;
  const rest = rows.filter((r) => r.id > after && (name === null || r.name === name));
  const limit = query.has('limit') ? Number(query.get('limit')) : rest.length;
  const page = rest.slice(0, limit);
  if (page.length === rest.length) return { items: page.map(view) };
  return { items: page.map(view), continue: `t${page[page.length - 1]!.id}`, remaining_item_count: rest.length - page.length };
}

const GENERAL: Row[] = ['kilo', 'alpha', 'echo', 'charlie', 'bravo'].map((name, i) => ({ id: i + 1, name }));
const ORCHESTRATED: Row[] = [{ id: 6, name: 'delta', family: 'orchestrated' }, { id: 7, name: 'foxtrot', family: 'orchestrated' }];
const TOKENS: Row[] = [1, 2, 3, 4, 5].map((id) => ({ id, name: `token-${id}` }));

function standIn(sent: string[], paged = true): Requester {
  return (url) => {
    const u = new URL(url);
    sent.push(`${u.pathname}${u.search}`);
    const rows = { '/deployments/general': GENERAL, '/deployments/orchestrated': ORCHESTRATED, '/vault/tokens': TOKENS }[u.pathname];
    const body = rows ? pageOf(rows, u.searchParams, paged) : undefined;
    if (body === undefined) return Promise.resolve(new Response(JSON.stringify({ error: { code: 'invalid_field', message: 'bad', field: 'continue' } }), { status: 400 }));
    if (u.pathname === '/vault/tokens') {
      const items = (body as { items: Deployment[] }).items.map((t) => ({ id: t.id, name: t.name, created_at: t.created_at, deployments: [] }));
      return Promise.resolve(new Response(JSON.stringify({ ...(body as object), items }), { status: 200 }));
    }
    return Promise.resolve(new Response(JSON.stringify(body), { status: 200 }));
  };
}

async function run(args: string[], paged = true): Promise<{ printed: string; stderr: string; sent: string[] }> {
  let printed = '';
  let stderr = '';
  const sent: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const program = buildProgram({ env: { INFERGATE_CONFIG: '/nonexistent/infergate.json' }, out: { write: (t) => void (printed += t), isTTY: false, color: false }, readStdin: () => '', setExitCode: () => undefined, request: standIn(sent, paged) });
    const quiet = (c: Command): void => void c.configureOutput({ writeErr: () => undefined }).commands.forEach(quiet);
    quiet(program);
    await program.parseAsync(['--api', 'http://api.test', '--key', 'key-0123456789', ...args], { from: 'user' });
  } finally {
    spy.mockRestore();
  }
  return { printed, stderr, sent };
}

afterEach(() => vi.restoreAllMocks());

describe('reading every page', () => {
  it('listAll follows continue, chunk-size items per request; 0 sends no limit', async () => {
    const sent: string[] = [];
    const client = new ApiClient({ api: 'http://api.test', key: 'k', source: 'test' }, { request: standIn(sent) });
    expect((await listAll<Deployment>(client, '/deployments/general', 2)).map((d) => d.id)).toEqual([1, 2, 3, 4, 5]);
    expect(sent).toEqual(['/deployments/general?limit=2', '/deployments/general?limit=2&continue=t2', '/deployments/general?limit=2&continue=t4']);
    sent.length = 0;
    expect(await listAll<Deployment>(client, '/deployments/general', 0)).toHaveLength(5);
    expect(sent).toEqual(['/deployments/general']);
  });

  it('ls reads every page of both families and sorts by name', async () => {
    const { printed, sent } = await run(['ls', '--chunk-size', '2', '-o', 'name']);
    expect(printed).toBe('alpha\nbravo\ncharlie\ndelta\necho\nfoxtrot\nkilo\n');
    expect(sent.filter((s) => s.startsWith('/deployments/general'))).toHaveLength(3);
    expect(sent.filter((s) => s.startsWith('/deployments/orchestrated'))).toEqual(['/deployments/orchestrated?limit=2']);
    expect(sent.every((s) => /[?&]limit=2(&|$)/.test(s))).toBe(true);
  });

  it('ls asks for 500 at a time by default, and works against a server from before paging', async () => {
    const { printed, sent } = await run(['ls', '-o', 'name'], false);
    expect(printed.split('\n').filter(Boolean)).toHaveLength(7);
    expect(sent).toEqual(['/deployments/general?limit=500', '/deployments/orchestrated?limit=500']);
  });

  it('the credential lists follow pages too', async () => {
    const client = new ApiClient({ api: 'http://api.test', key: 'k', source: 'test' }, { request: standIn([]) });
    expect(await listAll(client, '/vault/tokens', 2)).toHaveLength(5);
    const { printed, sent } = await run(['tokens', 'ls', '-o', 'name']);
    expect(printed).toBe('token-1\ntoken-2\ntoken-3\ntoken-4\ntoken-5\n');
    expect(sent).toContain('/vault/tokens?limit=500');
  });
});

describe('one page', () => {
  it('ls --limit prints one page in the API order across both families, and the command for the next one', async () => {
    const first = await run(['ls', '--limit', '4', '-o', 'name']);
    expect(first.printed).toBe('kilo\nalpha\necho\ncharlie\n');
    const next = /--continue (\S+)/.exec(first.stderr)?.[1];
    expect(first.stderr).toMatch(/^more deployments: infergate ls --limit 4 --continue \S+\n$/);
    const second = await run(['ls', '--limit', '4', '--continue', next!, '-o', 'name']);
    expect(second.printed).toBe('bravo\ndelta\nfoxtrot\n');
    expect(second.stderr).toBe('');
    expect(second.sent).toEqual(['/deployments/general?limit=4&continue=t4', '/deployments/orchestrated?limit=3']);
  });

  it('-o json prints the page with its continue; --family keeps to one family', async () => {
    const page = JSON.parse((await run(['ls', '--limit', '1', '--family', 'orchestrated', '-o', 'json'])).printed) as { items: Deployment[]; continue: string };
    expect(page.items.map((d) => d.name)).toEqual(['delta']);
    const rest = JSON.parse((await run(['ls', '--limit', '5', '--family', 'orchestrated', '--continue', page.continue, '-o', 'json'])).printed) as { items: Deployment[]; continue?: string };
    expect(rest).toEqual({ items: [expect.objectContaining({ name: 'foxtrot' })] });
  });

  it('refuses a token not printed by ls, --continue without --limit, and a limit outside 1–500', async () => {
    await expect(run(['ls', '--limit', '2', '--continue', 'nonsense'])).rejects.toThrow(UsageError);
    await expect(run(['ls', '--continue', 'general:t2'])).rejects.toThrow(/--continue goes with --limit/);
    await expect(run(['ls', '--limit', '0'])).rejects.toThrow(/--limit must be from 1 to 500/);
    await expect(run(['ls', '--limit', '501'])).rejects.toThrow(/--limit must be from 1 to 500/);
  });
});

describe('finding a deployment by name', () => {
  it('get asks each family for that name only', async () => {
    const { printed, sent } = await run(['get', 'echo', '-o', 'name']);
    expect(printed).toBe('echo\n');
    expect(sent.sort()).toEqual(['/deployments/general?name=echo&limit=500', '/deployments/orchestrated?name=echo&limit=500']);
  });

  it('still finds it on a server from before paging, which answers the whole list', async () => {
    expect((await run(['get', 'foxtrot', '-o', 'name'], false)).printed).toBe('foxtrot\n');
  });
});
