// Owns what an orchestrated deployment runs (docs/orchestrated.md), as pure functions: its components
// and their counts (one CPU-only Frontend; Workers within [min, max], or fixed Prefill and
// Decode pools — per revision while traffic splits between revisions), the replica request of each — the Frontend is `infergate frontend` reading
// the workers file the controller keeps; every worker is the reference engine serving the
// model, with the KV-transfer role of its pool — and the status rule: not ready while the
// Frontend is not ready, whatever the workers do (spec).

import { COMPONENT, FRONTEND_WORKERS_POLL_MS, poolOf } from '../domain/components.js';
import { appliedCount } from '../domain/traffic.js';
import path from 'node:path';
import { FRONTEND_IMAGE } from '../domain/image-map.js';
import { routingPolicyOf, type DeploymentRecord, type DeploymentStatus, type OrchestratedSpec } from '../domain/records.js';
import type { ReplicaSpec } from '../runtime/runtime.js';
import { splitReplicas, withoutReady } from './desired.js';

export const FRONTEND = COMPONENT.Frontend;
const WORKER_IMAGE = 'infergate/reference-engine';
/** Where a worker finds its model-hub credential: a 0600 file in its own root, never its env. */
const HUB_TOKEN_DIR = '/secrets';
const HUB_TOKEN_FILE = 'model-hub-token';

/**
 * Replicas per component of one revision. `split`: the revision is one of a traffic split,
 * its Workers scaled on their own (`autoscaled` is then its figure: desired.ts splitFigure).
 */
export function orchestratedDesired(d: DeploymentRecord, autoscaled?: number, split = false): Record<string, number> {
  if (d.spec.family !== 'orchestrated') return {};
  const off = d.paused ? 0 : null;
  if (d.spec.serving_mode === 'disaggregated') {
    const pools = d.scaling.pools ?? { prefill: 1, decode: 1 };
    return { [FRONTEND]: off ?? 1, [COMPONENT.Prefill]: off ?? pools.prefill, [COMPONENT.Decode]: off ?? pools.decode };
  }
  const { min_replicas: min, max_replicas: max } = d.scaling;
  const workers = split ? splitReplicas(d, autoscaled) : Math.min(max, Math.max(min, autoscaled ?? appliedCount(d, COMPONENT.Worker) ?? min));
  return { [FRONTEND]: off ?? 1, [COMPONENT.Worker]: off ?? workers };
}

/**
 * Ready only with a ready Frontend and workers to serve behind it; otherwise failing while a
 * replica of any component crash-loops (`failing`), else as a general deployment without a
 * ready replica.
 */
export function orchestratedStatus(d: DeploymentRecord, ready: Record<string, number>, desired: Record<string, number>, failing = false): DeploymentStatus {
  if (d.paused) return 'paused';
  const workers = d.spec.family === 'orchestrated' && d.spec.serving_mode === 'disaggregated' ? (ready.Prefill ?? 0) > 0 && (ready.Decode ?? 0) > 0 : (ready.Worker ?? 0) > 0;
  if ((ready[FRONTEND] ?? 0) > 0 && workers) return 'ready';
  if ((desired[FRONTEND] ?? 0) === 0 && (d.status === 'ready' || d.status === 'not_ready')) return d.status;
  const status = withoutReady(d, false, failing);
  return status === 'failed' ? 'pending' : status;
}

/** vLLM worker arguments the simulator takes: some map onto its knobs, some it accepts and ignores. */
const VLLM_TO_ENGINE: Record<string, string> = { '--max-num-seqs': '--max-running' };

function workerArgs(extra: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < extra.length; i++) {
    const arg = extra[i] as string;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const mapped = VLLM_TO_ENGINE[flag];
    if (mapped) {
      out.push(mapped, inline ?? (extra[++i] as string));
      continue;
    }
    // Anything else reaches the engine as given: one it does not support stops the worker
    // from starting, with a log line that names it (spec: "an unsupported extra argument can
    // prevent a worker from starting").
    out.push(arg);
  }
  return out;
}

export function orchestratedRequest(
  d: DeploymentRecord,
  spec: OrchestratedSpec,
  component: string,
  revision: number,
  name: string,
  workersFile: string,
  hubToken: string | null,
  /** The spec's secret environment variables, unsealed: the workers' environment, like env. */
  secretEnv: Record<string, string>,
): ReplicaSpec {
  const base = {
    name,
    deploymentId: d.id,
    revision,
    component,
    tag: 'latest',
    containerPort: 8000,
    protocol: 'http' as const,
    healthPath: '/health',
    metricsPort: null,
    metricsPath: null,
    logging: spec.enable_logging,
  };
  if (component === FRONTEND) {
    const alias = spec.served_model_name !== null ? ['--served-model-name', spec.served_model_name] : [];
    const protocol = spec.protocol === 'grpc' ? ['--protocol', 'grpc'] : [];
    // The prefix-aware policy chooses among aggregated Workers inside the Frontend.
    const routing = routingPolicyOf(spec) === 'prefix_aware' ? ['--routing-policy', 'prefix-aware'] : [];
    return {
      ...base,
      // A gRPC Frontend is probed by TCP connect, like every gRPC replica (spec).
      protocol: spec.protocol,
      image: FRONTEND_IMAGE,
      command: ['--mode', spec.serving_mode, '--model', spec.model, ...alias, ...protocol, ...routing, '--workers-file', workersFile, '--poll-ms', String(FRONTEND_WORKERS_POLL_MS)],
      env: {},
      configFile: null,
      modelCaching: false,
      // The workers file's directory, read-only: the only part of the data directory it sees.
      readOnlyPaths: [path.dirname(workersFile)],
    };
  }
  const pool = poolOf(component);
  const role = pool === null ? [] : ['--kv-role', pool];
  const hub = hubToken !== null ? ['--hub-token-file', `.${HUB_TOKEN_DIR}/${HUB_TOKEN_FILE}`] : [];
  return {
    ...base,
    image: WORKER_IMAGE,
    tag: 'openai',
    // Workers answer with the served name too, so what clients see in a response's `model` is
    // the name they sent; last, so extra_args cannot make a worker answer under another name.
    command: ['--model', spec.model, ...role, ...hub, ...workerArgs(spec.extra_args), ...(spec.served_model_name !== null ? ['--served-model-name', spec.served_model_name] : [])],
    env: { ...spec.env, ...secretEnv },
    configFile: hubToken !== null ? { filename: HUB_TOKEN_FILE, mount_path: HUB_TOKEN_DIR, content: hubToken } : null,
    modelCaching: spec.enable_model_caching,
  };
}
