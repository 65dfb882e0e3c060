// Owns capacity arithmetic: what a deployment reserves (GPUs and whole hardware instances),
// the cluster's GPU quota check, a project's GPU quota check (the same rule over the project's
// deployments) and the per-profile instance check (422 with the numbers),
// and the instances used per cluster and profile that GET /clusters/{id}/hardware shows.
//
// Spec ("Limits"): the GPU quota is evaluated against max_replicas (aggregated, and general
// inference) or the sum of both pool footprints (disaggregated); each replica costs one full
// hardware instance; the orchestrated Frontend is CPU-only and costs nothing here.
// A deployment holds its reservation while it exists, paused or not, so a resume never
// fails on capacity. While traffic splits between revisions (domain/traffic.ts), each
// revision of the split runs its own replicas, autoscaled up to max_replicas on its own
// revision's hardware, so the footprint counts every revision of the split. Pure: no I/O.

import type { FieldProblem } from '../core/errors.js';
import { describeCluster, findCluster, findHardware, type Catalog, type HardwareProfile } from './catalog.js';
import { poolOf } from './components.js';
import type { DeploymentRecord, DeploymentSpec } from './records.js';
import { soleRevisionOf, splitOf } from './traffic.js';

/**
 * The parts of a deployment that decide its footprint: its spec and scaling, and, when known,
 * its traffic with the revisions it names (a split runs each of them).
 */
export type Placement = Pick<DeploymentRecord, 'cluster_id' | 'spec' | 'scaling'> &
  Partial<Pick<DeploymentRecord, 'traffic' | 'revision'>> & { revisions?: readonly { revision: number; spec: DeploymentSpec }[] };

export interface Footprint {
  gpus: number;
  /** Whole instances per hardware profile id, in the deployment's cluster. */
  instances: Map<number, number>;
}

/** One group of identical replicas: max_replicas of the Worker/replica, or one pool. */
interface Part {
  /** How the count is named in messages: `max_replicas`, `prefill`, `decode`. */
  label: string;
  /** The revision of a traffic split it belongs to; null without a split. */
  revision: number | null;
  hardwareId: number;
  replicas: number;
  profile: HardwareProfile | undefined;
}

/** The revisions of a traffic split the placement runs side by side; null without one. */
function splitRevisions(d: Placement): number[] | null {
  if (d.revision === undefined) return null;
  return splitOf({ traffic: d.traffic, revision: d.revision })?.map((s) => s.revision) ?? null;
}

/** The spec a revision runs with (the current one when the revisions are not known). */
const specOf = (d: Placement, revision: number): DeploymentSpec => d.revisions?.find((r) => r.revision === revision)?.spec ?? d.spec;

function partsOf(d: Placement, catalog: Catalog): Part[] {
  const split = splitRevisions(d);
  if (split !== null) return split.flatMap((revision) => specParts(d, specOf(d, revision), revision, catalog));
  // Traffic may keep everything on an older revision (a manual rollout): that one runs.
  const sole = d.revision === undefined ? null : soleRevisionOf({ traffic: d.traffic, revision: d.revision });
  return specParts(d, sole === null ? d.spec : specOf(d, sole), null, catalog);
}

function specParts(d: Placement, spec: DeploymentSpec, revision: number | null, catalog: Catalog): Part[] {
  const cluster = findCluster(catalog, d.cluster_id);
  const part = (label: string, hardwareId: number, replicas: number): Part => ({
    label,
    revision,
    hardwareId,
    replicas,
    profile: cluster ? findHardware(cluster, hardwareId) : undefined,
  });
  const { scaling } = d;
  if (spec.family === 'orchestrated' && spec.serving_mode === 'disaggregated') {
    if (!spec.worker_pools || !scaling.pools) return [];
    return [
      part('prefill', spec.worker_pools.prefill.hardware_instance_id, scaling.pools.prefill),
      part('decode', spec.worker_pools.decode.hardware_instance_id, scaling.pools.decode),
    ];
  }
  if (spec.hardware_instance_id === null) return [];
  return [part('max_replicas', spec.hardware_instance_id, scaling.max_replicas)];
}

function sumParts(parts: Part[]): Footprint {
  const instances = new Map<number, number>();
  let gpus = 0;
  for (const p of parts) {
    // A profile missing from the catalog (replaced since) costs no GPUs; validation refuses
    // such hardware for new and edited deployments.
    gpus += p.replicas * (p.profile?.gpus_per_instance ?? 0);
    instances.set(p.hardwareId, (instances.get(p.hardwareId) ?? 0) + p.replicas);
  }
  return { gpus, instances };
}

export function footprint(d: Placement, catalog: Catalog): Footprint {
  return sumParts(partsOf(d, catalog));
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** `max_replicas 8 × sim-gpu-2x, 2 GPUs each` / `prefill 1 × sim-gpu-1x, 1 GPU each + decode …` */
function describeParts(parts: Part[]): string {
  return parts
    .map((p) => {
      const name = p.profile?.name ?? `hardware ${p.hardwareId}`;
      const of = p.revision === null ? '' : `revision ${p.revision}: `;
      return `${of}${p.label} ${p.replicas} × ${name}, ${plural(p.profile?.gpus_per_instance ?? 0, 'GPU')} each`;
    })
    .join(' + ');
}

const isDisaggregated = (d: Placement): boolean =>
  d.spec.family === 'orchestrated' && d.spec.serving_mode === 'disaggregated';

/** The request field a capacity problem is reported on: a split multiplies the footprint by its revisions. */
const capacityField = (d: Placement): string => (splitRevisions(d) !== null ? 'traffic' : isDisaggregated(d) ? 'worker_pools' : 'max_replicas');

const shrinkHint = (d: Placement): string => {
  const own = isDisaggregated(d) ? 'use fewer pool replicas' : 'lower max_replicas or pick smaller hardware';
  const split = splitRevisions(d);
  return split === null ? own : `traffic splits between ${split.length} revisions, each running up to its own replicas: send traffic to fewer revisions, ${own}`;
};

/**
 * What a set of deployments holds: GPUs in all, and whole instances per cluster id and
 * hardware profile id. Built from each deployment's footprint, so a caller that keeps the
 * footprints (the control API's record index) sums them without recomputing any.
 */
export interface Holdings {
  gpus: number;
  instances: Map<number, Map<number, number>>;
}

export function holdingsOf(held: Iterable<{ cluster_id: number; footprint: Footprint }>): Holdings {
  const out: Holdings = { gpus: 0, instances: new Map() };
  for (const { cluster_id, footprint: fp } of held) {
    out.gpus += fp.gpus;
    let perProfile = out.instances.get(cluster_id);
    if (!perProfile) out.instances.set(cluster_id, (perProfile = new Map()));
    for (const [hardwareId, n] of fp.instances) perProfile.set(hardwareId, (perProfile.get(hardwareId) ?? 0) + n);
  }
  return out;
}

function quotaProblem(candidate: Placement, parts: Part[], holdings: Holdings, quota: number): FieldProblem[] {
  const need = sumParts(parts).gpus;
  const held = holdings.gpus;
  if (need + held <= quota) return [];
  const free = Math.max(0, quota - held);
  return [
    {
      field: capacityField(candidate),
      code: 'quota_exceeded',
      message:
        `GPU quota exceeded: this deployment needs ${plural(need, 'GPU')} (${describeParts(parts)}), ` +
        `other deployments hold ${held}, the quota is ${quota} (${free} free); ` +
        `${shrinkHint(candidate)}, or delete a deployment you no longer need`,
    },
  ];
}

/**
 * A project's GPU quota (null: none) against what its other deployments hold: the same rule as
 * the cluster's quota (max replicas × instance GPUs, both pools for disaggregated, every
 * revision of a split), with the figures in the message.
 */
export function projectQuotaProblem(candidate: Placement, projectHeld: Holdings, project: string, quota: number | null, catalog: Catalog): FieldProblem[] {
  if (quota === null) return [];
  const parts = partsOf(candidate, catalog);
  const need = sumParts(parts).gpus;
  const held = projectHeld.gpus;
  if (need + held <= quota) return [];
  return [
    {
      field: capacityField(candidate),
      code: 'quota_exceeded',
      message:
        `project ${project}: ${held} GPUs reserved + ${need} requested > quota ${quota} ` +
        `(this deployment: ${describeParts(parts)}); ${shrinkHint(candidate)}, delete a deployment of the project, or ask the platform admin for a larger quota`,
    },
  ];
}

function instanceProblems(candidate: Placement, parts: Part[], holdings: Holdings, catalog: Catalog): FieldProblem[] {
  const cluster = findCluster(catalog, candidate.cluster_id);
  if (!cluster) return [];
  const wanted = sumParts(parts).instances;
  const used = holdings.instances.get(cluster.id);
  const problems: FieldProblem[] = [];
  for (const profile of cluster.hardware) {
    const need = wanted.get(profile.id) ?? 0;
    const held = used?.get(profile.id) ?? 0;
    if (need === 0 || need + held <= profile.instances) continue;
    problems.push({
      field: capacityField(candidate),
      code: 'hardware_unavailable',
      message:
        `not enough ${profile.name} (hardware ${profile.id}) instances in ${describeCluster(cluster)}: ` +
        `this deployment needs ${need}, other deployments hold ${held}, the cluster has ${profile.instances} ` +
        `(${Math.max(0, profile.instances - held)} free); ${shrinkHint(candidate)}`,
    });
  }
  return problems;
}

/**
 * Capacity problems of `candidate` next to `others`: every other live deployment (paused
 * ones included), never the candidate itself — when the candidate carries an id (an
 * update), a stored copy of it among `others` is skipped. Empty when it fits.
 */
export function checkCapacity(
  candidate: Placement & { id?: number },
  others: readonly (Placement & { id?: number })[],
  catalog: Catalog,
  gpuQuota: number,
): FieldProblem[] {
  const rest = candidate.id === undefined ? [...others] : others.filter((d) => d.id !== candidate.id);
  return checkCapacityAgainst(candidate, holdingsOf(rest.map((d) => ({ cluster_id: d.cluster_id, footprint: footprint(d, catalog) }))), catalog, gpuQuota);
}

/** checkCapacity against what the other deployments hold, summed beforehand (holdingsOf). */
export function checkCapacityAgainst(candidate: Placement, holdings: Holdings, catalog: Catalog, gpuQuota: number): FieldProblem[] {
  const parts = partsOf(candidate, catalog);
  return [...quotaProblem(candidate, parts, holdings, gpuQuota), ...instanceProblems(candidate, parts, holdings, catalog)];
}

/**
 * Instances held per cluster id and hardware profile id. Every catalog cluster and profile
 * appears (0 when unused); free = profile.instances − used.
 */
export function clusterUsage(catalog: Catalog, deployments: readonly Placement[]): Map<number, Map<number, number>> {
  return usageOf(catalog, holdingsOf(deployments.map((d) => ({ cluster_id: d.cluster_id, footprint: footprint(d, catalog) }))));
}

/** clusterUsage from holdings summed beforehand. */
export function usageOf(catalog: Catalog, holdings: Holdings): Map<number, Map<number, number>> {
  const usage = new Map<number, Map<number, number>>();
  for (const cluster of catalog.clusters) usage.set(cluster.id, new Map(cluster.hardware.map((h) => [h.id, 0])));
  for (const [clusterId, held] of holdings.instances) {
    const perProfile = usage.get(clusterId) ?? new Map<number, number>();
    usage.set(clusterId, perProfile);
    for (const [hardwareId, n] of held) perProfile.set(hardwareId, (perProfile.get(hardwareId) ?? 0) + n);
  }
  return usage;
}

/** GPUs of one replica's hardware instance of a component, from the catalog (1 when it is not there). */
export function gpusPerReplica(catalog: Catalog, d: Pick<DeploymentRecord, 'cluster_id' | 'spec'>, component: string): number {
  return hardwareOfReplica(catalog, d, component)?.gpus_per_instance ?? 1;
}

/** The hardware instance one replica of `component` runs on (its pool's, for disaggregated workers). */
export function hardwareOfReplica(catalog: Catalog, d: Pick<DeploymentRecord, 'cluster_id' | 'spec'>, component: string): HardwareProfile | undefined {
  const cluster = findCluster(catalog, d.cluster_id);
  const pools = d.spec.family === 'orchestrated' ? d.spec.worker_pools : null;
  const poolName = poolOf(component);
  const pool = poolName === null ? undefined : pools?.[poolName];
  const hardwareId = pool?.hardware_instance_id ?? d.spec.hardware_instance_id;
  return cluster && hardwareId !== null ? findHardware(cluster, hardwareId) : undefined;
}
