// The console's resource pages and the detail's edge cases, in Chromium against a real
// `infergate serve`: a vault token created in the browser is shown once and its delete warns
// with the endpoint it protects; a certificate is created, downloaded as a .pem holding its
// certificate and key, and revoked; the Clusters page shows the GPU quota in use and free
// instances; a revision deployed with logging off says it has no logs; the Terminal tab says
// why it is closed while a deployment is paused; a disaggregated deployment's settings are
// read-only and say editing is API-only; the detail's tabs follow the arrow keys.

import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { browserAvailable, ensureConsoleBuilt, launchBrowser, watchPage } from '../helpers/browser.js';
import { engineBody, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from '../helpers/platform.js';

const run = browserAvailable();

describe.runIf(run)('console resource pages in Chromium', { timeout: 90_000 }, () => {
  let platform: Platform;
  let browser: Browser;
  let page: Page;
  let seen: { dialogs: string[]; errors: string[] };

  usePlatform('console-resources', [], (p) => {
    platform = p;
  });

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    seen = watchPage(page);
    await page.goto(`${platform.apiUrl}/`);
    await page.getByLabel('Service-account key').fill(PLATFORM_ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Deployments', exact: true }).waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  const at = (hash: string) => page.goto(`${platform.apiUrl}/#${hash}`);

  it('Vault tokens: the value is shown once; deleting warns with the endpoint it protects', async () => {
    await at('/vault');
    await page.getByLabel('Token name').fill('for-quiet');
    await page.getByRole('button', { name: 'Create token' }).click();
    const value = (await page.getByTestId('secret-value').textContent()) ?? '';
    expect(value.length).toBeGreaterThanOrEqual(8);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByText(value).count()).toBe(0);

    const d = await platform.call('POST', '/deployments/general', engineBody('quiet', value, { enable_logging: false }));
    expect(d.status).toBe(201);
    await at('/vault');
    await page.getByRole('button', { name: 'Delete token for-quiet' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.textContent()).toContain('It still protects quiet');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await platform.call('GET', '/vault/tokens')).body.items.some((t: { name: string }) => t.name === 'for-quiet')).toBe(true);
  });

  it('Logs: a revision deployed with logging off says it has no logs', async () => {
    const id = (await platform.call('GET', '/deployments/general')).body.items.find((x: { name: string }) => x.name === 'quiet').id;
    await at(`/deployments/general/${id}/logs`);
    await expect.poll(() => page.getByRole('note').textContent()).toMatch(/no logs: it was deployed with enable_logging false/);
  });

  it('Terminal: closed while paused, saying why', async () => {
    const id = (await platform.call('GET', '/deployments/general')).body.items.find((x: { name: string }) => x.name === 'quiet').id;
    expect((await platform.call('POST', `/deployments/general/${id}/pause`)).status).toBe(202);
    await at(`/deployments/general/${id}/terminal`);
    await expect.poll(() => page.getByRole('note').textContent()).toMatch(/available only while the deployment is Active.*quiet is paused/);
  });

  it('Certificates: create, download the .pem (certificate and key), revoke', async () => {
    await at('/certificates');
    await page.getByLabel('Certificate name').fill('laptop');
    await page.getByRole('button', { name: 'Create certificate' }).click();
    const row = page.locator('tr[data-certificate="laptop"]');
    await row.getByText('Valid').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'Download laptop.pem' }).click()]);
    expect(download.suggestedFilename()).toBe('laptop.pem');
    const pem = await readFile((await download.path())!, 'utf8');
    expect(pem).toContain('BEGIN CERTIFICATE');
    expect(pem).toMatch(/BEGIN (RSA )?PRIVATE KEY/);
    await row.getByRole('button', { name: 'Revoke laptop' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await row.getByText('Revoked').waitFor();
  });

  it('Clusters: the GPU quota in use and the free instances', async () => {
    await at('/clusters');
    // One deployment (quiet) of max 1 × sim-gpu-1x: 1 GPU of the default quota of 32.
    await expect.poll(() => page.getByTestId('gpu-quota').textContent()).toMatch(/1 of 32 GPUs in use, 31 free/);
    const hardware = await page.getByRole('table', { name: 'Hardware of local-sim', exact: true }).textContent();
    expect(hardware).toMatch(/sim-gpu-1x\s*1\s*16\s*15/);
  });

  it('a disaggregated deployment: settings read-only, editing and cloning API-only', async () => {
    const token = (await platform.call('POST', '/vault/tokens', { name: 'disagg' })).body.token;
    const d = await platform.call('POST', '/deployments/orchestrated', {
      name: 'split',
      cluster_id: 1,
      model: 'acme/tiny-chat',
      serving_mode: 'disaggregated',
      worker_pools: { prefill: { hardware_instance_id: 1, replicas: 1 }, decode: { hardware_instance_id: 1, replicas: 1 } },
      endpoint_bearer_token: token,
    });
    expect(d.status).toBe(201);
    await at(`/deployments/orchestrated/${d.body.id}/settings`);
    await expect.poll(() => page.getByRole('tabpanel').textContent()).toMatch(/API-only|through the API/);
    expect(await page.getByRole('button', { name: 'Save', exact: true }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Clone', exact: true }).count()).toBe(0);
    await at(`/deployments/orchestrated/${d.body.id}`);
    await expect.poll(() => page.getByRole('table', { name: 'Component health' }).textContent()).toMatch(/Prefill.*Decode|Decode.*Prefill/);

    // The tabs work from the keyboard: arrow keys move between them, focus follows.
    await page.getByRole('tab', { name: 'Overview' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.waitForURL(/\/logs$/);
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Logs');
    await page.keyboard.press('ArrowLeft');
    await page.waitForURL(new RegExp(`orchestrated/${d.body.id}/overview$`));
    expect(seen.dialogs).toEqual([]);
    expect(seen.errors).toEqual([]);
  });
});
