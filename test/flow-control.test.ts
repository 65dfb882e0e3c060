// Flow control and the latency model end to end: the in-process gateway on a real TLS port in
// front of real reference engines (in-process, each on its own port), clients over TLS with a
// bearer token or a client certificate.
//   - a sheddable flood is answered 429 with Retry-After while critical requests are served,
//     and a credential capped at sheddable that asks for critical is demoted, not refused;
//   - a waiting client that disconnects leaves the queue, and its request never reaches a replica;
//   - a replica made slow (the engine's --ttft-ms) gets fewer new requests from prefix_aware
//     before any queue shows (its engine never queues: a large --max-running).

import { pino } from 'pino';
import { fetch as undiciFetch, type Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEngineOptions } from '../src/engine/options.js';
import { createEngine, type Engine } from '../src/engine/server.js';
import { hostOf, startGatewayEnv, tokenFor, type GatewayEnv } from './helpers/gateway-env.js';
import { downloadPem, gatewayAgent } from './helpers/tls-clients.js';

const silent = pino({ level: 'silent' });
let env: GatewayEnv;
const engines: Engine[] = [];
const agents: Agent[] = [];

async function startEngine(replicaId: string, args: string[]): Promise<string> {
  const options = parseEngineOptions(
    ['--host', '127.0.0.1', '--port', '0', '--startup-ms', '0', '--shutdown-grace-ms', '0', '--replica-id', replicaId, ...args],
    {},
  );
  const engine = createEngine({ options, log: silent, env: {}, release: '0.0.0-test' });
  engines.push(engine);
  const { port } = await engine.start();
  await engine.loaded;
  return `127.0.0.1:${port}`;
}

interface Answer {
  status: number;
  retryAfter: string | null;
  fingerprint: string;
}

/** One streamed chat completion through the gateway, read to its end. */
async function chat(
  name: string,
  opts: { priority?: string; pem?: string; content?: string; maxTokens?: number; signal?: AbortSignal } = {},
): Promise<Answer> {
  const agent = gatewayAgent({ ca: env.ca.certPem, pem: opts.pem });
  agents.push(agent);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.pem === undefined) headers.authorization = `Bearer ${tokenFor(name)}`;
  if (opts.priority !== undefined) headers['x-priority'] = opts.priority;
  const res = await undiciFetch(`https://${hostOf(name)}:${env.port}/v1/chat/completions`, {
    method: 'POST',
    headers,
    dispatcher: agent,
    signal: opts.signal,
    body: JSON.stringify({
      model: 'sim/model',
      messages: [{ role: 'user', content: opts.content ?? 'hello there' }],
      max_tokens: opts.maxTokens ?? 4,
      stream: true,
    }),
  });
  const text = await res.text();
  const fingerprint = /"system_fingerprint":"([^"]+)"/.exec(text)?.[1] ?? '';
  return { status: res.status, retryAfter: res.headers.get('retry-after'), fingerprint };
}

/** The sum of a gateway metric's samples whose labels include all of `labels`. */
async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = await env.registry.metrics();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.includes(w)))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

async function deployOn(name: string, addresses: string[], overrides: Record<string, unknown> = {}): Promise<number> {
  const id = await env.deploy(name, overrides);
  for (const a of addresses) await env.addReplica(id, a);
  await env.waitForReplicas(name, addresses.length);
  return id;
}

beforeAll(async () => {
  env = await startGatewayEnv();
});

afterAll(async () => {
  await env?.close();
  for (const a of agents) await a.close().catch(() => undefined);
  for (const e of engines) await e.shutdown('test');
});

describe('flow control', () => {
  it('answers a sheddable flood 429 with Retry-After while critical requests are served; a capped credential asking for critical is demoted', async () => {
    // One sequence at a time, about 0.4 s each: a handful of clients saturate it.
    const engine = await startEngine('busy-1', ['--max-running', '1', '--ttft-ms', '5', '--itl-ms', '20']);
    const id = await deployOn('fc-flood', [engine], {
      private_endpoint: true,
      flow_control: { max_queue: 100, max_wait_seconds: { critical: 60, standard: 30, sheddable: 1 } },
    });
    const cert = await env.api.call('POST', '/certificates', { name: 'fc-flood-capped', deployment_id: id, max_priority: 'sheddable' });
    expect(cert.status).toBe(201);
    expect(cert.body.max_priority).toBe('sheddable');
    const pem = await downloadPem(env.api, cert.body.id as number);

    let stop = false;
    const flood: { bearer: Answer[]; capped: Answer[] } = { bearer: [], capped: [] };
    const loop = async (into: Answer[], opts: Parameters<typeof chat>[1]) => {
      while (!stop) into.push(await chat('fc-flood', { ...opts, maxTokens: 20 }));
    };
    // Twelve clients on one slot of about 0.4 s: a turn comes every ~5 s, far past the 1 s a
    // sheddable request may wait, however fast or slow the machine.
    const loops = [
      ...Array.from({ length: 6 }, () => loop(flood.bearer, { priority: 'sheddable' })),
      // Asks for critical; its certificate caps it at sheddable.
      ...Array.from({ length: 6 }, () => loop(flood.capped, { priority: 'critical', pem })),
    ];
    try {
      await expect.poll(() => flood.bearer.filter((a) => a.status === 429).length, { timeout: 20_000, interval: 50 }).toBeGreaterThan(0);
      await expect.poll(() => flood.capped.filter((a) => a.status === 429).length, { timeout: 20_000, interval: 50 }).toBeGreaterThan(0);
      const critical: Answer[] = [];
      for (let i = 0; i < 5; i++) critical.push(await chat('fc-flood', { priority: 'critical', maxTokens: 10 }));
      expect(critical.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    for (const a of [...flood.bearer, ...flood.capped]) {
      expect([200, 429]).toContain(a.status);
      if (a.status === 429) expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    expect(await metric('infergate_flow_shed_total', { deployment: 'fc-flood', priority: 'sheddable', reason: 'wait_timeout' })).toBeGreaterThan(0);
    expect(await metric('infergate_flow_shed_total', { deployment: 'fc-flood', priority: 'critical' })).toBe(0);
    expect(await metric('infergate_replica_concurrency_limit', { deployment: 'fc-flood' })).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('refuses an X-Priority that names no class with 400', async () => {
    const engine = await startEngine('plain-1', ['--ttft-ms', '0', '--itl-ms', '1']);
    await deployOn('fc-plain', [engine]);
    expect((await chat('fc-plain', { priority: 'urgent' })).status).toBe(400);
    expect((await chat('fc-plain', { priority: ' Critical ' })).status).toBe(200);
  });

  it('takes a waiting client that disconnects out of the queue; its request never reaches a replica', async () => {
    const engine = await startEngine('busy-2', ['--max-running', '1', '--ttft-ms', '5', '--itl-ms', '100']);
    await deployOn('fc-leave', [engine]);
    // Saturate it until the gateway knows its limit (the engine's queue, scraped).
    const long = Array.from({ length: 3 }, () => chat('fc-leave', { maxTokens: 30 }));
    await expect.poll(() => metric('infergate_replica_concurrency_limit', { deployment: 'fc-leave' }), { timeout: 10_000, interval: 50 }).toBe(1);
    const replicaId = env.gateway.table.lookup(hostOf('fc-leave'))!.replicas[0]!.id;
    expect(env.gateway.inflight.inflight(replicaId)).toBeGreaterThanOrEqual(1);

    const leaving = new AbortController();
    const waiting = chat('fc-leave', { signal: leaving.signal, content: 'I will not wait' }).catch((err: Error) => err);
    await expect.poll(() => metric('infergate_flow_queue_length', { deployment: 'fc-leave', priority: 'standard' }), { timeout: 5_000, interval: 20 }).toBe(1);
    const gone = await metric('infergate_requests_total', { deployment: 'fc-leave', status: '499' });
    leaving.abort();
    expect(await waiting).toBeInstanceOf(Error);
    await expect.poll(() => metric('infergate_flow_queue_length', { deployment: 'fc-leave', priority: 'standard' }), { timeout: 5_000, interval: 20 }).toBe(0);
    await expect.poll(() => metric('infergate_requests_total', { deployment: 'fc-leave', status: '499' }), { timeout: 5_000, interval: 20 }).toBe(gone + 1);
    expect((await Promise.all(long)).map((a) => a.status)).toEqual([200, 200, 200]);
    // The engine served the three long requests and nothing else.
    const served = await (await fetch(`http://${engine}/metrics`)).text();
    expect(Number(/^vllm:request_success_total\{[^}]*\} (\S+)/m.exec(served)?.[1])).toBe(3);
  }, 60_000);
});

describe('the latency model', () => {
  it('sends fewer new requests to a replica made slow, before any queue metric moves', async () => {
    // Same engine, one with a slow first token; both run 64 at once, so neither ever queues.
    const fast = await startEngine('fast', ['--max-running', '64', '--ttft-ms', '5', '--itl-ms', '1']);
    const slow = await startEngine('slow', ['--max-running', '64', '--ttft-ms', '150', '--itl-ms', '1']);
    await deployOn('fc-slow', [fast, slow], { routing_policy: 'prefix_aware' });
    const counts = { fast: 0, slow: 0 };
    // One at a time, each prompt new: the gateway's in-flight counts and the prefix cache say
    // nothing to tell the two apart; only the time each takes to its first token does.
    for (let i = 0; i < 40; i++) {
      const a = await chat('fc-slow', { content: `question number ${i} about topic ${i * 7919}` });
      expect(a.status).toBe(200);
      counts[a.fingerprint as 'fast' | 'slow']++;
    }
    expect(counts.fast + counts.slow).toBe(40);
    expect(counts.slow).toBeLessThanOrEqual(8);
    for (const address of [fast, slow]) {
      const text = await (await fetch(`http://${address}/metrics`)).text();
      expect(Number(/^vllm:num_requests_waiting\{[^}]*\} (\S+)/m.exec(text)?.[1])).toBe(0);
    }
  }, 60_000);
});
