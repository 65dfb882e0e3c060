// Owns the requests built from a stored deployment: toRequest (a record as the flat body a
// client would send), PATCH (the body merged over it, with name, cluster and serving mode
// immutable) and clone (the source's request plus overrides), and what a PATCH changed.
// Both go through the same pipeline as create, so a stored deployment obeys the create rules.
// Sealed secrets never enter the request: the body's secret_env changes are laid over them
// (a name absent keeps its sealed value), so they merge name by name.

import type { FieldProblem } from '../../core/errors.js';
import { autoscalingMetricOf } from '../autoscaling-signal.js';
import { registryMove } from '../registry-hosts.js';
import { rolloutModeOf } from '../traffic.js';
import { containerCapabilitiesOf } from '../container-capabilities.js';
import { limitsOf, routingPolicyOf, type DeploymentRecord, type Family, type DeploymentSpec, type EndpointAuth, type EndpointLimits, type GeneralSpec, type OrchestratedSpec, type ScalingSpec, type SealedSecrets } from '../records.js';
import { AGGREGATED_FIELDS, POOLS, type PoolName } from './orchestrated-rules.js';
import { notAnObject, validateRequest, withPresetDefaults } from './pipeline.js';
import { isObject, type Obj } from './shape.js';
import { firstRevision, pinnedForManualRollout, trafficProblems, withNextRevision } from './traffic-rules.js';
import type { DeploymentDraft, Options, PatchResult, Validation, ValidationContext } from './types.js';

/**
 * A stored deployment as a flat request (no secrets, no token value), as clients would send it.
 * Without `traffic`: it names this deployment's revisions, so a clone starts without it and a
 * PATCH keeps the stored list unless its body gives one.
 */
export function toRequest(record: DeploymentRecord): Record<string, unknown> {
  const spec =
    record.spec.family === 'general' ? generalRequest(record.spec, record.scaling) : orchestratedRequest(record.spec, record.scaling);
  return withoutNulls({
    name: record.name,
    cluster_id: record.cluster_id,
    ...spec,
    ...authRequest(record.auth),
    ...limitsRequest(limitsOf(record)),
    rollout_mode: rolloutModeOf(record),
  });
}

/** The metric fields as a request carries them: none for concurrency. */
function autoscalingRequest(scaling: ScalingSpec): Obj {
  return { autoscaling_metric: scaling.autoscaling_metric, autoscaling_target: scaling.autoscaling_target };
}

function generalRequest(spec: GeneralSpec, scaling: ScalingSpec): Obj {
  const { family: _family, secrets: _secrets, ...fields } = spec;
  return {
    ...structuredClone(fields),
    min_replicas: scaling.min_replicas,
    max_replicas: scaling.max_replicas,
    initial_replicas: scaling.initial_replicas,
    max_concurrency: scaling.target_concurrency,
    cooldown_period: scaling.cooldown_period,
    ...autoscalingRequest(scaling),
  };
}

function orchestratedRequest(spec: OrchestratedSpec, scaling: ScalingSpec): Obj {
  const { family: _family, secrets: _secrets, worker_pools: pools, hardware_instance_id: hardware, ...fields } = spec;
  const common = structuredClone(fields);
  if (spec.serving_mode === 'disaggregated' && pools) {
    const pool = (p: PoolName) => ({ hardware_instance_id: pools[p].hardware_instance_id, replicas: scaling.pools?.[p] ?? 1 });
    return { ...common, worker_pools: { prefill: pool('prefill'), decode: pool('decode') } };
  }
  return {
    ...common,
    hardware_instance_id: hardware,
    min_replicas: scaling.min_replicas,
    max_replicas: scaling.max_replicas,
    concurrency: scaling.target_concurrency,
    cooldown_period: scaling.cooldown_period,
    ...autoscalingRequest(scaling),
  };
}

function authRequest(auth: EndpointAuth): Obj {
  return { private_endpoint: auth.private_endpoint, client_certificate_id: auth.client_certificate_id };
}

function limitsRequest(limits: EndpointLimits): Obj {
  return {
    max_request_body_bytes: limits.max_request_body_bytes,
    first_response_timeout_seconds: limits.first_response_timeout_seconds,
    rate_limit: limits.rate_limit === null ? null : { ...limits.rate_limit },
    // Stored complete, so the request carries every key and re-validates to the same value.
    flow_control: limits.flow_control === null ? null : structuredClone(limits.flow_control),
  };
}

const withoutNulls = (o: Obj): Obj => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));

/**
 * `body` over `base`; worker_pools merge per pool, so a PATCH may carry only decode.replicas.
 * A preset named in the body fills its fields over the base (the body's own fields still win).
 */
function mergeRequest(base: Obj, body: Obj, family: Family): Obj {
  const merged: Obj = { ...base, ...withPresetDefaults(family, body) };
  if (Object.hasOwn(body, 'worker_pools')) merged.worker_pools = mergePools(base.worker_pools, body.worker_pools);
  return merged;
}

function mergePools(base: unknown, patch: unknown): unknown {
  if (!isObject(base) || !isObject(patch)) return patch;
  const merged: Obj = { ...base, ...patch };
  for (const pool of POOLS) {
    const [b, p] = [base[pool], patch[pool]];
    if (isObject(b) && isObject(p)) merged[pool] = { ...b, ...p };
  }
  return merged;
}

const IMMUTABLE = ['name', 'cluster_id', 'serving_mode'] as const;

function immutableProblems(current: DeploymentRecord, body: Obj): FieldProblem[] {
  const stored: Record<(typeof IMMUTABLE)[number], unknown> = {
    name: current.name,
    cluster_id: current.cluster_id,
    serving_mode: current.spec.family === 'orchestrated' ? current.spec.serving_mode : undefined,
  };
  const clone = `/deployments/${current.family}/${current.id}/clone`;
  const problems: FieldProblem[] = [];
  for (const field of IMMUTABLE) {
    if (stored[field] === undefined || !Object.hasOwn(body, field) || body[field] === stored[field]) continue;
    problems.push({
      field,
      code: 'invalid_field',
      message: `${field} cannot be changed on an existing deployment; clone it instead (POST ${clone} with a new name and the new ${field}) and delete this one`,
    });
  }
  return problems;
}

/**
 * `private_endpoint: false` (or null, its default) in a PATCH or clone body means "no client
 * certificate": the stored one (or the source's) is unbound, unless the same body names a
 * certificate in client_certificate_id. Otherwise the answer would say false while the
 * certificate still authenticates. The id unbound, or null.
 */
function releasedCertificate(from: DeploymentRecord, body: Obj): number | null {
  if (!Object.hasOwn(body, 'private_endpoint') || body.private_endpoint === true || body.private_endpoint === undefined) return null;
  if (Object.hasOwn(body, 'client_certificate_id') && body.client_certificate_id !== undefined) return null;
  return from.auth.client_certificate_id;
}

export function validatePatch(current: DeploymentRecord, body: unknown, ctx: ValidationContext): Validation<PatchResult> {
  if (!isObject(body)) return notAnObject();
  const merged = mergeRequest(toRequest(current), body, current.family);
  // The stored values stand; a different one in the body is reported by immutableProblems.
  merged.name = current.name;
  merged.cluster_id = current.cluster_id;
  if (current.spec.family === 'orchestrated') merged.serving_mode = current.spec.serving_mode;
  const released = releasedCertificate(current, body);
  if (released !== null) delete merged.client_certificate_id;
  const move = dropCredentialsOfOtherHost(current.spec, merged, body);
  const opts: Options = {
    mode: 'patch',
    inherited: { token_id: current.auth.token_id, secrets: move.secrets },
    checkCertificate: body.client_certificate_id !== undefined && body.client_certificate_id !== null,
    checkCredentialHost: Object.hasOwn(body, 'registry_credential_id'),
    releasedCertificate: released,
  };
  dropTargetOfOtherMetric(merged, body, autoscalingMetricOf(current.scaling));
  const result = validateRequest(current.family, merged, ctx, opts, [...immutableProblems(current, body), ...move.problems]);
  if (!result.ok) return result;
  const draft = result.value;
  const specChanged = !sameSpec(draft.spec, current.spec) || secretsChange(draft.plainSecrets, current.spec.secrets);
  if (Object.hasOwn(body, 'traffic') && body.traffic !== undefined) {
    // Checked against the deployment as this request leaves it: `latest` and N+1 name the revision its spec change makes.
    const problems = trafficProblems(draft.traffic, specChanged ? withNextRevision(current) : current, ctx);
    if (problems.length > 0) return { ok: false, problems };
  } else if (specChanged && draft.rollout_mode === 'manual') {
    draft.traffic = pinnedForManualRollout(current);
  } else {
    draft.traffic = current.traffic ?? null;
  }
  return {
    ok: true,
    value: {
      draft,
      specChanged,
      scalingChanged: !deepEqual(draft.scaling, current.scaling),
      // limitsOf: a key an older record lacks is null, not a change.
      limitsChanged: !deepEqual(draft.limits, limitsOf(current)),
      authChanged:
        draft.auth.token_value !== null ||
        draft.auth.token_id !== current.auth.token_id ||
        draft.auth.client_certificate_id !== current.auth.client_certificate_id ||
        draft.auth.private_endpoint !== current.auth.private_endpoint,
      trafficChanged: !deepEqual(draft.traffic, current.traffic ?? null),
      rolloutModeChanged: draft.rollout_mode !== rolloutModeOf(current),
    },
  };
}

/**
 * A body that moves to another autoscaling metric without naming a target drops the one it
 * inherits: that target counted something else (waiting requests, percent, ms), so the new
 * metric asks for its own, or needs none (concurrency).
 */
function dropTargetOfOtherMetric(merged: Obj, body: Obj, inherited: string): void {
  if (!Object.hasOwn(body, 'autoscaling_metric') || Object.hasOwn(body, 'autoscaling_target')) return;
  if ((body.autoscaling_metric ?? 'concurrency') !== inherited) delete merged.autoscaling_target;
}

/**
 * body = {name, ...overrides} over the source's request. The source's auth binding and sealed
 * secrets carry over unless overridden (plainSecrets keys absent: the caller copies them).
 * Switching serving_mode drops the source's fields of the other mode.
 */
export function validateClone(source: DeploymentRecord, body: unknown, ctx: ValidationContext): Validation<DeploymentDraft> {
  if (!isObject(body)) return notAnObject();
  const { name: _name, ...base } = toRequest(source);
  const switchesMode = Object.hasOwn(body, 'serving_mode') && (body.serving_mode ?? 'aggregated') !== base.serving_mode;
  if (source.spec.family === 'orchestrated' && switchesMode) {
    const drop =
      source.spec.serving_mode === 'disaggregated' ? ['worker_pools'] : [...AGGREGATED_FIELDS.map(([f]) => f), 'autoscaling_metric', 'autoscaling_target'];
    for (const field of drop) delete base[field];
  }
  const released = releasedCertificate(source, body);
  if (released !== null || dropsSourceCertificate(source, body)) delete base.client_certificate_id;
  const merged = mergeRequest(base, body, source.family);
  dropTargetOfOtherMetric(merged, body, autoscalingMetricOf(source.scaling));
  const move = dropCredentialsOfOtherHost(source.spec, merged, body);
  const result = validateRequest(
    source.family,
    merged,
    ctx,
    {
      mode: 'clone',
      inherited: { token_id: source.auth.token_id, secrets: move.secrets },
      checkCertificate: true,
      releasedCertificate: released,
    },
    move.problems,
  );
  return withTrafficChecked(result, ctx);
}

/**
 * A clone or PATCH whose image is on another registry host than the stored (or source)
 * deployment's does not inherit its registry credentials: those of host A are never sent to
 * host B. Each inherited field the body does not give again is taken out of the merged request
 * (the registry password is cleared, so the sealed one is not copied); a body that names none
 * of the three fields gets a problem per inherited field, saying to give B's or null. The
 * sealed secrets the request may still inherit.
 */
function dropCredentialsOfOtherHost(spec: DeploymentSpec, merged: Obj, body: Obj): { secrets: SealedSecrets; problems: FieldProblem[] } {
  if (spec.family !== 'general') return { secrets: spec.secrets, problems: [] };
  const toImage = typeof merged.image === 'string' ? merged.image : spec.image;
  const held = {
    registry_username: spec.registry_username,
    has_registry_password: spec.secrets.registry_password !== undefined,
    registry_credential_id: spec.registry_credential_id ?? null,
  };
  const move = registryMove(spec.image, toImage, held, body);
  if (move.moved === null) return { secrets: spec.secrets, problems: [] };
  for (const field of move.dropped) if (!Object.hasOwn(body, field)) merged[field] = null;
  const { registry_password: _dropped, ...secrets } = spec.secrets;
  return { secrets, problems: move.problems.map((p) => ({ ...p, code: 'invalid_field' as const })) };
}

/** A new deployment's list (create, clone) names its only revision, 1, or `latest`. */
export function withTrafficChecked(result: Validation<DeploymentDraft>, ctx: ValidationContext): Validation<DeploymentDraft> {
  if (!result.ok) return result;
  const problems = trafficProblems(result.value.traffic, firstRevision(result.value.name), ctx);
  return problems.length > 0 ? { ok: false, problems } : result;
}

/**
 * A private clone gets its own certificate, not the source's (the one issued for a private
 * source, or any when the clone asks for private_endpoint), unless the body names one. The
 * binding is dropped before validation, so a revoked source certificate does not stand in the
 * way of a clone that will never use it.
 */
function dropsSourceCertificate(source: DeploymentRecord, body: Obj): boolean {
  if (Object.hasOwn(body, 'client_certificate_id')) return false;
  return source.auth.private_endpoint || body.private_endpoint === true;
}

function sameSpec(a: DeploymentSpec, b: DeploymentSpec): boolean {
  // A record from before routing_policy existed has none: it means affinity, not a change;
  // likewise one from before container_capabilities means none.
  const { secrets: _a, ...left } = { ...a, ...defaultsOf(a) };
  const { secrets: _b, ...right } = { ...b, ...defaultsOf(b) };
  return deepEqual(left, right);
}

function defaultsOf(spec: DeploymentSpec): Obj {
  return spec.family === 'general' ? { routing_policy: routingPolicyOf(spec), container_capabilities: containerCapabilitiesOf(spec) } : { routing_policy: routingPolicyOf(spec) };
}

/**
 * A secret given is a change (its sealed value cannot be compared here), and so is removing
 * one that is stored; removing one that is not is nothing. Secret environment variables count
 * one by one, like registry_password.
 */
function secretsChange(plain: DeploymentDraft['plainSecrets'], sealed: SealedSecrets): boolean {
  const changes = (v: string | null | undefined, stored: string | undefined) => typeof v === 'string' || (v === null && stored !== undefined);
  if ((['registry_password', 'model_hub_token'] as const).some((key) => changes(plain[key], sealed[key]))) return true;
  return Object.entries(plain.env ?? {}).some(([name, v]) => changes(v, sealed.env?.[name]));
}

/** Structural equality of JSON values; object key order does not matter. */
function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a).filter((k) => a[k] !== undefined);
  const otherKeys = Object.keys(b).filter((k) => b[k] !== undefined);
  return keys.length === otherKeys.length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}
