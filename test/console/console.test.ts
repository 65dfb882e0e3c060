// The web console in a real browser (Debian's Chromium through playwright-core) against a real
// `infergate serve` on free ports: sign-in, a general deployment created through the form and
// watched to ready, called through the gateway, its access line arriving live in the Logs tab,
// the terminal running `echo $GREETING` inside the replica, usage and activity, settings that
// say whether they scale in place or make a revision, rollback, pause and resume, an
// aggregated orchestrated deployment through its form, server refusals shown next to the
// field, log lines rendered as text (no script runs), and a member account kept off the
// service-accounts page. Screenshots go to docs/console/ when CONSOLE_SCREENSHOTS=1.

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserAvailable, ensureConsoleBuilt, launchBrowser, watchPage } from '../helpers/browser.js';
import { engineBody, FAST_ENGINE, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from '../helpers/platform.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? path.join(ROOT, 'docs/console') : null;
const XSS = '<img src=x onerror=alert(1)>';
const run = browserAvailable();

describe.runIf(run)('web console in Chromium', () => {
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
    await page.getByRole('heading', { name: 'Deployments' }).waitFor();
    await page.getByText('Create your first deployment').waitFor();
    // Kept for this tab only: sessionStorage, never localStorage.
    expect(await page.evaluate("[sessionStorage.getItem('infergate.key') !== null, localStorage.length]")).toEqual([true, 0]);
  });
});
