// Owns the orchestrated-inference family: the model, the serving mode and its topology
// (aggregated: one autoscaled Worker pool at the top level; disaggregated: fixed-size
// Prefill and Decode pools in worker_pools), and the OrchestratedSpec draft they produce.

import type { Cluster } from '../catalog.js';
import type { OrchestratedSpec, ScalingSpec, ServingMode } from '../records.js';
import { checkLimits } from './limits-rules.js';
import { checkAuth, checkAnnotations, checkEnvironment } from './auth-and-env-rules.js';
import {
  checkCluster,
  checkHardwareId,
  checkName,
  checkProtocol,
  checkRoutingPolicy,
  checkScaling,
  checkTopLevelHardware,
  DEFAULT_COOLDOWN,
  need,
  plainSecret,
  secretEnvChanges,
} from './common-rules.js';
import { checkAutoscaling } from './autoscaling-rules.js';
import { isObject, kindOf, type Req } from './shape.js';
import { checkRolloutMode, checkTraffic } from './traffic-rules.js';
import type { DeploymentDraft, Options, ValidationContext } from './types.js';
import { MODEL_REQUIRED, modelProblem, SERVED_MODEL_NAME_EMPTY } from './field-rules.js';

interface Topology {
  hardware_instance_id: number | null;
  worker_pools: OrchestratedSpec['worker_pools'];
  scaling: ScalingSpec;
}

/** Top-level fields of the aggregated mode, and what a disaggregated request sets instead. */
export const AGGREGATED_FIELDS: [string, string][] = [
  ['hardware_instance_id', 'each pool names its own worker_pools.<pool>.hardware_instance_id'],
  ['min_replicas', 'pool sizes are fixed: set worker_pools.prefill.replicas and worker_pools.decode.replicas'],
  ['max_replicas', 'pool sizes are fixed: set worker_pools.prefill.replicas and worker_pools.decode.replicas'],
  ['concurrency', 'disaggregated pools are fixed size and do not autoscale'],
  ['cooldown_period', 'disaggregated pools are fixed size and do not autoscale'],
];

export const POOLS = ['prefill', 'decode'] as const;
export type PoolName = (typeof POOLS)[number];
const POOL_FIELDS = ['hardware_instance_id', 'replicas'];
const POOL_AUTOSCALING = ['min_replicas', 'max_replicas', 'concurrency', 'cooldown_period'];

function checkModel(req: Req): string | undefined {
  if (!req.required('model', MODEL_REQUIRED)) return undefined;
  const model = req.str('model');
  const problem = model === undefined ? undefined : modelProblem(model);
  if (problem) {
    req.add('model', problem);
    return undefined;
  }
  return model;
}

function checkServingMode(req: Req): ServingMode | undefined {
  if (req.isBad('serving_mode')) return undefined;
  const mode = req.str('serving_mode') ?? 'aggregated';
  if (mode === 'aggregated' || mode === 'disaggregated') return mode;
  req.add('serving_mode', 'serving_mode must be "aggregated" or "disaggregated"');
  return undefined;
}

function checkAggregated(req: Req, cluster: Cluster | undefined): Topology | undefined {
  if (req.given('worker_pools')) {
    req.add(
      'worker_pools',
      'worker_pools is only accepted when serving_mode is disaggregated (serving_mode defaults to aggregated, ' +
        'which sets hardware_instance_id and min_replicas/max_replicas at the top level)',
    );
  }
  const hardware = checkTopLevelHardware(req, cluster);
  const scaling = checkScaling(req);
  if (hardware === undefined || scaling === undefined) return undefined;
  return { hardware_instance_id: hardware, worker_pools: null, scaling };
}

/** An integer inside a pool object, which checkShape does not reach. */
function poolInt(req: Req, field: string, value: unknown, missing: string): number | undefined {
  if (value === undefined || value === null) {
    req.add(field, `${field} is required: ${missing}`);
    return undefined;
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    req.add(field, `${field} must be an integer, got ${kindOf(value)}`);
    return undefined;
  }
  return value;
}

function checkPool(req: Req, pool: PoolName, raw: unknown, cluster: Cluster | undefined): { hardware: number; replicas: number } | undefined {
  const at = `worker_pools.${pool}`;
  if (raw === undefined || raw === null) {
    req.add(at, `${at} is required: a disaggregated deployment needs both a prefill and a decode pool, each with ${POOL_FIELDS.join(' and ')}`);
    return undefined;
  }
  if (!isObject(raw)) {
    req.add(at, `${at} must be an object {hardware_instance_id, replicas}, got ${kindOf(raw)}`);
    return undefined;
  }
  for (const key of Object.keys(raw)) {
    if (POOL_AUTOSCALING.includes(key)) {
      const why = 'pools are fixed size, with no independent Prefill/Decode autoscaling';
      req.add(`${at}.${key}`, `${at}.${key} is not accepted: ${why}; set ${at}.replicas`);
    } else if (!POOL_FIELDS.includes(key)) {
      req.add(`${at}.${key}`, `unknown field "${at}.${key}": a pool has hardware_instance_id and replicas`);
    }
  }
  const hwId = poolInt(req, `${at}.hardware_instance_id`, raw.hardware_instance_id, `the hardware type of the ${pool} replicas`);
  const hardware = hwId === undefined ? undefined : checkHardwareId(req, `${at}.hardware_instance_id`, hwId, cluster);
  const replicas = poolInt(req, `${at}.replicas`, raw.replicas, `the fixed number of ${pool} replicas, at least 1`);
  if (replicas !== undefined && replicas < 1) req.add(`${at}.replicas`, `${at}.replicas must be at least 1`);
  if (hardware === undefined || replicas === undefined || replicas < 1) return undefined;
  return { hardware, replicas };
}

/**
 * Disaggregated scaling lives in `pools`; min_replicas = max_replicas = 1, no target and the
 * default cooldown are placeholders that nothing reads (the pools never autoscale).
 */
function checkDisaggregated(req: Req, cluster: Cluster | undefined): Topology | undefined {
  for (const [field, hint] of AGGREGATED_FIELDS) {
    if (req.given(field)) {
      const where = 'is not accepted at the top level when serving_mode is disaggregated';
      req.add(field, `${field} is an aggregated field and ${where}: ${hint}`);
    }
  }
  if (req.isBad('worker_pools')) return undefined;
  const pools = req.obj('worker_pools');
  if (pools === undefined) {
    req.add(
      'worker_pools',
      'worker_pools is required when serving_mode is disaggregated: give prefill and decode pools, each with hardware_instance_id and replicas',
    );
    return undefined;
  }
  for (const key of Object.keys(pools)) {
    if (!(POOLS as readonly string[]).includes(key)) {
      req.add(`worker_pools.${key}`, `unknown field "worker_pools.${key}": worker_pools has only prefill and decode`);
    }
  }
  const prefill = checkPool(req, 'prefill', pools.prefill, cluster);
  const decode = checkPool(req, 'decode', pools.decode, cluster);
  const autoscaling = checkAutoscaling(req, { targetField: 'concurrency', min: undefined, disaggregated: true });
  if (!prefill || !decode || autoscaling === undefined) return undefined;
  return {
    hardware_instance_id: null,
    worker_pools: { prefill: { hardware_instance_id: prefill.hardware }, decode: { hardware_instance_id: decode.hardware } },
    scaling: {
      min_replicas: 1,
      max_replicas: 1,
      target_concurrency: null,
      cooldown_period: DEFAULT_COOLDOWN,
      pools: { prefill: prefill.replicas, decode: decode.replicas },
    },
  };
}

function checkServedModelName(req: Req): string | null {
  const served = req.str('served_model_name');
  if (served !== undefined && served.trim() === '') {
    req.add('served_model_name', SERVED_MODEL_NAME_EMPTY);
  }
  return served ?? null;
}

export function validateOrchestrated(req: Req, ctx: ValidationContext, opts: Options): DeploymentDraft | undefined {
  const name = checkName(req, ctx, opts);
  const cluster = checkCluster(req, ctx);
  const model = checkModel(req);
  const mode = checkServingMode(req);
  const topology =
    mode === 'disaggregated' ? checkDisaggregated(req, cluster) : mode === 'aggregated' ? checkAggregated(req, cluster) : undefined;
  const auth = checkAuth(req, ctx, opts);
  const servedModelName = checkServedModelName(req);
  const protocol = checkProtocol(req);
  const routingPolicy = checkRoutingPolicy(req, protocol, {
    ok: mode !== 'disaggregated',
    why: 'routing_policy "prefix_aware" chooses among aggregated Workers; a disaggregated deployment routes prefill then decode, and uses "affinity"',
  });
  // The platform supplies the runtime: the Frontend and workers are infergate's own engine.
  const environment = checkEnvironment(req, ctx, auth.token_value ?? undefined, opts, true);
  const annotations = checkAnnotations(req);
  const limits = checkLimits(req);
  const traffic = checkTraffic(req);
  const rolloutMode = checkRolloutMode(req);
  if (req.problems.length > 0) return undefined;
  const shape = need(topology);
  const spec: OrchestratedSpec = {
    family: 'orchestrated',
    model: need(model),
    serving_mode: need(mode),
    hardware_instance_id: shape.hardware_instance_id,
    worker_pools: shape.worker_pools,
    served_model_name: servedModelName,
    protocol: need(protocol),
    routing_policy: need(routingPolicy),
    extra_args: req.strs('extra_args') ?? [],
    env: environment.env,
    annotations,
    enable_logging: req.bool('enable_logging') ?? true,
    enable_model_caching: req.bool('enable_model_caching') ?? false,
    secrets: {},
  };
  const hubToken = plainSecret(req, 'model_hub_token');
  const plainSecrets = { ...(hubToken === undefined ? {} : { model_hub_token: hubToken }), ...secretEnvChanges(environment.secretEnv) };
  return {
    family: 'orchestrated',
    name: need(name),
    cluster_id: need(cluster).id,
    spec,
    plainSecrets,
    scaling: shape.scaling,
    auth,
    limits,
    traffic: need(traffic),
    rollout_mode: need(rolloutMode),
  };
}
