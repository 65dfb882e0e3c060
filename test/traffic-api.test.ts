// The control API's side of traffic management and autoscaling signals over real HTTP: the
// refusals of `traffic` (sum, duplicate tag, unknown or failed revision, revision and latest
// together, tag hosts colliding with names both ways), of rollout_mode and of the autoscaling
// metric and target; a PATCH of traffic applied at once without a revision; manual rollout
// pinning `latest` on a spec change and a rollback, and a spec change with its split in one
// PATCH; clone copying rollout_mode and the signal but not traffic; the quota of a split; the
// views (traffic with resolved revisions and tag URLs, revision_replicas, revisions' shares);
// and GET …/revision-metrics (409 without a source, its shape with one).

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RevisionMetrics, RevisionMetricsSource } from '../src/domain/ports.js';
import { modify } from '../src/store/store.js';
import { disaggregatedBody, generalBody, startControl, type ApiResponse, type TestControl } from './helpers/control.js';

let api: TestControl;
let token: string;
let counter = 0;

/** A unique name per test (names are global): prefix-N. */
const fresh = (prefix: string) => `${prefix}-${++counter}`;
const general = (name: string, over: Record<string, unknown> = {}) => ({ ...generalBody(name, token), ...over });

beforeAll(async () => {
  api = await startControl();
  token = (await api.call('POST', '/vault/tokens', { name: 'traffic-default' })).body.token;
});
afterAll(async () => api?.close());
// Each test's deployments go, so the cluster's instances never run out.
afterEach(async () => {
  for (const family of ['general', 'orchestrated']) {
    for (const d of (await api.call('GET', `/deployments/${family}`)).body.items) await api.call('DELETE', `/deployments/${family}/${d.id}`);
  }
});

async function create(body: Record<string, unknown>, family = 'general'): Promise<{ id: number; route: string; body: ApiResponse['body'] }> {
  const res = await api.call('POST', `/deployments/${family}`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.id, route: `/deployments/${family}/${res.body.id}`, body: res.body };
}

/** A deployment with revisions 1 and 2 (an env edit), all to the newest. */
async function withTwoRevisions(name: string, over: Record<string, unknown> = {}) {
  const d = await create(general(name, over));
  const edited = await api.call('PATCH', d.route, { env: { EDITION: 'two' } });
  expect(edited.body.revision).toBe(2);
  return d;
}

const refusal = (res: ApiResponse) => ({ status: res.status, code: res.body.error?.code, field: res.body.error?.field, message: res.body.error?.message });

describe('traffic refusals', () => {
  it.each([
    ['a sum other than 100', [{ revision: 1, percent: 90 }], 'traffic', /the percents of traffic must sum to 100, got 90/],
    ['a duplicate tag', [{ revision: 1, percent: 50, tag: 'a' }, { latest: true, percent: 50, tag: 'a' }], 'traffic', /tag "a" is used twice/],
    ['an unknown revision', [{ revision: 7, percent: 100 }], 'traffic[0].revision', /has no revision 7; its revisions are 1 to 2/],
    ['both revision and latest', [{ revision: 1, latest: true, percent: 100 }], 'traffic[0]', /exactly one of "revision" \(a number\) or "latest": true/],
    ['a fractional percent', [{ revision: 1, percent: 99.5 }, { latest: true, percent: 0.5 }], 'traffic[0].percent', /whole number from 0 to 100/],
    ['a tag that is no DNS label', [{ revision: 1, percent: 100, tag: 'Canary!' }], 'traffic[0].tag', /lowercase letters, digits and '-'/],
    ['an empty list', [], 'traffic', /list of 1 to 10 entries/],
  ])('refuses %s with 400 naming the field', async (_what, traffic, field, message) => {
    const d = await withTwoRevisions(fresh('bad'));
    const res = await api.call('PATCH', d.route, { traffic });
    expect(refusal(res)).toMatchObject({ status: 400, code: 'invalid_field', field, message: expect.stringMatching(message) });
    // Nothing was written.
    expect((await api.store.get('deployment', d.id))!.value.traffic ?? null).toBeNull();
  });

  it('refuses a revision that failed, saying why it failed', async () => {
    const d = await withTwoRevisions(fresh('failed'));
    await modify(api.store, 'deployment', d.id, (r) => ({
      ...r,
      revisions: r.revisions.map((x) => (x.revision === 2 ? { ...x, status: 'failed' as const, failure_reason: 'no ready replica within 60 s' } : x)),
    }));
    const res = await api.call('PATCH', d.route, { traffic: [{ revision: 1, percent: 50 }, { revision: 2, percent: 50 }] });
    expect(refusal(res)).toMatchObject({ status: 400, field: 'traffic[1].revision', message: expect.stringMatching(/revision 2 of .* failed \(no ready replica within 60 s\); it cannot take traffic/) });
  });

  it('refuses a tag whose host is another deployment name, and a name that is another deployment tag host', async () => {
    const web = await withTwoRevisions(fresh('web'));
    const webName = web.body.name as string;
    await create(general(`canary-${webName}`));
    const res = await api.call('PATCH', web.route, { traffic: [{ revision: 1, percent: 90 }, { latest: true, percent: 10, tag: 'canary' }] });
    expect(refusal(res)).toMatchObject({ status: 400, field: 'traffic[1].tag', message: expect.stringMatching(new RegExp(`host of the deployment named "canary-${webName}"; choose another tag`)) });

    const tagged = await api.call('PATCH', web.route, { traffic: [{ revision: 1, percent: 90 }, { latest: true, percent: 10, tag: 'beta' }] });
    expect(tagged.status, JSON.stringify(tagged.body)).toBe(200);
    const taken = await api.call('POST', '/deployments/general', general(`beta-${webName}`));
    expect(refusal(taken)).toMatchObject({ status: 409, code: 'conflict', field: 'name', message: expect.stringMatching(new RegExp(`host of a traffic tag of deployment ${webName}.*remove the tag`)) });
    const cloned = await api.call('POST', `${web.route}/clone`, { name: `beta-${webName}` });
    expect(refusal(cloned)).toMatchObject({ status: 409, field: 'name' });
  });

  it('refuses a tag whose host another deployment tag already has', async () => {
    // Tag "a" of "b-c" and tag "a-b" of "c" would both be a-b-c.<domain>.
    const suffix = ++counter;
    const first = await withTwoRevisions(`b-c${suffix}`);
    const second = await withTwoRevisions(`c${suffix}`);
    expect((await api.call('PATCH', first.route, { traffic: [{ revision: 1, percent: 100, tag: 'a' }] })).status).toBe(200);
    const res = await api.call('PATCH', second.route, { traffic: [{ revision: 1, percent: 100, tag: 'a-b' }] });
    expect(refusal(res)).toMatchObject({ status: 400, field: 'traffic[0].tag', message: expect.stringMatching(/already uses; choose another tag/) });
  });

  it('lets a create name latest or revision 1, and nothing else', async () => {
    const ok = await create(general(fresh('new'), { traffic: [{ latest: true, percent: 100, tag: 'preview' }] }));
    expect(ok.body.traffic).toEqual([{ revision: 1, latest: true, percent: 100, tag: 'preview', url: `https://preview-${ok.body.name}.endpoints.test` }]);
    const bad = await api.call('POST', '/deployments/general', general(fresh('new'), { traffic: [{ revision: 2, percent: 100 }] }));
    expect(refusal(bad)).toMatchObject({ status: 400, field: 'traffic[0].revision', message: expect.stringMatching(/has no revision 2; its revisions are 1 to 1/) });
  });

  it('refuses an unknown rollout_mode at the edge, with the values', async () => {
    const res = await api.call('POST', '/deployments/general', general(fresh('mode'), { rollout_mode: 'canary' }));
    expect(refusal(res)).toMatchObject({ status: 400, field: 'rollout_mode', message: 'rollout_mode must be one of automatic, manual, or null' });
  });
});

describe('autoscaling signal refusals', () => {
  it.each([
    ['queue_depth without a target', { autoscaling_metric: 'queue_depth' }, 'autoscaling_target', /required with autoscaling_metric queue_depth: a number from 0.1 to 10000 \(waiting requests per replica\)/],
    ['a target with concurrency', { autoscaling_target: 3 }, 'autoscaling_target', /with autoscaling_metric concurrency the target is max_concurrency/],
    ['a fractional ttft', { autoscaling_metric: 'ttft', autoscaling_target: 250.5 }, 'autoscaling_target', /of ttft must be a whole number from 1 to 600000 .*got 250.5/],
    ['kv_cache above 100 %', { autoscaling_metric: 'kv_cache', autoscaling_target: 150 }, 'autoscaling_target', /of kv_cache must be a number from 1 to 100/],
    ['an unknown metric', { autoscaling_metric: 'gpu' }, 'autoscaling_metric', /^autoscaling_metric must be one of concurrency, queue_depth, kv_cache, ttft, or null$/],
    ['scale to zero on kv_cache', { min_replicas: 0, autoscaling_metric: 'kv_cache', autoscaling_target: 80 }, 'min_replicas', /needs a signal that sees demand while no replica runs/],
  ])('refuses %s', async (_what, over, field, message) => {
    const res = await api.call('POST', '/deployments/general', general(fresh('sig'), over));
    expect(refusal(res)).toMatchObject({ status: 400, field, message: expect.stringMatching(message) });
  });

  it('refuses a signal other than concurrency on a disaggregated deployment, whose pools are fixed', async () => {
    const res = await api.call('POST', '/deployments/orchestrated', { ...disaggregatedBody(fresh('dis'), token), autoscaling_metric: 'queue_depth', autoscaling_target: 4 });
    expect(refusal(res)).toMatchObject({ status: 400, field: 'autoscaling_metric', message: expect.stringMatching(/fixed sizes/) });
  });

  it('needs no max_concurrency with another metric, scales in place on a change, and drops the target of the metric it leaves', async () => {
    const d = await create(general(fresh('queue'), { max_concurrency: null, max_replicas: 3, autoscaling_metric: 'queue_depth', autoscaling_target: 2.5 }));
    expect(d.body).toMatchObject({ autoscaling_metric: 'queue_depth', autoscaling_target: 2.5, max_concurrency: null });
    const ttft = await api.call('PATCH', d.route, { autoscaling_metric: 'ttft' });
    expect(refusal(ttft)).toMatchObject({ status: 400, field: 'autoscaling_target', message: expect.stringMatching(/required with autoscaling_metric ttft/) });
    const moved = await api.call('PATCH', d.route, { autoscaling_metric: 'ttft', autoscaling_target: 800 });
    expect(moved.body).toMatchObject({ revision: 1, autoscaling_metric: 'ttft', autoscaling_target: 800 });
    const back = await api.call('PATCH', d.route, { autoscaling_metric: 'concurrency', max_concurrency: 4 });
    expect(back.body).toMatchObject({ revision: 1, autoscaling_metric: 'concurrency', autoscaling_target: null, max_concurrency: 4 });
    expect((await api.store.get('deployment', d.id))!.value.scaling).toEqual({ min_replicas: 1, max_replicas: 3, target_concurrency: 4, cooldown_period: 300, pools: null });
  });
});

describe('traffic applied at once', () => {
  it('makes no revision, sets updated_at, stores the list and shows it resolved with tag URLs and shares', async () => {
    const d = await withTwoRevisions(fresh('split'));
    const name = d.body.name as string;
    // An old updated_at, so the PATCH's own is told apart whatever the clock's resolution.
    const before = (await modify(api.store, 'deployment', d.id, (r) => ({ ...r, updated_at: '2026-01-01T00:00:00.000Z' }))).value;
    expect((await api.call('GET', d.route)).body).toMatchObject({
      traffic: [{ revision: 2, latest: true, percent: 100, tag: null, url: null }],
      traffic_is_default: true,
      rollout_mode: 'automatic',
      autoscaling_metric: 'concurrency',
      autoscaling_target: null,
      revision_replicas: [{ revision: 2, percent: 100, tags: [], ready: 0, desired: 1 }],
    });
    const res = await api.call('PATCH', d.route, { traffic: [{ revision: 1, percent: 90 }, { latest: true, percent: 10, tag: 'canary' }] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      revision: 2,
      traffic_is_default: false,
      traffic: [
        { revision: 1, latest: false, percent: 90, tag: null, url: null },
        { revision: 2, latest: true, percent: 10, tag: 'canary', url: `https://canary-${name}.endpoints.test` },
      ],
      // No controller here: each revision of the split shows what one would start it at.
      revision_replicas: [
        { revision: 1, percent: 90, tags: [], ready: 0, desired: 1 },
        { revision: 2, percent: 10, tags: ['canary'], ready: 0, desired: 1 },
      ],
    });
    expect(res.body.revisions.map((r: { revision: number; percent: number; tags: string[] }) => [r.revision, r.percent, r.tags])).toEqual([[1, 90, []], [2, 10, ['canary']]]);
    const after = (await api.store.get('deployment', d.id))!.value;
    expect(after.revisions).toHaveLength(2);
    expect(after.updated_at > before.updated_at).toBe(true);
    expect(after.traffic).toEqual([{ revision: 1, latest: false, percent: 90, tag: null }, { revision: null, latest: true, percent: 10, tag: 'canary' }]);
    expect((await api.call('GET', `${d.route}/revisions/2`)).body).toMatchObject({ percent: 10, tags: ['canary'] });

    // The controller's per-revision counts and the replicas' states show per revision.
    await modify(api.store, 'deployment', d.id, (r) => ({ ...r, revision_desired: { '1': { Replica: 2 }, '2': { Replica: 1 } } }));
    const view = (await api.call('GET', d.route)).body;
    expect(view.revision_replicas.map((r: { desired: number }) => r.desired)).toEqual([2, 1]);

    // An unrelated edit keeps the list; null gives everything back to the newest revision.
    expect((await api.call('PATCH', d.route, { max_replicas: 3 })).body.traffic[0]).toMatchObject({ revision: 1, percent: 90 });
    const cleared = await api.call('PATCH', d.route, { traffic: null });
    expect(cleared.body).toMatchObject({ revision: 2, traffic_is_default: true, traffic: [{ revision: 2, latest: true, percent: 100 }] });
  });

  it('moves a latest share to the new revision on a spec change (automatic), and takes a spec change with its split in one PATCH', async () => {
    const d = await withTwoRevisions(fresh('auto'));
    await api.call('PATCH', d.route, { traffic: [{ revision: 1, percent: 90 }, { latest: true, percent: 10 }] });
    const edited = await api.call('PATCH', d.route, { env: { EDITION: 'three' } });
    expect(edited.body).toMatchObject({ revision: 3, traffic: [{ revision: 1, percent: 90 }, { revision: 3, latest: true, percent: 10 }] });

    // Revision 4 is named by number in the same PATCH that makes it.
    const both = await api.call('PATCH', d.route, { env: { EDITION: 'four' }, traffic: [{ revision: 3, percent: 80 }, { revision: 4, percent: 20, tag: 'next' }] });
    expect(both.status, JSON.stringify(both.body)).toBe(200);
    expect(both.body).toMatchObject({ revision: 4, traffic: [{ revision: 3, percent: 80 }, { revision: 4, latest: false, percent: 20, tag: 'next' }] });
    // Without the spec change, revision 5 does not exist.
    const none = await api.call('PATCH', d.route, { traffic: [{ revision: 5, percent: 100 }] });
    expect(refusal(none)).toMatchObject({ status: 400, field: 'traffic[0].revision' });
  });
});

describe('manual rollout', () => {
  it('starts a spec change at 0 % (latest pinned to the previous revision), also after a rollback, until traffic moves', async () => {
    const d = await create(general(fresh('manual'), { rollout_mode: 'manual' }));
    expect(d.body).toMatchObject({ rollout_mode: 'manual', traffic_is_default: true });
    const two = await api.call('PATCH', d.route, { env: { EDITION: 'two' } });
    expect(two.body).toMatchObject({ revision: 2, traffic_is_default: false, traffic: [{ revision: 1, latest: false, percent: 100, tag: null }] });
    expect(two.body.revisions.map((r: { percent: number }) => r.percent)).toEqual([100, 0]);

    // A canary on the newest, then another spec change: the canary's latest entry stays on revision 2.
    await api.call('PATCH', d.route, { traffic: [{ revision: 1, percent: 90 }, { latest: true, percent: 10, tag: 'canary' }] });
    const three = await api.call('PATCH', d.route, { env: { EDITION: 'three' } });
    expect(three.body).toMatchObject({ revision: 3, traffic: [{ revision: 1, percent: 90 }, { revision: 2, latest: false, percent: 10, tag: 'canary' }] });

    // A spec change with its traffic in one PATCH: the list given wins, latest is the new revision.
    const four = await api.call('PATCH', d.route, { env: { EDITION: 'four' }, traffic: [{ revision: 1, percent: 50 }, { latest: true, percent: 50 }] });
    expect(four.body).toMatchObject({ revision: 4, traffic: [{ revision: 1, percent: 50 }, { revision: 4, latest: true, percent: 50 }] });

    const back = await api.call('POST', `${d.route}/rollback`, { revision: 1 });
    expect(back.status).toBe(202);
    expect(back.body).toMatchObject({ revision: 5, traffic: [{ revision: 1, percent: 50 }, { revision: 4, latest: false, percent: 50 }] });
    expect(back.body.revisions.at(-1)).toMatchObject({ revision: 5, percent: 0 });
  });

  it('rolls out as before in automatic mode: a rollback takes everything', async () => {
    const d = await withTwoRevisions(fresh('autoback'));
    const back = await api.call('POST', `${d.route}/rollback`, { revision: 1 });
    expect(back.body).toMatchObject({ revision: 3, traffic_is_default: true, traffic: [{ revision: 3, latest: true, percent: 100 }] });
  });
});

describe('clone', () => {
  it('copies rollout_mode and the autoscaling signal, never the traffic list', async () => {
    const src = await withTwoRevisions(fresh('src'), { rollout_mode: 'manual', autoscaling_metric: 'queue_depth', autoscaling_target: 4, max_concurrency: null });
    await api.call('PATCH', src.route, { traffic: [{ revision: 1, percent: 50 }, { revision: 2, percent: 50, tag: 'half' }] });
    const copy = await api.call('POST', `${src.route}/clone`, { name: fresh('copy') });
    expect(copy.status, JSON.stringify(copy.body)).toBe(201);
    expect(copy.body).toMatchObject({ revision: 1, rollout_mode: 'manual', autoscaling_metric: 'queue_depth', autoscaling_target: 4, traffic_is_default: true });
    expect((await api.store.get('deployment', copy.body.id))!.value.traffic ?? null).toBeNull();
  });
});

describe('quota with a split', () => {
  it('counts max_replicas for every revision of the split', async () => {
    const small = await startControl({ gpuQuota: 5 });
    try {
      const res = await small.call('POST', '/deployments/general', { ...generalBody('quota-split', token), max_replicas: 2 });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const route = `/deployments/general/${res.body.id}`;
      await small.call('PATCH', route, { env: { EDITION: 'two' } });
      expect((await small.call('GET', '/quota')).body).toMatchObject({ gpus_reserved: 2 });
      const split = await small.call('PATCH', route, { traffic: [{ revision: 1, percent: 50 }, { revision: 2, percent: 50 }] });
      expect(split.status, JSON.stringify(split.body)).toBe(200);
      expect((await small.call('GET', '/quota')).body).toMatchObject({ gpus_reserved: 4 });
      const grow = await small.call('PATCH', route, { max_replicas: 3 });
      expect(refusal(grow)).toMatchObject({
        status: 422,
        code: 'quota_exceeded',
        field: 'traffic',
        message: expect.stringMatching(/needs 6 GPUs \(revision 1: max_replicas 3 × sim-gpu-1x, 1 GPU each \+ revision 2: max_replicas 3 × .*\).*quota is 5.*send traffic to fewer revisions/),
      });
      // Back to one revision: the footprint is one revision's again.
      expect((await small.call('PATCH', route, { traffic: [{ revision: 2, percent: 100 }], max_replicas: 3 })).status).toBe(200);
      expect((await small.call('GET', '/quota')).body).toMatchObject({ gpus_reserved: 3 });
    } finally {
      await small.close();
    }
  });
});

describe('GET …/revision-metrics', () => {
  it('answers 409 in a process without the autoscaler, like /activity', async () => {
    const d = await create(general(fresh('nometrics')));
    const res = await api.call('GET', `${d.route}/revision-metrics`);
    expect(refusal(res)).toMatchObject({ status: 409, code: 'conflict', message: expect.stringMatching(/where the autoscaler runs/) });
  });

  it('gives each revision its figures and current percent, the split ones even without figures; the window is 10–300 s', async () => {
    const asked: [number, number][] = [];
    const figures: RevisionMetrics[] = [
      { revision: 1, requests: 900, errors: 3, ttft_p50_ms: 120, ttft_p99_ms: 480, tokens_per_second: 55.5 },
      { revision: 3, requests: 12, errors: 0, ttft_p50_ms: 100, ttft_p99_ms: 200, tokens_per_second: 1 },
    ];
    const source: RevisionMetricsSource = {
      revisions: (id, windowSeconds) => {
        asked.push([id, windowSeconds]);
        return figures;
      },
    };
    const withSource = await startControl({ revisionMetrics: source });
    try {
      const res = await withSource.call('POST', '/deployments/general', generalBody('metrics', 'tok-metrics-0123456789'));
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const route = `/deployments/general/${res.body.id}`;
      await withSource.call('PATCH', route, { env: { EDITION: 'two' } });
      await withSource.call('PATCH', route, { traffic: [{ revision: 1, percent: 90 }, { latest: true, percent: 10 }] });
      const m = await withSource.call('GET', `${route}/revision-metrics`);
      expect(m.status, JSON.stringify(m.body)).toBe(200);
      expect(m.body).toEqual({
        window_seconds: 300,
        revisions: [
          { revision: 1, percent: 90, requests: 900, errors: 3, ttft_p50_ms: 120, ttft_p99_ms: 480, tokens_per_second: 55.5 },
          { revision: 2, percent: 10, requests: 0, errors: 0, ttft_p50_ms: null, ttft_p99_ms: null, tokens_per_second: 0 },
          { revision: 3, percent: 0, requests: 12, errors: 0, ttft_p50_ms: 100, ttft_p99_ms: 200, tokens_per_second: 1 },
        ],
      });
      expect(asked.at(-1)).toEqual([res.body.id, 300]);
      expect((await withSource.call('GET', `${route}/revision-metrics?window_seconds=60`)).body.window_seconds).toBe(60);
      expect(asked.at(-1)).toEqual([res.body.id, 60]);
      for (const bad of ['5', '301']) {
        const refused = await withSource.call('GET', `${route}/revision-metrics?window_seconds=${bad}`);
        expect(refusal(refused)).toMatchObject({ status: 400, field: 'window_seconds', message: expect.stringMatching(/from 10 to 300/) });
      }
      expect((await withSource.call('GET', '/deployments/orchestrated/999/revision-metrics')).status).toBe(404);
    } finally {
      await withSource.close();
    }
  });

  it('is in the OpenAPI document, with the new fields of the deployment view and requests', async () => {
    const doc = (await api.call('GET', '/openapi.json', undefined, null)).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/deployments/general/{id}/revision-metrics', '/deployments/orchestrated/{id}/revision-metrics']));
    const schemas = JSON.stringify(doc);
    for (const field of ['traffic_is_default', 'revision_replicas', 'rollout_mode', 'autoscaling_metric', 'autoscaling_target', 'ttft_p99_ms']) expect(schemas).toContain(field);
  });
});
