// Time to interactive of the console's deployments list, on loopback, in Debian's Chromium
// (headless, through playwright-core): from navigation start to the moment the list shows
// every deployment (a MutationObserver installed before the page's own scripts records
// performance.now() when the N-th row appears), over fresh browser contexts (cold: nothing
// cached) and reloads in one context (warm: hashed assets from the cache, index.html
// revalidated). Also the JavaScript the page fetched (bytes on the wire, gzip). One built
// `infergate serve` with N general deployments at zero replicas, so nothing else runs.
//   npm run bench:console [-- --deployments 20 --loads 10]
// Writes bench/results/console-load.json.

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium, type Browser } from 'playwright-core';
import { stopAll } from './lib/processes.js';
import { BENCH_ADMIN_KEY, startService } from './lib/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { deployments: { type: 'string', default: '20' }, loads: { type: 'string', default: '10' } } });
const N = Number(values.deployments);
const LOADS = Number(values.loads);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

async function main(): Promise<void> {
  const service = await startService('console', []);
  const api = `http://127.0.0.1:${service.ports.api}`;
  for (let i = 0; i < N; i++) {
    // Spread over both clusters: each has 16 instances of the 1-GPU hardware.
    await service.createGeneral({ cluster_id: 1 + (i % 2), name: `list-${i}`, image: 'infergate/reference-engine', container_port: 8000, min_replicas: 0, max_replicas: 1, max_concurrency: 4, endpoint_bearer_token: `bench-console-token-${i}` });
  }
  const index = await fetch(`${api}/`);
  if (index.status !== 200) throw new Error(`the console is not served at / (${index.status}): run npm run build`);

  const browser: Browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const account = JSON.stringify({ id: 1, name: 'admin', role: 'admin' });
  const init = `
    sessionStorage.setItem('infergate.key', ${JSON.stringify(BENCH_ADMIN_KEY)});
    sessionStorage.setItem('infergate.account', ${JSON.stringify(account)});
    new MutationObserver((_, obs) => {
      if (document.querySelectorAll('table[aria-label="Deployments"] tbody tr').length >= ${N}) {
        window.__listReadyAt = performance.now();
        obs.disconnect();
      }
    }).observe(document, { childList: true, subtree: true });`;

  const measure = async (page: import('playwright-core').Page, reload: boolean) => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    if (reload) await page.reload();
    else await page.goto(`${api}/#/deployments`);
    // A function, not a string: the console's policy forbids eval, and a string predicate needs it.
    await page.waitForFunction(() => (globalThis as unknown as { __listReadyAt?: number }).__listReadyAt !== undefined, undefined, { timeout: 30_000 });
    const ms = (await page.evaluate('window.__listReadyAt')) as number;
    const js = (await page.evaluate(`performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.js')).reduce((n, e) => n + e.transferSize, 0)`)) as number;
    const rows = await page.locator('table[aria-label="Deployments"] tbody tr').count();
    if (rows !== N) throw new Error(`the list shows ${rows} rows, not the ${N} deployments created`);
    if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
    return { ms, js };
  };

  const cold: Array<{ ms: number; js: number }> = [];
  for (let i = 0; i < LOADS; i++) {
    const context = await browser.newContext();
    await context.addInitScript(init);
    cold.push(await measure(await context.newPage(), false));
    await context.close();
  }
  const warmContext = await browser.newContext();
  await warmContext.addInitScript(init);
  const page = await warmContext.newPage();
  await measure(page, false);
  const warm: Array<{ ms: number; js: number }> = [];
  for (let i = 0; i < LOADS; i++) warm.push(await measure(page, true));
  await browser.close();

  const result = {
    deployments: N,
    loads: LOADS,
    cold_ms_median: Math.round(median(cold.map((c) => c.ms))),
    cold_ms_max: Math.round(Math.max(...cold.map((c) => c.ms))),
    warm_ms_median: Math.round(median(warm.map((c) => c.ms))),
    js_bytes_on_the_wire_cold: cold[0]!.js,
    js_bytes_on_the_wire_warm: warm[0]!.js,
  };
  console.log(`console list with ${N} deployments, ${LOADS} loads each, loopback, headless Chromium:`);
  console.log(`  time to interactive, cold (fresh context): median ${result.cold_ms_median} ms, max ${result.cold_ms_max} ms`);
  console.log(`  time to interactive, warm (reload, cached assets): median ${result.warm_ms_median} ms`);
  console.log(`  JavaScript on the wire: ${(result.js_bytes_on_the_wire_cold / 1024).toFixed(1)} KB cold, ${(result.js_bytes_on_the_wire_warm / 1024).toFixed(1)} KB warm`);
  await mkdir(path.join(root, 'bench/results'), { recursive: true });
  await writeFile(path.join(root, 'bench/results/console-load.json'), JSON.stringify(result, null, 2) + '\n');
}

main()
  .catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
