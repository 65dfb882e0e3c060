// Owns the control API's answers as one set of declarations: the TypeBox schema of each view
// (fastify serialises every response with it, /openapi.json publishes it) and its TypeScript
// type, `Static` of that schema. The server's renderers, the CLI and the console all take their
// types from here, so a field changed in one place changes for every reader. Pure TypeBox and
// domain constants: the CLI and the console may import it (the console only its types).

import { Type } from '../core/typebox.js';
import type { Static } from 'typebox';
import { AUTOSCALING_METRICS } from './autoscaling-signal.js';
import { PRIORITIES } from './priority.js';
import { ROLLOUT_MODES } from './traffic.js';
import { ROUTING_POLICIES } from './records.js';
import { GRANTABLE_CAPABILITIES } from './container-capabilities.js';
import { KEY_TYPES } from './client-certificates.js';

const NullOr = <T extends Parameters<typeof Type.Union>[0][number]>(t: T, options?: { description: string }) => Type.Union([t, Type.Null()], options);

export const FAMILIES = ['general', 'orchestrated'] as const;
export const DEPLOYMENT_STATUSES = ['pending', 'ready', 'not_ready', 'paused', 'failed', 'failing', 'deleting'] as const;

export const ErrorResponse = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    field: Type.Optional(Type.String()),
    details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  }),
});
export type ErrorBody = Static<typeof ErrorResponse>;

/** A credential's cap on X-Priority: an enum with null, so a refusal lists the classes. */
export const MaxPriority = (description: string) => Type.Union([Type.Enum([...PRIORITIES]), Type.Null()], { description });
export const MAX_PRIORITY_DOC =
  'the highest X-Priority class a request with this credential gets (a request asking for more is demoted to it, never refused): critical, standard or sheddable; null: no cap';

export const FlowControlResponse = Type.Object({
  max_queue: Type.Integer(),
  max_wait_seconds: Type.Object({ critical: Type.Integer(), standard: Type.Integer(), sheddable: Type.Integer() }),
});

const ComponentStatus = Type.Object({ ready: Type.Integer(), desired: Type.Integer() });
export const ComponentCountsResponse = Type.Record(Type.String(), ComponentStatus);
export type ComponentCounts = Static<typeof ComponentCountsResponse>;

export const RevisionSummary = Type.Object({
  revision: Type.Integer(),
  created_at: Type.String(),
  reason: Type.String(),
  source_revision: NullOr(Type.Integer()),
  status: Type.String(),
  failure_reason: NullOr(Type.String()),
  percent: Type.Integer({ description: 'its share of requests now, from traffic (0: none)' }),
  tags: Type.Array(Type.String(), { description: 'the traffic tags naming it, each a host <tag>-<name>.<domain>' }),
});
export type RevisionSummaryView = Static<typeof RevisionSummary>;

export const TrafficTargetResponse = Type.Object({
  revision: Type.Integer({ description: 'the revision it sends to: for latest, the newest' }),
  latest: Type.Boolean(),
  percent: Type.Integer(),
  tag: NullOr(Type.String()),
  url: NullOr(Type.String(), { description: "the tag host's URL, https://<tag>-<name>.<domain> with :port when the gateway is not on 443; it reaches only this revision. null without a tag" }),
});
export type TrafficTargetView = Static<typeof TrafficTargetResponse>;

export const RevisionReplicasResponse = Type.Object({
  revision: Type.Integer(),
  percent: Type.Integer(),
  tags: Type.Array(Type.String()),
  ready: Type.Integer({ description: 'ready replicas of the routed component (Replica, or Frontend) of this revision' }),
  desired: Type.Integer(),
});
export type RevisionReplicasView = Static<typeof RevisionReplicasResponse>;

export const RolloutResponse = Type.Object({
  revision: Type.Integer(),
  from_revision: NullOr(Type.Integer()),
  state: Type.Enum(['in_progress', 'complete', 'failed']),
  reason: NullOr(Type.String()),
  started_at: Type.String(),
  finished_at: NullOr(Type.String()),
});
export type RolloutView = Static<typeof RolloutResponse>;

const PoolView = Type.Object({ hardware_instance_id: Type.Integer(), replicas: Type.Integer() });

/**
 * Spec and scaling fields of one family or the other, as publicSpec and the scaling view
 * write them: optional here because each deployment carries only its family's.
 */
const familyFields = {
  hardware_instance_id: Type.Optional(NullOr(Type.Integer())),
  min_replicas: Type.Optional(Type.Integer()),
  max_replicas: Type.Optional(Type.Integer()),
  initial_replicas: Type.Optional(Type.Integer({ description: 'general: replicas a new deployment starts with before the autoscaler decides (the default when it was not given: 1 with min_replicas 0, else min_replicas)' })),
  cooldown_period: Type.Optional(Type.Integer()),
  protocol: Type.Optional(Type.Enum(['http', 'grpc'])),
  routing_policy: Type.Optional(Type.Enum([...ROUTING_POLICIES])),
  enable_logging: Type.Optional(Type.Boolean()),
  enable_model_caching: Type.Optional(Type.Boolean()),
  annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
  // general
  preset: Type.Optional(NullOr(Type.String())),
  image: Type.Optional(Type.String()),
  tag: Type.Optional(Type.String()),
  container_port: Type.Optional(Type.Integer()),
  health_check_path: Type.Optional(Type.String()),
  registry_username: Type.Optional(NullOr(Type.String())),
  has_registry_password: Type.Optional(Type.Boolean()),
  registry_credential_id: Type.Optional(NullOr(Type.Integer())),
  session_affinity: Type.Optional(Type.Boolean()),
  command: Type.Optional(Type.Array(Type.String())),
  metrics_port: Type.Optional(NullOr(Type.Integer())),
  metrics_path: Type.Optional(NullOr(Type.String())),
  config_file: Type.Optional(NullOr(Type.Object({ filename: Type.String(), mount_path: Type.String(), content: Type.String() }))),
  max_concurrency: Type.Optional(NullOr(Type.Integer())),
  container_capabilities: Type.Optional(Type.Array(Type.Enum([...GRANTABLE_CAPABILITIES]))),
  // orchestrated
  model: Type.Optional(Type.String()),
  serving_mode: Type.Optional(Type.Enum(['aggregated', 'disaggregated'])),
  worker_pools: Type.Optional(NullOr(Type.Object({ prefill: PoolView, decode: PoolView }))),
  concurrency: Type.Optional(NullOr(Type.Integer())),
  served_model_name: Type.Optional(NullOr(Type.String())),
  has_model_hub_token: Type.Optional(Type.Boolean()),
  extra_args: Type.Optional(Type.Array(Type.String())),
};

/** The deployment as the API returns it; family-specific fields are optional. */
export const DeploymentResponse = Type.Object(
  {
    id: Type.Integer(),
    family: Type.Enum([...FAMILIES]),
    name: Type.String(),
    cluster_id: Type.Integer(),
    status: Type.Enum([...DEPLOYMENT_STATUSES], {
      description: 'failing: no replica is ready and one of the revision being run keeps crashing or cannot pull its image (status_reason says which, and why); pending: still on its way',
    }),
    status_reason: NullOr(Type.String(), {
      description: 'why it is not ready, or not all its replicas are, in words ("pulling <image>: 45%", "image not found: …", a crash-looping replica with its restarts, exit code and last log line); null when there is nothing to say',
    }),
    paused: Type.Boolean(),
    endpoint_url: Type.String({
      description: 'host address without scheme, `<name>.<domain>[:port]`; a deployment of another project than `default`: `<name>.<project>.<domain>[:port]`',
    }),
    endpoint_path_url: NullOr(Type.String(), {
      description:
        'base URL of the path address, e.g. https://localhost:8443/endpoints/chat (another project\'s: …/endpoints/chat.<project>; append /v1 for an OpenAI SDK\'s base URL): needs no DNS for <name>.<domain>; null for gRPC deployments, which are addressed by host only',
    }),
    served_model: NullOr(Type.String(), {
      description:
        "what clients send as a request's `model`: served_model_name, else the model-hub id (orchestrated); the name the command serves (--served-model-name, else --model, --model-path, --model-id or `serve <model>`), the model a vendor image names, or the reference engine's sim/model (general); null when the spec cannot tell (Ollama, an image's own command): GET /v1/models on the endpoint lists it",
    }),
    revision: Type.Integer(),
    serving_revision: NullOr(Type.Integer()),
    rollout: NullOr(RolloutResponse),
    components: ComponentCountsResponse,
    revisions: Type.Array(RevisionSummary),
    traffic: Type.Array(TrafficTargetResponse, { description: 'the stored split, or the default (everything to the newest revision) when traffic_is_default' }),
    traffic_is_default: Type.Boolean({ description: 'true when the deployment has no traffic list of its own (null): every request goes to the newest revision' }),
    rollout_mode: Type.Enum([...ROLLOUT_MODES]),
    autoscaling_metric: Type.Enum([...AUTOSCALING_METRICS]),
    autoscaling_target: NullOr(Type.Number(), { description: 'the target of queue_depth, kv_cache or ttft; null for concurrency, whose target is max_concurrency / concurrency' }),
    revision_replicas: Type.Array(RevisionReplicasResponse, {
      description: 'one entry per revision traffic runs (each revision of a split, else the one everything goes to): its share, tags, and ready and desired replicas',
    }),
    endpoint_token_id: NullOr(Type.Integer()),
    client_certificate_id: NullOr(Type.Integer()),
    private_endpoint: Type.Boolean(),
    env: Type.Record(Type.String(), Type.String(), { description: 'plain environment variables; secret ones are never here' }),
    secret_env: Type.Array(Type.String(), { description: 'names of the secret environment variables that are set, sorted; their values are never returned' }),
    max_request_body_bytes: NullOr(Type.Integer()),
    first_response_timeout_seconds: NullOr(Type.Integer(), {
      description: "seconds the gateway waits for a replica's first response (HTTP: its headers; gRPC: its first message); null: the gateway's default",
    }),
    rate_limit: NullOr(Type.Object({ requests_per_second: NullOr(Type.Number()), tokens_per_minute: NullOr(Type.Integer()) })),
    flow_control: Type.Object(FlowControlResponse.properties, {
      description: 'the flow control the gateway applies: the deployment\'s own, complete, or the defaults when it has none (then flow_control_is_default is true)',
    }),
    flow_control_is_default: Type.Boolean({
      description: 'true when the deployment sets no flow control of its own (null, or never given): flow_control then shows the platform defaults',
    }),
    created_at: Type.String(),
    updated_at: Type.String(),
    ...familyFields,
  },
  { additionalProperties: true },
);
export type DeploymentView = Static<typeof DeploymentResponse>;

export const RevisionResponse = Type.Object(
  { ...RevisionSummary.properties, spec: Type.Record(Type.String(), Type.Unknown()) },
  { additionalProperties: false },
);
export type RevisionView = Static<typeof RevisionResponse>;

export const RegistryCredentialResponse = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  username: Type.String(),
  registry: NullOr(Type.String(), {
    description: 'the registry host (host[:port]; docker.io for Docker Hub) the password is sent to, and the only one; null: an older credential bound to none, not used until an admin binds it',
  }),
  created_at: Type.String(),
  deployments: Type.Array(Type.Integer(), { description: 'deployments whose current spec pulls with these credentials' }),
});
export type RegistryCredentialView = Static<typeof RegistryCredentialResponse>;

export const TokenResponse = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  max_priority: MaxPriority(MAX_PRIORITY_DOC),
  created_at: Type.String(),
  deployments: Type.Array(Type.Integer()),
  token: Type.Optional(Type.String({ description: 'present only in the create response' })),
});
export type TokenView = Static<typeof TokenResponse>;

export const ServiceAccountResponse = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  role: Type.Enum(['admin', 'owner', 'developer', 'viewer'], { description: 'admin: the platform admin; else the role in its project' }),
  project: Type.Union([Type.String(), Type.Null()], { description: 'the project it acts in; null for an admin' }),
  created_at: Type.String(),
  key: Type.Optional(Type.String({ description: 'present only in the create response' })),
});
export type ServiceAccountView = Static<typeof ServiceAccountResponse>;

export const WhoamiResponse = Type.Object(
  {
    kind: Type.Enum(['service_account', 'user'], { description: 'a service account (by its key) or a person (by their session)' }),
    id: Type.Integer(),
    name: Type.String(),
    admin: Type.Boolean({ description: 'the platform admin: every action in every project' }),
    project: Type.String({ description: 'the project the request acts in (X-Infergate-Project, else the home project)' }),
    role: NullOr(Type.Enum(['admin', 'owner', 'developer', 'viewer'], { description: 'admin: the platform admin; else the role in the project the request acts in' })),
    projects: Type.Array(
      Type.Object({ name: Type.String(), role: NullOr(Type.Enum(['owner', 'developer', 'viewer'])) }, { additionalProperties: false }),
      { description: "the caller's projects and role in each (the admin: every project, role null where not a member)" },
    ),
    csrf_token: Type.Optional(Type.String({ description: "the console session's CSRF token, sent back as X-CSRF-Token on mutating calls (cookie sessions only)" })),
  },
  { additionalProperties: false },
);
export type WhoamiView = Static<typeof WhoamiResponse>;

export const HardwareResponse = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  gpus_per_instance: Type.Integer(),
  instances: Type.Integer(),
  instances_free: Type.Integer(),
  cpus: Type.Optional(Type.Number({ description: 'vCPUs of one instance, when the catalog gives them' })),
  memory_gib: Type.Optional(Type.Number({ description: 'memory of one instance in GiB, when the catalog gives it' })),
});
export type HardwareView = Static<typeof HardwareResponse>;

export const ClusterResponse = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  orchestration_enabled: Type.Boolean(),
  hardware: Type.Array(HardwareResponse),
});
export type ClusterView = Static<typeof ClusterResponse>;

export const QuotaResponse = Type.Object({
  gpu_quota: Type.Integer({ description: "the cluster's GPU quota (--gpu-quota), over every project" }),
  gpus_reserved: Type.Integer({ description: "GPUs every project's live deployments hold: max_replicas × GPUs per instance, or both pools" }),
  gpus_free: Type.Integer(),
  project: Type.Object({
    name: Type.String({ description: 'the project the request acts in' }),
    gpu_quota: NullOr(Type.Integer({ description: "the project's GPU quota; null: none (only the cluster's)" })),
    gpus_reserved: Type.Integer({ description: "GPUs the project's deployments hold" }),
    gpus_free: NullOr(Type.Integer({ description: 'null without a project quota' })),
  }),
  deployments: Type.Array(Type.Object({ id: Type.Integer(), name: Type.String(), family: Type.Enum([...FAMILIES]), gpus: Type.Integer() }), {
    description: "the project's deployments and what each reserves",
  }),
});
export type QuotaView = Static<typeof QuotaResponse>;

const ProjectRoleEnum = Type.Enum(['owner', 'developer', 'viewer']);

export const ProjectResponse = Type.Object(
  {
    name: Type.String({ description: 'a DNS label, unique and never changed (part of endpoint addresses outside default)' }),
    gpu_quota: NullOr(Type.Integer({ description: "GPUs the project's deployments may reserve; null: none (only the cluster's quota)" })),
    gpus_reserved: Type.Integer({ description: "GPUs the project's deployments hold (max_replicas × GPUs per instance, or both pools)" }),
    role: NullOr(ProjectRoleEnum, { description: "the caller's role in it; null for the admin where not a member" }),
    created_at: Type.String(),
  },
  { additionalProperties: false },
);
export type ProjectView = Static<typeof ProjectResponse>;

export const ProjectMemberResponse = Type.Object(
  {
    subject: Type.String({ description: '`user:<e-mail address>` (lowercase) or `group:<identity provider group>`' }),
    role: ProjectRoleEnum,
  },
  { additionalProperties: false },
);
export type ProjectMemberView = Static<typeof ProjectMemberResponse>;


export const CertificateResponse = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  deployment_id: NullOr(Type.Integer()),
  deployments: Type.Array(Type.Integer(), { description: 'deployments that accept this certificate: the ones it is bound to, and the one it was issued for while that one takes client certificates' }),
  max_priority: MaxPriority(MAX_PRIORITY_DOC),
  serial: Type.String(),
  fingerprint_sha256: Type.String(),
  key_type: Type.Enum([...KEY_TYPES], { description: 'the private key\'s type: ecdsa-p256 (the default since M21) or rsa-2048' }),
  not_after: Type.String(),
  revoked: Type.Boolean(),
  revoked_at: NullOr(Type.String()),
  created_at: Type.String(),
  pem_path: Type.String({ description: 'GET it for the certificate and private key in one .pem' }),
});
export type CertificateView = Static<typeof CertificateResponse>;

export const PresetResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  image: Type.String(),
  tag: Type.String(),
  container_port: Type.Integer(),
  protocol: Type.String(),
  health_check_path: Type.String(),
  registry_username: NullOr(Type.String()),
  example_command: Type.Array(Type.String()),
  needs_command: Type.Boolean(),
  secret_env: Type.Array(Type.String(), { description: 'environment variables the engine reads a credential from: give them in secret_env' }),
  fills: Type.Array(Type.String()),
  local_runtime: Type.String(),
});
export type PresetView = Static<typeof PresetResponse>;

export const ReplicaResponse = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  revision: Type.Integer(),
  component: Type.String(),
  state: Type.Enum(['starting', 'ready', 'draining', 'stopped', 'failed']),
  restarts: Type.Integer(),
  detail: NullOr(Type.String(), { description: 'why it is not ready, as its runtime says (pulling its image, a crash and its restart); null when ready' }),
  updated_at: Type.String(),
});
export type ReplicaView = Static<typeof ReplicaResponse>;

export const DeploymentEventResponse = Type.Object(
  {
    time: Type.String({ description: 'when it last happened (ISO 8601)' }),
    first_time: Type.String({ description: 'when it first happened: time, unless repeats were folded into it' }),
    type: Type.Enum(['normal', 'warning'], { description: 'warning: something someone may have to act on' }),
    reason: Type.String({ description: 'one CamelCase word: ScaledUp, ScaledDown, ScaledToZero, RolloutStarted, RolloutStep, RolloutCompleted, RolloutFailed, RolledBack, ReplicaStarted, ReplicaReady, ReplicaRestarted, ReplicaFailing, ImagePulling, ImagePulled, PullFailed' }),
    message: Type.String(),
    count: Type.Integer({ minimum: 1, description: 'how many times it happened: identical events close together are folded into one' }),
  },
  { additionalProperties: false },
);
export type DeploymentEventView = Static<typeof DeploymentEventResponse>;

export const EventsResponse = Type.Object(
  { items: Type.Array(DeploymentEventResponse, { description: 'oldest first (by when each last happened); the newest 100 are kept' }) },
  { additionalProperties: false },
);

export const LogLineResponse = Type.Object({
  time: Type.String(),
  revision: Type.Integer(),
  component: Type.String(),
  replica: Type.String(),
  stream: Type.String(),
  line: Type.String(),
});
export type LogLineView = Static<typeof LogLineResponse>;

export const LogsResponse = Type.Object({
  deployment_id: Type.Integer(),
  revision: Type.Integer(),
  logging: Type.Boolean(),
  message: Type.Optional(Type.String()),
  lines: Type.Array(LogLineResponse),
});
export type LogsView = Static<typeof LogsResponse>;

export const RevisionUsageResponse = Type.Object({
  requests: Type.Integer(),
  errors: Type.Integer(),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  gpu_seconds: Type.Number(),
});
export type RevisionUsageView = Static<typeof RevisionUsageResponse>;

const usageFigures = {
  requests: Type.Integer(),
  errors: Type.Integer(),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  rate_limited: Type.Integer({ description: "requests refused with 429 by the deployment's rate_limit (counted in requests too)" }),
  gpu_seconds: Type.Number(),
  replica_seconds: Type.Record(Type.String(), Type.Number()),
  revisions: Type.Record(Type.String(), RevisionUsageResponse, {
    description:
      'the same figures by revision number, for the replica that served each request or lived the seconds; requests that reached no replica (refused, held and given up) count only above; {} for hours counted before revisions were',
  }),
};
export const UsageFiguresResponse = Type.Object(usageFigures);
export type UsageFiguresView = Static<typeof UsageFiguresResponse>;

export const UsageResponse = Type.Object({
  deployment_id: Type.Integer(),
  hours: Type.Array(Type.Object({ hour: Type.String(), ...usageFigures })),
  totals: UsageFiguresResponse,
});
export type UsageView = Static<typeof UsageResponse>;

export const ProjectUsageResponse = Type.Object({
  project: Type.String(),
  totals: UsageFiguresResponse,
  deployments: Type.Array(
    Type.Object({
      deployment_id: Type.Integer(),
      name: NullOr(Type.String(), { description: 'null once the deployment is deleted' }),
      family: NullOr(Type.Enum([...FAMILIES]), { description: 'null once the deployment is deleted' }),
      totals: UsageFiguresResponse,
    }),
  ),
});
export type ProjectUsageView = Static<typeof ProjectUsageResponse>;

export const ActivityPointResponse = Type.Object(
  {
    t: Type.String({ description: 'start of the 5-second step (ISO 8601)' }),
    in_flight: Type.Number({ description: "mean of the gateway's per-second concurrency in the step, 2 decimals" }),
    in_flight_max: Type.Number({ description: 'the highest per-second concurrency in the step' }),
    held: Type.Integer({ description: 'most requests held at once for a replica (scale from zero)' }),
    desired: NullOr(Type.Integer(), { description: "the autoscaler's figure at the step's end; null while it has not decided (paused, just created)" }),
    ready: Type.Integer({ description: 'ready replicas of the scaled component at the step\'s end' }),
    signal: NullOr(Type.Number(), {
      description:
        "the autoscaling metric's figure the autoscaler last read in the step, over its stable window, in the target's unit: in-flight requests per ready replica (concurrency), waiting requests per replica (queue_depth), percent of KV cache in use (kv_cache), p90 ms (ttft); in a split, the highest of its revisions'; null when it read none",
    }),
  },
  { additionalProperties: false },
);
export type ActivityPointView = Static<typeof ActivityPointResponse>;

export const ActivityResponse = Type.Object(
  {
    step_seconds: Type.Integer(),
    window_seconds: Type.Integer(),
    component: NullOr(Type.String(), { description: 'Replica or Worker; null when the pools have fixed sizes (disaggregated), with no points' }),
    metric: Type.Enum([...AUTOSCALING_METRICS], { description: 'the signal the deployment scales on (autoscaling_metric)' }),
    target: NullOr(Type.Number(), { description: "the metric's target (target_concurrency for concurrency, else autoscaling_target); null: a fixed size" }),
    points: Type.Array(ActivityPointResponse, { description: 'oldest first; the last is the step in progress' }),
  },
  { additionalProperties: false },
);
export type ActivityView = Static<typeof ActivityResponse>;

export const RevisionFiguresResponse = Type.Object(
  {
    revision: Type.Integer(),
    percent: Type.Integer({ description: 'its share of traffic now (0 when it has none)' }),
    requests: Type.Integer(),
    errors: Type.Integer({ description: 'answered with a 5xx status (by the gateway or the replica)' }),
    ttft_p50_ms: NullOr(Type.Number(), { description: 'median time to first token (first response byte), ms; null without requests' }),
    ttft_p99_ms: NullOr(Type.Number(), { description: '99th percentile time to first token, ms; null without requests' }),
    tokens_per_second: Type.Number({ description: 'completion tokens per second over the window' }),
  },
  { additionalProperties: false },
);
export type RevisionFiguresView = Static<typeof RevisionFiguresResponse>;

export const RevisionMetricsResponse = Type.Object(
  {
    window_seconds: Type.Integer(),
    revisions: Type.Array(RevisionFiguresResponse, { description: 'every revision that served in the window or takes traffic now, by number' }),
  },
  { additionalProperties: false },
);
export type RevisionMetricsView = Static<typeof RevisionMetricsResponse>;

/** The answer of every list route: `{ items: [...] }`. */
export interface Items<T> {
  items: T[];
}

/**
 * The answer of a paged list route (`?limit=`, `?continue=`; docs/control-api.md): a page of
 * items and, while more remain, the token of the next page and how many remain after this one.
 */
export interface ListPage<T> extends Items<T> {
  continue?: string;
  remaining_item_count?: number;
}

/** The CLI's device sign-in as POST /auth/device starts it. */
export const DeviceResponse = Type.Object(
  {
    device_code: Type.String({ description: 'opaque: pass it to POST /auth/device/token' }),
    user_code: Type.String(),
    verification_uri: Type.String(),
    verification_uri_complete: Type.Union([Type.String(), Type.Null()]),
    expires_in: Type.Integer(),
    interval: Type.Integer({ description: 'seconds between polls' }),
  },
  { additionalProperties: false },
);
export type DeviceView = Static<typeof DeviceResponse>;
