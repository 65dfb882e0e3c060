// The events of traffic between revisions: a split told once per change with every share,
// the revisions that left and the tags that reach one revision; nothing for a rolling update
// between single revisions; a drained revision.

import { describe, expect, it } from 'vitest';
import type { RevisionShare } from '../domain/traffic.js';
import { drainedEvent, trafficEvents } from './traffic-events.js';

const share = (revision: number, percent: number, tags: string[] = []): RevisionShare => ({ revision, percent, tags });
const messages = (before: RevisionShare[], after: RevisionShare[]) => trafficEvents(before, after).map((e) => `${e.type} ${e.reason}: ${e.message}`);

describe('trafficEvents', () => {
  it.each([
    ['a canary joins', [share(3, 100)], [share(3, 90), share(4, 10)], 'normal TrafficShifted: revision 4 now takes 10 % of requests (revision 3: 90 %)'],
    ['the canary grows', [share(3, 90), share(4, 10)], [share(3, 50), share(4, 50)], 'normal TrafficShifted: revision 4 now takes 50 % of requests (revision 3: 50 %)'],
    ['promoted: the old one drains', [share(3, 50), share(4, 50)], [share(4, 100)], 'normal TrafficShifted: revision 4 now takes 100 % of requests (revision 3: 0 %, its replicas drain)'],
    ['rolled back', [share(3, 90), share(4, 10)], [share(3, 100)], 'normal TrafficShifted: revision 3 now takes 100 % of requests (revision 4: 0 %, its replicas drain)'],
    [
      'a tag-only revision',
      [share(3, 100)],
      [share(3, 100), share(5, 0, ['canary'])],
      'normal TrafficShifted: revision 5 now takes 0 % of requests (revision 3: 100 %); tag canary reaches revision 5',
    ],
    ['a tag added alone', [share(3, 90), share(4, 10)], [share(3, 90), share(4, 10, ['beta'])], 'normal TrafficShifted: revision 4 now takes 10 % of requests (revision 3: 90 %); tag beta reaches revision 4'],
  ])('%s', (_name, before, after, message) => {
    expect(messages(before, after)).toEqual([message]);
  });

  it('tells nothing without a change, nor for a rolling update between single revisions', () => {
    expect(trafficEvents([share(3, 90), share(4, 10)], [share(3, 90), share(4, 10)])).toEqual([]);
    expect(trafficEvents([share(3, 100)], [share(4, 100)])).toEqual([]);
  });

  it('tells a drained revision', () => {
    expect(drainedEvent(3)).toEqual({ type: 'normal', reason: 'RevisionDrained', message: 'revision 3 takes no traffic and its last replica stopped' });
  });
});
