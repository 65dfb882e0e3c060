// The web console in a real browser (Debian's Chromium through playwright-core) against a real
// `infergate serve` on free ports: sign-in, a general deployment created through the form and
// watched to ready, called through the gateway, its access line arriving live in the Logs tab
// and read as a log line (level, message, fields; the raw line a click away; filtered by text
// and by level; the pane filling the window),
// the terminal running `echo $GREETING` inside the replica, usage and activity with the
// deployment's events, settings that
// say whether they scale in place or make a revision, rollback, pause and resume, usage of
// the revisions side by side, an
// aggregated orchestrated deployment through its form, secret environment variables (the
// vendor preset's registry key made secret, write-only values, replaced and removed in
// Settings), server refusals shown next to the field, problems said with the labels the page
// shows (not the API's field names), log lines rendered as text (no script
// runs), a member account kept off the service-accounts page, and the capabilities an admin's
// deployment keeps shown in Settings (a member's spec change to it refused). Screenshots go to docs/console/ when CONSOLE_SCREENSHOTS=1.

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserAvailable, ensureConsoleBuilt, launchBrowser, watchPage } from '../helpers/browser.js';
import { processesRunning } from '../helpers/child-process.js';
import { engineBody, FAST_ENGINE, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from '../helpers/platform.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? path.join(ROOT, 'docs/console') : null;
const XSS = '<img src=x onerror=alert(1)>';
const run = browserAvailable();

describe.runIf(run)('web console in Chromium', { timeout: 90_000 }, () => {
  let platform: Platform;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let seen: { dialogs: string[]; errors: string[] };
  let chatId = 0;
  const token = 'tok-console-0123456789';

  usePlatform('console', [], (p) => {
    platform = p;
  });

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    seen = watchPage(page);
    if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  const shot = async (name: string) => {
    if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: false });
  };
  const at = (hash: string) => page.goto(`${platform.apiUrl}/#${hash}`);

  it('serves the console with a strict policy and signs in with a service-account key', async () => {
    const res = await page.goto(`${platform.apiUrl}/`);
    expect(res?.status()).toBe(200);
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-eval');
    expect(res?.headers()['x-content-type-options']).toBe('nosniff');

    // An endpoint token is not a platform credential: the refusal says so.
    await platform.call('POST', '/vault/tokens', { name: 'not-a-key' }).then(async (r) => {
      await page.getByLabel('Service-account key').fill(r.body.token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toContain('endpoint bearer token');
    });

    await page.getByLabel('Service-account key').fill(PLATFORM_ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Deployments', exact: true }).waitFor();
    await page.getByText('Create your first deployment').waitFor();
    // Kept for this tab only: sessionStorage, never localStorage.
    expect(await page.evaluate("[sessionStorage.getItem('infergate.key') !== null, localStorage.length]")).toEqual([true, 0]);
  });

  it('creates a general deployment through the form, watches it become ready and calls it', async () => {
    await page.getByRole('link', { name: 'Create your first deployment' }).click();
    await page.getByLabel('Endpoint Name', { exact: true }).fill('chat');
    await page.getByLabel('Image', { exact: true }).fill('infergate/reference-engine');
    await page.getByLabel('Container Port').fill('8000');
    await page.getByLabel('Health check path').fill('/health');
    await page.getByLabel('Add command').fill(FAST_ENGINE.join('\n'));
    await page.getByRole('button', { name: 'Add environment variable' }).click();
    await page.getByLabel('Environment variables name 1').fill('GREETING');
    await page.getByLabel('Environment variables value 1').fill('hello from the console');
    await page.evaluate('window.scrollTo(0, 0)');
    await shot('create-general');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.waitForURL(/#\/deployments\/general\/\d+/);
    chatId = Number(/general\/(\d+)/.exec(page.url())?.[1]);
    // The endpoint token made on the spot is shown once, outside the page that made it.
    const token = (await page.getByTestId('secret-value').textContent()) ?? '';
    expect(token.length).toBeGreaterThanOrEqual(8);
    await page.getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => page.getByTestId('secret-value').count()).toBe(0);

    await at('/deployments');
    const row = page.locator('tr[data-deployment="chat"]');
    await row.getByText('Ready').waitFor({ timeout: 30_000 });
    expect(await row.textContent()).toContain('Replica 1/1');
    expect(await row.textContent()).toContain(`chat.endpoints.localhost:${platform.ports.gateway}`);
    await shot('list');

    const answer = await platform.client('chat', token).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    tokenForChat = token;
  });

  let tokenForChat = '';

  it('Overview: the endpoint, how to call it, component health and revisions', async () => {
    await at(`/deployments/general/${chatId}`);
    const panel = page.getByRole('tabpanel');
    await panel.getByText(`https://chat.endpoints.localhost:${platform.ports.gateway}`).first().waitFor();
    expect(await panel.getByRole('table', { name: 'Component health' }).textContent()).toMatch(/Replica\s*1\s*1/);
    expect(await panel.getByRole('table', { name: 'Revision history' }).textContent()).toContain('create');
    await expect.poll(() => page.getByTestId('autoscaler-desired').textContent(), { timeout: 15_000 }).toMatch(/wants 1 replica; 1 ready/);
    await shot('overview');
  });

  it('Logs: the access line of a request made after the tab opened arrives live, read as a log line', async () => {
    await at(`/deployments/general/${chatId}/logs`);
    await page.getByText('Following revision 1').waitFor();
    const marker = `marker-${Date.now()}`;
    await platform.client('chat', tokenForChat).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: marker }], max_tokens: 2 }, { headers: { 'x-session-id': marker } });
    const view = page.getByTestId('log-view');
    await expect.poll(() => view.textContent(), { timeout: 15_000 }).toMatch(/POST \/v1\/chat\/completions 200/);

    // The engine's pino line is shown as a level, a time, its message and dimmed fields, not as JSON.
    const access = view.locator('.log-line', { hasText: 'POST /v1/chat/completions 200' }).first();
    expect(await access.locator('.level').textContent()).toBe('INFO');
    expect(await access.locator('.msg').textContent()).toBe('POST /v1/chat/completions 200');
    expect(await access.locator('.kv', { hasText: 'status=' }).textContent()).toContain('status=200');
    expect(await access.locator('.ts').textContent()).toMatch(/^\d\d:\d\d:\d\d\.\d{3}$/);
    expect(await access.textContent()).not.toContain('"level":30');
    // Its raw line is a click away.
    await access.getByRole('button', { name: 'Show the raw line' }).click();
    await expect.poll(() => access.locator('.raw-line').textContent()).toContain('"level": 30');
    // A line that is not JSON (the runtime's own) is shown exactly as written, with no level badge.
    const plain = view.locator('.log-line', { hasText: 'readiness probe passed' }).first();
    expect([await plain.getAttribute('data-kind'), await plain.locator('.body').textContent()]).toEqual(['text', 'readiness probe passed: ready']);
    expect(await plain.locator('.level').textContent()).toBe('');

    // The pane fills the window below the toolbar (1280×900 here), not a small fixed box.
    const box = await view.boundingBox();
    expect(box && box.y + box.height).toBeGreaterThan(850);
    expect(box && box.y + box.height).toBeLessThanOrEqual(900);

    // The filter narrows what is shown, by text and by level; the download holds what is shown.
    await page.getByLabel('Filter').fill('chat/completions');
    await expect.poll(() => view.locator('.log-line', { hasText: 'readiness probe passed' }).count()).toBe(0);
    const matching = await view.locator('.log-line').allTextContents();
    expect(matching.length).toBeGreaterThanOrEqual(1);
    expect(matching.every((t) => t.includes('chat/completions'))).toBe(true);
    await page.getByLabel('Level').selectOption({ label: 'Errors only' });
    await expect.poll(() => view.locator('.log-line').count()).toBe(0);
    await view.getByText('No line matches the filter.').waitFor();
    await page.getByLabel('Level').selectOption({ label: 'All levels' });
    await page.getByLabel('Filter').fill('');
    // Raw lines: every line as written, JSON included.
    await page.getByLabel('Raw lines').check();
    await expect.poll(() => view.locator('.log-line', { hasText: 'POST /v1/chat/completions 200' }).first().textContent()).toContain('"level":30');
    await page.getByLabel('Raw lines').uncheck();
    await shot('logs');
  });

  it('Terminal: echo $GREETING answers inside the replica; Ctrl-C interrupts', async () => {
    await at(`/deployments/general/${chatId}/terminal`);
    await page.getByText(/Connected to/).waitFor({ timeout: 15_000 });
    const screen = page.getByTestId('terminal');
    await screen.click();
    await page.keyboard.type('echo $GREETING');
    await page.keyboard.press('Enter');
    await expect.poll(() => screen.textContent(), { timeout: 10_000 }).toContain('hello from the console');
    // A duration no other test uses, so the process is this terminal's; Ctrl-C once it runs
    // (pressed before the shell has started it, the interrupt can land in between and be lost).
    await page.keyboard.type('sleep 4331');
    await page.keyboard.press('Enter');
    await expect.poll(() => processesRunning(['sleep', '4331']).length, { timeout: 10_000 }).toBe(1);
    await page.keyboard.press('Control+C');
    await page.keyboard.type('echo after-$((40+2))');
    await page.keyboard.press('Enter');
    await expect.poll(() => screen.textContent(), { timeout: 10_000 }).toContain('after-42');
    await shot('terminal');

    // A smaller window: the terminal refits and the shell learns its new size.
    const sizeNow = async () => {
      await page.keyboard.type('echo size=$(stty size | tr " " x)');
      await page.keyboard.press('Enter');
      let size = '';
      await expect.poll(async () => (size = /size=(\d+x\d+)/.exec((await screen.textContent()) ?? '')?.[1] ?? ''), { timeout: 10_000 }).not.toBe('');
      return size;
    };
    const before = await sizeNow();
    await page.keyboard.type('clear');
    await page.keyboard.press('Enter');
    await page.setViewportSize({ width: 800, height: 900 });
    await expect.poll(async () => { await page.keyboard.type('clear'); await page.keyboard.press('Enter'); return sizeNow(); }, { timeout: 15_000 }).not.toBe(before);
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  /**
   * Waits until the usage API holds what a tab is about to show. Usage reaches the store at the
   * ledgers' next flush (every couple of seconds) and the Usage tab polls every 10 s: a tab
   * opened before the flush would show it only at its next poll, 10 s later.
   */
  type UsageTotals = { requests: number; revisions: Record<string, { requests: number; gpu_seconds: number }> };
  async function usageStored(check: (totals: UsageTotals) => boolean): Promise<void> {
    await expect
      .poll(async () => check((await platform.call('GET', `/deployments/general/${chatId}/usage`)).body.totals as UsageTotals), { timeout: 20_000 })
      .toBe(true);
  }

  it('Usage and Activity show the requests made and the replicas', async () => {
    await usageStored((t) => t.requests >= 2);
    await at(`/deployments/general/${chatId}/usage`);
    await expect.poll(async () => Number((await page.getByTestId('total-requests').textContent()) ?? '0'), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
    await shot('usage');
    await at(`/deployments/general/${chatId}/activity`);
    const now = page.getByTestId('activity-now');
    await expect.poll(() => now.textContent(), { timeout: 20_000 }).toMatch(/1 ready/);
    await shot('activity');
    // The 15-minute table holds the in-flight samples of the requests made above (once their step has finished).
    await page.getByText('Show as a table').click();
    const inflight = () => page.locator('table[aria-label="Activity"] tbody tr td:nth-child(3)').allTextContents();
    await expect.poll(async () => (await inflight()).some((v) => Number(v) > 0), { timeout: 15_000 }).toBe(true);
    // Under the charts, the deployment's events, newest first: its replica started, then became ready.
    const rows = () => page.getByRole('table', { name: 'Events' }).locator('tbody tr').allTextContents();
    await expect.poll(async () => (await rows()).some((r) => /^NormalReplicaReady\d+[smhd]replica chat-r1-\d+ is ready$/.test(r)), { timeout: 15_000 }).toBe(true);
    const told = (await rows()).map((r) => /^(?:Normal|Warning)([A-Z][A-Za-z]+)/.exec(r)?.[1]);
    expect(told.indexOf('ReplicaReady')).toBeLessThan(told.indexOf('ReplicaStarted'));
  });

  it('Settings: replica bounds scale in place, a command change makes revision 2, then roll back, pause and resume', async () => {
    await at(`/deployments/general/${chatId}/settings`);
    await page.getByLabel('Max Replicas').fill('2');
    await page.getByLabel('Target concurrency per replica').fill('8');
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Scales in place' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved: scaled in place').waitFor();
    let d = (await platform.call('GET', `/deployments/general/${chatId}`)).body;
    expect([d.max_replicas, d.revision]).toEqual([2, 1]);

    await page.getByLabel('Add command').fill([...FAST_ENGINE, '--model', 'sim/model-b'].join('\n'));
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Creates revision 2' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText(/Saved: revision 2/).waitFor();
    d = await platform.waitFor(chatId, (x) => x.revision === 2 && x.serving_revision === 2 && x.status === 'ready', 30_000, 'revision 2 serving');

    await at(`/deployments/general/${chatId}/settings`);
    await page.getByLabel('Revision', { exact: true }).selectOption('1');
    await page.getByRole('button', { name: 'Roll back', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Roll back', exact: true }).click();
    d = await platform.waitFor(chatId, (x) => x.revision === 3 && x.status === 'ready', 30_000, 'rollback to 1 as revision 3');
    expect(d.revisions.at(-1)).toMatchObject({ revision: 3, reason: 'rollback', source_revision: 1 });

    // The logs of a retired revision stay readable.
    await at(`/deployments/general/${chatId}/logs`);
    await page.getByLabel('Follow').uncheck();
    await page.getByLabel('Revision', { exact: true }).selectOption('2');
    await expect.poll(() => page.getByTestId('log-view').textContent(), { timeout: 10_000 }).toContain('chat-r2-');
    await at(`/deployments/general/${chatId}/settings`);

    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Pause', exact: true }).click();
    await page.locator('.page-head').getByText('Paused').waitFor({ timeout: 15_000 });
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Resume', exact: true }).click();
    await page.locator('.page-head').getByText('Ready').waitFor({ timeout: 30_000 });
  });

  it('Usage puts the revisions that served side by side once more than one has usage', async () => {
    // Revision 3 (the rollback) serves now; the requests above went to revision 1, and revision 2's replica lived a while.
    // Resumed just now: the gateway routes to its replica once that is ready.
    await platform.waitFor(chatId, (x) => x.revision === 3 && x.status === 'ready' && x.components.Replica.ready >= 1, 30_000, 'revision 3 ready after resume');
    const ask = () => platform.client('chat', tokenForChat).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'on revision 3' }], max_tokens: 2 }).then(() => true, () => false);
    await expect.poll(ask, { timeout: 15_000 }).toBe(true);
    await usageStored((t) => ['1', '2', '3'].every((r) => (t.revisions[r]?.gpu_seconds ?? 0) > 0) && t.revisions['3']!.requests >= 1);
    await at(`/deployments/general/${chatId}/usage`);
    const table = page.getByRole('table', { name: 'Usage by revision' });
    const requests = async () => (await table.locator('tr[data-figure="requests"] td').allTextContents()).map(Number);
    await expect.poll(async () => (await table.locator('thead th[data-revision]').allTextContents()).map((t) => t.trim()), { timeout: 20_000 }).toEqual(['Revision 1', 'Revision 2', 'Revision 3 (newest)']);
    await expect.poll(requests, { timeout: 20_000 }).toEqual([expect.any(Number), 0, 1]);
    expect((await requests())[0]).toBeGreaterThanOrEqual(2);
    // Every revision that ran has GPU-seconds of its own.
    const gpuSeconds = async () => (await table.locator('tr[data-figure="gpu_seconds"] td').allTextContents()).map((t) => Number(t.replace(/[^\d.]/g, '')));
    await expect.poll(async () => (await gpuSeconds()).every((v) => v > 0), { timeout: 20_000 }).toBe(true);
    await page.getByText('Requests per hour by revision').waitFor();
  });

  it('creates an aggregated orchestrated deployment through its form, with a token chosen from the vault', async () => {
    const vault = await platform.call('POST', '/vault/tokens', { name: 'shared-orchestrated' });
    await at('/deployments/new/orchestrated');
    await page.getByLabel('Endpoint Name', { exact: true }).fill('orch');
    await page.getByLabel('Model', { exact: true }).fill('acme/tiny-chat');
    await page.getByLabel('Endpoint token').selectOption({ label: `shared-orchestrated (id ${vault.body.id})` });
    expect(await page.getByLabel('Enable logging').isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.waitForURL(/#\/deployments\/orchestrated\/\d+/);
    const id = Number(/orchestrated\/(\d+)/.exec(page.url())?.[1]);
    const d = (await platform.call('GET', `/deployments/orchestrated/${id}`)).body;
    expect(d).toMatchObject({ name: 'orch', serving_mode: 'aggregated', model: 'acme/tiny-chat', endpoint_token_id: vault.body.id, enable_logging: true });
    await page.locator('.page-head').getByText(/Pending|Ready/).waitFor();
  });

  it('keeps secret variables write-only: the vendor preset makes REGISTRY_API_KEY secret, Settings replaces and removes them', async () => {
    const key = 'nvapi-console-key-8e1f27c4b9';
    const rotated = 'nvapi-console-key-rotated-55d0';
    await at('/deployments/new/general');
    await page.getByLabel('Endpoint Name', { exact: true }).fill('vendor');
    await page.getByLabel('Preset').selectOption('nim');
    // The preset's engine reads its registry key from REGISTRY_API_KEY: a secret row, secret for good.
    await expect.poll(() => page.getByLabel('Environment variables name 1').inputValue()).toBe('REGISTRY_API_KEY');
    const secretBox = page.getByLabel('Environment variables secret 1');
    expect([await secretBox.isChecked(), await secretBox.isDisabled()]).toEqual([true, true]);
    expect(await page.getByLabel('Environment variables value 1').getAttribute('type')).toBe('password');
    await page.getByLabel('Environment variables value 1').fill(key);
    await page.getByLabel('Image Registry Password').fill(key);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.waitForURL(/#\/deployments\/general\/\d+/);
    const id = Number(/general\/(\d+)/.exec(page.url())?.[1]);
    await page.getByRole('button', { name: 'Done' }).click();
    let d = (await platform.call('GET', `/deployments/general/${id}`)).body;
    expect(d).toMatchObject({ env: {}, secret_env: ['REGISTRY_API_KEY'], has_registry_password: true });
    // The replica got it: the vendor container only becomes ready with its registry key.
    await platform.waitFor(id, (x) => x.status === 'ready', 30_000, 'vendor ready');

    await at(`/deployments/general/${id}/settings`);
    const stored = page.locator('[data-env="REGISTRY_API_KEY"]');
    await expect.poll(() => stored.textContent()).toContain('secret · set');
    expect(await page.content()).not.toContain(key);
    // Replace its value and add a second secret in one save: one new revision.
    await page.getByRole('button', { name: 'Replace secret REGISTRY_API_KEY' }).click();
    await page.getByLabel('New value of secret REGISTRY_API_KEY').fill(rotated);
    await page.getByRole('button', { name: 'Add environment variable' }).click();
    await page.getByLabel('Environment variables name 1').fill('EXTRA_TOKEN');
    await page.getByLabel('Environment variables secret 1').check();
    await page.getByLabel('Environment variables value 1').fill('extra-secret-value');
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/Creates revision 2 .*secret_env/);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText(/Saved: revision 2/).waitFor();
    d = (await platform.call('GET', `/deployments/general/${id}`)).body;
    expect(d).toMatchObject({ revision: 2, env: {}, secret_env: ['EXTRA_TOKEN', 'REGISTRY_API_KEY'] });
    await expect.poll(() => page.locator('[data-env="EXTRA_TOKEN"]').textContent()).toContain('secret · set');
    expect(await page.content()).not.toMatch(/nvapi-console-key|extra-secret-value/);

    await page.getByRole('button', { name: 'Remove secret EXTRA_TOKEN' }).click();
    await expect.poll(() => page.locator('[data-env="EXTRA_TOKEN"]').textContent()).toContain('removed on save');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText(/Saved: revision 3/).waitFor();
    d = (await platform.call('GET', `/deployments/general/${id}`)).body;
    expect(d).toMatchObject({ revision: 3, secret_env: ['REGISTRY_API_KEY'] });
    expect(JSON.stringify(d)).not.toMatch(/nvapi-console-key|extra-secret-value/);
    await platform.waitFor(id, (x) => x.serving_revision === 3 && x.status === 'ready', 30_000, 'revision 3 ready with the rotated key');
  });

  it('shows a server refusal next to the field it names, keeping what was typed', async () => {
    await at('/deployments/new/general');
    const name = page.getByLabel('Endpoint Name', { exact: true });
    await name.fill('a-name-of-21-letters-');
    await name.fill('abcdefghijklmnopqrstu');
    await page.getByLabel('Image', { exact: true }).fill('infergate/reference-engine');
    await page.getByLabel('Container Port').fill('8000');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const nameField = page.locator('[data-field="name"]');
    await expect.poll(() => nameField.locator('.field-error').textContent()).toMatch(/20 characters/);

    // A taken name is only known to the server: its 409 lands next to the same field, in the page's words.
    await name.fill('chat');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await expect.poll(() => nameField.locator('.field-error').textContent()).toMatch(/^Endpoint Name "chat" is already used/);
    expect(await page.getByLabel('Image', { exact: true }).inputValue()).toBe('infergate/reference-engine');
    expect(await page.getByLabel('Container Port').inputValue()).toBe('8000');
  });

  it('says a problem with the label the user sees, never the API field name', async () => {
    await at('/deployments/new/general');
    await page.getByLabel('Endpoint Name', { exact: true }).fill('labels');
    await page.getByLabel('Image', { exact: true }).fill('infergate/reference-engine');
    await page.getByLabel('Container Port').fill('8000');
    // The browser's own check: a range of replicas needs the concurrency target (max_concurrency in the API).
    await page.getByLabel('Max Replicas').fill('3');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const target = page.locator('[data-field="max_concurrency"] .field-error');
    await expect.poll(() => target.textContent()).toMatch(/^Target concurrency per replica is required when Max Replicas \(3\) > Min Replicas \(1\)/);
    expect(await page.locator('main').textContent()).not.toMatch(/max_concurrency|max_replicas|min_replicas/);
    await page.getByLabel('Target concurrency per replica').fill('4');
    await expect.poll(() => target.count()).toBe(0);

    // The server's check: a variable holding a service-account key, refused as env.LEAK.
    await page.getByRole('button', { name: 'Add environment variable' }).click();
    await page.getByLabel('Environment variables name 1').fill('LEAK');
    await page.getByLabel('Environment variables value 1').fill(PLATFORM_ADMIN_KEY);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const env = page.locator('[data-field="env"] > .field-error');
    await expect.poll(() => env.textContent(), { timeout: 15_000 }).toMatch(/^Environment variable LEAK holds a service-account key/);
    expect(await page.locator('main').textContent()).not.toContain('env.LEAK');
    expect((await platform.call('GET', '/deployments/general')).body.items.some((d: { name: string }) => d.name === 'labels')).toBe(false);
  });

  it('renders a log line holding markup as text: nothing runs', async () => {
    const res = await platform.call('POST', '/deployments/general', engineBody('xss', 'tok-xss-0123456789', { command: [...FAST_ENGINE, '--model', XSS], env: { NOTE: XSS } }));
    expect(res.status).toBe(201);
    // The engine refuses that model name, quoting it on stderr: the line to render.
    await at(`/deployments/general/${res.body.id}/logs`);
    const view = page.getByTestId('log-view');
    await expect.poll(() => view.textContent(), { timeout: 15_000 }).toContain(XSS);
    expect(await view.locator('img').count()).toBe(0);
    // The replica crash-loops on that argument: the Overview says so and points at the logs.
    await at(`/deployments/general/${res.body.id}`);
    await expect.poll(() => page.getByRole('alert').first().textContent(), { timeout: 20_000 }).toMatch(/xss-r1-\d+ has restarted \d+ times? without becoming ready/);
    await at(`/deployments/general/${res.body.id}/settings`);
    await page.getByLabel('Environment variables value 1').waitFor();
    expect(await page.getByLabel('Environment variables value 1').inputValue()).toBe(XSS);
    await page.waitForTimeout(500);
    expect(seen.dialogs).toEqual([]);
    expect(seen.errors).toEqual([]);
  });

  it('keeps a member account off the service-accounts page, and the API refuses it too', async () => {
    const member = await platform.call('POST', '/service-accounts', { name: 'console-member', role: 'member' });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Service accounts' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Service-account key').fill(member.body.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Vault tokens' }).waitFor();
    expect(await nav.getByRole('link', { name: 'Service accounts' }).count()).toBe(0);
    await at('/service-accounts');
    await page.getByRole('heading', { name: 'Service accounts' }).waitFor();
    expect(await page.getByRole('note').textContent()).toBe('only owners may create and delete service accounts; you are a developer.');
    // A developer may list the project's accounts but not make one.
    const status = await page.evaluate(
      `fetch('/service-accounts', { method: 'POST', headers: { authorization: 'Bearer ' + sessionStorage.getItem('infergate.key'), 'content-type': 'application/json' }, body: JSON.stringify({ name: 'nope' }) }).then((r) => r.status)`,
    );
    expect(status).toBe(403);
  });

  it("Settings shows the capabilities an admin's deployment keeps in its containers; the member's spec change is refused in the page's words", async () => {
    // Scaled to zero: nothing needs to run for its settings.
    const created = await platform.call('POST', '/deployments/general', { ...engineBody('capped', token), min_replicas: 0, max_concurrency: 4, container_capabilities: ['SETUID', 'MKNOD'] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await at(`/deployments/general/${created.body.id}/settings`);
    await page.getByText('Container capabilities kept: SETUID, MKNOD.').waitFor();
    await page.getByLabel('Add command').fill([...FAST_ENGINE, '--model', 'sim/other'].join('\n'));
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Only an admin service account may keep capabilities in a deployment\'s containers (Container capabilities: SETUID, MKNOD)').waitFor();
    expect((await platform.call('GET', `/deployments/general/${created.body.id}`)).body.revision).toBe(1);
  });
});
