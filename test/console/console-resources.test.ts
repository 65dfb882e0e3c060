// The console's resource pages and the detail's edge cases, in Chromium against a real
// `infergate serve`: empty pages say what goes there and offer the action that starts it; a vault token created in the browser is shown once and its delete warns
// with the endpoint it protects; a certificate is created, downloaded as a .pem holding its
// certificate and key, and revoked; the Clusters page shows the GPU quota in use and free
// instances; a revision deployed with logging off says it has no logs; the Terminal tab says
// why it is closed while a deployment is paused; a disaggregated deployment's settings are
// read-only and say editing is API-only; the detail's tabs follow the arrow keys; registry
// credentials are kept in the vault (the password typed once, shown by its last four
// characters), chosen by a general deployment's create form, switched to a username and
// password and back in Settings, and refused deletion in the API's words while in use.

import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { browserAvailable, ensureConsoleBuilt, launchBrowser, signedInPage } from '../helpers/browser.js';
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
    ({ page, seen } = await signedInPage(browser, platform.apiUrl, PLATFORM_ADMIN_KEY));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  const at = (hash: string) => page.goto(`${platform.apiUrl}/#${hash}`);

  it('empty pages say what goes there and offer the action that starts it, instead of bare table headers', async () => {
    const pages: Array<[string, string, RegExp, string, string]> = [
      ['/vault', 'No vault tokens yet', /protects an endpoint/, 'Create a token', 'Token name'],
      ['/certificates', 'No client certificates yet', /mTLS/, 'Create a certificate', 'Certificate name'],
      ['/registry-credentials', 'No registry credentials yet', /Registry credentials/, 'Add registry credentials', 'Credential name'],
    ];
    for (const [hash, title, sentence, action, field] of pages) {
      await at(hash);
      const empty = page.getByTestId('empty-state');
      await empty.getByRole('heading', { name: title }).waitFor();
      expect(await empty.textContent()).toMatch(sentence);
      expect(await page.locator('main table').count()).toBe(0);
      // The action takes the keyboard to the form that fills the list.
      await empty.getByRole('button', { name: action }).click();
      await expect.poll(() => page.evaluate('document.activeElement.id')).toBe(await page.getByLabel(field).getAttribute('id'));
    }
  });

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

  it('Registry credentials: kept in the vault bound to a registry, chosen by a deployment for an image from there, bound again by an admin, switched in Settings, deletion refused while in use', async () => {
    const password = 'registry-console-password-4c7e';
    await at('/registry-credentials');
    await page.getByLabel('Credential name').fill('team-registry');
    await page.getByLabel('Registry username').fill('team');
    expect(await page.getByLabel('Registry password').getAttribute('type')).toBe('password');
    await page.getByLabel('Registry password').fill(password);
    // Not a host: the API's words, next to the field.
    await page.getByLabel('Registry', { exact: true }).fill('https://registry.example.com');
    await page.getByRole('button', { name: 'Create registry credential' }).click();
    await expect.poll(() => page.locator('[data-field="registry"] .field-error').textContent()).toMatch(/^Registry must be a registry host, host\[:port\] .*without a scheme or a path$/);
    await page.getByLabel('Registry', { exact: true }).fill('registry.example.com:5000');
    await page.getByRole('button', { name: 'Create registry credential' }).click();
    const row = page.locator('tr[data-registry-credential="team-registry"]');
    await expect.poll(() => row.textContent()).toMatch(/team-registry\s*team/);
    const bound = row.getByLabel('Registry of team-registry');
    await expect.poll(() => bound.inputValue()).toBe('registry.example.com:5000');
    expect(await page.getByLabel('Registry password').inputValue()).toBe('');
    // No part of the password, anywhere on the page.
    expect(await page.content()).not.toContain('4c7e');
    const credential = (await platform.call('GET', '/vault/registry-credentials')).body.items[0];

    // The create form offers it in place of a username and password, for an image from its registry only.
    await at('/deployments/new/general');
    await page.getByLabel('Endpoint Name', { exact: true }).fill('pulls-vault');
    await page.getByLabel('Image', { exact: true }).fill('infergate/reference-engine');
    await page.getByLabel('Container Port').fill('8000');
    await page.getByLabel('Registry credentials').selectOption({ label: 'team-registry (team at registry.example.com:5000)' });
    expect(await page.getByLabel('Image Registry Username').count()).toBe(0);
    await expect.poll(() => page.locator('[data-field="registry_credential_id"] .hint').textContent()).toContain('Pulls as team with the password kept in the vault as "team-registry", sent to registry.example.com:5000 only');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await expect
      .poll(() => page.locator('[data-field="registry_credential_id"] .field-error').textContent())
      .toMatch(/is for the registry registry\.example\.com:5000, and image infergate\/reference-engine is pulled from docker\.io/);
    // An admin binds it again, in its row (Docker Hub, where this image comes from).
    await at('/registry-credentials');
    await bound.fill('index.docker.io');
    await row.getByRole('button', { name: 'Bind team-registry to this registry' }).click();
    await expect.poll(async () => (await platform.call('GET', `/vault/registry-credentials/${credential.id}`)).body.registry).toBe('docker.io');
    await at('/deployments/new/general');
    await page.getByLabel('Endpoint Name', { exact: true }).fill('pulls-vault');
    await page.getByLabel('Image', { exact: true }).fill('infergate/reference-engine');
    await page.getByLabel('Container Port').fill('8000');
    await page.getByLabel('Registry credentials').selectOption({ label: 'team-registry (team at docker.io)' });
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.waitForURL(/#\/deployments\/general\/\d+/);
    const id = Number(/general\/(\d+)/.exec(page.url())?.[1]);
    await page.getByRole('button', { name: 'Done' }).click();
    const read = async () => (await platform.call('GET', `/deployments/general/${id}`)).body;
    expect(await read()).toMatchObject({ registry_credential_id: credential.id, registry_username: null, has_registry_password: false });

    // In use: the dialog names the deployment, and the API's refusal is shown in its words.
    await at('/registry-credentials');
    await page.getByRole('button', { name: 'Delete registry credential team-registry' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.textContent()).toContain('pulls-vault pull with it');
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toMatch(/registry credential team-registry is used by pulls-vault/);
    await expect.poll(() => row.count()).toBe(1);

    // Settings: over to a username and password of its own, then back to the vault's.
    const save = async (revision: number) => {
      await expect.poll(() => page.getByRole('status').textContent()).toMatch(new RegExp(`Creates revision ${revision} .*registry_credential_id`));
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText(new RegExp(`Saved: revision ${revision}`)).waitFor();
    };
    await at(`/deployments/general/${id}/settings`);
    await expect.poll(() => page.getByLabel('Registry credentials').inputValue()).toBe(`vault:${credential.id}`);
    await page.getByLabel('Registry credentials').selectOption({ label: 'Enter a username and password' });
    await page.getByLabel('Image Registry Username').fill('team');
    await page.getByLabel('Image Registry Password').fill('own-password-0000');
    await save(2);
    expect(await read()).toMatchObject({ registry_credential_id: null, registry_username: 'team', has_registry_password: true });
    await page.getByLabel('Registry credentials').selectOption({ label: 'team-registry (team at docker.io)' });
    await save(3);
    expect(await read()).toMatchObject({ registry_credential_id: credential.id, registry_username: null, has_registry_password: false });

    // Once no deployment pulls with it, it goes.
    expect((await platform.call('DELETE', `/deployments/general/${id}`)).status).toBe(202);
    await expect.poll(async () => (await platform.call('GET', `/vault/registry-credentials/${credential.id}`)).body.deployments, { timeout: 30_000 }).toEqual([]);
    await at('/registry-credentials');
    await page.getByRole('button', { name: 'Delete registry credential team-registry' }).click();
    await expect.poll(() => page.getByRole('dialog').textContent()).toContain('No deployment pulls with it');
    await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
    await expect.poll(() => row.count()).toBe(0);
    expect(seen.dialogs).toEqual([]);
    expect(seen.errors).toEqual([]);
  });
});
