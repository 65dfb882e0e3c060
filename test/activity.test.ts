// GET /deployments/{family}/{id}/activity: against a real `infergate serve` (the autoscaler
// beside its gateway records it), a deployment under streaming load shows requests in flight
// and a ready replica within the last 15 minutes; unknown ids and the other family are 404;
// and a control API that runs no autoscaler answers 409 saying where activity is recorded.

import { waitFor } from './helpers/wait.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generalBody, startControl, type TestControl } from './helpers/control.js';
import { engineBody, FAST_ENGINE, usePlatform, type Platform } from './helpers/platform.js';

const TOKEN = 'tok-activity-0123456789';

type Point = { t: string; in_flight: number; in_flight_max: number; held: number; desired: number | null; ready: number };

describe('activity where the autoscaler runs (infergate serve)', () => {
  let platform: Platform;
  usePlatform('activity', [], (p) => (platform = p));

  it('shows requests in flight and the ready replica in 5-second steps', async () => {
    const created = await platform.call('POST', '/deployments/general', engineBody('busy', TOKEN, { command: [...FAST_ENGINE, '--itl-ms', '20'], max_replicas: 2, max_concurrency: 4 }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    await platform.waitFor(id, (d) => d.status === 'ready', 30_000, 'busy ready');

    // Four streams at once for about a second each, twice: in-flight concurrency the gateway measures.
    const client = platform.client('busy', TOKEN);
    const stream = async () => {
      const s = await client.chat.completions.create({
        model: 'sim/model',
        messages: [{ role: 'user', content: 'go on' }],
        max_tokens: 50,
        stream: true,
        ignore_eos: true,
      } as OpenAI.ChatCompletionCreateParamsStreaming);
      for await (const _ of s) void _;
    };
    for (let round = 0; round < 2; round++) await Promise.all([stream(), stream(), stream(), stream()]);

    let body: { step_seconds: number; window_seconds: number; component: string | null; points: Point[] } | undefined;
    // The expectations below say what was seen if the traffic never shows.
    await waitFor(
      async () => {
        const res = await platform.call('GET', `/deployments/general/${id}/activity`);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        body = res.body;
        return body!.points.some((p) => p.in_flight > 0);
      },
      15_000,
      'the traffic in the activity',
      500,
    ).catch(() => undefined);
    expect(body).toMatchObject({ step_seconds: 5, window_seconds: 900, component: 'Replica' });
    const points = body!.points;
    expect(points.some((p) => p.in_flight > 0 && p.in_flight_max >= p.in_flight), JSON.stringify(points)).toBe(true);
    expect(points.some((p) => p.ready >= 1)).toBe(true);
    expect(points.at(-1)!.desired).toBeGreaterThanOrEqual(1);
    const times = points.map((p) => Date.parse(p.t));
    expect(times.every((t, i) => t % 5000 === 0 && (i === 0 || t > times[i - 1]!))).toBe(true);
    expect(Date.now() - times[0]!).toBeLessThanOrEqual(900_000 + 5000);

    expect((await platform.call('GET', `/deployments/orchestrated/${id}/activity`)).status).toBe(404);
    expect((await platform.call('GET', '/deployments/general/99999/activity')).status).toBe(404);
  });
});

describe('activity where no autoscaler runs', () => {
  let api: TestControl;
  beforeAll(async () => {
    api = await startControl();
  });
  afterAll(async () => api?.close());

  it('answers 409 naming where activity is recorded, after the 404s of unknown ids', async () => {
    const created = await api.call('POST', '/deployments/general', generalBody('quiet', TOKEN));
    expect(created.status).toBe(201);
    const res = await api.call('GET', `/deployments/general/${created.body.id}/activity`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
    expect(res.body.error.message).toContain('--role all');
    expect((await api.call('GET', `/deployments/orchestrated/${created.body.id}/activity`)).status).toBe(404);
    expect((await api.call('GET', '/deployments/general/424242/activity')).status).toBe(404);
    expect((await api.call('GET', `/deployments/general/${created.body.id}/activity`, undefined, null)).status).toBe(401);
  });
});
