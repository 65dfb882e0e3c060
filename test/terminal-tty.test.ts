// The terminal as the console opens it, against a real `infergate serve` and a real replica:
// `infergate.tty.v1` with the key as a `base64url.bearer.infergate.` subprotocol entry (no
// Authorization header), the shell on a pseudo-terminal in the replica's sandbox (or, where no
// sandbox can run, on the host by the operator's flag): the deployment's environment, the size
// from the query and after a resize frame, Ctrl-C interrupting a foreground `sleep`, the
// session's processes gone when the socket closes; and the upgrade refused with 401 without a
// credential.

import { describe, expect, it } from 'vitest';
import { processesRunning } from './helpers/child-process.js';
import { engineBody, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from './helpers/platform.js';
import { bearerProtocol, openTty, ttyOutput } from './helpers/terminal.js';

let platform: Platform;

// About the terminal, not the sandbox (test/security/sandbox.test.ts): where no sandbox can run
// here, the operator's flag lets a shell open anyway.
usePlatform('tty', ['--allow-unsandboxed-host-commands'], (p) => (platform = p));

const TOKEN = 'tok-tty-0123456789';

describe('the terminal with a pseudo-terminal (infergate.tty.v1)', () => {
  it('runs a shell in the replica: environment, size and resize, Ctrl-C, and its processes killed on close', async () => {
    const created = await platform.call('POST', '/deployments/general', engineBody('tty', TOKEN, { env: { GREETING: 'hello-from-the-replica' } }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    await platform.waitFor(id, (d) => d.status === 'ready', 30_000, 'tty ready');

    const url = `${platform.apiUrl.replace(/^http/, 'ws')}/deployments/general/${id}/terminal`;
    const opened = await openTty(`${url}?cols=97&rows=31`, ['infergate.tty.v1', bearerProtocol(PLATFORM_ADMIN_KEY)]);
    if (!('ws' in opened)) throw new Error(`terminal refused: ${opened.status} ${opened.body}`);
    const { ws } = opened;
    expect(ws.protocol).toBe('infergate.tty.v1');

    expect(await ttyOutput(ws, 'echo $GREETING', /hello-from-the-replica/)).toContain('hello-from-the-replica');
    expect(await ttyOutput(ws, 'stty size', /31 97\r\n/)).toMatch(/31 97/);
    ws.send('1' + JSON.stringify({ cols: 132, rows: 43 }));
    expect(await ttyOutput(ws, 'stty size', /43 132\r\n/)).toMatch(/43 132/);

    // Ctrl-C reaches the foreground job through the pty's line discipline; the shell answers next.
    const started = Date.now();
    await ttyOutput(ws, 'sleep 30', /sleep 30\r\n/);
    // Ctrl-C before the shell has forked the job would interrupt the shell's own line instead.
    await expect.poll(() => processesRunning(['sleep', '30']).length, { timeout: 5000 }).toBe(1);
    ws.send('0\x03');
    expect(await ttyOutput(ws, 'echo "after-$((6*7))"', /after-42\r\n/)).toContain('after-42');
    expect(Date.now() - started).toBeLessThan(15_000);

    await ttyOutput(ws, 'sleep 4322 & echo "bg-$((1+1))"', /bg-2\r\n/);
    await expect.poll(() => processesRunning(['sleep', '4322']).length, { timeout: 5000 }).toBe(1);
    ws.close();
    await expect.poll(() => processesRunning(['sleep', '4322']).length, { timeout: 5000 }).toBe(0);

    // Neither Authorization nor the key's subprotocol entry: refused before the upgrade.
    expect(await openTty(url, ['infergate.tty.v1'])).toMatchObject({ status: 401 });
  });
});
