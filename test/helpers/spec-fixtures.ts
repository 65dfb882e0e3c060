// Test fixtures: complete deployment specs and create-request bodies with neutral defaults,
// overridable per test, so tests do not each spell out every field.

import type { GeneralSpec, OrchestratedSpec } from '../../src/domain/records.js';

export function generalSpec(o: Partial<GeneralSpec> = {}): GeneralSpec {
  return {
    family: 'general',
    preset: null,
    hardware_instance_id: 1,
    image: 'infergate/reference-engine',
    tag: 'openai',
    container_port: 8000,
    protocol: 'http',
    health_check_path: '/',
    registry_username: null,
    enable_logging: true,
    enable_model_caching: false,
    session_affinity: false,
    command: [],
    metrics_port: null,
    metrics_path: null,
    env: {},
    config_file: null,
    annotations: {},
    secrets: {},
    ...o,
  };
}

export function orchestratedSpec(o: Partial<OrchestratedSpec> = {}): OrchestratedSpec {
  return {
    family: 'orchestrated',
    model: 'org/model',
    serving_mode: 'aggregated',
    hardware_instance_id: null,
    worker_pools: null,
    served_model_name: null,
    protocol: 'http',
    extra_args: [],
    env: {},
    annotations: {},
    enable_logging: true,
    enable_model_caching: false,
    secrets: {},
    ...o,
  };
}

/** A disaggregated create body as in the spec's example. */
export function disaggregatedBody(name: string, token: string): Record<string, unknown> {
  return {
    name,
    cluster_id: 1,
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    serving_mode: 'disaggregated',
    worker_pools: {
      prefill: { hardware_instance_id: 1, replicas: 1 },
      decode: { hardware_instance_id: 2, replicas: 2 },
    },
    endpoint_bearer_token: token,
    enable_logging: true,
  };
}

export function generalBody(name: string, token: string): Record<string, unknown> {
  return {
    name,
    cluster_id: 1,
    hardware_instance_id: 1,
    image: 'infergate/reference-engine',
    tag: 'openai',
    container_port: 8000,
    min_replicas: 1,
    max_replicas: 2,
    max_concurrency: 4,
    endpoint_bearer_token: token,
  };
}
