// The limits each catalog hardware instance gives a container, and the clamp to the daemon's CPUs.

import { describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG } from '../../domain/catalog.js';
import { CONTAINER_LIMIT_DEFAULTS, containerLimits } from './container-limits.js';

const GIB = 1024 ** 3;
const NANO = 1e9;

describe('containerLimits', () => {
  it('sizes the default sim instances per GPU on a big host', () => {
    const hardware = DEFAULT_CATALOG.clusters[0]?.hardware ?? [];
    expect(hardware.map((h) => containerLimits(h, 128))).toEqual([
      { nanoCpus: 8 * NANO, memoryBytes: 64 * GIB, pidsLimit: 4096 },
      { nanoCpus: 16 * NANO, memoryBytes: 128 * GIB, pidsLimit: 4096 },
      { nanoCpus: 64 * NANO, memoryBytes: 512 * GIB, pidsLimit: 4096 },
    ]);
  });

  it('a CPU-only component gets 2 vCPUs and 4 GiB', () => {
    const expected = { nanoCpus: 2 * NANO, memoryBytes: 4 * GIB, pidsLimit: 4096 };
    expect(containerLimits(null, 16)).toEqual(expected);
    expect(containerLimits({ gpus_per_instance: 0 }, 16)).toEqual(expected);
  });

  it('the catalog entry\'s cpus and memory_gib win, each on its own', () => {
    expect(containerLimits({ gpus_per_instance: 8, cpus: 96, memory_gib: 1024 }, 192)).toMatchObject({ nanoCpus: 96 * NANO, memoryBytes: 1024 * GIB });
    expect(containerLimits({ gpus_per_instance: 2, cpus: 12.5 }, 64)).toMatchObject({ nanoCpus: 12.5 * NANO, memoryBytes: 128 * GIB });
    expect(containerLimits({ gpus_per_instance: 0, memory_gib: 0.5 }, 64)).toMatchObject({ nanoCpus: 2 * NANO, memoryBytes: 0.5 * GIB });
  });

  it('never asks for more CPUs than the daemon has, nor fewer than Docker accepts', () => {
    expect(containerLimits({ gpus_per_instance: 8 }, 12).nanoCpus).toBe(12 * NANO);
    expect(containerLimits(null, 1).nanoCpus).toBe(1 * NANO);
    expect(containerLimits({ gpus_per_instance: 1, cpus: 0.001 }, 4).nanoCpus).toBe(0.01 * NANO);
    // Memory is not clamped: Docker accepts a limit above the host's memory.
    expect(containerLimits({ gpus_per_instance: 8 }, 12).memoryBytes).toBe(512 * GIB);
  });

  it('refuses a host CPU count that is not a positive number', () => {
    for (const bad of [0, -2, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => containerLimits(null, bad)).toThrow(RangeError);
  });

  it('exports the table it applies', () => {
    expect(CONTAINER_LIMIT_DEFAULTS).toEqual({ perGpu: { cpus: 8, memoryGib: 64 }, cpuOnly: { cpus: 2, memoryGib: 4 }, pidsLimit: 4096 });
    expect(Object.isFrozen(CONTAINER_LIMIT_DEFAULTS.perGpu)).toBe(true);
  });
});
