// Failures and decisions in plain sight. The events route against a control API on a file
// store: a deployment's events oldest first, readable by a member as the deployment is,
// 404 for the other family or an unknown id, 401 without a key, in the OpenAPI document, and
// gone with the deployment. Then a real `infergate serve` (local runtime): a deployment whose
// command exits 1 at once shows `failing` with its restarts, exit code and last log line,
// `infergate wait` gives up at once with that reason (exit 1), and `infergate describe` lists
// the restarts; a deployment under load scales up and `describe`'s Events shows the decision
// with its figures.

import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generalBody, startControl, type TestControl } from './helpers/control.js';
import { engineBody, PLATFORM_ADMIN_KEY, usePlatform, type Platform } from './helpers/platform.js';
import { spawnCli } from './helpers/serve-process.js';
import { killChildren, runToEnd } from './helpers/child-process.js';

const TOKEN = 'tok-events-0123456789';

describe('GET /deployments/{family}/{id}/events', () => {
  let api: TestControl;
  beforeAll(async () => {
    api = await startControl();
  });
  afterAll(async () => api?.close());

  it('lists what was recorded, oldest first, to whoever may read the deployment, and goes with it', async () => {
    const created = await api.call('POST', '/deployments/general', generalBody('noted', TOKEN));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    const route = `/deployments/general/${id}/events`;
    expect((await api.call('GET', route)).body).toEqual({ items: [] });

    await api.store.appendEvent(id, { time: '2026-03-01T12:00:00.000Z', type: 'normal', reason: 'ScaledUp', message: 'desired replicas 1 → 2' });
    await api.store.appendEvent(id, { time: '2026-03-01T12:00:05.000Z', type: 'warning', reason: 'ReplicaRestarted', message: 'replica noted-r1-1 exited with code 1; restarting it' });
    await api.store.appendEvent(id, { time: '2026-03-01T12:00:09.000Z', type: 'warning', reason: 'ReplicaRestarted', message: 'replica noted-r1-1 exited with code 1; restarting it' });
    const answer = await api.call('GET', route);
    expect(answer.status).toBe(200);
    expect(answer.body.items).toEqual([
      { time: '2026-03-01T12:00:00.000Z', first_time: '2026-03-01T12:00:00.000Z', type: 'normal', reason: 'ScaledUp', message: 'desired replicas 1 → 2', count: 1 },
      { time: '2026-03-01T12:00:09.000Z', first_time: '2026-03-01T12:00:05.000Z', type: 'warning', reason: 'ReplicaRestarted', message: 'replica noted-r1-1 exited with code 1; restarting it', count: 2 },
    ]);

    // A member reads them as it reads the deployment; the refusals are the deployment's.
    const member = await api.call('POST', '/service-accounts', { name: 'events-reader', role: 'member' });
    expect((await api.call('GET', route, undefined, member.body.key as string)).body.items).toHaveLength(2);
    expect((await api.call('GET', route, undefined, null)).status).toBe(401);
    expect((await api.call('GET', `/deployments/orchestrated/${id}/events`)).status).toBe(404);
    expect((await api.call('GET', '/deployments/general/424242/events')).status).toBe(404);

    const openapi = await api.call('GET', '/openapi.json');
    expect(Object.keys(openapi.body.paths as Record<string, unknown>)).toContain('/deployments/general/{id}/events');

    expect((await api.call('DELETE', `/deployments/general/${id}`)).status).toBe(202);
    expect(await api.store.listEvents(id)).toEqual([]);
  });
});

describe('failing and events with infergate serve', { timeout: 120_000 }, () => {
  let platform: Platform;
  usePlatform('events', ['--autoscale-stable-window', '4', '--autoscale-panic-window', '2'], (p) => (platform = p));

  let home: string;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    home = await mkdtemp(path.join(os.tmpdir(), 'infergate-events-cli-'));
  });
  afterAll(async () => {
    await killChildren(children);
    await rm(home, { recursive: true, force: true });
  });

  /** `infergate …` against the platform, to its end. */
  const cli = (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => {
    const child = spawnCli(args, { INFERGATE_CONFIG: path.join(home, 'config.json'), INFERGATE_API: platform.apiUrl, INFERGATE_KEY: PLATFORM_ADMIN_KEY, NO_COLOR: '1' });
    children.push(child);
    return runToEnd(child);
  };

  it('a command that exits at once: failing with its restarts, exit code and last log line; wait gives up at once; describe lists the restarts', async () => {
    // The reference engine refuses an option it does not know, on stderr, and exits 1.
    const created = await platform.call('POST', '/deployments/general', engineBody('crashy', TOKEN, { command: ['--no-such-option'] }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    const d = await platform.waitFor(id, (x) => x.status === 'failing', 60_000, 'crashy failing');
    expect(d.status_reason).toMatch(/^replica crashy-r1-\d+ keeps crashing: restarted \d+ times without becoming ready, last exited with code 1; last log line: ".*Unknown option '--no-such-option'.*"$/);

    const started = Date.now();
    const wait = await cli(['wait', 'crashy', '--timeout', '60']);
    expect(wait.code).toBe(1);
    expect(wait.stderr).toMatch(/crashy is failing: replica crashy-r1-\d+ keeps crashing: restarted \d+ times .*Unknown option '--no-such-option'/);
    expect(Date.now() - started).toBeLessThan(15_000); // at once, not at the timeout

    const described = await cli(['describe', 'crashy']);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toContain('Status:      failing');
    const events = described.stdout.slice(described.stdout.indexOf('Events:'));
    expect(events).toMatch(/^\s+TYPE\s+REASON\s+AGE\s+MESSAGE$/m);
    expect(events).toMatch(/^\s+Warning\s+ReplicaRestarted\s+\d+[smhd] \(x\d+ over \d+[smhd]\)\s+replica crashy-r1-\d+ exited with code 1; restarting it$/m);
    expect(events).toMatch(/^\s+Warning\s+ReplicaFailing\s+\d+[smhd]\s+replica crashy-r1-\d+ keeps crashing/m);
    expect((await platform.call('DELETE', `/deployments/general/${id}`)).status).toBe(202);
  });

  it('an autoscaler decision under load appears in describe\'s Events with its figures', async () => {
    const created = await platform.call(
      'POST',
      '/deployments/general',
      engineBody('scaled', TOKEN, { min_replicas: 1, max_replicas: 3, max_concurrency: 1, command: ['--startup-ms', '300', '--ttft-ms', '10', '--itl-ms', '20'] }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    await platform.waitFor(id, (x) => x.status === 'ready', 30_000, 'scaled ready');

    // Four streams at a time against a target of one per replica, until the decision is told.
    const client = platform.client('scaled', TOKEN);
    let running = true;
    const worker = async () => {
      while (running) {
        const s = await client.chat.completions.create({
          model: 'sim/model',
          messages: [{ role: 'user', content: 'keep going' }],
          max_tokens: 30,
          stream: true,
          ignore_eos: true,
        } as OpenAI.ChatCompletionCreateParamsStreaming);
        for await (const _ of s) void _;
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    try {
      await expect
        .poll(async () => ((await platform.call('GET', `/deployments/general/${id}/events`)).body.items as Array<{ reason: string }>).map((e) => e.reason), { timeout: 30_000 })
        .toContain('ScaledUp');
    } finally {
      running = false;
      await Promise.all(workers);
    }
    const described = await cli(['describe', 'scaled']);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/^\s+Normal\s+ScaledUp\s+\d+[smhd]\s+desired replicas 1 → [23]: concurrency [\d.]+ over the [24] s (panic|stable) window, target 1 per replica/m);
    expect(described.stdout).toMatch(/^\s+Normal\s+RolloutCompleted\s+/m);
  });
});
