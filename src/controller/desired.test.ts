import { describe, expect, it } from 'vitest';
import type { DeploymentRecord } from '../domain/records.js';
import { deploymentRecord } from '../store/store.contract.js';
import { deploymentStatus, desiredReplicas } from './desired.js';

const general = (scaling: Partial<DeploymentRecord['scaling']>, over: Partial<DeploymentRecord> = {}): DeploymentRecord => {
  const d = deploymentRecord(1, 'web');
  return { ...d, scaling: { ...d.scaling, ...scaling }, ...over };
};

describe('desiredReplicas', () => {
  it.each([
    ['min when nothing autoscales', { min_replicas: 2, max_replicas: 4 }, undefined, 2],
    ['the autoscaler within [min, max]', { min_replicas: 1, max_replicas: 4 }, 3, 3],
    ['clamped to max', { min_replicas: 1, max_replicas: 4 }, 9, 4],
    ['clamped to min', { min_replicas: 2, max_replicas: 4 }, 0, 2],
    ['min 0 keeps one replica until the activator exists', { min_replicas: 0, max_replicas: 3 }, undefined, 1],
  ])('%s', (_name, scaling, autoscaled, expected) => {
    expect(desiredReplicas(general(scaling), autoscaled)).toEqual({ Replica: expected });
  });

  it('min 0 may reach zero once an activator brings it back', () => {
    expect(desiredReplicas(general({ min_replicas: 0, max_replicas: 3 }), 0, true)).toEqual({ Replica: 0 });
    expect(desiredReplicas(general({ min_replicas: 0, max_replicas: 3 }), 2, true)).toEqual({ Replica: 2 });
  });

  it('paused: none', () => {
    expect(desiredReplicas(general({ min_replicas: 2, max_replicas: 2 }, { paused: true }))).toEqual({ Replica: 0 });
  });
});

describe('deploymentStatus', () => {
  it.each([
    ['pending until a replica is ready', 'pending', false, 0, 'pending'],
    ['ready with one ready replica', 'pending', false, 1, 'ready'],
    ['not_ready after losing every ready replica', 'ready', false, 0, 'not_ready'],
    ['paused wins', 'ready', true, 2, 'paused'],
  ] as const)('%s', (_name, status, paused, ready, expected) => {
    expect(deploymentStatus(general({}, { status, paused }), ready)).toBe(expected);
  });

  it('scaled to zero on purpose stays ready', () => {
    expect(deploymentStatus(general({}, { status: 'ready' }), 0, 0)).toBe('ready');
    expect(deploymentStatus(general({}, { status: 'pending' }), 0, 0)).toBe('pending');
  });
});
