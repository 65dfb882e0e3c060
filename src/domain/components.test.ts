// Table tests of the component rules: what each family and serving mode has, where requests
// go, what the autoscaler moves, what costs a GPU instance, pools and the spec's replica counts.

import { describe, expect, it } from 'vitest';
import { COMPONENT, componentsOf, poolOf, routedComponent, scaledComponent, specifiedReplicas, usesGpuInstance } from './components.js';

const general = { spec: { family: 'general' as const }, scaling: { min_replicas: 2, pools: null } };
const aggregated = { spec: { family: 'orchestrated' as const, serving_mode: 'aggregated' }, scaling: { min_replicas: 3, pools: null } };
const disaggregated = { spec: { family: 'orchestrated' as const, serving_mode: 'disaggregated' }, scaling: { min_replicas: 1, pools: { prefill: 1, decode: 4 } } };

describe('components', () => {
  it.each([
    ['general', general, ['Replica'], 'Replica', 'Replica', { Replica: 2 }],
    ['aggregated', aggregated, ['Frontend', 'Worker'], 'Frontend', 'Worker', { Frontend: 1, Worker: 3 }],
    ['disaggregated', disaggregated, ['Frontend', 'Prefill', 'Decode'], 'Frontend', null, { Frontend: 1, Prefill: 1, Decode: 4 }],
  ] as const)('%s: components, routed, scaled, replicas', (_name, d, components, routed, scaled, replicas) => {
    expect(componentsOf(d)).toEqual(components);
    expect(routedComponent(d)).toBe(routed);
    expect(scaledComponent(d)).toBe(scaled);
    expect(Object.fromEntries(componentsOf(d).map((c) => [c, specifiedReplicas(d, c)]))).toEqual(replicas);
  });

  it('every component but the Frontend costs a GPU instance; Prefill and Decode name their pool', () => {
    expect(Object.values(COMPONENT).filter(usesGpuInstance)).toEqual(['Replica', 'Worker', 'Prefill', 'Decode']);
    expect(Object.values(COMPONENT).map(poolOf)).toEqual([null, null, null, 'prefill', 'decode']);
  });
});
