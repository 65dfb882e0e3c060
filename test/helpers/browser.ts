// Test helper: a real browser for the console's tests — Debian's Chromium (/usr/bin/chromium,
// headless; `--no-sandbox` when running as root) driven by playwright-core — and a console
// build that matches its sources (rebuilt into dist/console when a source file is newer, so
// `vitest` after an edit tests the edit). Without Chromium the suite is skipped loudly, except
// under CI=true, where that fails the run (.ci/run installs the package).

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CONSOLE_DIR = path.join(ROOT, 'dist/console');

/** Whether the browser suites can run here; under CI=true a missing Chromium is an error. */
export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI === 'true') throw new Error(`Chromium is required under CI=true (${CHROMIUM}): apt-get install -y chromium`);
  process.stderr.write(`\n!!! WARNING: no Chromium at ${CHROMIUM}.\n!!! The console's browser tests are SKIPPED. Install it: apt-get install -y chromium\n\n`);
  return false;
}

function newest(dir: string): number {
  let t = 0;
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const s = statSync(p);
    t = Math.max(t, s.isDirectory() ? newest(p) : s.mtimeMs);
  }
  return t;
}

/** Builds the console when dist/console is missing or older than its sources. */
export function ensureConsoleBuilt(): void {
  const index = path.join(CONSOLE_DIR, 'index.html');
  // The console bundles src/domain (its request rules among them), so an edit there rebuilds it too.
  const sources = Math.max(newest(path.join(ROOT, 'console/src')), newest(path.join(ROOT, 'src/domain')), statSync(path.join(ROOT, 'console/index.html')).mtimeMs, statSync(path.join(ROOT, 'console/vite.config.ts')).mtimeMs);
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--config', path.join(ROOT, 'console/vite.config.ts'), '--logLevel', 'warn'], {
    cwd: ROOT,
    stdio: 'inherit',
    // vitest sets NODE_ENV=test, which would make Vite bundle React's development build.
    env: { ...process.env, NODE_ENV: 'production' },
  });
}

export async function launchBrowser(): Promise<Browser> {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // The machine's network is closed: Chromium's background fetches would only fail and retry.
    args: [
      ...(root ? ['--no-sandbox'] : []),
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** Collects what a page must never do: dialogs (alert from injected markup), CSP violations, uncaught errors. */
export function watchPage(page: Page): { dialogs: string[]; errors: string[] } {
  const seen = { dialogs: [] as string[], errors: [] as string[] };
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('pageerror', (e) => seen.errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text())) seen.errors.push(m.text());
  });
  return seen;
}

/**
 * A new page of the console at `apiUrl`, watched (watchPage) and signed in with `key`: on the
 * Deployments page when this resolves.
 */
export async function signedInPage(browser: Browser, apiUrl: string, key: string): Promise<{ page: Page; seen: { dialogs: string[]; errors: string[] } }> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  const seen = watchPage(page);
  await page.goto(`${apiUrl}/`);
  await page.getByLabel('Service-account key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Deployments', exact: true }).waitFor();
  return { page, seen };
}
