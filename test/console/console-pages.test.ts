// The console with more deployments than one page of the API holds, in Chromium against a
// control API on a real port (no runtime: 230 deployments start nothing): the Deployments page
// reads every page of both lists, a hundred at a time with `continue`, and shows them all sorted
// by name with their count; the vault page names a token's deployment that only the third page
// of the list holds.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { parseCatalog } from '../../src/domain/catalog.js';
import { browserAvailable, CONSOLE_DIR, ensureConsoleBuilt, launchBrowser, signedInPage } from '../helpers/browser.js';
import { ADMIN_KEY, generalBody, startControl, type TestControl } from '../helpers/control.js';

const run = browserAvailable();
const GENERAL = 230;

describe.runIf(run)('console lists past one page, in Chromium', { timeout: 120_000 }, () => {
  let api: TestControl;
  let browser: Browser;
  let page: Page;
  let seen: { dialogs: string[]; errors: string[] };
  const requested: string[] = [];
  let lastName = '';

  beforeAll(async () => {
    ensureConsoleBuilt();
    const catalog = parseCatalog({ clusters: [{ id: 1, name: 'big', orchestration_enabled: true, hardware: [{ id: 1, name: 'g1', gpus_per_instance: 1, instances: 1000 }] }] });
    api = await startControl({ catalog, gpuQuota: 100_000, consoleDir: CONSOLE_DIR });
    const token = await api.call('POST', '/vault/tokens', { name: 'shared-by-many' });
    for (let i = 0; i < GENERAL; i++) {
      // Created in an order that is not the names' order: the page sorts them by name.
      const name = `d-${String((i * 37) % GENERAL).padStart(3, '0')}`;
      // The last one (the highest id: on the list's last page) is protected by the vault token.
      const auth = i === GENERAL - 1 ? { endpoint_token_id: token.body.id as number } : { endpoint_bearer_token: `tok-${name}-0123456789abcdef` };
      const { endpoint_bearer_token: _unused, ...spec } = generalBody(name, '');
      const made = await api.call('POST', '/deployments/general', { ...spec, ...auth, min_replicas: 0, max_replicas: 1 });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      lastName = name;
    }
    for (const name of ['o-1', 'o-2', 'o-3']) {
      const made = await api.call('POST', '/deployments/orchestrated', { name, cluster_id: 1, model: 'org/model', serving_mode: 'aggregated', hardware_instance_id: 1, min_replicas: 1, max_replicas: 1, endpoint_bearer_token: `tok-${name}-0123456789abcdef` });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
    }
    browser = await launchBrowser();
    ({ page, seen } = await signedInPage(browser, api.url, ADMIN_KEY));
    page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname.startsWith('/deployments/') || url.pathname.startsWith('/vault/')) requested.push(`${url.pathname}${url.search}`);
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  it('the Deployments page shows every deployment of both families, sorted by name, read a hundred at a time', async () => {
    await page.goto(`${api.url}/#/deployments`);
    await page.reload();
    await expect.poll(() => page.getByTestId('list-count').textContent(), { timeout: 30_000 }).toBe(`${GENERAL + 3} deployments`);
    const rows = page.getByRole('table', { name: 'Deployments' }).locator('tbody tr');
    expect(await rows.count()).toBe(GENERAL + 3);
    const names = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-deployment') ?? ''));
    expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b)));
    expect(names).toContain(lastName);
    expect(names).toContain('o-3');

    // A walk begun before the listener was attached (the page signed in onto the list) may end
    // after it: the reload's walk is the one that starts from the first page.
    const general = requested.filter((r) => r.startsWith('/deployments/general?'));
    const first = general.indexOf('/deployments/general?limit=100');
    expect(first, JSON.stringify(general)).toBeGreaterThanOrEqual(0);
    expect(general.slice(first, first + 3)).toEqual([
      '/deployments/general?limit=100',
      expect.stringMatching(/^\/deployments\/general\?limit=100&continue=[A-Za-z0-9_-]+$/),
      expect.stringMatching(/^\/deployments\/general\?limit=100&continue=[A-Za-z0-9_-]+$/),
    ]);
    expect(requested.filter((r) => r === '/deployments/general')).toEqual([]);
    expect(seen.errors).toEqual([]);
  });

  it('a vault token names the deployment it protects even when only the last page of the list holds it', async () => {
    await page.goto(`${api.url}/#/vault`);
    const row = page.getByRole('row').filter({ hasText: 'shared-by-many' });
    await expect.poll(() => row.getByRole('link').allTextContents(), { timeout: 30_000 }).toEqual([lastName]);
    expect(requested.some((r) => /^\/deployments\/general\?limit=100&continue=/.test(r))).toBe(true);
    expect(requested.some((r) => /^\/vault\/tokens\?limit=100$/.test(r))).toBe(true);
  });
});
