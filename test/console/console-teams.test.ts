// The console with projects and roles, in Chromium against a real control API (HTTP on
// loopback): the header's switcher lists the admin's projects, and choosing one makes the
// pages follow (the members listed, what a create lands in: every call carries the project);
// a viewer sees Create disabled with the reason, the vault's form disabled, and no members
// management, Service accounts or Audit log; an owner adds a member on the Members page and
// finds it on the Audit log page, and another project's entries are not there.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { AuditRecord } from '../../src/domain/records.js';
import { browserAvailable, CONSOLE_DIR, ensureConsoleBuilt, launchBrowser, signedInPage } from '../helpers/browser.js';
import { ADMIN_KEY, startControl, type TestControl } from '../helpers/control.js';
import { addMember, addProject } from '../helpers/members.js';

const run = browserAvailable();

describe.runIf(run)('console: projects and roles in Chromium', { timeout: 60_000 }, () => {
  let api: TestControl;
  let browser: Browser;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    ensureConsoleBuilt();
    api = await startControl({ consoleDir: CONSOLE_DIR });
    await addProject(api.store, 'default', [{ subject: 'group:everyone', role: 'viewer' }]);
    await addProject(api.store, 'team-a', [{ subject: 'user:lead-a@example.com', role: 'owner' }]);
    await addProject(api.store, 'team-b', [{ subject: 'user:lead-b@example.com', role: 'owner' }]);
    keys.viewer = await addMember(api.store, 'viewer-d', 'default', 'viewer');
    keys.ownerA = await addMember(api.store, 'owner-a', 'team-a', 'owner');
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  const at = (page: Page, hash: string) => page.goto(`${api.url}/#${hash}`);
  const entries = async (): Promise<AuditRecord[]> => (await api.call('GET', '/audit?limit=500')).body.items as AuditRecord[];

  it('the switcher lists the projects; choosing one makes the pages and every call follow', async () => {
    const { page, seen } = await signedInPage(browser, api.url, ADMIN_KEY);
    const switcher = page.getByRole('combobox', { name: 'Project' });
    await expect.poll(() => switcher.locator('option').allTextContents()).toEqual(['default', 'team-a', 'team-b']);
    expect(await switcher.inputValue()).toBe('default');

    await at(page, '/members');
    await page.locator('tr[data-member="group:everyone"]').waitFor();
    await switcher.selectOption('team-b');
    await page.locator('tr[data-member="user:lead-b@example.com"]').waitFor();
    expect(await page.locator('tr[data-member="group:everyone"]').count()).toBe(0);
    await switcher.selectOption('team-a');
    await page.locator('tr[data-member="user:lead-a@example.com"]').waitFor();
    expect(await page.locator('tr[data-member="user:lead-b@example.com"]').count()).toBe(0);

    // A create made now acts in team-a: the header went with it, and the audit log says so.
    await at(page, '/vault');
    await page.getByLabel('Token name').fill('made-in-team-a');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByTestId('secret-value').waitFor();
    await expect.poll(async () => (await entries()).find((e) => e.target?.name === 'made-in-team-a')).toMatchObject({ project: 'team-a', role: 'admin', action: 'token.manage', result: 'allowed' });
    // The choice survives a reload of the tab.
    await page.reload();
    await expect.poll(() => page.getByRole('combobox', { name: 'Project' }).inputValue()).toBe('team-a');
    expect(seen.errors).toEqual([]);
    await page.context().close();
  });

  it('a viewer sees Create disabled with the reason, and no members management, service accounts or audit log', async () => {
    const { page, seen } = await signedInPage(browser, api.url, keys.viewer!);
    const reason = 'only owners and developers may change deployments; you are a viewer';
    const create = page.getByRole('button', { name: 'Create deployment' });
    await expect.poll(() => create.getAttribute('title')).toBe(reason);
    expect(await create.isDisabled()).toBe(true);

    await at(page, '/vault');
    await expect.poll(() => page.getByRole('note').first().textContent()).toBe('only owners and developers may manage vault tokens; you are a viewer');
    expect(await page.getByRole('button', { name: 'Create token' }).isDisabled()).toBe(true);
    expect(await page.getByLabel('Token name').isDisabled()).toBe(true);

    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Members' }).click();
    await page.locator('tr[data-member="group:everyone"]').waitFor();
    expect(await page.locator('[data-refused="member.manage"]').textContent()).toBe('only owners may manage members and their roles; you are a viewer.');
    expect(await page.getByRole('button', { name: 'Add member' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Remove / }).count()).toBe(0);
    expect(await page.getByRole('combobox', { name: /^Role of / }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Service accounts' }).count()).toBe(0);
    // Typed by hand, the page says why.
    await at(page, '/audit');
    await expect.poll(() => page.locator('[data-refused="audit.read"]').textContent()).toBe("only owners may read the project's audit log; you are a viewer.");
    // A viewer is in one project: no switcher, its name instead.
    expect(await page.getByRole('combobox', { name: 'Project' }).count()).toBe(0);
    expect(seen.errors).toEqual([]);
    await page.context().close();
  });

  it('an owner manages members and reads the audit log of their project only', async () => {
    const { page, seen } = await signedInPage(browser, api.url, keys.ownerA!);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Members' }).click();
    await page.locator('tr[data-member="user:lead-a@example.com"]').waitFor();
    await page.getByLabel('Member', { exact: true }).fill('dana@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Add member' }).click();
    const row = page.locator('tr[data-member="user:dana@example.com"]');
    await row.waitFor();
    await row.getByRole('combobox', { name: 'Role of user:dana@example.com' }).selectOption('developer');
    await expect.poll(async () => (await api.call('GET', '/projects/team-a/members')).body.items).toContainEqual({ subject: 'user:dana@example.com', role: 'developer' });

    await nav.getByRole('link', { name: 'Audit log' }).click();
    const table = page.getByRole('table', { name: 'Audit log of team-a' });
    await table.waitFor();
    await expect.poll(() => table.locator('tbody tr').count()).toBeGreaterThanOrEqual(2);
    expect(await table.textContent()).toContain('member user:dana@example.com');
    // team-b's and default's entries are not here (the admin's token in team-a is: it is this project's).
    const ids = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-audit')));
    const all = await entries();
    const elsewhere = new Set(all.filter((e) => e.project !== 'team-a').map((e) => e.request_id));
    expect(ids.filter((id) => elsewhere.has(id!))).toEqual([]);
    expect(ids.length).toBe(all.filter((e) => e.project === 'team-a').length);

    // Filtered to refusals: none of this owner's calls was refused.
    await page.getByLabel('Result').selectOption('refused');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.getByText(/No entries match these filters/).count()).toBe(1);
    expect(seen.errors).toEqual([]);
    await page.context().close();
  });
});
