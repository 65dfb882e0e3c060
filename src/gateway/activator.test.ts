import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../core/clock.js';
import { Activator, type HoldOutcome } from './activator.js';
import { testRoute } from '../../test/helpers/route.js';
import type { Route } from './routing-table.js';

const route = (o: Partial<Route> = {}): Route => testRoute({ name: 'zero', host: 'zero.test', scaleToZero: true, ...o });

function activator(queueSize = 3, timeoutMs = 5000) {
  const registry = new Registry();
  const a = new Activator({ queueSize, timeoutMs }, systemClock, registry, (id) => new Map([[7, 'zero']]).get(id));
  const pokes: number[] = [];
  a.onDemand((id) => pokes.push(id));
  return { a, pokes, registry };
}

const never = () => {};

describe('Activator', () => {
  it('holds requests, pokes on demand, and releases them in arrival order when a replica is ready', async () => {
    const { a, pokes } = activator();
    const order: number[] = [];
    const held = [0, 1, 2].map((i) => a.hold(route(), never).then((o) => (order.push(i), o)));
    expect(a.held(7)).toBe(3);
    expect(pokes).toEqual([7, 7, 7]);
    a.release(new Map([[7, route()]])); // still no replica: nothing moves
    expect(a.held(7)).toBe(3);
    const ready = route({ replicas: [{ id: 1, address: '127.0.0.1:1' }] });
    a.release(new Map([[7, ready]]));
    const outcomes = await Promise.all(held);
    expect(order).toEqual([0, 1, 2]);
    for (const o of outcomes) expect(o).toMatchObject({ ok: true, route: ready });
    expect(a.held(7)).toBe(0);
  });

  it('refuses at once when the queue is full, with Retry-After', async () => {
    const { a, registry } = activator(2);
    void a.hold(route(), never);
    void a.hold(route(), never);
    const full = await a.hold(route(), never);
    expect(full).toMatchObject({ ok: false, rejection: { status: 503, headers: { 'retry-after': '5' } } });
    expect((full as Extract<HoldOutcome, { ok: false }>).rejection?.message).toContain('activator queue is full (2 requests waiting)');
    expect(await registry.metrics()).toMatch(/infergate_activator_queue_depth\{deployment="zero"\} 2/);
    a.close();
  });

  it('times a held request out with 503 and Retry-After', async () => {
    const { a, registry } = activator(3, 50);
    const outcome = await a.hold(route(), never);
    expect(outcome).toMatchObject({ ok: false, rejection: { status: 503, headers: { 'retry-after': '5' } } });
    expect(a.held(7)).toBe(0);
    expect(await registry.metrics()).toMatch(/infergate_activator_wait_seconds_count\{deployment="zero",outcome="timeout"\} 1/);
  });

  it('drops a request whose client left, and ends held requests of a deleted or paused deployment', async () => {
    const { a } = activator();
    let leave = () => {};
    const gone = a.hold(route(), (cancel) => (leave = cancel));
    leave();
    expect(await gone).toEqual({ ok: false, rejection: null });
    expect(a.held(7)).toBe(0);

    const deleted = a.hold(route(), never);
    a.release(new Map());
    expect(await deleted).toMatchObject({ ok: false, rejection: { status: 404 } });

    const paused = a.hold(route(), never);
    a.release(new Map([[7, route({ paused: true })]]));
    expect(await paused).toMatchObject({ ok: false, rejection: { status: 503 } });
  });
});
