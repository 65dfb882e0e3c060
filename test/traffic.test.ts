// Traffic between revisions with real processes (`infergate serve`, reference engines as
// replicas, clients over TLS through the gateway):
//   - 1,000 requests, each with its own X-Session-Id, over a 90/10 split land 10 % ± 3 % on the
//     canary, and every session sent again lands on the revision it had;
//   - the canary's tag host reaches only the canary's replicas;
//   - moving the canary 10 → 50 → 100 % under steady streaming load fails no request, the old
//     revision keeps its replica while it has a share, and stops it once at 0 %.

import { describe, expect, it } from 'vitest';
import { engineBody, FAST_ENGINE, replicaMains, usePlatform, type Platform } from './helpers/platform.js';
import { gatewayFetch } from './helpers/tls-clients.js';
import { pool } from './helpers/pool.js';

let platform: Platform;

usePlatform('traffic', [], (p) => (platform = p));

const TOKEN = 'tok-traffic-0123456789';
type Entry = { revision: number; latest: boolean; percent: number; tag: string | null; url: string | null };
type RevisionReplicas = { revision: number; percent: number; ready: number; desired: number };
type View = { revision: number; traffic: Entry[]; revision_replicas: RevisionReplicas[]; revisions: { revision: number; status: string; percent: number }[] };

async function create(body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', '/deployments/general', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

async function patch(id: number, body: Record<string, unknown>): Promise<View> {
  const res = await platform.call('PATCH', `/deployments/general/${id}`, body);
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body as View;
}

/** Both revisions of the split run a ready replica. */
const bothReady = (a: number, b: number) => (d: View) =>
  [a, b].every((n) => (d.revision_replicas ?? []).some((r) => r.revision === n && r.ready >= 1));

/** The revision number in a replica name `<deployment>-r<revision>-<id>`. */
const revisionOf = (fingerprint: string): number => Number(/-r(\d+)-\d+$/.exec(fingerprint)?.[1] ?? NaN);

interface Asked {
  status: number;
  revision: number;
}

function asker(host: string) {
  const fetcher = gatewayFetch({ ca: platform.ca });
  return async (headers: Record<string, string> = {}, stream = false): Promise<Asked> => {
    const res = await fetcher(`${host}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'sim/model', messages: [{ role: 'user', content: 'which revision?' }], max_tokens: stream ? 12 : 1, stream, ignore_eos: true }),
    });
    const text = await res.text();
    const fingerprint = /"system_fingerprint":"([^"]+)"/.exec(text)?.[1] ?? '';
    if (stream && res.status === 200 && !text.includes('[DONE]')) return { status: -1, revision: revisionOf(fingerprint) };
    return { status: res.status, revision: revisionOf(fingerprint) };
  };
}

describe('a 90/10 split', () => {
  it('puts 10 % ± 3 % of 1,000 sessions on the canary, keeps each session on its revision, and the tag host reaches only the canary', async () => {
    const id = await create(engineBody('split', TOKEN));
    await platform.waitFor(id, (d: View) => d.revision_replicas?.[0]?.ready === 1, 30_000, 'revision 1 ready');
    // The spec change and the split in one PATCH: revision 2 starts at 10 %, with a tag.
    const edited = await patch(id, {
      env: { EDITION: 'canary' },
      traffic: [
        { revision: 1, percent: 90 },
        { latest: true, percent: 10, tag: 'canary' },
      ],
    });
    expect(edited.revision).toBe(2);
    expect(edited.traffic).toEqual([
      expect.objectContaining({ revision: 1, latest: false, percent: 90, tag: null }),
      expect.objectContaining({ revision: 2, latest: true, percent: 10, tag: 'canary' }),
    ]);
    await platform.waitFor(id, bothReady(1, 2), 30_000, 'revisions 1 and 2 both ready');

    const ask = asker(platform.endpoint('split'));
    const first = await pool(1000, 20, (i) => ask({ 'x-session-id': `session-${i}` }));
    expect(first.filter((a) => a.status !== 200)).toEqual([]);
    const canary = first.filter((a) => a.revision === 2).length;
    expect(first.filter((a) => a.revision !== 1 && a.revision !== 2)).toEqual([]);
    expect(canary).toBeGreaterThanOrEqual(70);
    expect(canary).toBeLessThanOrEqual(130);

    // The same sessions again, in another order: each lands where it did.
    const again = await pool(400, 20, (i) => ask({ 'x-session-id': `session-${(i * 7) % 1000}` }));
    const moved = again.map((a, i) => ({ session: (i * 7) % 1000, was: first[(i * 7) % 1000]!.revision, now: a.revision })).filter((m) => m.was !== m.now);
    expect(moved).toEqual([]);

    // Without a session the shares are exact (a weighted round robin): 10 of 100.
    const plain = await pool(100, 10, () => ask());
    expect(plain.filter((a) => a.revision === 2).length).toBeGreaterThanOrEqual(9);
    expect(plain.filter((a) => a.revision === 2).length).toBeLessThanOrEqual(11);

    // The tag host reaches revision 2 only, sessions or not.
    const tagUrl = edited.traffic[1]!.url!;
    expect(tagUrl).toContain('canary-split.');
    const tagged = await pool(40, 10, (i) => asker(tagUrl)(i % 2 === 0 ? { 'x-session-id': `session-${i}` } : {}));
    expect(tagged.map((a) => `${a.status} r${a.revision}`)).toEqual(new Array(40).fill('200 r2'));
  }, 120_000);
});

describe('moving the canary 10 → 50 → 100 % under load', () => {
  it('fails no request, keeps the old replica while it has a share and stops it at 0 %', async () => {
    const id = await create(engineBody('shift', TOKEN, { command: [...FAST_ENGINE, '--itl-ms', '15'] }));
    await platform.waitFor(id, (d: View) => d.revision_replicas?.[0]?.ready === 1, 30_000, 'revision 1 ready');
    const ask = asker(platform.endpoint('shift'));
    const results: (Asked & { at: number })[] = [];
    let running = true;
    const clients = Array.from({ length: 8 }, async () => {
      while (running) {
        const at = Date.now();
        try {
          results.push({ at, ...(await ask({}, true)) });
        } catch (err) {
          results.push({ at, status: 0, revision: NaN });
          void err;
        }
      }
    });
    try {
      await patch(id, { env: { EDITION: 'next' }, traffic: [{ revision: 1, percent: 90 }, { latest: true, percent: 10 }] });
      await platform.waitFor(id, bothReady(1, 2), 30_000, 'both revisions ready at 10 %');
      await expect.poll(() => results.filter((r) => r.revision === 2).length, { timeout: 15_000 }).toBeGreaterThan(3);
      expect(replicaMains(platform.dataDir, 'shift-r1-').length).toBe(1);

      await patch(id, { traffic: [{ revision: 1, percent: 50 }, { latest: true, percent: 50 }] });
      const at50 = Date.now();
      await expect.poll(() => results.filter((r) => r.at > at50 + 3000).length, { timeout: 20_000 }).toBeGreaterThan(60);
      const after50 = results.filter((r) => r.at > at50 + 3000);
      const share50 = after50.filter((r) => r.revision === 2).length / after50.length;
      expect(share50).toBeGreaterThan(0.35);
      expect(share50).toBeLessThan(0.65);
      // Revision 1 still has a share: its replica runs.
      expect(replicaMains(platform.dataDir, 'shift-r1-').length).toBe(1);

      const to100 = await patch(id, { traffic: [{ latest: true, percent: 100 }] });
      expect(to100.traffic).toEqual([expect.objectContaining({ revision: 2, latest: true, percent: 100 })]);
      const at100 = Date.now();
      // At 0 % the old revision drains and stops, well within a minute.
      await expect.poll(() => replicaMains(platform.dataDir, 'shift-r1-').length, { timeout: 60_000 }).toBe(0);
      await expect.poll(() => results.filter((r) => r.at > at100 + 3000).length, { timeout: 20_000 }).toBeGreaterThan(20);
      // Within 3 s of the PATCH every request goes to revision 2.
      expect(results.filter((r) => r.at > at100 + 3000 && r.revision !== 2)).toEqual([]);
    } finally {
      running = false;
      await Promise.all(clients);
    }
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.length).toBeGreaterThan(100);
    const d = await platform.deployment(id);
    expect(d.revisions.map((r: { status: string }) => r.status)).toEqual(['retired', 'ready']);
  }, 180_000);
});
