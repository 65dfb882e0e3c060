// The terminal's WebSocket on a real control API (port 0) whose shells are a plain /bin/sh in a
// temp dir: the key carried as a `base64url.bearer.infergate.` subprotocol entry (a browser
// cannot set Authorization), never selected as the protocol and never logged; refusals as 401;
// `infergate.tty.v1` on a pseudo-terminal with its size from the query and resize frames;
// pipe mode unchanged without it; every process of the session killed when the socket closes;
// and node-pty loaded only when a tty session needs it.
// The same terminal against a real `infergate serve` is in terminal-tty.test.ts.

import { localShells } from '../src/runtime/shell-launcher.js';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { ShellProvider } from '../src/domain/ports.js';
import { modify } from '../src/store/store.js';
import { processesRunning } from './helpers/child-process.js';
import { ADMIN_KEY, generalBody, startControl, type TestControl } from './helpers/control.js';
import { bearerProtocol, openTty, ttyOutput, type TtyOpened } from './helpers/terminal.js';

let api: TestControl;
let dir: string;
let id: number;
const logLines: string[] = [];
const gone: Array<() => void> = [];

const shells: ShellProvider = {
  shellRefusal: () => null,
  shellTarget: () => ({
    replica: 'fake-r1',
    launcher: localShells,
    argv: ['/bin/sh'],
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GREETING: 'hello-from-the-fake', HOME: dir },
    onGone: (listener) => gone.push(listener),
  }),
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-tty-'));
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  api = await startControl({ logger: pino({ level: 'trace' }, sink), shells });
  const created = await api.call('POST', '/deployments/general', generalBody('ttytest', 'tty-endpoint-token-0123'));
  expect(created.status).toBe(201);
  id = created.body.id;
  // No controller runs here: the deployment is made ready by hand so the route lets a shell open.
  await modify(api.store, 'deployment', id, (d) => ({ ...d, status: 'ready' }));
});
afterAll(async () => {
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const url = (query = '') => `${api.url.replace(/^http/, 'ws')}/deployments/general/${id}/terminal${query}`;

function must(opened: TtyOpened): { ws: WebSocket; response: IncomingMessage } {
  if (!('ws' in opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
  return opened;
}

describe('loading', () => {
  it('starts the API without loading node-pty (a native addon): only a tty session needs it', () => {
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((m) => m.includes(`${path.sep}node-pty${path.sep}`));
    expect(loaded).toEqual([]);
  });
});

describe('the key in a WebSocket subprotocol', () => {
  it('authenticates with base64url.bearer.infergate.<key>, answers infergate.tty.v1, never the key, and logs no key', async () => {
    const { ws, response } = must(await openTty(url(), ['infergate.tty.v1', bearerProtocol(ADMIN_KEY)]));
    expect(ws.protocol).toBe('infergate.tty.v1');
    expect(response.headers['sec-websocket-protocol']).toBe('infergate.tty.v1');
    expect(await ttyOutput(ws, 'echo "x${GREETING}y"', /xhello-from-the-fakey/)).toContain('xhello-from-the-fakey');
    ws.close();

    // Offered first, the key is still not what the server answers with.
    const reversed = must(await openTty(url(), [bearerProtocol(ADMIN_KEY), 'infergate.tty.v1']));
    expect(reversed.ws.protocol).toBe('infergate.tty.v1');
    reversed.ws.close();

    // Every session's lines are written once each has logged its close.
    const count = (what: string) => logLines.filter((l) => l.includes(what)).length;
    await expect.poll(() => count('terminal closed') >= 2 && count('terminal closed') === count('terminal opened')).toBe(true);
    const log = logLines.join('\n');
    expect(log).toContain('terminal opened');
    expect(log).not.toContain(ADMIN_KEY);
    expect(log).not.toContain(Buffer.from(ADMIN_KEY).toString('base64url'));
    expect(log).not.toContain('base64url.bearer');
    // Each opening is in the audit log (a terminal sees the replica's secrets), without the key either.
    const audit = await api.call('GET', '/audit?action=deployment.terminal');
    expect(audit.body.items.filter((e: { status: number; result: string; target: { id: number } }) => e.status === 101 && e.result === 'allowed' && e.target.id === id).length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(audit.body)).not.toContain(ADMIN_KEY);
  });

  it('refuses the upgrade with 401 without a credential, with a wrong or malformed key, and with an endpoint token', async () => {
    const token = (await api.call('POST', '/vault/tokens', { name: 'not-a-key' })).body.token as string;
    const refusals: Array<[string, string[]]> = [
      ['no credential', ['infergate.tty.v1']],
      ['no protocol at all', []],
      ['a wrong key', ['infergate.tty.v1', bearerProtocol('igk_not-a-real-key-0123456789')]],
      ['standard base64, not base64url', ['infergate.tty.v1', 'base64url.bearer.infergate.aWdr+X3Rlc3Q']],
      ['a length no bytes make', ['infergate.tty.v1', 'base64url.bearer.infergate.AAAAA']],
      ['two keys', ['infergate.tty.v1', bearerProtocol(ADMIN_KEY), bearerProtocol('igk_other-0123456789')]],
      ['an endpoint token', ['infergate.tty.v1', bearerProtocol(token)]],
    ];
    for (const [what, protocols] of refusals) {
      const opened = await openTty(url(), protocols);
      expect(opened, what).toMatchObject({ status: 401 });
      if ('body' in opened) expect(JSON.parse(opened.body).error.code, what).toBe('unauthenticated');
    }
    const endpoint = await openTty(url(), ['infergate.tty.v1', bearerProtocol(token)]);
    expect('body' in endpoint && endpoint.body).toContain('endpoint bearer token');
  });

  it('takes the Authorization header when there is one, and is ignored on plain HTTP requests', async () => {
    const wrongHeader = await openTty(url(), ['infergate.tty.v1', bearerProtocol(ADMIN_KEY)], { authorization: 'Bearer igk_wrong-0123456789' });
    expect(wrongHeader).toMatchObject({ status: 401 });
    const res = await fetch(`${api.url}/whoami`, { headers: { 'sec-websocket-protocol': bearerProtocol(ADMIN_KEY) } });
    expect(res.status).toBe(401);
  });
});

describe('infergate.tty.v1', () => {
  it('runs the shell on a pseudo-terminal of the query size, resized by a `1` frame; malformed frames are ignored', async () => {
    const { ws } = must(await openTty(url('?cols=101&rows=33'), ['infergate.tty.v1', bearerProtocol(ADMIN_KEY)]));
    expect(await ttyOutput(ws, 'stty size', /33 101\r\n/)).toMatch(/33 101/);
    expect(await ttyOutput(ws, 'echo "t=$TERM"', /t=xterm-256color/)).toContain('t=xterm-256color');
    for (const bad of ['1{"cols":0,"rows":10}', '1{"cols":5000,"rows":10}', '1{"cols":"90","rows":10}', '1not json', '1null', '9whatever', '0']) ws.send(bad);
    ws.send('1' + JSON.stringify({ cols: 120, rows: 40 }));
    expect(await ttyOutput(ws, 'stty size', /40 120\r\n/)).toMatch(/40 120/);
    ws.close();
    const defaults = must(await openTty(url(), ['infergate.tty.v1', bearerProtocol(ADMIN_KEY)]));
    expect(await ttyOutput(defaults.ws, 'stty size', /24 80\r\n/)).toMatch(/24 80/);
    defaults.ws.close();
  });

  it('refuses a size out of 1–1000 before the upgrade', async () => {
    for (const q of ['?cols=0', '?rows=1001', '?cols=1e3', '?cols=abc']) {
      const opened = await openTty(url(q), ['infergate.tty.v1', bearerProtocol(ADMIN_KEY)]);
      expect(opened, q).toMatchObject({ status: 400 });
    }
  });

  it('kills every process of the session when the socket closes, jobs in their own process group included', async () => {
    const { ws } = must(await openTty(url(), ['infergate.tty.v1', bearerProtocol(ADMIN_KEY)]));
    await ttyOutput(ws, 'sleep 4321 & echo "started-$((40+2))"', /started-42/);
    await expect.poll(() => processesRunning(['sleep', '4321']).length, { timeout: 5000 }).toBe(1);
    ws.close();
    await expect.poll(() => processesRunning(['sleep', '4321']).length, { timeout: 5000 }).toBe(0);
  });

  it('closes with 1001 and kills the shell when the replica goes away', async () => {
    const { ws } = must(await openTty(url(), ['infergate.tty.v1', bearerProtocol(ADMIN_KEY)]));
    const pid = Number((await ttyOutput(ws, 'echo "pid=$$"', /pid=(\d+)\r\n/)).match(/pid=(\d+)\r\n/)?.[1]);
    expect(existsSync(`/proc/${pid}`)).toBe(true);
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    for (const listener of gone.splice(0)) listener();
    expect(await closed).toBe(1001);
    await expect.poll(() => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'latin1').includes(') Z '), { timeout: 5000 }).toBe(false);
  });
});

describe('pipe mode (no subprotocol)', () => {
  it('still runs the shell on pipes, without a terminal', async () => {
    const ws = new WebSocket(url(), { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    expect(ws.protocol).toBe('');
    const out = await new Promise<string>((resolve) => {
      let text = '';
      ws.on('message', (d: Buffer) => {
        text += d.toString();
        if (/done/.test(text)) resolve(text);
      });
      ws.send('tty; echo "g=$GREETING"; echo done\n');
    });
    expect(out).toContain('not a tty');
    expect(out).toContain('g=hello-from-the-fake');
    expect(out).not.toContain('$ '); // no prompt: sh is not interactive on a pipe
    ws.close();
  });
});
