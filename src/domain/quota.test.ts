// Capacity arithmetic against the pinned default catalog (quota 32 GPUs;
// sim-gpu-1x 1 GPU ×16, sim-gpu-2x 2 GPUs ×8, sim-gpu-8x 8 GPUs ×2 on clusters 1 and 2):
// footprints, the GPU quota and per-profile instance checks with their numbers, and the
// catalog file parser these numbers come from.

import { describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG, findCluster, findHardware, parseCatalog } from './catalog.js';
import { checkCapacity, clusterUsage, footprint, gpusPerReplica, holdingsOf, projectQuotaProblem, type Placement } from './quota.js';
import { generalSpec as makeGeneralSpec, orchestratedSpec } from '../../test/helpers/spec-fixtures.js';

const QUOTA = 32;

const generalSpec = (hardware: number) => makeGeneralSpec({ hardware_instance_id: hardware });

type Deployment = Placement & { id?: number };

const scaling = (min: number, max: number) => ({ min_replicas: min, max_replicas: max, target_concurrency: max > min ? 4 : null, cooldown_period: 300, pools: null });

function general(cluster: number, hardware: number, max: number, min = 1, id?: number): Deployment {
  return { ...(id === undefined ? {} : { id }), cluster_id: cluster, spec: generalSpec(hardware), scaling: scaling(Math.min(min, max), max) };
}

function aggregated(cluster: number, hardware: number, max: number, min = 1): Deployment {
  return { cluster_id: cluster, spec: orchestratedSpec({ hardware_instance_id: hardware }), scaling: scaling(min, max) };
}

function disaggregated(cluster: number, prefill: [number, number], decode: [number, number]): Deployment {
  return {
    cluster_id: cluster,
    spec: orchestratedSpec({
      serving_mode: 'disaggregated',
      worker_pools: { prefill: { hardware_instance_id: prefill[0] }, decode: { hardware_instance_id: decode[0] } },
    }),
    scaling: { min_replicas: 1, max_replicas: 1, target_concurrency: null, cooldown_period: 300, pools: { prefill: prefill[1], decode: decode[1] } },
  };
}

/** 20 GPUs held elsewhere: 2 × sim-gpu-8x on cluster 2, 4 × sim-gpu-1x on cluster 1. */
const OTHERS_20 = [general(2, 3, 2), general(1, 1, 4)];

describe('footprint', () => {
  it('general: max_replicas whole instances of its hardware, whatever min is', () => {
    const fp = footprint(general(1, 2, 8, 1), DEFAULT_CATALOG);
    expect(fp.gpus).toBe(16);
    expect([...fp.instances]).toEqual([[2, 8]]);
  });

  it('orchestrated aggregated: max_replicas × instance; the Frontend is CPU-only', () => {
    const fp = footprint(aggregated(1, 3, 2, 1), DEFAULT_CATALOG);
    expect(fp.gpus).toBe(16);
    expect([...fp.instances]).toEqual([[3, 2]]);
  });

  it('disaggregated: the sum of both pools, each on its own hardware', () => {
    const fp = footprint(disaggregated(1, [1, 1], [2, 2]), DEFAULT_CATALOG);
    expect(fp.gpus).toBe(1 + 2 * 2);
    expect([...fp.instances].sort()).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect([...footprint(disaggregated(1, [2, 3], [2, 4]), DEFAULT_CATALOG).instances]).toEqual([[2, 7]]);
  });
});

describe('checkCapacity: GPU quota', () => {
  it('reports the numbers when a general deployment would exceed it', () => {
    const problems = checkCapacity(general(1, 2, 8), OTHERS_20, DEFAULT_CATALOG, QUOTA);
    expect(problems).toEqual([
      {
        field: 'max_replicas',
        code: 'quota_exceeded',
        message: expect.stringContaining(
          'GPU quota exceeded: this deployment needs 16 GPUs (max_replicas 8 × sim-gpu-2x, 2 GPUs each), other deployments hold 20, the quota is 32',
        ),
      },
    ]);
  });

  it('accepts exactly the quota', () => {
    expect(checkCapacity(general(1, 2, 6), OTHERS_20, DEFAULT_CATALOG, QUOTA)).toEqual([]); // 12 + 20 = 32
  });

  it('orchestrated aggregated is evaluated against max_replicas, not min_replicas', () => {
    const problems = checkCapacity(aggregated(1, 2, 7, 1), OTHERS_20, DEFAULT_CATALOG, QUOTA);
    expect(problems.map((p) => p.code)).toEqual(['quota_exceeded']);
    expect(problems[0]?.message).toContain('needs 14 GPUs (max_replicas 7 × sim-gpu-2x, 2 GPUs each)');
  });

  it('disaggregated is evaluated against the sum of both pools, on worker_pools', () => {
    // 6 + 8 = 14 GPUs; either pool alone (6 or 8) would fit in the 12 left.
    const problems = checkCapacity(disaggregated(1, [2, 3], [2, 4]), OTHERS_20, DEFAULT_CATALOG, QUOTA);
    expect(problems).toEqual([
      {
        field: 'worker_pools',
        code: 'quota_exceeded',
        message: expect.stringContaining(
          'needs 14 GPUs (prefill 3 × sim-gpu-2x, 2 GPUs each + decode 4 × sim-gpu-2x, 2 GPUs each), other deployments hold 20, the quota is 32',
        ),
      },
    ]);
    expect(checkCapacity(disaggregated(1, [2, 2], [2, 4]), OTHERS_20, DEFAULT_CATALOG, QUOTA)).toEqual([]);
  });

  it('counts paused deployments: they keep their reservation', () => {
    const paused = { ...general(1, 3, 2), paused: true };
    expect(checkCapacity(general(2, 3, 2), [paused, general(1, 1, 1)], DEFAULT_CATALOG, QUOTA).map((p) => p.code)).toEqual(['quota_exceeded']);
  });

  it("on update, the deployment's own stored copy does not count", () => {
    const stored = general(1, 2, 6, 1, 42);
    const grown = general(1, 2, 8, 1, 42);
    const others = [...OTHERS_20.slice(0, 1), stored]; // 16 elsewhere + itself (12)
    expect(checkCapacity(grown, others, DEFAULT_CATALOG, QUOTA)).toEqual([]); // 16 + 16 = 32
    const { id: _id, ...anonymous } = grown;
    // Counted twice, it breaks both the quota (16 + 12 + 16) and sim-gpu-2x's 8 instances (6 + 8).
    expect(checkCapacity(anonymous, others, DEFAULT_CATALOG, QUOTA).map((p) => p.code)).toEqual(['quota_exceeded', 'hardware_unavailable']);
  });
});

describe('checkCapacity: hardware instances', () => {
  const BIG = 1000;

  it('refuses more instances of a profile than the cluster has, with the numbers', () => {
    const problems = checkCapacity(general(1, 3, 3), [], DEFAULT_CATALOG, BIG);
    expect(problems).toEqual([
      {
        field: 'max_replicas',
        code: 'hardware_unavailable',
        message: expect.stringContaining(
          'not enough sim-gpu-8x (hardware 3) instances in cluster 1 "local-sim": this deployment needs 3, other deployments hold 0, the cluster has 2',
        ),
      },
    ]);
  });

  it('counts other deployments of the same profile in the same cluster only', () => {
    const onCluster1 = [general(1, 2, 6)];
    const problems = checkCapacity(aggregated(1, 2, 3), onCluster1, DEFAULT_CATALOG, BIG);
    expect(problems.map((p) => [p.code, p.field])).toEqual([['hardware_unavailable', 'max_replicas']]);
    expect(problems[0]?.message).toContain('needs 3, other deployments hold 6, the cluster has 8 (2 free)');
    expect(checkCapacity(aggregated(1, 2, 3), [general(2, 2, 6)], DEFAULT_CATALOG, BIG)).toEqual([]);
    expect(checkCapacity(aggregated(1, 2, 3), [general(1, 1, 6)], DEFAULT_CATALOG, BIG)).toEqual([]);
  });

  it('adds both pools when they share a profile', () => {
    const problems = checkCapacity(disaggregated(1, [2, 5], [2, 4]), [], DEFAULT_CATALOG, BIG);
    expect(problems.map((p) => [p.code, p.field])).toEqual([['hardware_unavailable', 'worker_pools']]);
    expect(problems[0]?.message).toContain('needs 9');
    expect(checkCapacity(disaggregated(1, [1, 5], [2, 4]), [], DEFAULT_CATALOG, BIG)).toEqual([]);
  });

  it('reports quota and instances together when both are broken', () => {
    expect(checkCapacity(general(1, 3, 5), [], DEFAULT_CATALOG, QUOTA).map((p) => p.code)).toEqual(['quota_exceeded', 'hardware_unavailable']);
  });
});

describe('clusterUsage', () => {
  it('lists instances used per cluster and profile, zero where unused', () => {
    const usage = clusterUsage(DEFAULT_CATALOG, [general(1, 1, 4), disaggregated(1, [1, 1], [2, 2]), general(2, 3, 1)]);
    expect([...(usage.get(1) ?? [])]).toEqual([
      [1, 5],
      [2, 2],
      [3, 0],
    ]);
    expect([...(usage.get(2) ?? [])]).toEqual([
      [1, 0],
      [2, 0],
      [3, 1],
    ]);
  });
});

describe('catalog', () => {
  it('pins the embedded default', () => {
    expect(DEFAULT_CATALOG.clusters.map((c) => [c.id, c.name, c.orchestration_enabled])).toEqual([
      [1, 'local-sim', true],
      [2, 'local-sim-basic', false],
    ]);
    for (const cluster of DEFAULT_CATALOG.clusters) {
      expect(cluster.hardware.map((h) => [h.id, h.name, h.gpus_per_instance, h.instances])).toEqual([
        [1, 'sim-gpu-1x', 1, 16],
        [2, 'sim-gpu-2x', 2, 8],
        [3, 'sim-gpu-8x', 8, 2],
      ]);
    }
    const cluster = findCluster(DEFAULT_CATALOG, 2);
    expect(cluster && findHardware(cluster, 3)?.name).toBe('sim-gpu-8x');
    expect(findCluster(DEFAULT_CATALOG, 9)).toBeUndefined();
  });

  it('parses a catalog file', () => {
    const json = { clusters: [{ id: 5, name: 'a100-pool', orchestration_enabled: true, hardware: [{ id: 1, name: 'a100-80g-8x', gpus_per_instance: 8, instances: 4 }] }] };
    expect(parseCatalog(json)).toEqual(json);
  });

  it('lists every problem of a bad catalog file with its path', () => {
    const bad = {
      clusters: [
        { id: 1, name: 'x', orchestration_enabled: 'yes', hardware: [{ id: 1, name: 'h', gpus_per_instance: -1, instances: 2 }] },
        { id: 1, name: '', orchestration_enabled: true, hardware: [], zone: 'eu' },
        'cluster-3',
        { id: 0, name: 'z', orchestration_enabled: false, hardware: [7, { id: 2, name: 'a', gpus_per_instance: 1, instances: 1 }, { id: 2, name: 'b', gpus_per_instance: 1, instances: 1 }] },
      ],
    };
    let message = '';
    try {
      parseCatalog(bad);
    } catch (err) {
      message = (err as Error).message;
    }
    for (const part of [
      'clusters[0].orchestration_enabled must be true or false',
      'clusters[0].hardware[0].gpus_per_instance must be an integer of at least 0',
      'clusters[1].zone is not a catalog field',
      'clusters[1].name must be a non-empty string',
      'clusters[1].hardware must be a non-empty array',
      'clusters[2] must be an object',
      'clusters[3].id must be an integer of at least 1',
      'clusters[3].hardware[0] must be an object',
      'clusters[3].hardware: id 2 appears more than once',
    ]) {
      expect(message).toContain(part);
    }
    expect(() => parseCatalog([])).toThrow(/JSON object/);
    expect(() => parseCatalog({ clusters: [] })).toThrow(/non-empty array/);
  });
});

describe('gpusPerReplica', () => {
  const cases: { name: string; d: Deployment; component: string; gpus: number }[] = [
    { name: 'a general replica on sim-gpu-2x', d: general(1, 2, 1), component: 'Replica', gpus: 2 },
    { name: 'an aggregated worker on sim-gpu-8x', d: aggregated(2, 3, 1), component: 'Worker', gpus: 8 },
    { name: 'a prefill worker, by its pool', d: disaggregated(1, [2, 1], [1, 1]), component: 'Prefill', gpus: 2 },
    { name: 'a decode worker, by its pool', d: disaggregated(1, [2, 1], [1, 1]), component: 'Decode', gpus: 1 },
    { name: 'hardware the catalog does not list: 1', d: general(9, 2, 1), component: 'Replica', gpus: 1 },
  ];
  for (const c of cases) {
    it(c.name, () => expect(gpusPerReplica(DEFAULT_CATALOG, c.d, c.component)).toBe(c.gpus));
  }
});

describe('traffic split between revisions', () => {
  /** A general deployment at revision 2 (revision 1 on hardware 1, revision 2 on hardware 2) with `traffic`. */
  function split(traffic: Placement['traffic'], max = 2): Deployment {
    return {
      ...general(1, 2, max),
      revision: 2,
      revisions: [
        { revision: 1, spec: generalSpec(1) },
        { revision: 2, spec: generalSpec(2) },
      ],
      traffic,
    };
  }
  const HALF = [
    { revision: 1, latest: false, percent: 50, tag: null },
    { revision: null, latest: true, percent: 50, tag: null },
  ];

  it('counts max_replicas of every revision of the split, each on its own revision’s hardware', () => {
    const fp = footprint(split(HALF, 3), DEFAULT_CATALOG);
    expect(fp.gpus).toBe(3 * 1 + 3 * 2);
    expect([...fp.instances].sort()).toEqual([
      [1, 3],
      [2, 3],
    ]);
  });

  it('counts the one revision traffic runs without a split (no list, one revision named, a 0 % entry without a tag), on its own hardware', () => {
    expect(footprint(split(null), DEFAULT_CATALOG).gpus).toBe(4);
    expect(footprint(split([{ revision: 1, latest: false, percent: 100, tag: null }]), DEFAULT_CATALOG).gpus).toBe(2);
    expect(footprint(split([{ revision: 1, latest: false, percent: 100, tag: null }, { revision: null, latest: true, percent: 0, tag: null }]), DEFAULT_CATALOG).gpus).toBe(2);
    // A tag keeps a 0 % revision running, so it counts.
    expect(footprint(split([{ revision: 1, latest: false, percent: 100, tag: null }, { revision: null, latest: true, percent: 0, tag: 'preview' }]), DEFAULT_CATALOG).gpus).toBe(2 + 4);
  });

  it('reports a split over quota on traffic, with each revision’s part and the way out', () => {
    const problems = checkCapacity(split(HALF, 5), OTHERS_20, DEFAULT_CATALOG, QUOTA);
    expect(problems).toEqual([
      {
        field: 'traffic',
        code: 'quota_exceeded',
        message:
          'GPU quota exceeded: this deployment needs 15 GPUs (revision 1: max_replicas 5 × sim-gpu-1x, 1 GPU each + revision 2: max_replicas 5 × sim-gpu-2x, 2 GPUs each), ' +
          'other deployments hold 20, the quota is 32 (12 free); traffic splits between 2 revisions, each running up to its own replicas: send traffic to fewer revisions, lower max_replicas or pick smaller hardware, or delete a deployment you no longer need',
      },
    ]);
    expect(checkCapacity(split(HALF, 3), OTHERS_20, DEFAULT_CATALOG, QUOTA)).toEqual([]);
  });
});

describe("a project's GPU quota", () => {
  const held = (...ds: Deployment[]) => holdingsOf(ds.map((d) => ({ cluster_id: d.cluster_id, footprint: footprint(d, DEFAULT_CATALOG) })));

  it('is the same rule over the project: max replicas × instance GPUs, both pools for disaggregated, with the figures', () => {
    expect(projectQuotaProblem(general(1, 2, 1), held(general(1, 2, 3)), 'team-a', 8, DEFAULT_CATALOG)).toEqual([]);
    const [problem] = projectQuotaProblem(general(1, 2, 2), held(general(1, 2, 3)), 'team-a', 8, DEFAULT_CATALOG);
    expect(problem).toMatchObject({ code: 'quota_exceeded', field: 'max_replicas' });
    expect(problem!.message).toMatch(/^project team-a: 6 GPUs reserved \+ 4 requested > quota 8 \(this deployment: max_replicas 2 × sim-gpu-2x, 2 GPUs each\)/);
    const [pools] = projectQuotaProblem(disaggregated(1, [1, 1], [2, 2]), held(general(1, 1, 4)), 'team-a', 8, DEFAULT_CATALOG);
    expect(pools).toMatchObject({ field: 'worker_pools' });
    expect(pools!.message).toMatch(/^project team-a: 4 GPUs reserved \+ 5 requested > quota 8/);
  });

  it('is none when null: only the cluster’s quota applies', () => {
    expect(projectQuotaProblem(general(1, 3, 2), held(general(1, 3, 2)), 'team-a', null, DEFAULT_CATALOG)).toEqual([]);
  });
});
