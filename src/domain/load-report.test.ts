// The load reports gateways publish: checked decoding, and sums over publishers that never
// read a second not every publisher has closed as a drop.
import { describe, expect, it } from 'vitest';
import { mergeLoad, parseLoadReport, sumSeries, type LoadReport } from './load-report.js';

const s = (second: number, average: number) => ({ second: second * 1000, average });

describe('parseLoadReport', () => {
  it('reads a report and refuses what is not one', () => {
    const report: LoadReport = { at: 5, deployments: { 7: { samples: [s(1, 2)], held: 1, inflight: 3 } }, replicas: { 9: 3 } };
    expect(parseLoadReport(JSON.stringify(report))).toEqual(report);
    expect(parseLoadReport('not json')).toBeNull();
    expect(parseLoadReport('{"at": 1, "deployments": {"7": {"samples": [{"second": -1, "average": 1}], "held": 0, "inflight": 0}}, "replicas": {}}')).toBeNull();
    expect(parseLoadReport('{"at": 1, "deployments": {}, "replicas": {"3": "x"}}')).toBeNull();
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
});
