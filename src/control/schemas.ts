// Owns the JSON schemas of the control API's edge (TypeBox): request shapes that fastify
// validates before a handler runs; the response shapes live with their types in
// domain/api-views.ts and are re-exported here for the routes. The spec's semantic rules (name
// pattern, pools, quotas…) live in domain/validate.ts, which names the field at fault in each message.

import { Type } from '../core/typebox.js';
import type { TSchema } from 'typebox';
import { AUTOSCALING_METRICS, METRIC_RULES } from '../domain/autoscaling-signal.js';
import { PRIORITIES } from '../domain/priority.js';
import { ROLLOUT_MODES, TAG_MAX, TRAFFIC_MAX_ENTRIES } from '../domain/traffic.js';
import { DEFAULT_FLOW_CONTROL } from '../domain/records.js';
import { MAX_QUEUE_MAX, MAX_WAIT_MAX_SECONDS } from '../domain/validation/limits-rules.js';
import { ALWAYS_SECRET_ENV } from '../domain/secret-env.js';
import { GRANTABLE_CAPABILITIES } from '../domain/container-capabilities.js';
import { KEY_TYPES } from '../domain/client-certificates.js';
import { MAX_PRIORITY_DOC, MaxPriority } from '../domain/api-views.js';
import { PROJECT_NAME_PATTERN } from '../domain/access.js';

export {
  ActivityResponse,
  CertificateResponse,
  ClusterResponse,
  DeploymentEventResponse,
  DeploymentResponse,
  ErrorResponse,
  EventsResponse,
  HardwareResponse,
  LogsResponse,
  PresetResponse,
  ProjectMemberResponse,
  ProjectResponse,
  ProjectUsageResponse,
  QuotaResponse,
  RegistryCredentialResponse,
  ReplicaResponse,
  RevisionMetricsResponse,
  RevisionResponse,
  ServiceAccountResponse,
  TokenResponse,
  UsageResponse,
  WhoamiResponse,
} from '../domain/api-views.js';

const Nullable = <T extends TSchema>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));
const StringMap = Type.Record(Type.String(), Type.String());

/**
 * The largest id or revision number the API accepts in a path, query or rollback body
 * (2^31-1): anything larger is a 400 naming the parameter, not a lookup that cannot succeed.
 */
export const MAX_ID = 2 ** 31 - 1;
export const Id = (description?: string) => Type.Integer({ minimum: 1, maximum: MAX_ID, ...(description ? { description } : {}) });

export const IdParams = Type.Object({ id: Id() });
export const RevisionParams = Type.Object({ id: Id(), n: Id() });

const PoolRequest = Type.Object(
  { hardware_instance_id: Nullable(Type.Integer()), replicas: Nullable(Type.Integer()) },
  { additionalProperties: false },
);

const RateLimitRequest = Type.Object(
  {
    requests_per_second: Nullable(Type.Number({ description: 'sustained requests per second per credential (a burst of one second is allowed)' })),
    tokens_per_minute: Nullable(Type.Integer({ description: 'prompt + completion tokens per minute per credential, from the responses\' usage' })),
  },
  { additionalProperties: true },
);

const DEFAULT_WAITS = DEFAULT_FLOW_CONTROL.max_wait_seconds;
const waitOf = (cls: (typeof PRIORITIES)[number], what: string) =>
  Nullable(Type.Integer({ description: `longest wait of a ${cls} request in the queue, 0 to ${MAX_WAIT_MAX_SECONDS} seconds (0: ${what}); left out or null: ${DEFAULT_WAITS[cls]}` }));

/** Ranges are the domain rules' (they name the field and the value); the edge checks types. */
const FlowControlRequest = Type.Object(
  {
    max_queue: Nullable(
      Type.Integer({
        description: `requests that may wait at once, all classes together, 0 to ${MAX_QUEUE_MAX} (0: none waits; past saturation a request gets 429 at once); left out or null: ${DEFAULT_FLOW_CONTROL.max_queue}`,
      }),
    ),
    max_wait_seconds: Nullable(
      Type.Object(
        {
          critical: waitOf('critical', 'never waits'),
          standard: waitOf('standard', 'never waits'),
          sheddable: waitOf('sheddable', 'shed as soon as the replicas are saturated'),
        },
        { additionalProperties: true },
      ),
    ),
  },
  {
    additionalProperties: true,
    description:
      'the queue a request waits in once every replica is saturated, ordered by X-Priority (critical, standard, sheddable) and shared fairly between credentials; ' +
      'a wait past its class\'s limit, or a full queue, is answered 429 with Retry-After. Keys left out take the defaults; a PATCH replaces the whole object; null: the defaults. Takes effect at once, no revision',
  },
);

const limitFields = {
  max_request_body_bytes: Nullable(Type.Integer({ description: 'largest request body the gateway accepts (413 above it); null: the server default' })),
  first_response_timeout_seconds: Nullable(
    Type.Integer({
      description:
        "longest wait, 1 to 86400 seconds, for a replica's first response — HTTP: its response headers (504 past it); gRPC: its first response message (grpc-js sends the response headers with it). " +
        'null: the gateway\'s default (--upstream-headers-timeout for HTTP, --grpc-first-message-timeout for gRPC, which is off by default). Takes effect at once, no revision',
    }),
  ),
  rate_limit: Nullable(RateLimitRequest),
  flow_control: Nullable(FlowControlRequest),
};

const authFields = {
  endpoint_bearer_token: Nullable(Type.String({ description: 'Bearer token protecting the endpoint (shown never again)' })),
  endpoint_token_id: Nullable(Type.Integer({ description: 'Bind an existing vault token by its id instead of its value' })),
  private_endpoint: Nullable(Type.Boolean({ description: 'Issue a client certificate bound to this deployment (mTLS)' })),
  client_certificate_id: Nullable(Type.Integer({ description: 'Bind an existing client certificate' })),
};

/** Entries are checked by the domain rules (domain/traffic.ts), which name `traffic[i].field`; the edge checks they are objects. */
const TrafficEntryRequest = Type.Object(
  {
    revision: Type.Optional(Type.Unknown({ description: 'a revision number; give this or latest' })),
    latest: Type.Optional(Type.Unknown({ description: 'true: the newest revision, whichever it is (a spec change moves this share to the new one in automatic rollout mode)' })),
    percent: Type.Optional(Type.Unknown({ description: 'a whole percent, 0 to 100; the list sums to 100' })),
    tag: Type.Optional(
      Type.Unknown({ description: `optional: gives the revision its own host <tag>-<name>.<domain>, reaching only it (lowercase letters, digits and '-', at most ${TAG_MAX})` }),
    ),
  },
  { additionalProperties: true },
);

const trafficFields = {
  traffic: Nullable(
    Type.Array(TrafficEntryRequest, {
      description:
        `how requests split between revisions: 1 to ${TRAFFIC_MAX_ENTRIES} entries {"revision": n | "latest": true, "percent", "tag"?} summing to 100. ` +
        'A PATCH replaces the whole list (a revision left out gets 0 % and its replicas drain and stop); null: everything to the newest revision. ' +
        'Named revisions must exist and not have failed; with a spec change in the same PATCH, latest (or N+1) is the revision it makes. Takes effect at once, no revision',
    }),
  ),
  rollout_mode: Nullable(
    Type.String({
      enum: [...ROLLOUT_MODES],
      description:
        'automatic (default): a spec change rolls out to the new revision (a latest entry moves to it); manual: a spec change (or a rollback) makes a revision at 0 % until traffic gives it a share. Takes effect at once, no revision',
    }),
  ),
};

const autoscalingFields = {
  autoscaling_metric: Nullable(
    Type.String({
      enum: [...AUTOSCALING_METRICS],
      description:
        'the signal the autoscaler scales on: concurrency (default; in-flight requests per replica, target max_concurrency/concurrency), queue_depth (waiting requests per replica), kv_cache (percent of KV cache in use), ttft (p90 time to first token in ms). Only concurrency and queue_depth may scale to zero; disaggregated deployments: concurrency only. Scales in place',
    }),
  ),
  autoscaling_target: Nullable(
    Type.Number({
      description: `the target of queue_depth (${METRIC_RULES.queue_depth.min}–${METRIC_RULES.queue_depth.max}), kv_cache (${METRIC_RULES.kv_cache.min}–${METRIC_RULES.kv_cache.max} %) or ttft (${METRIC_RULES.ttft.min}–${METRIC_RULES.ttft.max} ms, whole); required with them, refused with concurrency`,
    }),
  ),
};

const commonFields = {
  name: Nullable(Type.String({ description: 'lowercase letters, digits, hyphens; at most 20 characters' })),
  cluster_id: Nullable(Type.Integer()),
  protocol: Nullable(Type.String({ enum: ['http', 'grpc'] })),
  routing_policy: Nullable(
    Type.String({
      enum: ['affinity', 'prefix_aware'],
      description:
        'how a request chooses a replica (orchestrated: an aggregated Worker). affinity (default): X-Session-Id by consistent hashing with bounded loads, else the less loaded of two. ' +
        'prefix_aware: the replica most likely to hold the prompt prefix in its KV cache, weighed against its load; X-Session-Id is a strong hint. For LLM chat over HTTP; see docs/routing.md',
    }),
  ),
  enable_logging: Nullable(Type.Boolean()),
  enable_model_caching: Nullable(Type.Boolean()),
  env: Nullable(StringMap),
  secret_env: Nullable(
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]), {
      description:
        'secret environment variables: NAME → value (set or replace) or null (remove); stored encrypted, never returned (the answer lists the names in secret_env). ' +
        `PATCH and clone merge by name: a name left out keeps its value. Names that are always secret (${ALWAYS_SECRET_ENV.join(', ')}) are moved here from env`,
    }),
  ),
  annotations: Nullable(StringMap),
  min_replicas: Nullable(Type.Integer()),
  max_replicas: Nullable(Type.Integer()),
  cooldown_period: Nullable(Type.Integer({ description: 'seconds, 0 to 3600' })),
  hardware_instance_id: Nullable(Type.Integer()),
  ...autoscalingFields,
  ...authFields,
  ...limitFields,
  ...trafficFields,
};

/**
 * Both families' bodies are objects whose unknown fields are reported by name by the domain
 * rules, so the edge schema checks types of the known fields and lets the rest through.
 */
export const GeneralRequest = Type.Object(
  {
    ...commonFields,
    preset: Nullable(Type.String({ description: 'fills image, tag, container_port, protocol and health_check_path (GET /presets); never the command' })),
    image: Nullable(Type.String({ description: 'image without tag' })),
    tag: Nullable(Type.String()),
    container_port: Nullable(Type.Integer()),
    health_check_path: Nullable(Type.String()),
    registry_username: Nullable(Type.String()),
    registry_password: Nullable(Type.String({ description: 'stored encrypted, never returned' })),
    registry_credential_id: Nullable(Type.Integer({ description: 'registry credentials from the vault (POST /vault/registry-credentials), instead of registry_username and registry_password' })),
    session_affinity: Nullable(Type.Boolean()),
    command: Nullable(Type.Array(Type.String())),
    metrics_port: Nullable(Type.Integer()),
    metrics_path: Nullable(Type.String()),
    config_file: Nullable(
      Type.Object(
        { filename: Type.String(), mount_path: Type.String(), content: Type.String() },
        { additionalProperties: false },
      ),
    ),
    max_concurrency: Nullable(Type.Integer()),
    initial_replicas: Nullable(
      Type.Integer({
        description:
          "replicas a new deployment starts with before the autoscaler decides (Knative's initial-scale): 0 up to max_replicas, never below min_replicas. " +
          'Default: 1 with min_replicas 0 (its revision proves ready, then it may go to zero), else min_replicas. 0: no replica until the first request. Scales in place',
      }),
    ),
    container_capabilities: Nullable(
      Type.Array(Type.String(), {
        description:
          `Docker runtime: capabilities this deployment's containers keep, of those every container loses by default (${GRANTABLE_CAPABILITIES.join(', ')}); ` +
          'admins only (403 for a member). Default none. NET_RAW is always dropped',
      }),
    ),
  },
  { additionalProperties: true },
);

export const OrchestratedRequest = Type.Object(
  {
    ...commonFields,
    model: Nullable(Type.String({ description: '<org>/<model>' })),
    serving_mode: Nullable(Type.String({ enum: ['aggregated', 'disaggregated'] })),
    worker_pools: Nullable(
      Type.Object({ prefill: Nullable(PoolRequest), decode: Nullable(PoolRequest) }, { additionalProperties: true }),
    ),
    concurrency: Nullable(Type.Integer()),
    served_model_name: Nullable(Type.String()),
    model_hub_token: Nullable(Type.String({ description: 'stored encrypted, never returned' })),
    extra_args: Nullable(Type.Array(Type.String())),
  },
  { additionalProperties: true },
);

export const RollbackRequest = Type.Object({ revision: Id() }, { additionalProperties: false });

const CredentialName = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' });

export const TokenCreateRequest = Type.Object(
  { name: CredentialName, max_priority: Type.Optional(MaxPriority(`${MAX_PRIORITY_DOC}; left out: no cap`)) },
  { additionalProperties: false },
);

/** PATCH of a vault token or a client certificate: its cap is the one thing that changes. */
export const CredentialUpdateRequest = Type.Object(
  { max_priority: MaxPriority(`${MAX_PRIORITY_DOC}. Anyone who may manage the credential may raise or lower it; it applies to the next request`) },
  { additionalProperties: false },
);

const RegistryHost = (doc: string) =>
  Type.String({ minLength: 1, maxLength: 261, description: `the registry host, host[:port] (docker.io for Docker Hub; index.docker.io and registry-1.docker.io are read as docker.io): ${doc}` });

export const RegistryCredentialCreateRequest = Type.Object(
  {
    name: CredentialName,
    username: Type.String({ minLength: 1, maxLength: 256, description: 'the registry user, e.g. $oauthtoken for a vendor registry' }),
    password: Type.String({ minLength: 1, maxLength: 8192, description: 'the registry password or API key: stored encrypted, never returned' }),
    registry: RegistryHost('the password is sent to this host only, and a deployment may use the credential only for an image pulled from it'),
  },
  { additionalProperties: false },
);

/** PATCH of a vault registry credential: binds it to its registry host (admins only). */
export const RegistryCredentialUpdateRequest = Type.Object(
  { registry: RegistryHost("binds the credential to this host (the project's owners and the admin); every deployment using it must pull its image from there") },
  { additionalProperties: false },
);

export const ServiceAccountCreateRequest = Type.Object(
  {
    name: CredentialName,
    role: Type.Optional(
      Type.Enum(['admin', 'owner', 'developer', 'viewer', 'member'], {
        description: "its role in its project; left out: developer (`member`, the name before projects, is developer too); `admin` (the platform admin, in no project): the admin's to give",
      }),
    ),
    project: Type.Optional(
      Type.String({ pattern: PROJECT_NAME_PATTERN.source, description: "the project it acts in; left out: the request's (X-Infergate-Project). Another project: the admin's to choose" }),
    ),
  },
  { additionalProperties: false },
);

export const CertificateCreateRequest = Type.Object(
  {
    name: CredentialName,
    deployment_id: Nullable(
      Id(
        'the deployment this certificate is for: a deployment that takes client certificates (private_endpoint, or client_certificate_id bound) accepts every unrevoked certificate issued for it, besides its bound one',
      ),
    ),
    max_priority: Type.Optional(MaxPriority(`${MAX_PRIORITY_DOC}; left out: no cap`)),
    key_type: Type.Optional(Type.Enum([...KEY_TYPES], { description: 'the private key\'s type; left out: ecdsa-p256 (rsa-2048 for a client that cannot use an EC key)' })),
  },
  { additionalProperties: false },
);
