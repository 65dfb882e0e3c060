// Table tests of a request's single end: whatever way it ended, finish counts it once —
// in-flight of the deployment and of each replica back to zero, one requests sample, usage
// only for the owner's requests (under the serving replica's revision), tokens spent against the rate limit, a refused body counted,
// a gRPC request under its own protocol, and the access log line without the query string.

import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import type { DownstreamRequest, DownstreamResponse } from './downstream.js';
import { InflightTracker } from './inflight.js';
import { GatewayMetrics } from './metrics.js';
import { RateLimiter } from './rate-limiter.js';
import { ReplicaHealth } from './replica-health.js';
import { RequestContext, type Outcome } from './request-context.js';
import type { Route, RoutingTable } from './routing-table.js';
import type { UsageLedger } from '../store/usage-ledger.js';
import { PrefixAwareSelector } from '../balancer/prefix-aware.js';
import { requestBlocks } from '../balancer/prompt-blocks.js';

const route = {
  name: 'chat',
  host: 'chat.example.test',
  deploymentId: 7,
  rateLimit: { requests_per_second: null, tokens_per_minute: 5 },
  replicas: [],
} as unknown as Route;

const replicaA = { id: 1, address: '127.0.0.1:1' };
const replicaB = { id: 2, address: '127.0.0.1:2' };

function setup(accessLog = false) {
  const clock = new ManualClock(1_700_000_000_000);
  const inflight = new InflightTracker(clock);
  const registry = new Registry();
  const table = { routes: () => new Map() } as unknown as RoutingTable;
  const metrics = new GatewayMetrics(registry, inflight, table);
  const usageRows: unknown[] = [];
  const usage = { add: (_id: number, _at: number, delta: unknown) => usageRows.push(delta) } as unknown as UsageLedger;
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), cb()) });
  const log = pino({ level: 'warn' }, sink);
  const limiter = new RateLimiter(clock);
  const health = new ReplicaHealth({ threshold: 2, baseMs: 1000, maxMs: 1000 }, clock);
  const books = { inflight, health, metrics, limiter, usage, clock, log, accessLog: accessLog ? log.child({}, { level: 'info' }) : null };
  const request = (grpc = false) =>
    new RequestContext(
      {
        httpVersionMajor: grpc ? 2 : 1,
        headers: grpc ? { 'content-type': 'application/grpc+proto' } : {},
        url: '/v1/chat/completions?api_key=secret',
        method: 'POST',
        socket: { remoteAddress: '10.0.0.9' },
      } as unknown as DownstreamRequest,
      new EventEmitter() as unknown as DownstreamResponse,
      books,
    );
  const count = async (name: string, labels: string) => Number(new RegExp(`${name}\\{${labels}\\} (\\d+)`).exec(await registry.metrics())?.[1] ?? 0);
  return { inflight, usageRows, lines, limiter, health, request, count, books };
}

describe('RequestContext.finish', () => {
  it('counts a request once, and leaves no in-flight count behind however often it is ended', async () => {
    const t = setup();
    const ctx = t.request();
    ctx.routed(route);
    ctx.who = { method: 'bearer', credential: 'token:abc', maxPriority: null };
    ctx.countAsLoad(route);
    ctx.attempt(replicaA);
    ctx.attempt(replicaB); // a retry: A's attempt is over
    expect([t.inflight.deploymentInflight(7), t.inflight.inflight(1), t.inflight.inflight(2)]).toEqual([1, 0, 1]);
    ctx.finish({ status: 200, usage: { prompt: 3, completion: 4, cached: 0 } });
    ctx.finish({ status: 499 });
    expect([t.inflight.deploymentInflight(7), t.inflight.inflight(2)]).toEqual([0, 0]);
    expect(await t.count('infergate_requests_total', 'deployment="chat",status="200",protocol="http"')).toBe(1);
    expect(await t.count('infergate_requests_total', 'deployment="chat",status="499",protocol="http"')).toBe(0);
    expect(await t.count('infergate_tokens_total', 'deployment="chat",kind="completion"')).toBe(4);
    expect(t.usageRows).toEqual([{ requests: 1, errors: 0, prompt_tokens: 3, completion_tokens: 4, rate_limited: 0 }]);
    // The 7 tokens were spent against the credential's 5 a minute: its next request waits.
    expect(t.limiter.admit(7, route.rateLimit, 'token:abc')).toMatchObject({ ok: false, limit: 'tokens' });
  });

  const endings: { name: string; authenticated: boolean; outcome: Outcome; usage: unknown[]; refusals: number }[] = [
    { name: 'refused before authentication (401)', authenticated: false, outcome: { status: 401 }, usage: [], refusals: 0 },
    { name: 'rate limited (429)', authenticated: true, outcome: { status: 429, rateLimited: true }, usage: [{ requests: 1, errors: 0, prompt_tokens: 0, completion_tokens: 0, rate_limited: 1 }], refusals: 0 },
    { name: 'body too large (413)', authenticated: true, outcome: { status: 413, bodyRefused: 'too_large' }, usage: [{ requests: 1, errors: 0, prompt_tokens: 0, completion_tokens: 0, rate_limited: 0 }], refusals: 1 },
    { name: 'no replica ready (503)', authenticated: true, outcome: { status: 503 }, usage: [{ requests: 1, errors: 1, prompt_tokens: 0, completion_tokens: 0, rate_limited: 0 }], refusals: 0 },
  ];
  for (const e of endings) {
    it(`ends a request ${e.name} with one sample and the owner's usage only`, async () => {
      const t = setup();
      const ctx = t.request();
      ctx.routed(route);
      if (e.authenticated) ctx.who = { method: 'bearer', credential: 'token:abc', maxPriority: null };
      ctx.finish(e.outcome);
      expect(await t.count('infergate_requests_total', `deployment="chat",status="${e.outcome.status}",protocol="http"`)).toBe(1);
      expect(t.usageRows).toEqual(e.usage);
      expect(await t.count('infergate_request_body_refusals_total', 'deployment="chat",reason="too_large"')).toBe(e.refusals);
      // Not forwarded: no duration sample.
      expect(await t.count('infergate_request_duration_seconds_count', 'deployment="chat",protocol="http"')).toBe(0);
    });
  }

  it('counts a gRPC call under its protocol, and a connection failure toward ejection', async () => {
    const t = setup();
    const ctx = t.request(true);
    expect(ctx.protocol).toBe('grpc');
    ctx.routed(route);
    ctx.attempt(replicaA);
    ctx.connectionFailed(replicaA);
    ctx.connectionFailed(replicaA);
    expect(t.health.isEjected(1)).toBe(true);
    expect(await t.count('infergate_replica_ejections_total', 'deployment="chat"')).toBe(1);
    ctx.retrying();
    ctx.attempt(replicaB);
    ctx.responded(replicaB);
    ctx.finish({ status: 200 });
    expect(await t.count('infergate_upstream_retries_total', 'deployment="chat"')).toBe(1);
    expect(await t.count('infergate_time_to_first_byte_seconds_count', 'deployment="chat",protocol="grpc"')).toBe(1);
    expect(await t.count('infergate_request_duration_seconds_count', 'deployment="chat",protocol="grpc"')).toBe(1);
  });

  it("counts the owner's usage under the revision of the replica it was last forwarded to; one that reached none under no revision", () => {
    const t = setup();
    const owner = { method: 'bearer' as const, credential: 'token:abc', maxPriority: null };
    const served = t.request();
    served.routed(route);
    served.who = owner;
    served.attempt({ id: 3, address: '127.0.0.1:3', revision: 4 });
    served.attempt({ id: 4, address: '127.0.0.1:4', revision: 3 }); // a retry onto the other revision
    served.finish({ status: 200, usage: { prompt: 5, completion: 6, cached: 0 } });
    const failed = t.request();
    failed.routed(route);
    failed.who = owner;
    failed.attempt({ id: 3, address: '127.0.0.1:3', revision: 4 });
    failed.finish({ status: 502 });
    const refused = t.request();
    refused.routed(route);
    refused.who = owner;
    refused.finish({ status: 429, rateLimited: true });
    expect(t.usageRows).toEqual([
      { requests: 1, errors: 0, prompt_tokens: 5, completion_tokens: 6, rate_limited: 0, revision: 3 },
      { requests: 1, errors: 1, prompt_tokens: 0, completion_tokens: 0, rate_limited: 0, revision: 4 },
      { requests: 1, errors: 0, prompt_tokens: 0, completion_tokens: 0, rate_limited: 1 },
    ]);
  });

  it('writes one access log line when asked, without the query string', () => {
    const t = setup(true);
    const ctx = t.request();
    ctx.routed(route);
    ctx.who = { method: 'certificate', credential: 'cert:ff', maxPriority: null };
    ctx.attempt(replicaA);
    ctx.finish({ status: 200 });
    ctx.finish({ status: 200 });
    const requests = t.lines.filter((l) => l.msg === 'request');
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ deployment: 'chat', protocol: 'http', method: 'POST', path: '/v1/chat/completions', status: 200, auth: 'certificate', replica: 1, attempts: 1, client: '10.0.0.9' });
    expect(JSON.stringify(requests[0])).not.toContain('secret');
  });

  it('aborts once when the client goes away: each onAbort listener once, the AbortSignal too, and the request counted as 499', async () => {
    const t = setup();
    const res = new EventEmitter();
    const ctx = new RequestContext(
      { httpVersionMajor: 1, headers: {}, url: '/', method: 'POST', socket: { remoteAddress: '10.0.0.9' } } as unknown as DownstreamRequest,
      res as unknown as DownstreamResponse,
      { ...t.books },
    );
    ctx.routed(route);
    const calls: string[] = [];
    const forgotten = () => calls.push('forgotten');
    ctx.onAbort(() => calls.push('a'));
    ctx.onAbort(forgotten);
    ctx.onAbort(() => calls.push('b'));
    ctx.offAbort(forgotten);
    const signal = ctx.signal;
    expect([ctx.aborted, signal.aborted]).toEqual([false, false]);
    res.emit('close');
    res.emit('close');
    expect(calls).toEqual(['a', 'b']);
    expect(signal.aborted).toBe(true);
    expect(ctx.abortReason?.reason).toBe('client_gone');
    ctx.onAbort(() => calls.push('late')); // already aborted: called at once
    expect(calls).toEqual(['a', 'b', 'late']);
    ctx.endAborted();
    expect(await t.count('infergate_requests_total', 'deployment="chat",status="499",protocol="http"')).toBe(1);
  });

  it('writes no access log line by default', () => {
    const t = setup(false);
    const ctx = t.request();
    ctx.finish({ status: 404 });
    expect(t.lines.filter((l) => l.msg === 'request')).toHaveLength(0);
  });

  it("keeps a placement policy's books through its hooks: prefill owed until the first chunk, moved on a retry, cleared at the end", async () => {
    const t = setup();
    const policy = new PrefixAwareSelector();
    const prompt = (text: string) => Buffer.from(JSON.stringify({ messages: [{ role: 'user', content: text }] }));
    const body = prompt('a long shared system prompt, '.repeat(12));
    const blocks = requestBlocks(body)!;
    const n = blocks.length;
    expect(n).toBeGreaterThanOrEqual(4);
    const load = { inflight: () => 0 };
    const ctx = t.request();
    ctx.routed(route);
    ctx.placed(policy.place([replicaA, replicaB], load, { scope: 7, session: null, body }));
    ctx.attempt(replicaA);
    expect(policy.owed(1)).toBe(n);
    ctx.attempt(replicaB); // a retry: A owes nothing any more, B owes the prompt (A's copy is remembered)
    expect([policy.owed(1), policy.owed(2)]).toEqual([0, n]);
    ctx.firstChunk();
    ctx.firstChunk();
    expect(policy.owed(2)).toBe(0);
    expect(policy.index.match(2, blocks)).toBe(n);
    ctx.finish({ status: 200, usage: { prompt: 40, completion: 2, cached: 32 } });
    expect(await t.count('infergate_time_to_first_chunk_seconds_count', 'deployment="chat",protocol="http"')).toBe(1);
    expect(await t.count('infergate_tokens_total', 'deployment="chat",kind="cached"')).toBe(32);

    const cut = t.request(); // ended before any byte: its debt goes with it
    cut.routed(route);
    const other = prompt('another prompt entirely, nothing shared with the first one. '.repeat(3));
    cut.placed(policy.place([replicaA, replicaB], load, { scope: 7, session: null, body: other }));
    cut.attempt(replicaA);
    expect(policy.owed(1)).toBe(requestBlocks(other)!.length);
    cut.finish({ status: 499 });
    expect(policy.owed(1)).toBe(0);
  });
});
