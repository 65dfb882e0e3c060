// Owns the rules both families apply the same way: name, cluster, hardware profile, scaling
// (replicas, concurrency target, cooldown), protocol and plain secrets. Family-specific
// differences (orchestrated never scales to zero, the target's field name) are keyed on
// req.family here so the two families cannot drift apart.

import { describeCluster, findCluster, findHardware, type Cluster } from '../catalog.js';
import { ROUTING_POLICIES, type Protocol, type RoutingPolicy, type ScalingSpec } from '../records.js';
import { nameTakenByTag } from '../traffic.js';
import { initialReplicasProblem } from '../initial-scale.js';
import { checkAutoscaling, requestedMetric } from './autoscaling-rules.js';
import type { Req } from './shape.js';
import type { Options, ValidationContext } from './types.js';
import {
  cooldownProblem,
  DEFAULT_COOLDOWN,
  hardwareRequired,
  maxReplicasProblem,
  minReplicasProblem,
  NAME_REQUIRED,
  nameProblems,
  targetProblem,
  targetRequired,
} from './field-rules.js';

export { DEFAULT_COOLDOWN };

/** Rules run to the end and report everything; a draft is built only when none failed. */
export function need<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('internal: a validated value is missing');
  return value;
}

export function checkName(req: Req, ctx: ValidationContext, opts: Options): string | undefined {
  const name = req.str('name');
  // PATCH cannot change the name (checked before merging), so the stored one stands.
  if (opts.mode === 'patch') return name;
  if (!req.required('name', NAME_REQUIRED) || name === undefined) return undefined;
  const syntax = nameProblems(name);
  for (const problem of syntax) req.add('name', problem);
  if (syntax.length > 0) return undefined;
  if (ctx.takenNames.has(name)) {
    req.add('name', `name "${name}" is already used by another deployment (names are unique across both families)`, 'conflict');
    return undefined;
  }
  const tagOwner = nameTakenByTag(name, ctx.otherDeployments ?? []);
  if (tagOwner !== null) {
    req.add(
      'name',
      `name "${name}" is the host of a traffic tag of deployment ${tagOwner} (${name}.<domain> reaches that tag's revision); choose another name, or remove the tag from ${tagOwner}'s traffic first`,
      'conflict',
    );
    return undefined;
  }
  return name;
}

export function checkCluster(req: Req, ctx: ValidationContext): Cluster | undefined {
  if (!req.required('cluster_id', 'cluster_id is required: GET /clusters lists the clusters')) return undefined;
  const id = req.int('cluster_id');
  if (id === undefined) return undefined;
  const cluster = findCluster(ctx.catalog, id);
  if (!cluster) {
    req.reject('cluster_id', `cluster ${id} does not exist; GET /clusters lists the clusters`);
    return undefined;
  }
  if (req.family === 'orchestrated' && !cluster.orchestration_enabled) {
    const alternative = ctx.catalog.clusters.find((c) => c.orchestration_enabled);
    const hint = alternative ? `use ${describeCluster(alternative)}, which has it` : 'no cluster in the catalog has it; ask support to enable it';
    req.add(
      'cluster_id',
      `orchestrated inference needs a cluster with the orchestration operator enabled; ${describeCluster(cluster)} does not have it: ${hint}`,
    );
  }
  return cluster;
}

/** A hardware profile id (already known to be an integer) must exist in the chosen cluster. */
export function checkHardwareId(req: Req, field: string, id: number, cluster: Cluster | undefined): number | undefined {
  if (!cluster || findHardware(cluster, id)) return id;
  const available = cluster.hardware.map((h) => `${h.id} (${h.name})`).join(', ');
  req.add(
    field,
    `${field}: hardware ${id} is not available in ${describeCluster(cluster)}; available: ${available} (GET /clusters/${cluster.id}/hardware)`,
    'hardware_unavailable',
  );
  return undefined;
}

export function checkTopLevelHardware(req: Req, cluster: Cluster | undefined): number | undefined {
  if (!req.required('hardware_instance_id', hardwareRequired(req.family))) return undefined;
  const id = req.int('hardware_instance_id');
  return id === undefined ? undefined : checkHardwareId(req, 'hardware_instance_id', id, cluster);
}

function checkMinReplicas(req: Req): number | undefined {
  if (req.isBad('min_replicas')) return undefined;
  const min = req.int('min_replicas') ?? 1;
  const problem = minReplicasProblem(req.family, min);
  if (problem) {
    req.add('min_replicas', problem);
    return undefined;
  }
  return min;
}

/** Omitted: equal to min_replicas (fixed size), and at least 1. */
function checkMaxReplicas(req: Req, min: number | undefined): number | undefined {
  if (req.isBad('max_replicas')) return undefined;
  const given = req.int('max_replicas');
  if (given === undefined) return min === undefined ? undefined : Math.max(min, 1);
  const problem = maxReplicasProblem(given, min);
  if (problem) {
    req.add('max_replicas', problem);
    return undefined;
  }
  return given;
}

/** `required`: the deployment scales on concurrency, whose target this is (another metric has autoscaling_target). */
function checkTarget(req: Req, field: string, min: number | undefined, max: number | undefined, required: boolean): number | null | undefined {
  if (req.isBad(field)) return undefined;
  const target = req.int(field);
  const problem = target === undefined ? undefined : targetProblem(field, target);
  if (problem) {
    req.add(field, problem);
    return undefined;
  }
  if (target === undefined && required && min !== undefined && max !== undefined && max > min) {
    req.add(field, targetRequired(field, max, min));
    return undefined;
  }
  return target ?? null;
}

function checkCooldown(req: Req): number | undefined {
  if (req.isBad('cooldown_period')) return undefined;
  const cooldown = req.int('cooldown_period') ?? DEFAULT_COOLDOWN;
  const problem = cooldownProblem(cooldown);
  if (problem) {
    req.add('cooldown_period', problem);
    return undefined;
  }
  return cooldown;
}

/**
 * General only: the replicas a new deployment starts with (absent: the default, 1 at min 0
 * else min — null here); a whole number up to max_replicas. Undefined after a problem.
 */
function checkInitialReplicas(req: Req, max: number | undefined): number | null | undefined {
  if (req.family !== 'general') return null;
  if (req.isBad('initial_replicas')) return undefined;
  const given = req.int('initial_replicas');
  if (given === undefined) return null;
  const problem = initialReplicasProblem(given, max);
  if (problem) {
    req.add('initial_replicas', problem);
    return undefined;
  }
  return given;
}

/** min/max/target/cooldown of general inference and of orchestrated aggregated (and a general deployment's initial replicas). */
export function checkScaling(req: Req): ScalingSpec | undefined {
  const min = checkMinReplicas(req);
  const max = checkMaxReplicas(req, min);
  const initial = checkInitialReplicas(req, max);
  const targetField = req.family === 'general' ? 'max_concurrency' : 'concurrency';
  const autoscaling = checkAutoscaling(req, { targetField, min, disaggregated: false });
  const target = checkTarget(req, targetField, min, max, requestedMetric(req) === 'concurrency');
  const cooldown = checkCooldown(req);
  if (min === undefined || max === undefined || target === undefined || cooldown === undefined || autoscaling === undefined || initial === undefined) return undefined;
  return { min_replicas: min, max_replicas: max, target_concurrency: target, cooldown_period: cooldown, pools: null, ...autoscaling, ...(initial === null ? {} : { initial_replicas: initial }) };
}

export function checkProtocol(req: Req): Protocol | undefined {
  const protocol = req.str('protocol') ?? 'http';
  if (protocol === 'http' || protocol === 'grpc') return protocol;
  req.add('protocol', 'protocol must be "http" or "grpc"');
  return undefined;
}

/**
 * `affinity` (the default) or `prefix_aware`. The prefix-aware policy reads chat completion
 * bodies, so it needs HTTP; `where` says what else must hold (the Frontend's aggregated mode).
 */
export function checkRoutingPolicy(req: Req, protocol: Protocol | undefined, where?: { ok: boolean; why: string }): RoutingPolicy | undefined {
  if (req.isBad('routing_policy')) return undefined;
  const policy = req.str('routing_policy') ?? 'affinity';
  if (!(ROUTING_POLICIES as readonly string[]).includes(policy)) {
    req.add('routing_policy', `routing_policy must be "affinity" or "prefix_aware", not "${policy}"`);
    return undefined;
  }
  if (policy === 'prefix_aware' && protocol === 'grpc') {
    req.add('routing_policy', 'routing_policy "prefix_aware" reads chat completion requests over HTTP; a protocol "grpc" deployment uses "affinity"');
    return undefined;
  }
  if (policy === 'prefix_aware' && where && !where.ok) {
    req.add('routing_policy', where.why);
    return undefined;
  }
  return policy as RoutingPolicy;
}

/** A secret by value: a string replaces, null or "" clears, absent keeps (undefined). */
export function plainSecret(req: Req, field: 'registry_password' | 'model_hub_token'): string | null | undefined {
  if (!req.has(field) || req.isBad(field)) return undefined;
  const v = req.str(field);
  return v === undefined || v === '' ? null : v;
}

/** The secret is set once this request is applied (given, or inherited and not cleared). */
export function secretWillBeSet(req: Req, field: 'registry_password' | 'model_hub_token', opts: Options): boolean {
  const plain = plainSecret(req, field);
  if (plain === undefined) return !req.has(field) && opts.inherited?.secrets[field] !== undefined;
  return plain !== null;
}

/** The secret environment changes of a draft's plainSecrets: none is no `env` key at all. */
export function secretEnvChanges(changes: Record<string, string | null>): { env?: Record<string, string | null> } {
  return Object.keys(changes).length > 0 ? { env: changes } : {};
}
