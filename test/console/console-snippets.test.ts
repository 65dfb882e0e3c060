// The Overview's "Call it" snippets in Chromium against a real `infergate serve`: a deployment
// created through the form, its CA saved with the page's own "Download ca.crt" button, and the
// curl snippet read from the page and run by bash as copied — first with the endpoint token the
// one-time banner shows filled in, then, once the banner is dismissed (the value leaves the
// page), reading ENDPOINT_TOKEN from the environment. Both answers are for the served model the
// snippet names.

import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { browserAvailable, ensureConsoleBuilt, launchBrowser, watchPage } from '../helpers/browser.js';
import { FAST_ENGINE, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from '../helpers/platform.js';
import { runToEnd } from '../helpers/child-process.js';

const run = browserAvailable();

describe.runIf(run)('console: the Overview snippets run as copied', { timeout: 90_000 }, () => {
  let platform: Platform;
  let browser: Browser;
  let page: Page;
  let seen: { dialogs: string[]; errors: string[] };
  let dir: string;

  usePlatform('console-snippets', [], (p) => (platform = p));

  beforeAll(async () => {
    ensureConsoleBuilt();
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-console-snippets-'));
    browser = await launchBrowser();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    page = await context.newPage();
    seen = watchPage(page);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** bash runs the text in the download directory; its environment is `env` plus PATH and HOME. */
  function bash(text: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn('bash', ['-c', text], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    return runToEnd(child);
  }

  const curlSnippet = () => page.getByRole('figure', { name: 'curl' }).locator('pre').textContent();

  it('fills in the token the banner shows, then reads ENDPOINT_TOKEN once it is dismissed; the page CA makes both run', async () => {
    await page.goto(`${platform.apiUrl}/`);
    await page.getByLabel('Service-account key').fill(PLATFORM_ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Create your first deployment' }).click();
    await page.getByLabel('Endpoint Name', { exact: true }).fill('snip');
    await page.getByLabel('Image', { exact: true }).fill('infergate/reference-engine');
    await page.getByLabel('Container Port').fill('8000');
    await page.getByLabel('Health check path').fill('/health');
    await page.getByLabel('Add command').fill(FAST_ENGINE.join('\n'));
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.waitForURL(/#\/deployments\/general\/\d+/);
    const id = Number(/general\/(\d+)/.exec(page.url())?.[1]);
    const token = (await page.getByTestId('secret-value').textContent()) ?? '';
    expect(token.length).toBeGreaterThanOrEqual(8);

    // The platform CA, saved by the page under the name the snippets read.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download ca.crt' }).click()]);
    expect(download.suggestedFilename()).toBe('ca.crt');
    await download.saveAs(path.join(dir, 'ca.crt'));
    expect(await readFile(path.join(dir, 'ca.crt'), 'utf8')).toBe(platform.ca);

    await expect.poll(async () => (await platform.call('GET', `/deployments/general/${id}`)).body.status, { timeout: 30_000 }).toBe('ready');

    // While the banner shows the token, the snippet carries it: it runs with nothing exported.
    await expect.poll(curlSnippet).toContain(token);
    const withToken = (await curlSnippet()) ?? '';
    expect(withToken).toContain(`https://localhost:${platform.ports.gateway}/endpoints/snip/v1/chat/completions`);
    expect(withToken).toContain('"model": "sim/model"');
    const first = await bash(withToken, {});
    expect(first.code, first.stderr).toBe(0);
    const answer = JSON.parse(first.stdout) as { model: string; choices: { message: { content: string } }[] };
    expect(answer.model).toBe('sim/model');
    expect(answer.choices[0]?.message.content).toBeTruthy();

    // Dismissed: the value leaves the page, and the snippet reads the variable instead.
    await page.getByRole('button', { name: 'Done' }).click();
    await expect.poll(curlSnippet).toContain('$ENDPOINT_TOKEN');
    expect(await page.locator('body').textContent()).not.toContain(token);
    const copied = (await curlSnippet()) ?? '';
    const second = await bash(copied, { ENDPOINT_TOKEN: token });
    expect(second.code, second.stderr).toBe(0);
    expect((JSON.parse(second.stdout) as { choices: unknown[] }).choices.length).toBe(1);

    // The SDK snippets are on the page too, on the same path address and model.
    const python = (await page.getByRole('figure', { name: 'OpenAI SDK (Python)' }).locator('pre').textContent()) ?? '';
    expect(python).toContain(`base_url="https://localhost:${platform.ports.gateway}/endpoints/snip/v1"`);
    expect(python).toContain('api_key=os.environ["ENDPOINT_TOKEN"]');
    expect(await page.getByRole('figure', { name: 'OpenAI SDK (JavaScript)' }).locator('pre').textContent()).toContain('model: "sim/model"');
    expect(seen.errors).toEqual([]);
    expect(seen.dialogs).toEqual([]);
  });
});
