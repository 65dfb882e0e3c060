// Revisions on running deployments, with real processes: 20 clients streaming without pause
// through a spec edit, a rollback and a second edit fail no request, and end on the newest
// revision's replicas with the old revisions' status and logs still readable; a revision
// that never becomes ready fails while the old one keeps serving, and a rollback recovers;
// pause answers 503 within 2 s with no replica process left, and resume restores the counts.

import { waitFor } from './helpers/wait.js';
import path from 'node:path';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { engineBody, FAST_ENGINE, PLATFORM_ADMIN_KEY, replicaMains, replicaProcesses, streamReplica, usePlatform, type Platform } from './helpers/platform.js';
import { openTerminal as openTerminalAt, runInTerminal } from './helpers/terminal.js';
import { gatewayFetch } from './helpers/tls-clients.js';

let platform: Platform;

// The terminal test is about the terminal, not the sandbox (test/security/sandbox.test.ts):
// where no sandbox can run here, the operator's flag lets it open a shell anyway.
usePlatform('revisions', ['--rollout-deadline', '6', '--allow-unsandboxed-host-commands'], (p) => (platform = p));

const TOKEN = 'tok-revisions-0123456789';
type View = { status: string; revision: number; serving_revision: number | null; rollout: { state: string; revision: number } | null; components: { Replica: { ready: number; desired: number } }; revisions: { revision: number; status: string; failure_reason: string | null }[] };

async function create(body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', '/deployments/general', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

const rolledOut = (n: number) => (d: View) => d.serving_revision === n && d.rollout?.state === 'complete' && d.components.Replica.ready === d.components.Replica.desired;

const stream = (client: OpenAI): Promise<string> => streamReplica(client, 15);

describe('rolling updates under load', () => {
  it('20 streaming clients see no failure through an edit, a rollback and a second edit', async () => {
    const id = await create(engineBody('roll', TOKEN, { min_replicas: 2, max_replicas: 2, command: [...FAST_ENGINE, '--itl-ms', '20'] }));
    await platform.waitFor(id, rolledOut(1), 30_000, 'revision 1 ready');
    const client = platform.client('roll', TOKEN);
    let running = true;
    const failures: string[] = [];
    const served: { at: number; replica: string }[] = [];
    const clients = Array.from({ length: 20 }, async () => {
      while (running) {
        try {
          served.push({ at: Date.now(), replica: await stream(client) });
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    });

    const edit = await platform.call('PATCH', `/deployments/general/${id}`, { command: [...FAST_ENGINE, '--itl-ms', '25'] });
    expect(edit.body.revision).toBe(2);
    await platform.waitFor(id, rolledOut(2), 60_000, 'revision 2 rolled out');
    const back = await platform.call('POST', `/deployments/general/${id}/rollback`, { revision: 1 });
    expect(back.status).toBe(202);
    expect(back.body.revision).toBe(3);
    await platform.waitFor(id, rolledOut(3), 60_000, 'the rollback (revision 3) rolled out');
    await platform.call('PATCH', `/deployments/general/${id}`, { env: { EDITION: 'four' } });
    const last = await platform.waitFor(id, rolledOut(4), 60_000, 'revision 4 rolled out');
    const doneAt = Date.now();
    // Traffic keeps flowing after the last rollout, so the check below has requests to look at.
    await waitFor(() => served.filter((s) => s.at > doneAt + 200).length >= 3, 10_000, 'requests after the last rollout');
    running = false;
    await Promise.all(clients);

    expect(failures).toEqual([]);
    const revisionsServed = new Set(served.map((s) => /-r(\d+)-/.exec(s.replica)?.[1]));
    expect(revisionsServed).toEqual(new Set(['1', '2', '3', '4']));
    // Afterwards every response comes from revision 4's replicas.
    expect(served.filter((s) => s.at > doneAt + 200).every((s) => s.replica.startsWith('roll-r4-'))).toBe(true);
    for (let i = 0; i < 6; i++) expect(await stream(client)).toMatch(/^roll-r4-/);
    expect((last as View).revisions.map((r) => r.status)).toEqual(['retired', 'retired', 'retired', 'ready']);
    // The old revisions' logs are still there.
    for (const n of [1, 2, 3]) {
      const logs = await platform.call('GET', `/deployments/general/${id}/logs?revision=${n}&tail=50`);
      expect(logs.body.lines.some((l: { line: string }) => l.line.startsWith('stopping: SIGTERM')), `revision ${n} logs`).toBe(true);
    }
    expect((await platform.call('GET', `/deployments/general/${id}/revisions/2`)).body).toMatchObject({ revision: 2, status: 'retired' });
  }, 180_000);
});

describe('a revision that never becomes ready', () => {
  it('fails with a reason while the old revision keeps serving; a rollback recovers', async () => {
    const id = await create(engineBody('flaky', TOKEN));
    await platform.waitFor(id, rolledOut(1), 30_000, 'revision 1 ready');
    const client = platform.client('flaky', TOKEN);
    // Its model would take ten minutes to load: never ready within the 6 s deadline.
    await platform.call('PATCH', `/deployments/general/${id}`, { command: ['--startup-ms', '600000'] });
    for (let i = 0; i < 5; i++) {
      const c = await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 3 });
      expect(c.system_fingerprint).toMatch(/^flaky-r1-/);
    }
    const failed = await platform.waitFor(id, (d: View) => d.revisions[1]?.status === 'failed', 30_000, 'revision 2 failed');
    expect(failed).toMatchObject({ status: 'ready', revision: 2, serving_revision: 1, rollout: { state: 'failed', revision: 2 } });
    expect(failed.revisions[1]?.failure_reason).toContain('revision 2 did not get 1 ready replica within 6 s');
    await expect.poll(() => replicaMains(platform.dataDir, 'flaky-r2-').length, { timeout: 15_000 }).toBe(0);
    expect((await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'and now?' }], max_tokens: 3 })).system_fingerprint).toMatch(/^flaky-r1-/);

    await platform.call('POST', `/deployments/general/${id}/rollback`, { revision: 1 });
    await platform.waitFor(id, rolledOut(3), 30_000, 'the rollback rolled out');
    expect((await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'back' }], max_tokens: 3 })).system_fingerprint).toMatch(/^flaky-r3-/);
    expect((await platform.deployment(id)).revisions.map((r: { status: string }) => r.status)).toEqual(['retired', 'failed', 'ready']);
  }, 120_000);
});

describe('pause and resume', () => {
  it('pause answers 503 within 2 s with no replica left; resume serves again with the same counts', async () => {
    const id = await create(engineBody('nap', TOKEN, { min_replicas: 2, max_replicas: 2 }));
    await platform.waitFor(id, (d: View) => d.components.Replica.ready === 2, 30_000, 'two replicas');
    const fetcher = gatewayFetch({ ca: platform.ca });
    const ask = () =>
      fetcher(`${platform.endpoint('nap')}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
      });
    expect((await ask()).status).toBe(200);

    const pausedAt = Date.now();
    expect((await platform.call('POST', `/deployments/general/${id}/pause`)).status).toBe(202);
    let res = await ask();
    while (res.status !== 503 && Date.now() - pausedAt < 2000) res = await ask();
    expect(res.status).toBe(503);
    expect(Date.now() - pausedAt).toBeLessThan(2000);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('paused');
    await expect.poll(() => replicaProcesses(platform.dataDir).filter((p) => p.replica.startsWith('nap-')), { timeout: 15_000 }).toEqual([]);
    expect((await platform.deployment(id)).components.Replica).toEqual({ ready: 0, desired: 0 });

    expect((await platform.call('POST', `/deployments/general/${id}/resume`)).status).toBe(202);
    await platform.waitFor(id, (d: View) => d.status === 'ready' && d.components.Replica.ready === 2 && d.components.Replica.desired === 2, 30_000, 'resumed with two replicas');
    expect((await ask()).status).toBe(200);
  }, 90_000);
});

describe('the usage view', () => {
  it('counts exactly the requests and tokens sent, and GPU-seconds as replica lifetime × GPUs', async () => {
    // Hardware 2: two GPUs per instance.
    const id = await create(engineBody('meter', TOKEN, { hardware_instance_id: 2 }));
    await platform.waitFor(id, rolledOut(1), 30_000, 'meter ready');
    const client = platform.client('meter', TOKEN);
    let prompt = 0;
    let completion = 0;
    for (let i = 0; i < 5; i++) {
      const c = await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: `count me ${i}` }], max_tokens: 3 + i });
      prompt += c.usage!.prompt_tokens;
      completion += c.usage!.completion_tokens;
    }
    for (let i = 0; i < 3; i++) {
      const s = await client.chat.completions.create({
        model: 'sim/model',
        messages: [{ role: 'user', content: `stream me ${i}` }],
        max_tokens: 6,
        stream: true,
        stream_options: { include_usage: true },
      });
      for await (const chunk of s) {
        if (chunk.usage) {
          prompt += chunk.usage.prompt_tokens;
          completion += chunk.usage.completion_tokens;
        }
      }
    }
    // A request without a valid token is not the owner's: it does not count.
    const stranger = await gatewayFetch({ ca: platform.ca })(`${platform.endpoint('meter')}/v1/models`, { headers: { authorization: 'Bearer wrong-token-0000' } });
    expect(stranger.status).toBe(401);

    type Usage = { totals: { requests: number; errors: number; prompt_tokens: number; completion_tokens: number; gpu_seconds: number; replica_seconds: { Replica?: number }; revisions: Record<string, unknown> }; hours: { hour: string }[] };
    const usage = async () => (await platform.call('GET', `/deployments/general/${id}/usage`)).body as Usage;
    await expect.poll(async () => (await usage()).totals.requests, { timeout: 10_000 }).toBe(8);
    const u = await usage();
    expect(u.totals).toMatchObject({ requests: 8, errors: 0, prompt_tokens: prompt, completion_tokens: completion });
    expect(prompt).toBeGreaterThan(0);
    expect(u.totals.replica_seconds.Replica).toBeGreaterThan(0);
    expect(u.totals.gpu_seconds).toBeCloseTo(2 * u.totals.replica_seconds.Replica!, 1);
    expect(u.hours[0]?.hour).toMatch(/T\d\d:00:00\.000Z$/);
    // One revision served it all: its figures are the deployment's.
    expect(u.totals.revisions).toEqual({ '1': { requests: 8, errors: 0, prompt_tokens: prompt, completion_tokens: completion, gpu_seconds: u.totals.gpu_seconds } });
  });
});

describe('the interactive terminal', () => {
  const openTerminal = (id: number, key = PLATFORM_ADMIN_KEY) => openTerminalAt(platform.apiUrl, key, id);
  const run = runInTerminal;

  it('runs echo and pwd in a replica while ready; refused while paused; closed when the replica stops', async () => {
    const id = await create(engineBody('shell', TOKEN, { env: { GREETING: 'from-the-replica' } }));
    await platform.waitFor(id, rolledOut(1), 30_000, 'shell ready');
    const opened = await openTerminal(id);
    if (!('ws' in opened)) throw new Error(`terminal refused: ${opened.status} ${opened.body}`);
    const { ws } = opened;
    expect(await run(ws, 'echo "$GREETING"', /from-the-replica/)).toContain('from-the-replica');
    const pwd = await run(ws, 'pwd', /\n/);
    expect(pwd.trim()).toBe(path.join(platform.dataDir, 'replicas', replicaMains(platform.dataDir, 'shell-')[0]!.replica));
    expect(await run(ws, 'echo "$INFERGATE_REPLICA_ID"', /shell-r1-\d+/)).toMatch(/^shell-r1-\d+\s*$/);

    // Pausing stops the replica: the terminal closes; opening one is refused until resumed.
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    await platform.call('POST', `/deployments/general/${id}/pause`);
    expect(await closed).toBe(1001);
    const refused = await openTerminal(id);
    expect(refused).toMatchObject({ status: 409 });
    expect('body' in refused && refused.body).toContain('available only while deployment shell is ready (Active); it is paused');
    expect(await openTerminal(id, 'not-a-key-0123456789')).toMatchObject({ status: 401 });
  });
});
