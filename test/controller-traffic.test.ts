// Traffic between revisions with real processes, the controller's side: in manual rollout a
// spec change makes a revision that starts nothing until traffic gives it a share; moving it
// 10 → 50 → 100 % while clients stream without pause fails no request, runs both revisions'
// replicas side by side, stops the old revision's replica only once it is at 0 % (marking it
// retired), and tells each shift and the drain as events.

import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { engineBody, FAST_ENGINE, replicaMains, streamReplica, usePlatform, type Platform } from './helpers/platform.js';

let platform: Platform;
usePlatform('controller-traffic', [], (p) => (platform = p));

const TOKEN = 'tok-controller-traffic-0123456789';
type View = { status: string; serving_revision: number | null; revisions: { revision: number; status: string }[] };

const stream = (client: OpenAI): Promise<string> => streamReplica(client, 8);

describe('a canary moved 10 → 50 → 100 %', () => {
  it('fails no request; the old revision runs until it is at 0 %, then drains, stops and is retired', async () => {
    const created = await platform.call('POST', '/deployments/general', engineBody('canary', TOKEN, { command: [...FAST_ENGINE, '--itl-ms', '15'] }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    const route = `/deployments/general/${id}`;
    await platform.waitFor(id, (d: View) => d.serving_revision === 1 && d.status === 'ready', 30_000, 'revision 1 ready');
    expect((await platform.call('PATCH', route, { rollout_mode: 'manual' })).status).toBe(200);
    const edit = await platform.call('PATCH', route, { command: [...FAST_ENGINE, '--itl-ms', '10'] });
    expect(edit.body.revision).toBe(2);
    // Revision 2 waits at 0 % (that no pass starts it is shown at the controller's settled
    // point in src/controller/controller.test.ts, "manual rollout").
    expect((await platform.deployment(id)).revisions.map((r: { status: string }) => r.status)).toEqual(['ready', 'pending']);
    expect((await platform.deployment(id)).traffic).toEqual([expect.objectContaining({ revision: 1, latest: false, percent: 100 })]);

    const client = platform.client('canary', TOKEN);
    let running = true;
    const failures: string[] = [];
    const served: string[] = [];
    const clients = Array.from({ length: 8 }, async () => {
      while (running) {
        try {
          served.push(await stream(client));
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    });
    const servedBy = (revision: number) => served.filter((r) => r.startsWith(`canary-r${revision}-`)).length;

    try {
      const shift = async (traffic: unknown[]) => expect((await platform.call('PATCH', route, { traffic })).status).toBe(200);
      await shift([
        { revision: 1, percent: 90 },
        { revision: 2, percent: 10 },
      ]);
      await platform.waitFor(id, (d: View) => d.revisions[1]?.status === 'ready', 30_000, 'revision 2 ready beside revision 1');
      const at10 = served.length;
      await expect.poll(() => servedBy(2), { timeout: 15_000 }).toBeGreaterThan(0);
      // Revision 2 may have served before at10 was read (it is ready by then): wait for more.
      await expect.poll(() => served.length, { timeout: 15_000 }).toBeGreaterThan(at10);
      expect(replicaMains(platform.dataDir, 'canary-r1-')).toHaveLength(1);
      expect(replicaMains(platform.dataDir, 'canary-r2-')).toHaveLength(1);

      await shift([
        { revision: 1, percent: 50 },
        { revision: 2, percent: 50 },
      ]);
      const r1Before = servedBy(1);
      await expect.poll(() => servedBy(1) - r1Before, { timeout: 15_000 }).toBeGreaterThan(5);
      expect(replicaMains(platform.dataDir, 'canary-r1-')).toHaveLength(1); // 50 %: still running

      await shift([{ revision: 2, percent: 100 }]);
      const done = (await platform.waitFor(id, (d: View) => d.revisions[0]?.status === 'retired', 30_000, 'revision 1 retired')) as View;
      expect(done).toMatchObject({ serving_revision: 2, status: 'ready' });
      // Retired as the rolling update completes; its replica drains, then stops.
      await expect.poll(() => replicaMains(platform.dataDir, 'canary-r1-'), { timeout: 15_000 }).toEqual([]);
      const after = served.length;
      await expect.poll(() => served.length - after, { timeout: 15_000 }).toBeGreaterThan(10);
      expect(served.slice(after).every((r) => r.startsWith('canary-r2-'))).toBe(true);
    } finally {
      running = false;
      await Promise.all(clients);
    }
    expect(failures).toEqual([]);

    const events = (await platform.call('GET', `${route}/events`)).body.items as { reason: string; message: string }[];
    expect(events.filter((e) => e.reason === 'TrafficShifted').map((e) => e.message)).toEqual([
      'revision 2 now takes 10 % of requests (revision 1: 90 %)',
      'revision 2 now takes 50 % of requests (revision 1: 50 %)',
      'revision 2 now takes 100 % of requests (revision 1: 0 %, its replicas drain)',
    ]);
    await expect
      .poll(async () => ((await platform.call('GET', `${route}/events`)).body.items as { reason: string; message: string }[]).filter((e) => e.reason === 'RevisionDrained').map((e) => e.message))
      .toEqual(['revision 1 takes no traffic and its last replica stopped']);
  }, 120_000);
});
