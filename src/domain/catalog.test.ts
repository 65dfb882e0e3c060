// A hardware instance's optional size (cpus, memory_gib) in a catalog file: read when given,
// absent when not, and refused with its JSON path when it is not a positive number. The rest
// of the parser is covered with the quota arithmetic in quota.test.ts.

import { describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG, parseCatalog } from './catalog.js';

const withHardware = (hardware: Record<string, unknown>) => ({
  clusters: [{ id: 1, name: 'h100-pool', orchestration_enabled: true, hardware: [{ id: 1, name: 'h100-8x', gpus_per_instance: 8, instances: 2, ...hardware }] }],
});

const problemsOf = (json: unknown): string => {
  try {
    parseCatalog(json);
  } catch (err) {
    return (err as Error).message;
  }
  return '';
};

describe('hardware size fields', () => {
  it('reads cpus and memory_gib, whole or fractional', () => {
    const json = withHardware({ cpus: 96, memory_gib: 1536.5 });
    const hardware = parseCatalog(json).clusters[0]?.hardware[0];
    expect(hardware).toEqual({ id: 1, name: 'h100-8x', gpus_per_instance: 8, instances: 2, cpus: 96, memory_gib: 1536.5 });
  });

  it('either may be given alone; an absent one stays absent', () => {
    const onlyCpus = parseCatalog(withHardware({ cpus: 0.5 })).clusters[0]?.hardware[0];
    expect(onlyCpus).toEqual({ id: 1, name: 'h100-8x', gpus_per_instance: 8, instances: 2, cpus: 0.5 });
    expect(onlyCpus).not.toHaveProperty('memory_gib');
    const neither = parseCatalog(withHardware({})).clusters[0]?.hardware[0];
    expect(Object.keys(neither ?? {})).toEqual(['id', 'name', 'gpus_per_instance', 'instances']);
  });

  it.each([
    ['cpus', 0],
    ['cpus', -4],
    ['cpus', '8'],
    ['cpus', null],
    ['memory_gib', 0],
    ['memory_gib', Number.POSITIVE_INFINITY],
    ['memory_gib', '64Gi'],
  ])('refuses %s = %j with its path', (key, value) => {
    expect(problemsOf(withHardware({ [key]: value }))).toContain(`clusters[0].hardware[0].${key} must be a number greater than 0`);
  });

  it('lists both problems at once, next to the others', () => {
    const message = problemsOf(withHardware({ cpus: -1, memory_gib: 'lots', ram: 1 }));
    expect(message).toContain('clusters[0].hardware[0].cpus must be a number greater than 0');
    expect(message).toContain('clusters[0].hardware[0].memory_gib must be a number greater than 0');
    expect(message).toContain('clusters[0].hardware[0].ram is not a catalog field (known: id, name, gpus_per_instance, instances, cpus, memory_gib)');
  });

  it('the embedded default gives no sizes, so the runtime sizes per GPU', () => {
    for (const h of DEFAULT_CATALOG.clusters.flatMap((c) => c.hardware)) {
      expect(h.cpus).toBeUndefined();
      expect(h.memory_gib).toBeUndefined();
    }
  });
});
