// Table tests of the candidate loop both forwarders share: which failures retry, which eject,
// how many attempts at most, ejected replicas left out unless all are, and the answer when
// the loop gives up.

import { describe, expect, it } from 'vitest';
import type { ReplicaRef } from '../balancer/selector.js';
import { CandidateLoop, MAX_ATTEMPTS, type AttemptFailure } from './candidates.js';
import type { Rejection } from './phases.js';
import type { ForwardReport } from './request-context.js';

const replicas = (...ids: number[]): ReplicaRef[] => ids.map((id) => ({ id, address: `127.0.0.1:${id}` }));

function harness(candidates: ReplicaRef[], ejected: number[] = []) {
  const log = { attempts: [] as number[], connectionFailures: [] as number[], retries: 0, failed: null as Rejection | null };
  const ctx = {
    route: { name: 'chat' },
    ended: false,
    attempt: (r: ReplicaRef) => log.attempts.push(r.id),
    connectionFailed: (r: ReplicaRef) => log.connectionFailures.push(r.id),
    retrying: () => log.retries++,
    upstreamError: () => undefined,
    fail: (r: Rejection) => {
      log.failed = r;
      ctx.ended = true;
    },
  };
  let loop!: CandidateLoop;
  const sent: ReplicaRef[] = [];
  loop = new CandidateLoop(ctx as unknown as ForwardReport, candidates, (id) => ejected.includes(id), (r) => sent.push(r));
  return { loop, log, sent };
}

describe('CandidateLoop', () => {
  it('retries a connect failure on the next candidate while the body can be sent again, and holds each against its replica', () => {
    const { loop, log, sent } = harness(replicas(1, 2, 3));
    loop.start();
    loop.failed(sent.at(-1)!, { kind: 'connect', detail: 'ECONNREFUSED' }, true);
    loop.failed(sent.at(-1)!, { kind: 'connect', detail: 'ECONNREFUSED' }, true);
    expect(log.attempts).toEqual([1, 2, 3]);
    expect(log.connectionFailures).toEqual([1, 2]);
    expect(log.retries).toBe(2);
    expect(log.failed).toBeNull();
  });

  it.each<[string, AttemptFailure, boolean, number, string]>([
    ['a connect failure whose body was already streamed', { kind: 'connect', detail: 'ECONNRESET' }, false, 502, 'accepted the connection'],
    ['a replica that failed after it had the request', { kind: 'upstream', detail: 'socket hang up' }, true, 502, 'failed before answering'],
    ['a replica that sent no response in time', { kind: 'timeout', detail: 'upstream headers timer' }, true, 504, 'no response in time'],
    ['a request the transport refused itself', { kind: 'local', detail: 'invalid argument' }, true, 502, 'failed before answering'],
  ])('does not retry %s', (_what, failure, replayable, status, message) => {
    const { loop, log, sent } = harness(replicas(1, 2));
    loop.start();
    loop.failed(sent[0]!, failure, replayable);
    expect(log.attempts).toEqual([1]);
    expect(log.retries).toBe(0);
    expect(log.failed).toMatchObject({ status, message: expect.stringContaining(message) });
    // Only a failed connection says something about the replica's health.
    expect(log.connectionFailures).toEqual(failure.kind === 'connect' ? [1] : []);
  });

  it(`stops after ${MAX_ATTEMPTS} attempts, naming how many it tried`, () => {
    const { loop, log, sent } = harness(replicas(1, 2, 3, 4, 5, 6));
    loop.start();
    for (let i = 0; i < MAX_ATTEMPTS; i++) loop.failed(sent.at(-1)!, { kind: 'connect', detail: 'ECONNREFUSED' }, true);
    expect(log.attempts).toEqual([1, 2, 3, 4]);
    expect(log.failed).toMatchObject({ status: 502, message: expect.stringContaining(`tried ${MAX_ATTEMPTS}`) });
  });

  it('leaves ejected replicas out, unless every one is', () => {
    const some = harness(replicas(1, 2, 3), [1]);
    some.loop.start();
    expect(some.log.attempts).toEqual([2]);
    const all = harness(replicas(1, 2), [1, 2]);
    all.loop.start();
    expect(all.log.attempts).toEqual([1]);
  });

  it('answers 503 when there is no candidate at all, and ignores a failure after the request ended', () => {
    const none = harness([]);
    none.loop.start();
    expect(none.log.failed).toMatchObject({ status: 503 });
    const ended = harness(replicas(1, 2));
    ended.loop.start();
    (ended.loop as unknown as { ctx: { ended: boolean } }).ctx.ended = true;
    ended.loop.failed(ended.sent[0]!, { kind: 'connect', detail: 'ECONNREFUSED' }, true);
    expect(ended.log.attempts).toEqual([1]);
  });
});
