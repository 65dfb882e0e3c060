// The console's side of flow control, in Chromium against a real `infergate serve`: the create
// form's Flow control panel (empty: the defaults; one field filled sends the whole object),
// Settings showing and changing it at once without a revision and emptying it back to the
// defaults, the browser's range check said with the page's labels, and the Max priority of
// vault tokens and certificates — chosen at creation and changed in the list's row.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { browserAvailable, ensureConsoleBuilt, launchBrowser, signedInPage } from '../helpers/browser.js';
import { engineBody, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from '../helpers/platform.js';

const run = browserAvailable();
const DEFAULTS = { max_queue: 1000, max_wait_seconds: { critical: 60, standard: 30, sheddable: 5 } };

describe.runIf(run)('console flow control and priority caps in Chromium', { timeout: 90_000 }, () => {
  let platform: Platform;
  let browser: Browser;
  let page: Page;
  let seen: { dialogs: string[]; errors: string[] };

  usePlatform('console-flow', [], (p) => {
    platform = p;
  });

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchBrowser();
    ({ page, seen } = await signedInPage(browser, platform.apiUrl, PLATFORM_ADMIN_KEY));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  const at = (hash: string) => page.goto(`${platform.apiUrl}/#${hash}`);
  const saveAtOnce = async () => {
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/^Takes effect at once; no revision \(flow_control\)/);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved: took effect at once').waitFor();
  };

  it('creates a deployment with a queue size only: the rest are the defaults', async () => {
    await at('/deployments/new/general');
    await page.getByLabel('Endpoint Name', { exact: true }).fill('queued');
    await page.getByLabel('Image', { exact: true }).fill('infergate/reference-engine');
    await page.getByLabel('Container Port').fill('8000');
    // The defaults are the placeholders: an empty panel shows what applies.
    expect(await page.getByLabel('Queue size').getAttribute('placeholder')).toBe('1000');
    expect(await page.getByLabel('Longest wait, sheddable (s)').getAttribute('placeholder')).toBe('5');
    // The browser's check, in the page's words.
    await page.getByLabel('Queue size').fill('200000');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const problem = page.locator('[data-field="flow_control.max_queue"] .field-error');
    await expect.poll(() => problem.textContent()).toMatch(/^Queue size must be a whole number from 0 to 100000/);
    await page.getByLabel('Queue size').fill('50');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.waitForURL(/#\/deployments\/general\/\d+/);
    const id = Number(/general\/(\d+)/.exec(page.url())?.[1]);
    const d = (await platform.call('GET', `/deployments/general/${id}`)).body;
    expect(d).toMatchObject({ flow_control: { ...DEFAULTS, max_queue: 50 }, flow_control_is_default: false });
  });

  it('Settings shows it, changes it at once without a revision, and empty goes back to the defaults', async () => {
    const id = (await platform.call('GET', '/deployments/general')).body.items.find((x: { name: string }) => x.name === 'queued').id;
    await at(`/deployments/general/${id}/settings`);
    await expect.poll(() => page.getByLabel('Queue size').inputValue()).toBe('50');
    expect(await page.getByLabel('Longest wait, critical (s)').inputValue()).toBe('60');

    await page.getByLabel('Longest wait, critical (s)').fill('120');
    await saveAtOnce();
    let d = (await platform.call('GET', `/deployments/general/${id}`)).body;
    expect(d).toMatchObject({ revision: 1, flow_control: { max_queue: 50, max_wait_seconds: { critical: 120, standard: 30, sheddable: 5 } } });

    for (const label of ['Queue size', 'Longest wait, critical (s)', 'Longest wait, standard (s)', 'Longest wait, sheddable (s)']) await page.getByLabel(label).fill('');
    await saveAtOnce();
    d = (await platform.call('GET', `/deployments/general/${id}`)).body;
    expect(d).toMatchObject({ revision: 1, flow_control: DEFAULTS, flow_control_is_default: true });
    // A deployment on the defaults shows empty fields, and nothing to save.
    await page.reload();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('No changes to save.');
    expect(await page.getByLabel('Queue size').inputValue()).toBe('');
  });

  it('Vault tokens: a Max priority chosen at creation, changed in the row', async () => {
    await at('/vault');
    await page.getByLabel('Token name').fill('batch-jobs');
    await page.getByLabel('Max priority', { exact: true }).selectOption('sheddable');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('button', { name: 'Done' }).click();
    const token = () => platform.call('GET', '/vault/tokens').then((r) => r.body.items.find((t: { name: string }) => t.name === 'batch-jobs'));
    expect((await token()).max_priority).toBe('sheddable');
    const cell = page.getByLabel('Max priority of token batch-jobs');
    await expect.poll(() => cell.inputValue()).toBe('sheddable');
    await cell.selectOption('critical');
    await expect.poll(async () => (await token()).max_priority).toBe('critical');
    await cell.selectOption({ label: 'Any class (no cap)' });
    await expect.poll(async () => (await token()).max_priority).toBeNull();
  });

  it('Certificates: one issued for a private endpoint is accepted by it, with its own Max priority', async () => {
    const priv = await platform.call('POST', '/deployments/general', { ...engineBody('priv', 'unused'), endpoint_bearer_token: undefined, private_endpoint: true });
    expect(priv.status).toBe(201);
    await at('/certificates');
    await page.getByLabel('Certificate name').fill('reports-app');
    await page.getByLabel('For deployment (optional)').selectOption({ label: 'priv' });
    await page.getByLabel('Max priority', { exact: true }).selectOption('standard');
    await page.getByRole('button', { name: 'Create certificate' }).click();
    const row = page.locator('tr[data-certificate="reports-app"]');
    await expect.poll(() => row.textContent()).toContain('priv');
    const cert = () => platform.call('GET', '/certificates').then((r) => r.body.items.find((c: { name: string }) => c.name === 'reports-app'));
    expect(await cert()).toMatchObject({ max_priority: 'standard', deployments: [priv.body.id] });
    await row.getByLabel('Max priority of certificate reports-app').selectOption('sheddable');
    await expect.poll(async () => (await cert()).max_priority).toBe('sheddable');
    expect(seen.errors).toEqual([]);
  });
});
