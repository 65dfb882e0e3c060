// The console's side of traffic between revisions and autoscaling signals. First the pure
// rules the pages use (console/src/forms/traffic.ts): rows into the `traffic` body with the
// platform's own checks, the lists "Send 10 %", "Promote" and "Roll back" send, and what a
// change will do in words. Then in Chromium against a real `infergate serve`: the rollout
// mode and the autoscaling signal chosen in Settings, a split typed in Settings (a sum of 110
// refused in the browser, 90/10 with a tag saved to the record without a revision), the two
// revisions side by side on the Overview with what the gateways measured of each, the tag's
// host in the revision history, Roll back and Promote confirmed with what they will do, and
// the Activity tab naming the signal. Screenshots go to docs/console/ when CONSOLE_SCREENSHOTS=1.

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { browserAvailable, ensureConsoleBuilt, launchBrowser, signedInPage } from '../helpers/browser.js';
import { engineBody, ENDPOINT_DOMAIN, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from '../helpers/platform.js';
import { classifyPatch } from '../../src/domain/patch-effect.js';
import { inLabels } from '../../console/src/forms/labels.js';
import {
  apportion,
  canaryList,
  promoteList,
  rollbackList,
  rollbackTarget,
  rowsFrom,
  settingsStatement,
  storedTrafficBody,
  trafficBody,
  trafficChangeWords,
} from '../../console/src/forms/traffic.js';
import type { TrafficEntry } from '../../console/src/api/types.js';

const entry = (revision: number, percent: number, o: Partial<TrafficEntry> = {}): TrafficEntry => ({ revision, latest: false, percent, tag: null, url: null, ...o });
const deployment = (revision: number, traffic: TrafficEntry[] | null, serving: number | null = null) => ({
  revision,
  serving_revision: serving,
  traffic: traffic ?? [entry(revision, 100, { latest: true })],
  traffic_is_default: traffic === null,
  revision_replicas: (traffic ?? [entry(revision, 100)]).filter((t) => t.percent > 0).map((t) => ({ revision: t.revision, percent: t.percent, tags: [], ready: 1, desired: 1 })),
});

describe('console traffic rules', () => {
  it('reads rows into the traffic body with the API rules: a sum of 110 is refused, the default list is no list', () => {
    const refused = trafficBody([
      { target: '3', percent: '90', tag: '' },
      { target: '4', percent: '20', tag: '' },
    ]);
    expect(refused.body).toBeUndefined();
    expect(refused.problems).toEqual({ traffic: 'the percents of traffic must sum to 100, got 110' });
    expect(trafficBody([{ target: '3', percent: 'ten', tag: '' }]).problems['traffic[0].percent']).toMatch(/whole number from 0 to 100/);
    expect(trafficBody([{ target: '3', percent: '90', tag: '' }, { target: 'latest', percent: '10', tag: 'canary' }]).body).toEqual([
      { revision: 3, percent: 90 },
      { latest: true, percent: 10, tag: 'canary' },
    ]);
    // One "latest" row at 100 % is the default: nothing to send, and a stored default reads the same.
    expect(trafficBody([{ target: 'latest', percent: '100', tag: '' }])).toEqual({ body: undefined, problems: {} });
    expect(storedTrafficBody({ traffic: [entry(4, 100, { latest: true })], traffic_is_default: false })).toBeUndefined();
    expect(rowsFrom(deployment(4, null))).toEqual([{ target: 'latest', percent: '100', tag: '' }]);
    expect(rowsFrom(deployment(4, [entry(3, 90), entry(4, 10, { latest: true, tag: 'canary' })]))).toEqual([
      { target: '3', percent: '90', tag: '' },
      { target: 'latest', percent: '10', tag: 'canary' },
    ]);
  });

  it('says a row\'s problem with the page\'s words', () => {
    expect(inLabels('traffic[1].percent must be a whole number from 0 to 100')).toBe('Traffic row 2 percent must be a whole number from 0 to 100');
    expect(inLabels('autoscaling_target of ttft must be a whole number from 1 to 600000 (ms p90 time to first token), got 0')).toBe(
      'Signal target of ttft must be a whole number from 1 to 600000 (ms p90 time to first token), got 0',
    );
  });

  it('builds the lists of Send 10 %, Promote and Roll back', () => {
    expect(apportion([90, 10], 90)).toEqual([81, 9]);
    expect(apportion([1, 1, 1], 100)).toEqual([34, 33, 33]);
    // Manual rollout: revision 4 at 0 % beside revision 3.
    const manual = deployment(4, [entry(3, 100)], 3);
    expect(canaryList(manual, 4)).toEqual([
      { revision: 3, percent: 90 },
      { latest: true, percent: 10 },
    ]);
    const split = deployment(4, [entry(3, 90), entry(4, 10, { tag: 'canary' })], 3);
    expect(promoteList(split, 4)).toEqual([{ latest: true, percent: 100, tag: 'canary' }]);
    expect(promoteList(split, 3)).toEqual([{ revision: 3, percent: 100 }]);
    expect(rollbackTarget(split)).toBe(3);
    expect(rollbackList(split, 3)).toEqual([{ revision: 3, percent: 100 }]);
    // Without a split there is nothing to roll back from.
    expect(rollbackTarget(deployment(4, null, 4))).toBeNull();
    expect(rollbackTarget(deployment(4, [entry(4, 100), entry(3, 0, { tag: 'old' })], 4))).toBeNull();
  });

  it('says what a change of traffic will do', () => {
    const split = deployment(4, [entry(3, 90), entry(4, 10, { tag: 'canary' })], 3);
    expect(trafficChangeWords(split, [{ latest: true, percent: 100, tag: 'canary' }])).toBe(
      'Sends 100 % to revision 4 (tag canary). Revision 3 gets no more traffic: its replicas drain and stop within a minute. No new revision; the gateways apply it within seconds.',
    );
    const manual = deployment(4, [entry(3, 100)], 3);
    expect(trafficChangeWords(manual, [{ revision: 3, percent: 90 }, { revision: 4, percent: 10 }])).toBe(
      'Sends 90 % to revision 3 and 10 % to revision 4. Revision 4 starts its own replicas and takes its share once one is ready; until then the others serve it. No new revision; the gateways apply it within seconds.',
    );
    // A spec change in manual mode makes a revision at 0 %, whatever the platform's generic forecast says.
    const patch = { image: 'other' };
    const plan = { ...classifyPatch(patch, 4), patch };
    expect(settingsStatement(plan, manual, 'manual', [{ revision: 3, percent: 100 }])).toBe(
      'Creates revision 5: image changed. Manual rollout: revision 5 is made at 0 % and traffic stays as it is (100 % to revision 3); give it a share under Traffic or from the revision history.',
    );
    // Automatic without a list: the platform's rolling update, unchanged.
    expect(settingsStatement(plan, deployment(4, null), 'automatic', null)).toBe(plan.statement);
    const trafficOnly = { traffic: [{ revision: 3, percent: 90 }, { revision: 4, percent: 10 }] };
    expect(settingsStatement({ ...classifyPatch(trafficOnly, 4), patch: trafficOnly }, manual, 'manual', trafficOnly.traffic)).toMatch(/^Sends 90 % to revision 3 and 10 % to revision 4\./);
  });
});

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? path.join(ROOT, 'docs/console') : null;
const run = browserAvailable();
const NAME = 'canary';
const TOKEN = 'tok-console-traffic-0123';

describe.runIf(run)('console traffic and autoscaling signals in Chromium', { timeout: 120_000 }, () => {
  let platform: Platform;
  let browser: Browser;
  let page: Page;
  let seen: { dialogs: string[]; errors: string[] };
  let id = 0;

  usePlatform('console-traffic', [], (p) => {
    platform = p;
  });

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchBrowser();
    ({ page, seen } = await signedInPage(browser, platform.apiUrl, PLATFORM_ADMIN_KEY));
    const created = await platform.call('POST', '/deployments/general', engineBody(NAME, TOKEN, { min_replicas: 1, max_replicas: 2, max_concurrency: 8 }));
    expect(created.status).toBe(201);
    id = created.body.id;
    // A deployment whose name is the host a tag "beta" would take (scaled to zero: it runs nothing).
    const other = await platform.call('POST', '/deployments/general', engineBody(`beta-${NAME}`, TOKEN, { min_replicas: 0, max_replicas: 1, max_concurrency: 4 }));
    expect(other.status).toBe(201);
    await platform.waitFor(id, (d) => d.status === 'ready', 60_000, 'revision 1 ready');
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  const at = (hash: string) => page.goto(`${platform.apiUrl}/#${hash}`);
  const shot = async (name: string, selector: string) => {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.locator(selector).first().screenshot({ path: path.join(SHOTS, `${name}.png`) });
  };
  // The statement of what Save will do (the page head may show a rollout's progress as a status too).
  const statement = () => page.locator('p[data-effect]').textContent();
  const save = async (said: RegExp) => {
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText(said).waitFor();
  };

  it('Settings: the autoscaling signal with its unit and range, scaled in place', async () => {
    await at(`/deployments/general/${id}/settings`);
    await expect.poll(() => page.getByLabel('Autoscaling signal').inputValue()).toBe('concurrency');
    await page.getByLabel('Autoscaling signal').selectOption('queue_depth');
    const target = page.getByLabel('Signal target');
    await target.fill('0');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const problem = page.locator('[data-field="autoscaling_target"] .field-error');
    await expect.poll(() => problem.textContent()).toBe('Signal target of queue_depth must be a number from 0.1 to 10000 (waiting requests per replica), got 0');
    expect(await page.locator('[data-field="autoscaling_target"] .hint').textContent()).toContain('waiting requests per replica');
    expect(await page.getByRole('dialog').isVisible()).toBe(false);

    await target.fill('5');
    await expect.poll(statement).toBe('Scales in place; no new revision (autoscaling_metric, autoscaling_target).');
    await save(/^Saved: scaled in place/);
    expect(await platform.deployment(id)).toMatchObject({ revision: 1, autoscaling_metric: 'queue_depth', autoscaling_target: 5 });
  });

  it('Activity names the signal, its target and its line', async () => {
    await at(`/deployments/general/${id}/activity`);
    await expect.poll(() => page.getByTestId('activity-signal').textContent(), { timeout: 15_000 }).toBe('Scales on queue_depth 5 waiting requests per replica.');
    const chart = page.getByRole('figure', { name: /^Autoscaling signal: queue depth/ });
    await expect.poll(() => chart.textContent()).toContain('Queue depth (waiting requests per replica)');
    expect(await chart.textContent()).toContain('Target (5)');
    await shot('activity-signal', 'figure[aria-label^="Autoscaling signal"]');
  });

  it('Settings: manual rollout mode, then a split typed in rows — 90/20 refused, 90/10 with a tag saved at once', async () => {
    await at(`/deployments/general/${id}/settings`);
    await page.getByLabel('Manual').check();
    await expect.poll(statement).toMatch(/^Rollout mode becomes manual: A spec change makes a new revision at 0 %/);
    await save(/^Saved: took effect at once/);
    expect(await platform.deployment(id)).toMatchObject({ rollout_mode: 'manual', revision: 1 });

    // A spec change in manual mode: revision 2 is made at 0 %, revision 1 keeps everything.
    const changed = await platform.call('PATCH', `/deployments/general/${id}`, { env: { CANARY: '1' } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ revision: 2, traffic: [{ revision: 1, percent: 100 }] });

    await expect.poll(() => page.getByLabel('Revision, row 1').inputValue()).toBe('1');
    expect(await page.getByTestId('traffic-sum').textContent()).toBe('Sum: 100 %');
    await page.getByLabel('Percent, row 1').fill('90');
    await page.getByRole('button', { name: 'Add traffic row' }).click();
    expect(await page.getByLabel('Revision, row 2').inputValue()).toBe('2');
    await page.getByLabel('Percent, row 2').fill('20');
    expect(await page.getByTestId('traffic-sum').textContent()).toBe('Sum: 110 % — the percents must sum to 100 before saving');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'The percents of traffic must sum to 100, got 110' }).waitFor();
    expect(await page.getByRole('dialog').isVisible()).toBe(false);
    expect((await platform.deployment(id)).traffic).toMatchObject([{ revision: 1, percent: 100 }]);

    await page.getByLabel('Percent, row 2').fill('10');
    // Only the server knows the other deployments' names: its refusal shows on the tag it names.
    await page.getByLabel('Tag, row 2').fill('beta');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
    const tagProblem = page.locator('[data-field="traffic[1].tag"] .field-error');
    await expect.poll(() => tagProblem.textContent()).toBe(`Tag "beta" would give ${NAME} the host of the deployment named "beta-${NAME}"; choose another tag`);
    await page.getByLabel('Tag, row 2').fill('canary');
    expect(await tagProblem.count()).toBe(0);
    await expect.poll(statement).toBe(
      'Sends 90 % to revision 1 and 10 % to revision 2 (tag canary). Revision 2 starts its own replicas and takes its share once one is ready; until then the others serve it. No new revision; the gateways apply it within seconds.',
    );
    await shot('settings-traffic', '.panel:has(> h3:text-is("Traffic"))');
    await save(/^Saved: took effect at once/);
    const d = await platform.deployment(id);
    expect(d).toMatchObject({
      revision: 2,
      traffic_is_default: false,
      traffic: [
        { revision: 1, latest: false, percent: 90, tag: null, url: null },
        { revision: 2, latest: false, percent: 10, tag: 'canary', url: expect.stringContaining(`canary-${NAME}.${ENDPOINT_DOMAIN}:${platform.ports.gateway}`) },
      ],
    });
  });

  it('Overview: the two revisions side by side, with what the gateways measured of each', async () => {
    await at(`/deployments/general/${id}`);
    const table = page.getByRole('table', { name: 'Revisions side by side' });
    await expect.poll(() => table.locator('thead th').allTextContents()).toEqual(['Figure', 'Revision 1', 'Revision 2 (newest) · canary']);
    expect(await table.locator('tr[data-figure="percent"] td').allTextContents()).toEqual(['90 %', '10 %']);
    // Each revision runs its own replica once the controller has started it.
    await expect.poll(() => table.locator('tr[data-figure="replicas"] td').allTextContents(), { timeout: 60_000 }).toEqual(['1/1', '1/1']);

    const client = platform.client(NAME, TOKEN);
    // Streamed, so the gateways time each revision's first token.
    for (let i = 0; i < 20; i++) {
      const stream = await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: `hi ${i}` }], max_tokens: 2, stream: true });
      for await (const chunk of stream) void chunk;
    }
    const requests = async () => (await table.locator('tr[data-figure="requests"] td').allTextContents()).map(Number);
    await expect.poll(async () => (await requests()).reduce((s, n) => s + n, 0), { timeout: 20_000 }).toBe(20);
    // Revision 1 takes 18 of 20 (the gateway's weighted round robin is exact); TTFT and tokens/s are figures.
    expect(await requests()).toEqual([18, 2]);
    expect(await table.locator('tr[data-figure="errors"] td').allTextContents()).toEqual(['0 (0.0 %)', '0 (0.0 %)']);
    await expect.poll(() => table.locator('tr[data-figure="ttft_p50"] td').allTextContents()).toEqual([expect.stringMatching(/^\d+ ms$/), expect.stringMatching(/^\d+ ms$/)]);
    for (const cell of await table.locator('tr[data-figure="tokens"] td').allTextContents()) expect(Number(cell)).toBeGreaterThan(0);
    await shot('revisions-side-by-side', 'section[aria-labelledby="compare-heading"]');
    await shot('revision-history', 'section[aria-labelledby="revisions-heading"]');
  });

  it('Revision history: tags and their hosts; Roll back and Promote confirm with what will happen', async () => {
    const history = page.getByRole('table', { name: 'Revision history' });
    const row2 = history.locator('tr[data-revision="2"]');
    await expect.poll(() => row2.textContent()).toContain(`canary-${NAME}.${ENDPOINT_DOMAIN}:${platform.ports.gateway}`);
    expect(await row2.getByTestId('revision-percent').textContent()).toBe('10 %');

    await row2.getByRole('button', { name: 'Roll back to revision 1' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('Sends 100 % to revision 1. Revision 2 gets no more traffic: its replicas drain and stop within a minute.');
    await dialog.getByRole('button', { name: 'Cancel' }).click();

    await row2.getByRole('button', { name: 'Promote revision 2' }).click();
    expect(await dialog.textContent()).toContain('Sends 100 % to revision 2 (tag canary). Revision 1 gets no more traffic: its replicas drain and stop within a minute.');
    await dialog.getByRole('button', { name: 'Promote', exact: true }).click();
    await page.getByText('Traffic saved: 100 % to revision 2 (tag canary).').waitFor();
    const d = await platform.deployment(id);
    expect(d.traffic).toMatchObject([{ revision: 2, latest: true, percent: 100, tag: 'canary' }]);
    expect(d.revision).toBe(2);
    await expect.poll(() => row2.getByTestId('revision-percent').textContent()).toBe('100 %');
    // Revision 1 now has no share: it can be sent a canary's 10 % again.
    await expect.poll(() => history.locator('tr[data-revision="1"]').getByRole('button', { name: 'Send 10 % to revision 1' }).isVisible()).toBe(true);
    expect(seen.errors).toEqual([]);
    expect(seen.dialogs).toEqual([]);
  });
});
