// Table tests of the traffic commands' pure parts: revision names (rev3, 3, latest), the split
// arguments and --tag/--untag into the API's list (existing tags kept on entries the split
// still names), the list promote sends, the words for what a change does to each revision,
// and describe's lines (traffic, rollout mode, autoscaling signal, last scaling decision).

import { describe, expect, it } from 'vitest';
import type { Deployment, TrafficEntryView } from './deployments.js';
import { UsageError } from './errors.js';
import { changeLines, parseRevisionKey, parseSplit, promoteList, splitHeader } from './traffic.js';
import { autoscalingLine, lastScaleLine, revisionShareText, rolloutLine, trafficLine } from './traffic-text.js';

const entry = (revision: number, percent: number, over: Partial<TrafficEntryView> = {}): TrafficEntryView => ({ revision, latest: false, percent, tag: null, url: null, ...over });

describe('parseRevisionKey', () => {
  it.each([
    ['rev3', 3],
    ['3', 3],
    ['r12', 12],
    ['latest', 'latest'],
    ['LATEST', 'latest'],
    ['rev0', null],
    ['revision3', null],
    ['', null],
    ['rev-1', null],
  ] as const)('%s → %s', (raw, key) => expect(parseRevisionKey(raw)).toBe(key));
});

describe('parseSplit', () => {
  it('turns REVISION=PERCENT arguments into the API list, in order', () => {
    expect(parseSplit(['rev3=90', 'latest=10'])).toEqual([{ revision: 3, percent: 90 }, { latest: true, percent: 10 }]);
    expect(parseSplit(['3=90', '4=10%', 'latest=0'])).toEqual([{ revision: 3, percent: 90 }, { revision: 4, percent: 10 }, { latest: true, percent: 0 }]);
  });

  it('keeps the tags the deployment has on entries the split still names; --tag sets or moves one, --untag removes one', () => {
    const current = [entry(3, 90), entry(4, 10, { latest: true, tag: 'canary' })];
    expect(parseSplit(['rev3=50', 'latest=50'], { current })).toEqual([{ revision: 3, percent: 50 }, { latest: true, percent: 50, tag: 'canary' }]);
    // rev4 by number is not the latest entry: its tag is not carried over.
    expect(parseSplit(['rev3=50', 'rev4=50'], { current })).toEqual([{ revision: 3, percent: 50 }, { revision: 4, percent: 50 }]);
    expect(parseSplit(['rev3=50', 'latest=50'], { current, untag: ['canary'] })).toEqual([{ revision: 3, percent: 50 }, { latest: true, percent: 50 }]);
    expect(parseSplit(['rev3=50', 'latest=50'], { current, tags: ['rev3=canary', 'latest=next'] })).toEqual([
      { revision: 3, percent: 50, tag: 'canary' },
      { latest: true, percent: 50, tag: 'next' },
    ]);
  });

  it.each([
    [['rev3'], /"rev3" is not REVISION=PERCENT: write rev3=90/],
    [['three=90'], /"three=90" is not REVISION=PERCENT/],
    [['rev3=abc'], /rev3=abc: the percent must be a whole number from 0 to 100/],
    [['rev3=101'], /whole number from 0 to 100/],
    [['rev3=9.5'], /whole number from 0 to 100/],
    [['rev3=50', '3=50'], /rev3 is given twice/],
    [[], /give the split as REVISION=PERCENT arguments/],
  ])('refuses %j as a usage error', (args, message) => {
    expect(() => parseSplit(args)).toThrow(UsageError);
    expect(() => parseSplit(args)).toThrow(message);
  });

  it('refuses a --tag that is malformed or names a revision outside the split, saying how to add it', () => {
    expect(() => parseSplit(['rev3=100'], { tags: ['canary'] })).toThrow(/--tag must be REVISION=TAG, e.g. --tag rev4=canary/);
    expect(() => parseSplit(['rev3=100'], { tags: ['rev5=preview'] })).toThrow(/names rev5, which the split does not: add rev5=0/);
  });
});

describe('promoteList', () => {
  it('sends 100 % to the revision, keeping its own tag and no other', () => {
    const current = [entry(3, 90, { tag: 'stable' }), entry(4, 10, { latest: true, tag: 'canary' })];
    expect(promoteList('latest', current)).toEqual([{ latest: true, percent: 100, tag: 'canary' }]);
    expect(promoteList(3, current)).toEqual([{ revision: 3, percent: 100, tag: 'stable' }]);
    expect(promoteList(2, current)).toEqual([{ revision: 2, percent: 100 }]);
  });
});

describe('changeLines', () => {
  const d = (traffic: TrafficEntryView[]): Pick<Deployment, 'traffic' | 'revision_replicas' | 'name'> => ({ name: 'chat', traffic });
  it('says which revisions drain, which shares move, which start, and which tag hosts go', () => {
    const before = d([entry(3, 90), entry(4, 10, { latest: true, tag: 'canary', url: 'https://canary-chat.endpoints.localhost' })]);
    expect(changeLines(before, d([entry(3, 50), entry(4, 50, { latest: true, tag: 'canary' })]))).toEqual(['revision 3: 90 % → 50 %', 'revision 4: 10 % → 50 %']);
    expect(changeLines(before, d([entry(4, 100, { latest: true })]))).toEqual([
      'revision 3 (was 90 %) now gets no requests: its replicas drain and stop within a minute',
      'revision 4: 10 % → 100 %',
      'tag canary removed: https://canary-chat.endpoints.localhost no longer answers',
    ]);
    expect(changeLines(d([entry(4, 100, { latest: true })]), d([entry(4, 90, { latest: true }), entry(5, 0, { tag: 'preview' })]))).toEqual([
      'revision 4: 100 % → 90 %',
      'revision 5: 0 % (reached by its tag only); it starts its own replicas',
    ]);
  });
});

describe("describe's lines", () => {
  const base = { id: 1, family: 'general', name: 'chat', status: 'ready', status_reason: null, paused: false, endpoint_url: 'chat.x', revision: 4, serving_revision: 4, rollout: null, components: {}, revisions: [] } as Deployment;

  it('says the split, or that everything goes to the newest revision; nothing from a server without traffic', () => {
    expect(trafficLine({ ...base, traffic: [entry(4, 100, { latest: true })], traffic_is_default: true })).toBe('every request to the newest revision (4); no split');
    expect(trafficLine({ ...base, traffic: [entry(3, 90), entry(4, 10, { latest: true, tag: 'canary', url: 'https://canary-chat.x' })], traffic_is_default: false })).toBe(
      'revision 3 90 %, revision 4 (latest) 10 % tag canary at https://canary-chat.x',
    );
    expect(trafficLine(base)).toBeNull();
    expect(rolloutLine({ rollout_mode: 'manual' })).toMatch(/^manual: a spec change \(or a rollback\) makes a revision at 0 %/);
    expect(rolloutLine({})).toBeNull();
  });

  it('says the autoscaling signal with its target and bounds', () => {
    expect(autoscalingLine({ ...base, autoscaling_metric: 'queue_depth', autoscaling_target: 5, min_replicas: 1, max_replicas: 4 })).toBe('queue_depth 5 waiting requests per replica, 1 to 4 replicas');
    expect(autoscalingLine({ ...base, autoscaling_metric: 'concurrency', autoscaling_target: null, max_concurrency: 8, min_replicas: 0, max_replicas: 2 })).toBe('concurrency 8 in-flight requests per replica, 0 to 2 replicas');
    expect(autoscalingLine({ ...base, family: 'orchestrated', autoscaling_metric: 'concurrency', concurrency: null, min_replicas: 2, max_replicas: 2 })).toBe('concurrency: no target (fixed size), fixed at 2 replicas');
    expect(autoscalingLine({ ...base, autoscaling_metric: 'concurrency', worker_pools: { prefill: { hardware_instance_id: 1, replicas: 1 }, decode: { hardware_instance_id: 1, replicas: 1 } } })).toBe('none: the pools have fixed sizes');
    expect(autoscalingLine(base)).toBeNull();
  });

  it('finds the last scaling decision among the events', () => {
    const now = Date.parse('2026-01-01T00:10:00Z');
    const ev = (reason: string, time: string, message: string) => ({ time, first_time: time, type: 'normal' as const, reason, message, count: 1 });
    const events = [ev('ScaledUp', '2026-01-01T00:01:00Z', 'desired replicas 1 → 3: queue_depth 7.5 waiting per replica over the 60 s stable window, target 5'), ev('ScaledDown', '2026-01-01T00:08:00Z', 'desired replicas 3 → 2: ttft p90 90 ms'), ev('ReplicaReady', '2026-01-01T00:09:00Z', 'ready')];
    expect(lastScaleLine(events, now)).toBe('ScaledDown 2m ago: desired replicas 3 → 2: ttft p90 90 ms');
    expect(lastScaleLine([], now)).toBeNull();
    expect(lastScaleLine(null, now)).toBeNull();
  });

  it('shows a revision share in the Revisions list only when it has one or a tag', () => {
    expect(revisionShareText({ percent: 10, tags: ['canary'] })).toBe('  10 % (tag canary)');
    expect(revisionShareText({ percent: 0, tags: ['preview'] })).toBe('  0 % (tag preview)');
    expect(revisionShareText({ percent: 0, tags: [] })).toBe('');
    expect(revisionShareText({})).toBe('');
  });
});

describe('splitHeader', () => {
  const base = { name: 'chat', rollout_mode: 'manual' } as unknown as Deployment;
  it('says whether everything goes to one revision or a split, and the rollout mode', () => {
    expect(splitHeader({ ...base, traffic_is_default: true })).toBe('chat: no split of its own: every request goes to the newest revision; rollout manual (a spec change starts its revision at 0 %)\n');
    const one = [{ revision: 1, percent: 100, tags: [], ready: 1, desired: 1 }];
    expect(splitHeader({ ...base, traffic_is_default: false, revision_replicas: one })).toContain('chat: every request goes to revision 1;');
    const two = [...one, { revision: 2, percent: 0, tags: ['next'], ready: 1, desired: 1 }];
    expect(splitHeader({ ...base, traffic_is_default: false, revision_replicas: two })).toContain('chat: traffic split between revisions 1, 2;');
  });
});
