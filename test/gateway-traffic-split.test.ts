// The gateway's side of traffic between revisions, over real TLS to replica stand-ins that say
// who they are (a control API and a gateway on one store; the split written as the control API
// stores it, replicas registered with their revision as the runtime records them):
//   - 1,000 sessions over a 90/10 split land 10 % ± 3 % on the canary, each on the same
//     revision when sent again; without a session the shares are exact (10 of 100);
//   - with session_affinity a session is pinned to one replica inside its revision;
//   - the tag host (and its path address) reaches only its revision, with a certificate for
//     exactly its name by SNI; a tag whose revision has nothing ready answers 503;
//   - a revision with no ready replica gives its share to the other; with none of the split
//     ready, the deployment's other ready replica serves: no request fails;
//   - what each revision served is counted per revision (history steps, time to first token of
//     streams, concurrency, Prometheus series with a revision label), and the series of a
//     revision that left the table go.

import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrafficTarget } from '../src/domain/traffic.js';
import { modify } from '../src/store/store.js';
import { startChatUpstream, type ChatUpstream } from './helpers/chat-upstream.js';
import { DOMAIN, hostOf, startGatewayEnv, tokenFor, waitFor, type GatewayEnv } from './helpers/gateway-env.js';
import { gatewayFetch } from './helpers/tls-clients.js';
import { pool } from './helpers/pool.js';

let env: GatewayEnv;
const upstreams: ChatUpstream[] = [];

beforeAll(async () => {
  env = await startGatewayEnv();
});

afterAll(async () => {
  await env?.close();
  await Promise.all(upstreams.map((u) => u.close()));
});

async function upstream(name: string): Promise<ChatUpstream> {
  const u = await startChatUpstream({ name, chunks: 3, chunkDelayMs: 1 });
  upstreams.push(u);
  return u;
}

/** A ready replica of `revision` at the upstream's address; returns its id. */
const replicaOf = (deploymentId: number, revision: number, u: ChatUpstream): Promise<number> => env.addReplica(deploymentId, u.address, 'Replica', revision);

async function setTraffic(deploymentId: number, revision: number, traffic: TrafficTarget[] | null): Promise<void> {
  await modify(env.api.store, 'deployment', deploymentId, (d) => ({ ...d, revision, traffic }));
}

const entry = (revision: number | null, percent: number, tag: string | null = null): TrafficTarget => ({ revision, latest: revision === null, percent, tag });

/** Who answered: the upstream's name (system_fingerprint), or the status when it was not 200. */
function asker(name: string, host = hostOf(name), path = '/v1/chat/completions') {
  const fetcher = gatewayFetch({ ca: env.ca.certPem });
  return async (session?: string, stream = false): Promise<string> => {
    const res = await fetcher(`https://${host}:${env.port}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokenFor(name)}`, 'content-type': 'application/json', ...(session ? { 'x-session-id': session } : {}) },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream }),
    });
    const text = await res.text();
    if (res.status !== 200) return `status ${res.status}`;
    return /"system_fingerprint":"([^"]+)"/.exec(text)?.[1] ?? 'unknown';
  };
}

const count = <T>(xs: readonly T[], p: (x: T) => boolean): number => xs.filter(p).length;

async function metricValue(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = await env.registry.getSingleMetric(name)?.get();
  const found = metric?.values.find((v) => Object.entries(labels).every(([k, value]) => String((v.labels as Record<string, unknown>)[k]) === value));
  return found?.value;
}

function peerCertificate(servername: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: env.port, servername, ca: env.ca.certPem }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.end();
      if (cert) resolve(cert);
      else reject(new Error('no certificate'));
    });
    socket.on('error', reject);
  });
}

describe('a 90/10 split at the gateway', () => {
  let id: number;
  let ask: ReturnType<typeof asker>;

  beforeAll(async () => {
    id = await env.deploy('ts-split');
    const [a, b, canary] = [await upstream('r1-a'), await upstream('r1-b'), await upstream('r2-a')];
    await replicaOf(id, 1, a);
    await replicaOf(id, 1, b);
    await replicaOf(id, 2, canary);
    await setTraffic(id, 2, [entry(1, 90), entry(null, 10, 'canary')]);
    await waitFor(() => env.gateway.table.lookup(hostOf('ts-split'))?.split?.revisions[1]?.replicas.length === 1, 2000, 'the split');
    ask = asker('ts-split');
  });

  it('puts 10 % ± 3 % of 1,000 sessions on the canary and keeps each on its revision; without a session exactly 10 of 100', async () => {
    const first = await pool(1000, 20, (i) => ask(`session-${i}`));
    expect(first.filter((w) => !/^r[12]-/.test(w))).toEqual([]);
    const canary = count(first, (w) => w.startsWith('r2-'));
    expect(canary).toBeGreaterThanOrEqual(70);
    expect(canary).toBeLessThanOrEqual(130);
    const again = await pool(300, 20, (i) => ask(`session-${(i * 7) % 1000}`));
    const moved = again.filter((w, i) => w.slice(0, 2) !== first[(i * 7) % 1000]!.slice(0, 2));
    expect(moved).toEqual([]);
    const plain = await pool(100, 10, () => ask());
    expect(count(plain, (w) => w.startsWith('r2-'))).toBe(10);
    expect(count(plain, (w) => w.startsWith('r1-'))).toBe(90);
  });

  it('reaches only the canary on its tag host and path address, with a certificate for exactly that host', async () => {
    const tagHost = `canary-ts-split.${DOMAIN}`;
    const byHost = asker('ts-split', tagHost);
    const answered = await pool(30, 10, (i) => byHost(i % 2 === 0 ? `session-${i}` : undefined));
    expect(new Set(answered)).toEqual(new Set(['r2-a']));
    const byPath = asker('ts-split', 'localhost', '/endpoints/canary-ts-split/v1/chat/completions');
    expect(new Set(await pool(10, 5, () => byPath()))).toEqual(new Set(['r2-a']));
    await waitFor(async () => (await peerCertificate(tagHost)).subjectAltName === `DNS:${tagHost}`, 5000, 'the tag host certificate');
    // A wrong token is still refused there: the tag host takes the deployment's credentials only.
    const res = await gatewayFetch({ ca: env.ca.certPem })(`https://${tagHost}:${env.port}/v1/models`, { headers: { authorization: 'Bearer nope-0123456789abcdef' } });
    expect(res.status).toBe(401);
  });

  it('counts each revision apart: history steps, concurrency and Prometheus series', async () => {
    const before = env.gateway.revisionHistory.steps(id, 2).reduce((s, x) => s + x.requests, 0);
    const streamed = await pool(20, 5, () => asker('ts-split', `canary-ts-split.${DOMAIN}`)(undefined, true));
    expect(new Set(streamed)).toEqual(new Set(['r2-a']));
    const steps = env.gateway.revisionHistory.steps(id, 2);
    expect(steps.reduce((s, x) => s + x.requests, 0)).toBe(before + 20);
    expect(steps.reduce((s, x) => s + x.ttft.reduce((a, b) => a + b, 0), 0)).toBe(20);
    expect(steps.reduce((s, x) => s + x.completion_tokens, 0)).toBeGreaterThanOrEqual(20 * 3);
    expect(env.gateway.revisionHistory.steps(id, null).reduce((s, x) => s + x.requests, 0)).toBeGreaterThan(1000);
    await expect.poll(() => env.gateway.inflight.revisionConcurrency(id, 2).length, { timeout: 3000 }).toBeGreaterThan(0);
    expect(await metricValue('infergate_revision_requests_total', { deployment: 'ts-split', revision: '2', code: '2xx' })).toBe(before + 20);
    expect(await metricValue('infergate_revision_ttft_seconds', { deployment: 'ts-split', revision: '2', le: '+Inf' })).toBe(20);
    expect(await metricValue('infergate_revision_requests_total', { deployment: 'ts-split', revision: '1', code: '2xx' })).toBeGreaterThan(900);
  });
});

describe('sessions, redistribution and fallback', () => {
  it('pins a session to one replica inside its revision with session_affinity', async () => {
    const id = await env.deploy('ts-pin', { session_affinity: true });
    for (const name of ['p1-a', 'p1-b', 'p1-c']) await replicaOf(id, 1, await upstream(name));
    for (const name of ['p2-a', 'p2-b', 'p2-c']) await replicaOf(id, 2, await upstream(name));
    await setTraffic(id, 2, [entry(1, 50), entry(2, 50)]);
    await waitFor(() => env.gateway.table.lookup(hostOf('ts-pin'))?.split?.revisions.every((r) => r.replicas.length === 3) === true, 2000, 'the split');
    const ask = asker('ts-pin');
    const sessions = Array.from({ length: 40 }, (_, i) => `pinned-${i}`);
    // One at a time: with requests in flight, bounded loads may rightly move a session off a busy replica.
    const first = await pool(40, 1, (i) => ask(sessions[i]));
    for (let round = 0; round < 2; round++) expect(await pool(40, 1, (i) => ask(sessions[(i * 3) % 40]))).toEqual(first.map((_, i) => first[(i * 3) % 40]));
    // Both revisions, and more than one replica inside each, take sessions.
    expect(new Set(first.filter((w) => w.startsWith('p1-'))).size).toBeGreaterThan(1);
    expect(new Set(first.filter((w) => w.startsWith('p2-'))).size).toBeGreaterThan(1);
  });

  it('gives a revision\'s share to the other while it has nothing ready, and serves from any ready replica when none of the split has', async () => {
    const id = await env.deploy('ts-move');
    const old = await replicaOf(id, 1, await upstream('m1-a'));
    const canary = await replicaOf(id, 2, await upstream('m2-a'));
    await setTraffic(id, 2, [entry(1, 50), entry(2, 50, 'next')]);
    await waitFor(() => env.gateway.table.lookup(hostOf('ts-move'))?.split?.revisions[1]?.replicas.length === 1, 2000, 'the split');
    const ask = asker('ts-move');
    expect(count(await pool(20, 5, () => ask()), (w) => w === 'm2-a')).toBe(10);
    expect(await metricValue('infergate_revision_requests_total', { deployment: 'ts-move', revision: '2', code: '2xx' })).toBe(10);

    // Revision 2's replica goes: its share goes to revision 1, and its tag host answers 503.
    await env.removeReplica(canary);
    await waitFor(() => env.gateway.table.lookup(hostOf('ts-move'))?.split?.revisions[1]?.replicas.length === 0, 2000, 'revision 2 gone');
    expect(new Set(await pool(20, 5, (i) => ask(i % 2 ? `s-${i}` : undefined)))).toEqual(new Set(['m1-a']));
    expect(await asker('ts-move', `next-ts-move.${DOMAIN}`)()).toBe('status 503');

    // Moved to revisions 3 and 4, neither ready yet: revision 1, not yet stopped, serves.
    await setTraffic(id, 4, [entry(3, 50), entry(4, 50)]);
    await waitFor(() => env.gateway.table.lookup(hostOf('ts-move'))?.split?.key === '3:50,4:50', 2000, 'the new split');
    expect(new Set(await pool(20, 5, (i) => ask(i % 2 ? `s-${i}` : undefined)))).toEqual(new Set(['m1-a']));
    // Revision 2 left the table (nothing ready, not in traffic): its series went.
    expect(await metricValue('infergate_revision_requests_total', { deployment: 'ts-move', revision: '2', code: '2xx' })).toBeUndefined();
    expect(await metricValue('infergate_revision_requests_total', { deployment: 'ts-move', revision: '1', code: '2xx' })).toBeGreaterThan(0);

    // Revision 1 stops: its series go with it.
    await env.removeReplica(old);
    await waitFor(() => env.gateway.table.lookup(hostOf('ts-move'))?.replicas.length === 0, 2000, 'revision 1 gone');
    await expect.poll(() => metricValue('infergate_revision_requests_total', { deployment: 'ts-move', revision: '1', code: '2xx' })).toBeUndefined();
  });
});
