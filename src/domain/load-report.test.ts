// The load reports gateways publish: checked decoding (the per-revision, queue and engine
// fields included, and reports of older gateways without them), and sums over publishers that
// never read a second not every publisher has closed as a drop; steps summed by start, the
// freshest engine figures kept.
import { describe, expect, it } from 'vitest';
import { mergeLoad, parseLoadReport, sumSeries, sumSteps, type EngineReport, type LoadReport } from './load-report.js';
import { emptyStats, type RevisionStep } from './revision-stats.js';

const step = (start: number, requests: number, errors = 0, bucket = -1): RevisionStep => {
  const stats = emptyStats();
  if (bucket >= 0) stats.ttft[bucket] = requests;
  return { start, ...stats, requests, errors, completion_tokens: requests * 10 };
};

const s = (second: number, average: number) => ({ second: second * 1000, average });

describe('parseLoadReport', () => {
  it('reads a report and refuses what is not one', () => {
    const report: LoadReport = { at: 5, deployments: { 7: { samples: [s(1, 2)], held: 1, inflight: 3 } }, replicas: { 9: 3 } };
    expect(parseLoadReport(JSON.stringify(report))).toEqual(report);
    expect(parseLoadReport('not json')).toBeNull();
    expect(parseLoadReport('{"at": 1, "deployments": {"7": {"samples": [{"second": -1, "average": 1}], "held": 0, "inflight": 0}}, "replicas": {}}')).toBeNull();
    expect(parseLoadReport('{"at": 1, "deployments": {}, "replicas": {"3": "x"}}')).toBeNull();
  });

  it('round-trips the queue, the revisions and the engines, and refuses them malformed', () => {
    const report: LoadReport = {
      at: 5,
      deployments: { 7: { samples: [s(1, 2)], held: 0, inflight: 3, queued: 4, revisions: { 2: { samples: [s(1, 1.5)], steps: [step(5000, 3, 1, 2)] }, 3: { samples: [], steps: [] } } } },
      replicas: {},
      engines: { 9: { waiting: 2, kvCachePercent: null, at: 4 } },
    };
    expect(parseLoadReport(JSON.stringify(report))).toEqual(report);
    const with_ = (patch: (r: LoadReport) => void): string => {
      const r = structuredClone(report);
      patch(r);
      return JSON.stringify(r);
    };
    const seven = (r: LoadReport) => r.deployments['7']!;
    expect(parseLoadReport(with_((r) => (seven(r).queued = -1)))).toBeNull();
    expect(parseLoadReport(with_((r) => ((seven(r) as unknown as { revisions: unknown }).revisions = [])))).toBeNull();
    expect(parseLoadReport(with_((r) => (seven(r).revisions!.latest = { samples: [], steps: [] })))).toBeNull();
    expect(parseLoadReport(with_((r) => (seven(r).revisions!['2']!.steps[0]!.ttft = [1, 2])))).toBeNull();
    expect(parseLoadReport(with_((r) => delete (seven(r).revisions!['2']!.steps[0] as Partial<RevisionStep>).errors))).toBeNull();
    expect(parseLoadReport(with_((r) => ((r.engines!['9'] as unknown as { waiting: unknown }).waiting = 'many')))).toBeNull();
    expect(parseLoadReport(with_((r) => delete (r.engines!['9'] as Partial<EngineReport>).at))).toBeNull();
  });

  it('reads a report of an older gateway, without them, as having none', () => {
    const older = '{"at": 1, "deployments": {"7": {"samples": [], "held": 1, "inflight": 0}}, "replicas": {"3": 1}}';
    const parsed = parseLoadReport(older);
    expect(parsed).toEqual({ at: 1, deployments: { 7: { samples: [], held: 1, inflight: 0 } }, replicas: { 3: 1 } });
    const m = mergeLoad([parsed!]);
    expect(m.queued.get(7)).toBe(0);
    expect(m.revisionSamples.size).toBe(0);
    expect(m.engines.size).toBe(0);
  });
});

describe('sumSeries and mergeLoad', () => {
  it('adds the publishers second by second, up to the last second all of them closed', () => {
    expect(sumSeries([[s(1, 1), s(2, 1), s(3, 1)], [s(2, 2)]])).toEqual([s(1, 1), s(2, 3)]);
    expect(sumSeries([[], [s(4, 2)]])).toEqual([s(4, 2)]);
    expect(sumSeries([])).toEqual([]);
  });

  it('sums held, in-flight and replica counts over gateways', () => {
    const a: LoadReport = { at: 1, deployments: { 7: { samples: [s(1, 1), s(2, 2)], held: 1, inflight: 2 } }, replicas: { 9: 2 } };
    const b: LoadReport = { at: 1, deployments: { 7: { samples: [s(1, 3), s(2, 3)], held: 0, inflight: 3 }, 8: { samples: [], held: 2, inflight: 0 } }, replicas: { 9: 1, 10: 2 } };
    const m = mergeLoad([a, b]);
    expect(m.samples.get(7)).toEqual([s(1, 4), s(2, 5)]);
    expect(m.samples.get(8)).toEqual([]);
    expect(Object.fromEntries(m.held)).toEqual({ 7: 1, 8: 2 });
    expect(Object.fromEntries(m.inflight)).toEqual({ 7: 5, 8: 0 });
    expect(Object.fromEntries(m.replicas)).toEqual({ 9: 3, 10: 2 });
  });

  it('sums revisions (concurrency and steps) and queues, and keeps the freshest engine figures', () => {
    const a: LoadReport = {
      at: 1,
      deployments: { 7: { samples: [], held: 0, inflight: 0, queued: 2, revisions: { 2: { samples: [s(1, 1), s(2, 1)], steps: [step(0, 1), step(5000, 2, 1, 3)] } } } },
      replicas: {},
      engines: { 9: { waiting: 1, kvCachePercent: 20, at: 100 }, 10: { waiting: 5, kvCachePercent: 90, at: 300 } },
    };
    const b: LoadReport = {
      at: 1,
      deployments: { 7: { samples: [], held: 0, inflight: 0, queued: 1, revisions: { 2: { samples: [s(1, 2)], steps: [step(5000, 1, 0, 3)] }, 3: { samples: [s(1, 4)], steps: [] } } } },
      replicas: {},
      engines: { 9: { waiting: 3, kvCachePercent: 30, at: 200 }, 10: { waiting: 0, kvCachePercent: 0, at: 250 } },
    };
    const m = mergeLoad([a, b]);
    expect(m.queued.get(7)).toBe(3);
    expect(m.revisionSamples.get(7)?.get(2)).toEqual([s(1, 3)]);
    expect(m.revisionSamples.get(7)?.get(3)).toEqual([s(1, 4)]);
    const steps = m.revisionSteps.get(7)?.get(2);
    expect(steps?.map((x) => [x.start, x.requests, x.errors, x.completion_tokens, x.ttft[3]])).toEqual([
      [0, 1, 0, 10, 0],
      [5000, 3, 1, 30, 3],
    ]);
    expect(m.engines.get(9)).toEqual({ waiting: 3, kvCachePercent: 30, at: 200 });
    expect(m.engines.get(10)).toEqual({ waiting: 5, kvCachePercent: 90, at: 300 });
  });

  it('sums steps by start without changing its inputs', () => {
    const first = [step(5000, 1), step(10_000, 2)];
    const second = [step(0, 4), step(10_000, 1)];
    const sum = sumSteps([first, second]);
    expect(sum.map((x) => [x.start, x.requests])).toEqual([
      [0, 4],
      [5000, 1],
      [10_000, 3],
    ]);
    expect(first[1]!.requests).toBe(2);
    expect(sumSteps([])).toEqual([]);
  });
});
