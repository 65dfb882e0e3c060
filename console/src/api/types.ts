// Owns the shapes of the control API's answers as the console reads them (docs/control-api.md).
// Only what the console shows is typed; everything else stays in the loose records.

import type { Priority } from '../../../src/domain/priority.js';
import type { AutoscalingMetric } from '../../../src/domain/autoscaling-signal.js';
import type { RolloutMode } from '../../../src/domain/traffic.js';

/** An X-Priority class: a credential's cap (max_priority) names one. */
export type { Priority };

export type Family = 'general' | 'orchestrated';
export type { AutoscalingMetric, RolloutMode };
export type Status = 'pending' | 'ready' | 'not_ready' | 'paused' | 'failed' | 'failing' | 'deleting';

export interface ComponentCounts {
  [component: string]: { ready: number; desired: number };
}

export interface RevisionSummary {
  revision: number;
  created_at: string;
  reason: string;
  source_revision: number | null;
  status: string;
  failure_reason: string | null;
  /** Its share of the traffic (0 when it takes none); absent from a server before traffic existed. */
  percent?: number;
  /** Traffic tags naming it: each gives it the host `<tag>-<name>.<domain>`. */
  tags?: string[];
}

/** One entry of a deployment's traffic list as the API shows it: `revision` resolved even for `latest`. */
export interface TrafficEntry {
  revision: number;
  latest: boolean;
  percent: number;
  tag: string | null;
  /** The tag host's URL; null without a tag. */
  url: string | null;
}

/** A revision that runs replicas of the served component, with its share. */
export interface RevisionReplicas {
  revision: number;
  percent: number;
  tags: string[];
  ready: number;
  desired: number;
}

/** GET …/revision-metrics: what the gateways measured of each revision over the window. */
export interface RevisionMetricsAnswer {
  window_seconds: number;
  revisions: Array<{
    revision: number;
    percent: number;
    requests: number;
    errors: number;
    ttft_p50_ms: number | null;
    ttft_p99_ms: number | null;
    tokens_per_second: number;
  }>;
}

export interface Rollout {
  revision: number;
  from_revision: number | null;
  state: 'in_progress' | 'complete' | 'failed';
  reason: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface Pool {
  hardware_instance_id: number;
  replicas: number;
}

export interface Deployment {
  id: number;
  family: Family;
  name: string;
  cluster_id: number;
  status: Status;
  /** Why it is not ready, or not all its replicas are, in words ("pulling <image>: 45%"); null when there is nothing to say. */
  status_reason: string | null;
  paused: boolean;
  endpoint_url: string;
  /** The path address's base URL, e.g. https://localhost:8443/endpoints/chat (no DNS needed); null for gRPC. */
  endpoint_path_url: string | null;
  /** What clients send as `model`; null when the API cannot tell (Ollama, an image's own command). */
  served_model?: string | null;
  revision: number;
  serving_revision: number | null;
  rollout: Rollout | null;
  components: ComponentCounts;
  revisions: RevisionSummary[];
  /** How requests split between revisions; the default list (everything to the newest) when traffic_is_default. */
  traffic?: TrafficEntry[];
  traffic_is_default?: boolean;
  rollout_mode?: RolloutMode;
  autoscaling_metric?: AutoscalingMetric;
  /** The target of a metric other than concurrency (whose target is max_concurrency / concurrency). */
  autoscaling_target?: number | null;
  /** One entry per revision running replicas of the served component. */
  revision_replicas?: RevisionReplicas[];
  endpoint_token_id: number | null;
  client_certificate_id: number | null;
  private_endpoint: boolean;
  created_at: string;
  updated_at: string;
  hardware_instance_id?: number | null;
  min_replicas?: number;
  max_replicas?: number;
  cooldown_period?: number;
  protocol?: string;
  enable_logging?: boolean;
  enable_model_caching?: boolean;
  /** Plain environment variables; secret ones are never here. */
  env?: Record<string, string>;
  /** Names of the secret environment variables that are set (their values never leave the API). */
  secret_env?: string[];
  annotations?: Record<string, string>;
  // general
  preset?: string | null;
  image?: string;
  tag?: string;
  container_port?: number;
  health_check_path?: string;
  registry_username?: string | null;
  has_registry_password?: boolean;
  /** Registry credentials from the vault it pulls with, instead of registry_username and its password. */
  registry_credential_id?: number | null;
  session_affinity?: boolean;
  routing_policy?: 'affinity' | 'prefix_aware';
  command?: string[];
  metrics_port?: number | null;
  metrics_path?: string | null;
  config_file?: { filename: string; mount_path: string; content: string } | null;
  max_concurrency?: number | null;
  // orchestrated
  model?: string;
  serving_mode?: 'aggregated' | 'disaggregated';
  worker_pools?: { prefill: Pool; decode: Pool } | null;
  concurrency?: number | null;
  served_model_name?: string | null;
  has_model_hub_token?: boolean;
  extra_args?: string[];
}

export interface Replica {
  id: number;
  name: string;
  revision: number;
  component: string;
  state: string;
  restarts: number;
  updated_at: string;
}

export interface Hardware {
  id: number;
  name: string;
  gpus_per_instance: number;
  instances: number;
  instances_free: number;
}

export interface Cluster {
  id: number;
  name: string;
  orchestration_enabled: boolean;
  hardware: Hardware[];
}

export interface Preset {
  id: string;
  name: string;
  description: string;
  image: string;
  tag: string;
  container_port: number;
  protocol: string;
  health_check_path: string;
  registry_username: string | null;
  example_command: string[];
  needs_command: boolean;
  /** Variables its engine reads a credential from: the form adds them as secret rows. */
  secret_env: string[];
  fills: string[];
  local_runtime: string;
}

export interface VaultToken {
  id: number;
  name: string;
  hint: string;
  /** The highest X-Priority class its requests get; null (or absent, an older server): no cap. */
  max_priority?: Priority | null;
  created_at: string;
  deployments: number[];
  token?: string;
}

/** A registry username and password kept in the vault; the password is never returned, only its last characters (hint). */
export interface RegistryCredential {
  id: number;
  name: string;
  username: string;
  hint: string;
  created_at: string;
  /** Deployments whose current spec pulls with it. */
  deployments: number[];
}

export interface Certificate {
  id: number;
  name: string;
  deployment_id: number | null;
  /** Deployments that accept it: bound to it, or issued for one that takes client certificates. */
  deployments: number[];
  /** The highest X-Priority class its requests get; null (or absent, an older server): no cap. */
  max_priority?: Priority | null;
  serial: string;
  fingerprint_sha256: string;
  not_after: string;
  revoked: boolean;
  revoked_at: string | null;
  created_at: string;
  pem_path: string;
}

export interface ServiceAccount {
  id: number;
  name: string;
  role: 'admin' | 'member';
  hint: string;
  created_at: string;
  key?: string;
}

export interface LogLine {
  time: string;
  revision: number;
  component: string;
  replica: string;
  stream: string;
  line: string;
}

export interface LogsAnswer {
  deployment_id: number;
  revision: number;
  logging: boolean;
  message?: string;
  lines: LogLine[];
}

/** One revision's part of the usage figures: for the replicas of that revision. */
export interface RevisionUsageFigures {
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  gpu_seconds: number;
}

export interface UsageFigures {
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  rate_limited: number;
  gpu_seconds: number;
  replica_seconds: Record<string, number>;
  /** By revision number; absent from a server that does not count revisions. */
  revisions?: Record<string, RevisionUsageFigures>;
}

export interface UsageAnswer {
  deployment_id: number;
  hours: Array<UsageFigures & { hour: string }>;
  totals: UsageFigures;
}

export interface ActivityPoint {
  t: string;
  in_flight: number;
  in_flight_max: number;
  held: number;
  desired: number | null;
  ready: number;
  /** The autoscaling metric's figure the autoscaler read in the step; null: none read. */
  signal?: number | null;
}

/** One of a deployment's events (GET …/events): a scale decision, a rollout step, a replica's news. */
export type { DeploymentEvent } from '../../../src/domain/records.js';

export interface ActivityAnswer {
  step_seconds: number;
  window_seconds: number;
  component: string | null;
  /** The signal the deployment scales on and its target (null: fixed size); absent from an older server. */
  metric?: AutoscalingMetric;
  target?: number | null;
  points: ActivityPoint[];
}

export interface Items<T> {
  items: T[];
}

export interface Quota {
  gpu_quota: number;
  gpus_reserved: number;
  gpus_free: number;
  deployments: Array<{ id: number; name: string; family: Family; gpus: number }>;
}
