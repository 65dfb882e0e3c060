// Usage per revision, from a request at the gateway to the usage view (a control API and a
// gateway on one store, over real TLS to replica stand-ins of two revisions, the split written
// as the control API stores it): over a 90/10 split without sessions each revision's requests
// and tokens are counted under it exactly; a tag host's requests under its revision; a request
// to a tag whose revision has nothing ready (503) and a stranger's request count for the
// deployment only, or not at all; an hour written before revisions were counted reads as none;
// the OpenAPI document says what `revisions` holds.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrafficTarget } from '../src/domain/traffic.js';
import { modify } from '../src/store/store.js';
import { startChatUpstream, type ChatUpstream } from './helpers/chat-upstream.js';
import { DOMAIN, hostOf, startGatewayEnv, tokenFor, waitFor, type GatewayEnv } from './helpers/gateway-env.js';
import { gatewayFetch } from './helpers/tls-clients.js';

let env: GatewayEnv;
const upstreams: ChatUpstream[] = [];

beforeAll(async () => {
  env = await startGatewayEnv({ withUsage: true });
});

afterAll(async () => {
  await env?.close();
  await Promise.all(upstreams.map((u) => u.close()));
});

const entry = (revision: number | null, percent: number, tag: string | null = null): TrafficTarget => ({ revision, latest: revision === null, percent, tag });

const replicaOf = async (deploymentId: number, revision: number, u: ChatUpstream): Promise<void> => void (await env.addReplica(deploymentId, u.address, 'Replica', revision));

/** The status and who answered (the stand-in's name), one chat completion. */
async function ask(host: string, token: string): Promise<string> {
  const res = await gatewayFetch({ ca: env.ca.certPem })(`https://${host}:${env.port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  const text = await res.text();
  return res.status === 200 ? (/"system_fingerprint":"([^"]+)"/.exec(text)?.[1] ?? 'unknown') : `status ${res.status}`;
}

interface RevisionFigures {
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  gpu_seconds: number;
}
interface Figures extends RevisionFigures {
  revisions: Record<string, RevisionFigures>;
}
interface UsageView {
  hours: (Figures & { hour: string })[];
  totals: Figures;
}

describe('usage per revision', () => {
  it('counts each request under the revision of the replica that served it, and the others for the deployment only', async () => {
    const id = await env.deploy('uv-split');
    const stable = await startChatUpstream({ name: 'uv-r1', chunks: 3, chunkDelayMs: 1, promptTokens: 7 });
    const canary = await startChatUpstream({ name: 'uv-r2', chunks: 5, chunkDelayMs: 1, promptTokens: 11 });
    upstreams.push(stable, canary);
    await replicaOf(id, 1, stable);
    await replicaOf(id, 2, canary);
    // Revision 3 runs for its tag only and has nothing ready: its host answers 503.
    await modify(env.api.store, 'deployment', id, (d) => ({ ...d, revision: 2, traffic: [entry(1, 90), entry(null, 10, 'canary'), entry(3, 0, 'next')] }));
    await waitFor(() => env.gateway.table.lookup(hostOf('uv-split'))?.split?.revisions.every((r) => r.revision === 3 || r.replicas.length === 1) === true, 2000, 'the split');

    // One at a time, without a session: the smooth round robin gives exactly 90 and 10.
    const answered: string[] = [];
    for (let i = 0; i < 100; i++) answered.push(await ask(hostOf('uv-split'), tokenFor('uv-split')));
    expect([answered.filter((w) => w === 'uv-r1').length, answered.filter((w) => w === 'uv-r2').length]).toEqual([90, 10]);
    for (let i = 0; i < 5; i++) expect(await ask(`canary-uv-split.${DOMAIN}`, tokenFor('uv-split'))).toBe('uv-r2');
    for (let i = 0; i < 2; i++) expect(await ask(`next-uv-split.${DOMAIN}`, tokenFor('uv-split'))).toBe('status 503');
    expect(await ask(hostOf('uv-split'), 'not-the-token-0123456789')).toBe('status 401');

    // An hour counted before revisions were: no figures by revision.
    await env.api.store.create('usage', (uid) => ({
      id: uid,
      deployment_id: id,
      hour: '2020-01-01T00:00:00.000Z',
      requests: 4,
      errors: 0,
      prompt_tokens: 1,
      completion_tokens: 1,
      gpu_seconds: 0,
      replica_seconds: {},
      updated_at: new Date().toISOString(),
    }));

    await env.usage!.flush();
    const res = await env.api.call('GET', `/deployments/general/${id}/usage`);
    expect(res.status).toBe(200);
    const view = res.body as unknown as UsageView;
    expect(view.hours[0]).toMatchObject({ hour: '2020-01-01T00:00:00.000Z', requests: 4, revisions: {} });
    const zero = { errors: 0, gpu_seconds: 0 };
    expect(view.totals).toMatchObject({ requests: 4 + 107, errors: 2, prompt_tokens: 1 + 90 * 7 + 15 * 11, completion_tokens: 1 + 90 * 3 + 15 * 5 });
    expect(view.totals.revisions).toEqual({
      '1': { requests: 90, prompt_tokens: 90 * 7, completion_tokens: 90 * 3, ...zero },
      '2': { requests: 15, prompt_tokens: 15 * 11, completion_tokens: 15 * 5, ...zero },
    });
    // The hours (an hour may turn during the test) add up to the totals, revision by revision.
    const summed: Record<string, number> = {};
    for (const h of view.hours.slice(1)) for (const [r, f] of Object.entries(h.revisions)) summed[r] = (summed[r] ?? 0) + f.requests;
    expect(summed).toEqual({ '1': 90, '2': 15 });

    // Narrowed to the old hour: the totals have no revision either.
    const old = (await env.api.call('GET', `/deployments/general/${id}/usage?to=2020-01-01T00:30:00Z`)).body as unknown as UsageView;
    expect(old.totals).toMatchObject({ requests: 4, revisions: {} });
  });

  it('says in the OpenAPI document what revisions holds', async () => {
    const doc = (await env.api.call('GET', '/openapi.json')).body as unknown as {
      paths: Record<string, { get?: { responses: Record<string, { content: Record<string, { schema: { properties: Record<string, { properties?: Record<string, unknown> }> } }> }> } }>;
    };
    const schema = doc.paths['/deployments/general/{id}/usage']?.get?.responses['200']?.content['application/json']?.schema;
    const revisions = schema?.properties.totals?.properties?.revisions as { additionalProperties?: { properties?: Record<string, unknown> }; patternProperties?: Record<string, { properties?: Record<string, unknown> }> } | undefined;
    const item = revisions?.additionalProperties ?? Object.values(revisions?.patternProperties ?? {})[0];
    expect(Object.keys(item?.properties ?? {}).sort()).toEqual(['completion_tokens', 'errors', 'gpu_seconds', 'prompt_tokens', 'requests']);
  });
});
