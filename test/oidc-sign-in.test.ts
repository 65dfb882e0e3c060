// People signing in through a real OpenID Provider (oidc-provider on loopback, people alice in
// group ml-a and bob in ml-b): the console signs each in through Chromium ("Sign in with …",
// the provider's login and consent pages, the callback) with an HttpOnly, Secure, SameSite
// session cookie, and shows each only their project; a mutating call without the CSRF token
// is refused; sign-out ends the session; the CLI signs in with the device grant and keeps its
// refresh token in its 0600 config; a group removed from a project loses access on the next
// request, and a group removed at the provider on the next refresh; a person the provider
// disabled cannot refresh; and the sign-ins are in the audit log with no token in it.

import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { systemClock } from '../src/core/clock.js';
import { Sealer } from '../src/core/secrets.js';
import type { ProjectMember } from '../src/domain/records.js';
import { IdentityService } from '../src/identity/identity.js';
import { modify, type Store } from '../src/store/store.js';
import { browserAvailable, CONSOLE_DIR, ensureConsoleBuilt, launchBrowser, watchPage } from './helpers/browser.js';
import { killChildren, runToEnd } from './helpers/child-process.js';
import { startControl, type TestControl } from './helpers/control.js';
import { IDP_SCOPES, startTestIdp, type TestIdp } from './helpers/oidc-provider.js';
import { spawnCli, startServe, type ServeProcess } from './helpers/serve-process.js';
import { freePort } from './helpers/ports.js';
import { waitFor } from './helpers/wait.js';

const run = browserAvailable();

async function addProject(store: Store, name: string, members: ProjectMember[]): Promise<number> {
  const now = new Date().toISOString();
  return (await store.create('project', (id) => ({ id, name, gpu_quota: null, members, created_at: now, updated_at: now }))).value.id;
}

describe.runIf(run)('people sign in through OpenID Connect', { timeout: 60_000 }, () => {
  let idp: TestIdp;
  let control: TestControl;
  let browser: Browser;
  let teamB = 0;
  let home: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    ensureConsoleBuilt();
    idp = await startTestIdp({
      alice: { email: 'alice@example.com', name: 'Alice', groups: ['ml-a'] },
      bob: { email: 'bob@example.com', name: 'Bob', groups: ['ml-b'] },
      carol: { email: 'carol@example.com', name: 'Carol', groups: ['ml-a'] },
    });
    control = await startControl({
      consoleDir: CONSOLE_DIR,
      identity: (store) =>
        new IdentityService(
          { store, sealer: new Sealer(randomBytes(32)), clock: systemClock },
          {
            oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret, groupsClaim: 'groups', scopes: IDP_SCOPES.split(' ') },
            adminGroup: 'platform-admins',
            providerName: 'Test IdP',
            sessionLifetimeMs: 3600_000,
            publicUrl: null,
          },
        ),
    });
    idp.start(`${control.url}/auth/callback`);
    await addProject(control.store, 'team-a', [{ subject: 'group:ml-a', role: 'developer' }]);
    teamB = await addProject(control.store, 'team-b', [{ subject: 'group:ml-b', role: 'developer' }]);
    browser = await launchBrowser();
    home = await mkdtemp(path.join(os.tmpdir(), 'infergate-sso-'));
  }, 120_000);

  afterAll(async () => {
    await killChildren(children);
    await browser?.close();
    await control?.close();
    await idp?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  /** Signs `login` in at the provider's own pages (any password), consenting. */
  async function atProvider(page: Page, login: string): Promise<void> {
    await page.locator('input[name=login]').fill(login);
    await page.locator('input[name=password]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
  }

  /** A fresh browser context, signed in to the console as `login` through the provider. */
  async function consoleSignIn(login: string): Promise<{ context: BrowserContext; page: Page; seen: { dialogs: string[]; errors: string[] } }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const seen = watchPage(page);
    await page.goto(`${control.url}/`);
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    await atProvider(page, login);
    await page.getByRole('heading', { name: 'Deployments', exact: true }).waitFor();
    return { context, page, seen };
  }

  /** A call from inside the page (same origin, the cookie sent by the browser). */
  function pageFetch(page: Page, method: string, route: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
    return page.evaluate(
      async ({ method, route, headers }) => {
        const res = await fetch(route, { method, headers, credentials: 'same-origin' });
        const text = await res.text();
        return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
      },
      { method, route, headers },
    );
  }

  it('says at GET /auth/config that people sign in here, and with whom', async () => {
    const res = await fetch(`${control.url}/auth/config`);
    expect(await res.json()).toEqual({ enabled: true, provider_name: 'Test IdP', login_url: '/auth/login' });
  });

  it('signs alice in through Chromium with a HttpOnly, Secure, SameSite cookie and shows her only team-a', async () => {
    const { context, page, seen } = await consoleSignIn('alice');
    const cookie = (await context.cookies()).find((c) => c.name === 'infergate_session');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax', path: '/' });
    expect(cookie?.value).toMatch(/^igs_/);
    // No script of the page can read it.
    expect(await page.evaluate('document.cookie')).not.toContain('infergate_session');

    const me = await pageFetch(page, 'GET', '/whoami');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ kind: 'user', name: 'alice@example.com', admin: false, project: 'team-a', role: 'developer', projects: [{ name: 'team-a', role: 'developer' }] });
    expect(me.body.csrf_token).toEqual(expect.any(String));
    expect(await page.locator('.who').textContent()).toContain('alice@example.com');
    // Another project's resources are as if it did not exist.
    const foreign = await pageFetch(page, 'GET', '/vault/tokens', { 'x-infergate-project': 'team-b' });
    expect(foreign.status).toBe(404);
    expect((foreign.body.error as { message: string }).message).toBe('no project named team-b');

    // A mutating call riding the cookie needs the CSRF token; with it, sign-out ends the session.
    const forged = await pageFetch(page, 'POST', '/auth/logout');
    expect(forged.status).toBe(403);
    expect((forged.body.error as { message: string }).message).toMatch(/X-CSRF-Token/);
    const wrong = await pageFetch(page, 'POST', '/auth/logout', { 'x-csrf-token': 'not-the-token' });
    expect(wrong.status).toBe(403);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
    expect((await context.cookies()).find((c) => c.name === 'infergate_session')).toBeUndefined();
    // The old cookie value no longer signs anyone in.
    const replay = await fetch(`${control.url}/whoami`, { headers: { cookie: `infergate_session=${cookie?.value ?? ''}` } });
    expect(replay.status).toBe(401);
    expect(seen.errors).toEqual([]);
    await context.close();
  });

  it('signs bob in and shows him only team-b; removing his group from team-b takes effect on his next request', async () => {
    const { context, page } = await consoleSignIn('bob');
    const me = await pageFetch(page, 'GET', '/whoami');
    expect(me.body).toMatchObject({ name: 'bob@example.com', project: 'team-b', projects: [{ name: 'team-b', role: 'developer' }] });
    expect((await pageFetch(page, 'GET', '/vault/tokens', { 'x-infergate-project': 'team-a' })).status).toBe(404);
    expect((await pageFetch(page, 'GET', '/whoami', { 'x-infergate-project': 'team-b' })).status).toBe(200);

    // The admin removes the group from the project: the very next request no longer sees it.
    await modify(control.store, 'project', teamB, (p) => ({ ...p, members: p.members.filter((m) => m.subject !== 'group:ml-b'), updated_at: new Date().toISOString() }));
    const after = await pageFetch(page, 'GET', '/whoami', { 'x-infergate-project': 'team-b' });
    expect(after.status).toBe(404);
    expect((await pageFetch(page, 'GET', '/whoami')).body.projects).toEqual([]);
    await context.close();
  });

  it("lets a WebSocket ride the session cookie only from the console's own origin", async () => {
    const { context } = await consoleSignIn('alice');
    const cookie = (await context.cookies()).find((c) => c.name === 'infergate_session')!.value;
    const { default: WebSocket } = await import('ws');
    const upgrade = (origin: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`${control.url.replace('http', 'ws')}/deployments/general/999/terminal`, ['infergate.tty.v1'], { headers: { cookie: `infergate_session=${cookie}`, origin } });
        ws.once('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          ws.terminate();
        });
        ws.once('open', () => reject(new Error('the terminal opened')));
        ws.once('error', () => undefined);
      });
    // Another site's page: refused before anything is looked up.
    expect(await upgrade('http://evil.example')).toBe(403);
    // The console's own page gets past the credential check: the deployment does not exist.
    expect(await upgrade(control.url)).toBe(404);
    await context.close();
  });

  it('refuses a callback that did not start in this browser, shows why on the sign-in page, and audits the refusal', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // A code and state from elsewhere (login CSRF): no sealed sign-in cookie here.
    await page.goto(`${control.url}/auth/callback?code=stolen&state=forged`);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('the sign-in took too long or began in another browser');
    expect(page.url()).toBe(`${control.url}/`);
    expect((await context.cookies()).find((c) => c.name === 'infergate_session')).toBeUndefined();
    const refused = (await control.store.list('audit')).map((a) => a.value).filter((e) => e.action === 'auth.sign_in_refused');
    expect(refused.at(-1)).toMatchObject({ actor: { kind: 'anonymous' }, result: 'refused' });
    await context.close();
  });

  it("asks the provider again during a console session: a group it removed is gone, a person it disabled is out", async () => {
    const { context, page } = await consoleSignIn('carol');
    expect((await pageFetch(page, 'GET', '/whoami')).body.projects).toEqual([{ name: 'team-a', role: 'developer' }]);
    const carolSession = async () => {
      const carol = (await control.store.list('user')).find((u) => u.value.email === 'carol@example.com')!.value;
      return (await control.store.list('session')).find((x) => x.value.user_id === carol.id)!;
    };
    // The next check at the provider is due (it comes every ten minutes).
    const due = async () => {
      const s = await carolSession();
      await control.store.update('session', s.value.id, s.version, { ...s.value, idp_checked_at: new Date(Date.now() - 11 * 60_000).toISOString() });
    };
    idp.people.get('carol')!.groups = [];
    // Not due yet: the groups of the sign-in stand.
    expect((await pageFetch(page, 'GET', '/whoami')).body.projects).toEqual([{ name: 'team-a', role: 'developer' }]);
    await due();
    expect((await pageFetch(page, 'GET', '/whoami')).body.projects).toEqual([]);
    expect((await pageFetch(page, 'GET', '/whoami', { 'x-infergate-project': 'team-a' })).status).toBe(404);
    expect(Date.parse((await carolSession()).value.idp_checked_at ?? '')).toBeGreaterThan(Date.now() - 60_000);

    idp.people.get('carol')!.disabled = true;
    await due();
    const out = await pageFetch(page, 'GET', '/whoami');
    expect(out.status).toBe(401);
    expect((out.body.error as { message: string }).message).toMatch(/no longer accepts your sign-in/);
    // The session is gone: the console is back at its sign-in page on its next call.
    expect((await pageFetch(page, 'GET', '/whoami')).status).toBe(401);
    await context.close();
  });

  it('keeps a session past its expiry out with a clear 401', async () => {
    const { context, page } = await consoleSignIn('alice');
    const me = await pageFetch(page, 'GET', '/whoami');
    expect(me.status).toBe(200);
    const sessions = await control.store.list('session');
    const newest = sessions[sessions.length - 1]!;
    await control.store.update('session', newest.value.id, newest.version, { ...newest.value, expires_at: new Date(Date.now() - 1000).toISOString() });
    const expired = await pageFetch(page, 'GET', '/whoami');
    expect(expired.status).toBe(401);
    expect((expired.body.error as { message: string }).message).toMatch(/session expired at .*sign in again/);
    await context.close();
  });

  it('signs the CLI in with the device grant, keeps the refresh token 0600, and refreshes an expired session (a group the provider removed is gone)', async () => {
    const env = { INFERGATE_CONFIG: path.join(home, 'config.json'), NO_COLOR: '1', INFERGATE_API: '', INFERGATE_KEY: '' };
    const login = spawnCli(['login', '--sso', '--api', control.url], env);
    children.push(login);
    let printed = '';
    login.stdout?.on('data', (b: Buffer) => (printed += b.toString()));
    const ended = runToEnd(login);
    const link = await waitFor(() => /open (http\S+) in a browser and confirm the code (\S+)/.exec(printed), 10_000, 'the device link');
    const page = await (await browser.newContext()).newPage();
    await page.goto(link[1]!);
    await page.getByRole('button', { name: 'Continue' }).click();
    await atProvider(page, 'alice');
    await page.getByText(/Sign-in Success/i).first().waitFor();
    const done = await ended;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain(`logged in to ${control.url} as alice@example.com`);

    const file = env.INFERGATE_CONFIG;
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(await readFile(file, 'utf8')) as { contexts: Record<string, { key: string; refresh_token: string; expires_at: string }> };
    const first = saved.contexts.default!;
    expect(first.key).toMatch(/^igs_/);
    expect(first.refresh_token).toMatch(/^igr_/);

    const cli = async (args: string[]) => {
      const child = spawnCli(args, env);
      children.push(child);
      return runToEnd(child);
    };
    const me = await cli(['whoami', '-o', 'json']);
    expect(me.code, me.stderr).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ kind: 'user', name: 'alice@example.com', projects: [{ name: 'team-a', role: 'developer' }] });

    // The provider drops alice's group; her session expires; the CLI refreshes it on its next call.
    idp.people.get('alice')!.groups = [];
    const expire = async () => {
      for (const s of await control.store.list('session')) {
        if (s.value.client === 'cli') await control.store.update('session', s.value.id, s.version, { ...s.value, expires_at: new Date(Date.now() - 1000).toISOString() });
      }
    };
    await expire();
    const refreshed = await cli(['whoami', '-o', 'json']);
    expect(refreshed.code, refreshed.stderr).toBe(0);
    expect(JSON.parse(refreshed.stdout)).toMatchObject({ name: 'alice@example.com', projects: [] });
    const rotated = (JSON.parse(await readFile(file, 'utf8')) as typeof saved).contexts.default!;
    expect(rotated.key).not.toBe(first.key);
    expect(rotated.refresh_token).not.toBe(first.refresh_token);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    // The old refresh token was used up.
    const reuse = await fetch(`${control.url}/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: first.refresh_token }) });
    expect(reuse.status).toBe(401);

    // A person the provider disabled cannot refresh: the CLI says to sign in again.
    idp.people.get('alice')!.disabled = true;
    await expire();
    const refused = await cli(['whoami']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/could not be renewed: .*sign in again/);
  });

  it('writes sign-in, sign-out and refresh to the audit log, with no token in it', async () => {
    const entries = (await control.store.list('audit')).map((a) => a.value);
    const signIns = entries.filter((e) => e.action === 'auth.sign_in');
    expect(signIns.map((e) => e.actor.name)).toEqual(expect.arrayContaining(['alice@example.com', 'bob@example.com']));
    expect(signIns[0]).toMatchObject({ actor: { kind: 'user' }, result: 'allowed', target: { kind: 'user' }, source_address: '127.0.0.1' });
    expect(entries.some((e) => e.action === 'auth.sign_out' && e.actor.name === 'alice@example.com')).toBe(true);
    expect(entries.some((e) => e.action === 'auth.refresh' && e.result === 'allowed')).toBe(true);
    expect(entries.some((e) => e.action === 'auth.refresh' && e.result === 'refused')).toBe(true);
    const text = JSON.stringify(entries);
    expect(text).not.toMatch(/igs_|igr_|code=|secret/);
    expect(text).not.toContain(idp.clientSecret);
  });
});

describe('a service that signs no people in', () => {
  let control: TestControl;
  beforeAll(async () => {
    control = await startControl();
  });
  afterAll(async () => {
    await control?.close();
  });

  it('says so at GET /auth/config and answers the sign-in routes 404 naming the flag', async () => {
    expect((await control.call('GET', '/auth/config', undefined, null)).body).toEqual({ enabled: false, provider_name: null, login_url: null });
    const device = await control.call('POST', '/auth/device', {}, null);
    expect(device.status).toBe(404);
    expect(device.body.error.message).toMatch(/--oidc-issuer/);
    // A session-looking token is no key: the key check refuses it.
    expect((await control.call('GET', '/whoami', undefined, 'igs_made_up_0123456789')).status).toBe(401);
  });
});

describe('infergate serve with --oidc-issuer', () => {
  let idp: TestIdp;
  let serve: ServeProcess | null = null;
  let dir = '';
  afterAll(async () => {
    serve?.kill();
    await serve?.exited;
    await idp?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('prints the redirect URI and sends the browser to the provider with PKCE, the checks in a sealed HttpOnly cookie', async () => {
    idp = await startTestIdp({ alice: { email: 'alice@example.com', name: 'Alice', groups: ['ml-a'] } });
    const port = await freePort();
    const redirectUri = `http://127.0.0.1:${port}/auth/callback`;
    idp.start(redirectUri);
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-sso-serve-'));
    serve = await startServe({
      dataDir: path.join(dir, 'data'),
      certsDir: path.join(dir, 'certs'),
      // The secret comes from the environment, never the command line.
      args: ['--role', 'control', '--oidc-issuer', idp.issuer, '--oidc-client-id', idp.clientId, '--oidc-provider-name', 'Test IdP', '--oidc-scopes', IDP_SCOPES],
      env: { INFERGATE_API_PORT: String(port), INFERGATE_OIDC_CLIENT_SECRET: idp.clientSecret },
    });
    expect(serve.output()).toContain(`people sign in through ${idp.issuer} (redirect URI ${redirectUri})`);
    expect(await (await fetch(`${serve.apiUrl}/auth/config`)).json()).toEqual({ enabled: true, provider_name: 'Test IdP', login_url: '/auth/login' });

    const login = await fetch(`${serve.apiUrl}/auth/login`, { redirect: 'manual' });
    expect(login.status).toBe(302);
    const to = new URL(login.headers.get('location') ?? '');
    expect(to.origin + to.pathname).toBe(`${idp.issuer}/auth`);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({ client_id: idp.clientId, redirect_uri: redirectUri, response_type: 'code', code_challenge_method: 'S256' });
    expect(to.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(to.searchParams.get('scope')?.split(' ')).toEqual(expect.arrayContaining(['openid', 'groups', 'offline_access']));
    const cookie = login.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^infergate_login=v1\.[^;]+; Path=\/auth\/callback; Max-Age=600; HttpOnly; Secure; SameSite=Lax$/);
    // Neither the state nor the verifier is readable in it.
    expect(cookie).not.toContain(to.searchParams.get('state') ?? 'no state');
  });
});
