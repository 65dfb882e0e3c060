import { describe, expect, it } from 'vitest';
import { appliedCount, checkTrafficRevisions, nameTakenByTag, parseTraffic, pinLatest, resolveTraffic, soleRevisionOf, splitOf, tagHost, type TrafficTarget } from './traffic.js';

const t = (o: Partial<TrafficTarget>): TrafficTarget => ({ revision: null, latest: false, percent: 0, tag: null, ...o });

describe('parseTraffic', () => {
  it('accepts a canary split with a tag and normalises the entries', () => {
    expect(parseTraffic([{ revision: 3, percent: 90 }, { latest: true, percent: 10, tag: 'canary' }])).toEqual({
      value: [t({ revision: 3, percent: 90 }), t({ latest: true, percent: 10, tag: 'canary' })],
      problems: [],
    });
  });

  it('null means everything to the newest revision', () => {
    expect(parseTraffic(null)).toEqual({ value: null, problems: [] });
  });

  it.each<[string, unknown, string, string]>([
    ['not a list', { revision: 1, percent: 100 }, 'traffic', 'must be a list'],
    ['empty', [], 'traffic', 'must be a list'],
    ['sum below 100', [{ revision: 1, percent: 90 }, { revision: 2, percent: 5 }], 'traffic', 'sum to 100, got 95'],
    ['sum above 100', [{ revision: 1, percent: 90 }, { revision: 2, percent: 20 }], 'traffic', 'got 110'],
    ['duplicate tag', [{ revision: 1, percent: 50, tag: 'a' }, { revision: 2, percent: 50, tag: 'a' }], 'traffic', 'tag "a" is used twice'],
    ['revision named twice', [{ revision: 1, percent: 50 }, { revision: 1, percent: 50 }], 'traffic', 'revision 1 is named twice'],
    ['two latest', [{ latest: true, percent: 50 }, { latest: true, percent: 50 }], 'traffic', 'one "latest" entry'],
    ['both revision and latest', [{ revision: 1, latest: true, percent: 100 }], 'traffic[0]', 'exactly one of'],
    ['neither', [{ percent: 100 }], 'traffic[0]', 'exactly one of'],
    ['fractional percent', [{ revision: 1, percent: 99.5 }, { revision: 2, percent: 0.5 }], 'traffic[0].percent', 'whole number'],
    ['negative percent', [{ revision: 1, percent: 110 }, { revision: 2, percent: -10 }], 'traffic[0].percent', 'from 0 to 100'],
    ['revision 0', [{ revision: 0, percent: 100 }], 'traffic[0].revision', 'revision number'],
    ['bad tag', [{ revision: 1, percent: 100, tag: 'Canary!' }], 'traffic[0].tag', 'lowercase letters'],
    ['tag too long', [{ revision: 1, percent: 100, tag: 'a'.repeat(21) }], 'traffic[0].tag', '20 characters'],
    ['unknown key', [{ revision: 1, percent: 100, weight: 3 }], 'traffic[0].weight', 'unknown field "weight"'],
    ['latest not a boolean', [{ latest: 'yes', percent: 100 }], 'traffic[0].latest', 'must be true'],
  ])('refuses %s', (_what, raw, field, message) => {
    const { value, problems } = parseTraffic(raw);
    expect(value).toBeNull();
    expect(problems.find((p) => p.field === field)?.message ?? JSON.stringify(problems)).toContain(message);
  });
});

describe('resolveTraffic and splitOf', () => {
  it('without a list, everything goes to the newest revision and there is no split', () => {
    expect(resolveTraffic({ revision: 4 })).toEqual([{ revision: 4, percent: 100, tags: [] }]);
    expect(splitOf({ revision: 4 })).toBeNull();
    expect(soleRevisionOf({ revision: 4 })).toBe(4);
  });

  it('a canary on latest splits between two revisions', () => {
    const d = { revision: 4, traffic: [t({ revision: 3, percent: 90 }), t({ latest: true, percent: 10, tag: 'canary' })] };
    expect(splitOf(d)).toEqual([
      { revision: 3, percent: 90, tags: [] },
      { revision: 4, percent: 10, tags: ['canary'] },
    ]);
  });

  it('merges latest with the same revision named by number, and leaves untagged 0 % revisions out', () => {
    const d = { revision: 4, traffic: [t({ revision: 4, percent: 60 }), t({ latest: true, percent: 40 }), t({ revision: 2, percent: 0 })] };
    expect(resolveTraffic(d)).toEqual([{ revision: 4, percent: 100, tags: [] }]);
    expect(splitOf(d)).toBeNull();
  });

  it('a tagged revision at 0 % runs beside the one taking everything', () => {
    const d = { revision: 5, traffic: [t({ revision: 4, percent: 100 }), t({ revision: 5, percent: 0, tag: 'next' })] };
    expect(splitOf(d)).toEqual([
      { revision: 4, percent: 100, tags: [] },
      { revision: 5, percent: 0, tags: ['next'] },
    ]);
  });

  it('an older revision pinned at 100 % is the sole revision (a rollback by traffic)', () => {
    expect(soleRevisionOf({ revision: 5, traffic: [t({ revision: 3, percent: 100 })] })).toBe(3);
  });
});

describe('checkTrafficRevisions', () => {
  const d = {
    name: 'chat',
    revision: 3,
    revisions: [
      { revision: 1, status: 'retired' as const },
      { revision: 2, status: 'failed' as const, failure_reason: 'never ready' },
      { revision: 3, status: 'ready' as const },
    ],
  };

  it('accepts existing revisions, retired ones included', () => {
    expect(checkTrafficRevisions([t({ revision: 1, percent: 50 }), t({ latest: true, percent: 50 })], d, new Set())).toEqual([]);
  });

  it('refuses an unknown revision, a failed one, and a tag host taken by another deployment', () => {
    const problems = checkTrafficRevisions([t({ revision: 9, percent: 50 }), t({ revision: 2, percent: 50, tag: 'canary' })], d, new Set(['canary-chat']));
    expect(problems).toEqual([
      { field: 'traffic[0].revision', message: 'chat has no revision 9; its revisions are 1 to 3' },
      { field: 'traffic[1].revision', message: 'revision 2 of chat failed (never ready); it cannot take traffic' },
      { field: 'traffic[1].tag', message: expect.stringContaining('host of the deployment named "canary-chat"') },
    ]);
  });
});

describe('pinLatest', () => {
  it('pins the latest entry to the previous revision, so the new one starts at 0 %', () => {
    expect(pinLatest([t({ revision: 1, percent: 90 }), t({ latest: true, percent: 10, tag: 'canary' })], 2)).toEqual([
      t({ revision: 1, percent: 90 }),
      t({ revision: 2, percent: 10, tag: 'canary' }),
    ]);
  });

  it('joins the pinned share to an entry already naming that revision', () => {
    expect(pinLatest([t({ revision: 2, percent: 90 }), t({ latest: true, percent: 10 })], 2)).toEqual([t({ revision: 2, percent: 100 })]);
  });
});

describe('tag hosts', () => {
  it('is <tag>-<name>.<domain>', () => {
    expect(tagHost('canary', 'chat', 'endpoints.example.com')).toBe('canary-chat.endpoints.example.com');
  });

  it('a new deployment may not take the label of another deployment\'s tag', () => {
    const others = [{ name: 'chat', traffic: [t({ revision: 1, percent: 100, tag: 'canary' })] }, { name: 'plain' }];
    expect(nameTakenByTag('canary-chat', others)).toBe('chat');
    expect(nameTakenByTag('canary-plain', others)).toBeNull();
  });
});

describe('appliedCount', () => {
  it('is desired_replicas without a split', () => {
    expect(appliedCount({ revision: 2, desired_replicas: { Replica: 3 } }, 'Replica')).toBe(3);
  });

  it("just after a split ended, is the staying revision's own count, not the split's sum", () => {
    const promoted = { revision: 2, traffic: [t({ latest: true, percent: 100 })], desired_replicas: { Replica: 3 }, revision_desired: { '1': { Replica: 2 }, '2': { Replica: 1 } } };
    expect(appliedCount(promoted, 'Replica')).toBe(1);
    const rolledBack = { ...promoted, traffic: [t({ revision: 1, percent: 100 })] };
    expect(appliedCount(rolledBack, 'Replica')).toBe(2);
  });
});
