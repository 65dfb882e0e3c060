// The traffic commands of the client against a real control API (on a port, over HTTP), with
// a stand-in source of per-revision figures: `traffic NAME` printing the split and the figures
// side by side, `traffic NAME rev1=90 latest=10 --tag latest=canary` PATCHing the whole list and
// saying what moved, a malformed split refused before anything is sent (exit 2) and a bad sum
// refused by the API (exit 1), `promote` sending everything to one revision and saying which
// drain, `--rollout-mode`, `scale --autoscaling-metric/--autoscaling-target`, and `describe`
// with the split, the rollout mode, the signal and the last scaling decision.

import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../src/client/commands.js';
import { ApiRefusal, UsageError } from '../src/client/errors.js';
import type { RevisionMetrics } from '../src/domain/ports.js';
import { ADMIN_KEY, generalBody, startControl, type TestControl } from './helpers/control.js';

let api: TestControl;
let withoutMetrics: TestControl;
const figures = new Map<number, RevisionMetrics[]>();

beforeAll(async () => {
  api = await startControl({ revisionMetrics: { revisions: (id) => figures.get(id) ?? [] } });
  withoutMetrics = await startControl();
});
afterAll(async () => {
  await api?.close();
  await withoutMetrics?.close();
});

/** Runs `infergate ARGS` in this process against `at`; what it printed. */
async function cli(args: string[], at: TestControl = api): Promise<string> {
  let printed = '';
  const env = { INFERGATE_CONFIG: path.join(os.tmpdir(), `infergate-absent-${process.pid}`, 'config.json') };
  const program = buildProgram({ env, out: { write: (t) => void (printed += t), isTTY: false, color: false }, readStdin: () => '', setExitCode: () => undefined });
  const quiet = (c: Command): void => void c.configureOutput({ writeErr: () => undefined }).commands.forEach(quiet);
  quiet(program);
  await program.parseAsync(['--api', at.url, '--key', ADMIN_KEY, ...args], { from: 'user' });
  return printed;
}

/** A deployment at revision 2 (revision 1, then an env edit); one replica at most, so the cluster holds them all, split or not. */
async function twoRevisions(name: string, at: TestControl = api): Promise<{ id: number; route: string }> {
  const created = await at.call('POST', '/deployments/general', { ...generalBody(name, `tok-${name}-0123456789`), max_replicas: 1 });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const route = `/deployments/general/${created.body.id}`;
  expect((await at.call('PATCH', route, { env: { EDITION: 'two' } })).body.revision).toBe(2);
  return { id: created.body.id, route };
}

const stored = async (at: TestControl, id: number) => (await at.store.get('deployment', id))!.value;

describe('infergate traffic', () => {
  it('prints the split with the figures per revision side by side', async () => {
    const d = await twoRevisions('chat');
    figures.set(d.id, [
      { revision: 1, requests: 1000, errors: 20, ttft_p50_ms: 120.4, ttft_p99_ms: 480, tokens_per_second: 55.25 },
      { revision: 2, requests: 0, errors: 0, ttft_p50_ms: null, ttft_p99_ms: null, tokens_per_second: 0 },
    ]);
    const text = await cli(['traffic', 'chat']);
    expect(text).toContain('chat: no split of its own: every request goes to the newest revision; rollout automatic');
    const lines = text.split('\n');
    expect(lines.find((l) => l.startsWith('REVISION'))).toMatch(/^REVISION\s+PERCENT\s+TAGS\s+URL\s+READY\s+REQUESTS\s+ERRORS\s+TTFT P50\s+TTFT P99\s+TOKENS\/S$/);
    // Revision 1 served in the window though it takes no traffic now: shown beside revision 2.
    expect(lines.find((l) => l.startsWith('1 '))).toMatch(/^1\s+0 %\s+-\s+-\s+-\s+1000\s+20 \(2\.0 %\)\s+120 ms\s+480 ms\s+55\.3$/);
    expect(lines.find((l) => l.startsWith('2 '))).toMatch(/^2 \(latest\)\s+100 %\s+-\s+-\s+0\/1\s+0\s+0\s+-\s+-\s+0\.0$/);
    expect(text).toContain('Figures over the last 300 s, from the gateways.');

    const json = JSON.parse(await cli(['traffic', 'chat', '-o', 'json', '--window', '60']));
    expect(json).toMatchObject({ name: 'chat', rollout_mode: 'automatic', traffic_is_default: true, metrics: { window_seconds: 60 } });
  });

  it('sets the whole list, with a tag, says what moved, and keeps the tag while shifting weights', async () => {
    const d = await twoRevisions('shift');
    const text = await cli(['traffic', 'shift', 'rev1=90', 'latest=10', '--tag', 'latest=canary']);
    expect(text).toContain('shift: revision 2: 100 % → 10 %');
    expect(text).toContain('shift: revision 1: 90 %; it starts its own replicas');
    expect(text).toMatch(/2 \(latest\)\s+10 %\s+canary\s+https:\/\/canary-shift\.endpoints\.test\s+0\/1/);
    expect((await stored(api, d.id)).traffic).toEqual([
      { revision: 1, latest: false, percent: 90, tag: null },
      { revision: null, latest: true, percent: 10, tag: 'canary' },
    ]);
    expect((await stored(api, d.id)).revisions).toHaveLength(2);

    await cli(['traffic', 'shift', '1=50', 'latest=50']);
    expect((await stored(api, d.id)).traffic).toEqual([
      { revision: 1, latest: false, percent: 50, tag: null },
      { revision: null, latest: true, percent: 50, tag: 'canary' },
    ]);
    // Tags alone keep the shares.
    await cli(['traffic', 'shift', '--untag', 'canary']);
    expect((await stored(api, d.id)).traffic?.map((t) => t.tag)).toEqual([null, null]);
  });

  it('refuses a malformed split before sending anything (exit 2), and passes on the API refusal of a bad sum (exit 1)', async () => {
    const d = await twoRevisions('wrong');
    const before = await stored(api, d.id);
    const usage = cli(['traffic', 'wrong', 'rev1=ninety']);
    await expect(usage).rejects.toThrow(UsageError);
    await expect(usage).rejects.toThrow(/rev1=ninety: the percent must be a whole number from 0 to 100/);
    expect((await stored(api, d.id)).updated_at).toBe(before.updated_at);

    const refused = cli(['traffic', 'wrong', 'rev1=90']);
    await expect(refused).rejects.toThrow(ApiRefusal);
    await expect(refused).rejects.toMatchObject({ exitCode: 1, status: 400, field: 'traffic', message: 'the percents of traffic must sum to 100, got 90' });
    const unknown = cli(['traffic', 'wrong', 'rev9=100']);
    await expect(unknown).rejects.toMatchObject({ field: 'traffic[0].revision', message: expect.stringMatching(/has no revision 9/) });
  });

  it('sets the rollout mode, and resets to no split', async () => {
    const d = await twoRevisions('modes');
    const text = await cli(['traffic', 'modes', '--rollout-mode', 'manual']);
    expect(text).toContain('rollout manual (a spec change starts its revision at 0 %)');
    expect((await stored(api, d.id)).rollout_mode).toBe('manual');
    await cli(['traffic', 'modes', 'rev1=100']);
    await cli(['traffic', 'modes', '--reset']);
    expect((await stored(api, d.id)).traffic).toBeNull();
  });

  it('says where the figures are when this process has none', async () => {
    await twoRevisions('elsewhere', withoutMetrics);
    const text = await cli(['traffic', 'elsewhere'], withoutMetrics);
    expect(text).not.toContain('REQUESTS');
    expect(text).toMatch(/Per-revision figures: not available \(per-revision metrics are kept where the autoscaler runs/);
  });
});

describe('infergate promote', () => {
  it('sends everything to the newest revision by default, or to one named, and says which drain', async () => {
    const d = await twoRevisions('promo');
    await cli(['traffic', 'promo', 'rev1=90', 'rev2=10', '--tag', 'rev2=canary']);
    const back = await cli(['promote', 'promo', 'rev1']);
    expect(back).toContain('promo: revision 1 now takes 100 % of requests');
    expect(back).toContain('promo: revision 2 (was 10 %) now gets no requests: its replicas drain and stop within a minute');
    expect(back).toContain('promo: tag canary removed: https://canary-promo.endpoints.test no longer answers');
    expect(back).toContain('a spec change now starts its revision at 0 %');
    expect((await stored(api, d.id)).traffic).toEqual([{ revision: 1, latest: false, percent: 100, tag: null }]);

    const newest = await cli(['promote', 'promo']);
    expect(newest).toContain('promo: revision 2 (latest) now takes 100 % of requests');
    expect(newest).toContain('promo: revision 1 (was 100 %) now gets no requests');
    expect((await stored(api, d.id)).traffic).toEqual([{ revision: null, latest: true, percent: 100, tag: null }]);
    await expect(cli(['promote', 'promo', 'v2'])).rejects.toThrow(/"v2" is not a revision: give rev4, 4 or latest/);
  });
});

describe('scale and describe', () => {
  it('scales on another signal, and describe shows the split, the rollout mode, the signal and the last decision', async () => {
    const d = await twoRevisions('sig');
    const scaled = await cli(['scale', 'sig', '--max', '2', '--autoscaling-metric', 'queue_depth', '--autoscaling-target', '2.5']);
    expect(scaled).toBe('sig scaled in place (min 1, max 2; queue_depth 2.5 waiting requests per replica, 1 to 2 replicas; revision 2)\n');
    await expect(cli(['scale', 'sig', '--autoscaling-target', 'lots'])).rejects.toThrow(/--autoscaling-target must be a number, like 5 or 0.5, not "lots"/);

    await cli(['traffic', 'sig', 'rev1=90', 'latest=10', '--tag', 'latest=canary', '--rollout-mode', 'manual']);
    await api.store.appendEvent(d.id, { time: new Date().toISOString(), type: 'normal', reason: 'ScaledUp', message: 'desired replicas 1 → 2: queue_depth 4 waiting per replica, target 2.5' });
    const text = await cli(['describe', 'sig']);
    expect(text).toContain('Traffic:     revision 1 90 %, revision 2 (latest) 10 % tag canary at https://canary-sig.endpoints.test');
    expect(text).toContain('Rollout:     manual: a spec change (or a rollback) makes a revision at 0 % until traffic gives it a share');
    expect(text).toContain('Autoscaling: queue_depth 2.5 waiting requests per replica, 1 to 2 replicas');
    expect(text).toMatch(/Last scale:  ScaledUp \d+s ago: desired replicas 1 → 2: queue_depth 4 waiting per replica, target 2\.5/);
    expect(text).toMatch(/ {2}2 {2}pending {2}update {2}\S+ {2}10 % \(tag canary\)/);
  });
});
