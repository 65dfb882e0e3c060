// Owns the components of a deployment — their names and the rules about them — in one place:
// which components each family and serving mode has (spec: "Components reported per
// deployment and revision"), which one the gateway routes requests to, which one the
// autoscaler moves, which run on a GPU hardware instance, the worker pool (and KV role) of a
// disaggregated worker, and how many replicas the spec asks of each. Pure.

import type { DeploymentSpec, ScalingSpec } from './records.js';

export const COMPONENT = {
  /** Every replica of a general deployment. */
  Replica: 'Replica',
  /** The orchestrated family's CPU-only request router: one pod. */
  Frontend: 'Frontend',
  /** Aggregated GPU workers (prompt processing and token generation). */
  Worker: 'Worker',
  /** Disaggregated GPU prompt-processing workers. */
  Prefill: 'Prefill',
  /** Disaggregated GPU token-generation workers. */
  Decode: 'Decode',
} as const;

export type ComponentName = (typeof COMPONENT)[keyof typeof COMPONENT];

/**
 * How often an orchestrated Frontend re-reads its workers file (the controller starts it with
 * this `--poll-ms`). A worker leaving the file is stopped only after its Frontends have had
 * time to read the file without it (the controller's drain), so both read it from here.
 */
export const FRONTEND_WORKERS_POLL_MS = 300;

type Shaped = { spec: Pick<DeploymentSpec, 'family'> & { serving_mode?: string } };

const disaggregated = (d: Shaped): boolean => d.spec.family === 'orchestrated' && d.spec.serving_mode === 'disaggregated';

/** The components a deployment has, in the order they are reported. */
export function componentsOf(d: Shaped): ComponentName[] {
  if (d.spec.family === 'general') return [COMPONENT.Replica];
  return disaggregated(d) ? [COMPONENT.Frontend, COMPONENT.Prefill, COMPONENT.Decode] : [COMPONENT.Frontend, COMPONENT.Worker];
}

/** Where the gateway sends requests: every replica (general) or the Frontend, which routes to the workers itself. */
export function routedComponent(d: Shaped): ComponentName {
  return d.spec.family === 'general' ? COMPONENT.Replica : COMPONENT.Frontend;
}

/** The component the autoscaler moves; null when the deployment's pools are fixed (disaggregated). */
export function scaledComponent(d: Shaped): ComponentName | null {
  if (d.spec.family === 'general') return COMPONENT.Replica;
  return disaggregated(d) ? null : COMPONENT.Worker;
}

/** Each replica costs one whole hardware instance: everything but the CPU-only Frontend. */
export function usesGpuInstance(component: string): boolean {
  return component !== COMPONENT.Frontend;
}

/** The worker pool (and vLLM KV role) of a disaggregated worker; null for other components. */
export function poolOf(component: string): 'prefill' | 'decode' | null {
  if (component === COMPONENT.Prefill) return 'prefill';
  if (component === COMPONENT.Decode) return 'decode';
  return null;
}

/** Replicas the spec asks of a component before the controller has decided: min, one Frontend, the pool sizes. */
export function specifiedReplicas(d: Shaped & { scaling: Pick<ScalingSpec, 'min_replicas' | 'pools'> }, component: string): number {
  if (component === COMPONENT.Frontend) return 1;
  const pool = poolOf(component);
  if (pool !== null) return d.scaling.pools?.[pool] ?? 0;
  return d.scaling.min_replicas;
}

