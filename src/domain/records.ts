// Owns the shapes of what the store keeps: desired state (deployments with their revisions,
// endpoint tokens, service accounts, client certificates) and observed state (replicas).
// Field names follow docs/control-api.md; the API's response shapes are derived from these in control/.

import type { Priority } from './priority.js';
import type { AutoscalingMetric } from './autoscaling-signal.js';
import type { ContainerCapability } from './container-capabilities.js';
import type { Action, ProjectRole } from './access.js';

export type Family = 'general' | 'orchestrated';
export type Protocol = 'http' | 'grpc';
export type ServingMode = 'aggregated' | 'disaggregated';
/**
 * How requests choose a replica (general) or an aggregated Worker (orchestrated): `affinity`,
 * consistent hashing on X-Session-Id with bounded loads, else the less loaded of two; or
 * `prefix_aware`, prompt-prefix locality weighed against load (docs/routing.md).
 */
export type RoutingPolicy = 'affinity' | 'prefix_aware';
export const ROUTING_POLICIES: readonly RoutingPolicy[] = ['affinity', 'prefix_aware'];

/** The policy of a spec; records written before the field existed mean `affinity`. */
export function routingPolicyOf(spec: { routing_policy?: RoutingPolicy }): RoutingPolicy {
  return spec.routing_policy ?? 'affinity';
}
/**
 * `failing`: no replica is ready and one of the revision being run keeps crashing (it
 * restarted without becoming ready) or cannot pull its image; `pending` is still on its way.
 */
export type DeploymentStatus = 'pending' | 'ready' | 'not_ready' | 'paused' | 'failed' | 'failing';
export type RevisionStatus = 'pending' | 'ready' | 'failed' | 'retired';

export interface ConfigFile {
  filename: string;
  mount_path: string;
  content: string;
}

/** Secrets are kept sealed (AES-GCM, see core/secrets.ts) and never leave the API. */
export interface SealedSecrets {
  registry_password?: string;
  model_hub_token?: string;
  /**
   * Secret environment variables, name → sealed value: merged into the replica's environment
   * by the controller, listed by name only (`secret_env`) in answers. Never also in `env`.
   */
  env?: Record<string, string>;
}

/** Revision-bearing fields of a general inference deployment: editing any makes a revision. */
export interface GeneralSpec {
  family: 'general';
  preset: string | null;
  hardware_instance_id: number;
  image: string;
  tag: string;
  container_port: number;
  protocol: Protocol;
  health_check_path: string;
  registry_username: string | null;
  /**
   * Registry credentials from the vault (`/vault/registry-credentials`), instead of
   * registry_username and registry_password; absent in older records: none.
   */
  registry_credential_id?: number | null;
  enable_logging: boolean;
  enable_model_caching: boolean;
  session_affinity: boolean;
  /** Absent in records written before it existed: `affinity`. */
  routing_policy?: RoutingPolicy;
  command: string[];
  metrics_port: number | null;
  metrics_path: string | null;
  env: Record<string, string>;
  config_file: ConfigFile | null;
  annotations: Record<string, string>;
  /**
   * Capabilities the Docker runtime leaves in its containers although it drops them by default
   * (domain/container-capabilities.ts); an admin's choice. Absent in older records: none.
   */
  container_capabilities?: ContainerCapability[];
  secrets: SealedSecrets;
}

export interface PoolSpec {
  hardware_instance_id: number;
}

/** Revision-bearing fields of an orchestrated deployment. */
export interface OrchestratedSpec {
  family: 'orchestrated';
  model: string;
  serving_mode: ServingMode;
  /** Aggregated: the hardware of every Worker. Null when disaggregated. */
  hardware_instance_id: number | null;
  /** Disaggregated: hardware per pool. Null when aggregated. */
  worker_pools: { prefill: PoolSpec; decode: PoolSpec } | null;
  served_model_name: string | null;
  protocol: Protocol;
  /** The Frontend's choice among aggregated Workers; absent in older records: `affinity`. */
  routing_policy?: RoutingPolicy;
  extra_args: string[];
  env: Record<string, string>;
  annotations: Record<string, string>;
  enable_logging: boolean;
  enable_model_caching: boolean;
  secrets: SealedSecrets;
}

export type DeploymentSpec = GeneralSpec | OrchestratedSpec;

/**
 * Replica-count fields: changing them scales in place and never makes a revision
 * (spec: "Replica-count changes do not create a revision").
 */
export interface ScalingSpec {
  min_replicas: number;
  max_replicas: number;
  /** `max_concurrency` (general) or `concurrency` (orchestrated); null = no target. */
  target_concurrency: number | null;
  cooldown_period: number;
  /** Disaggregated only: fixed pool sizes. */
  pools: { prefill: number; decode: number } | null;
  /**
   * General only: replicas a new deployment runs before the autoscaler decides (Knative's
   * initial-scale; domain/initial-scale.ts). Absent: 1 when min_replicas is 0, else min_replicas.
   */
  initial_replicas?: number;
  /** The signal the autoscaler scales on (domain/autoscaling-signal.ts); absent in older records: `concurrency`. */
  autoscaling_metric?: AutoscalingMetric;
  /**
   * The target of a signal other than concurrency (waiting requests per replica, KV cache
   * percent, or a p90 time to first token in ms); null or absent for `concurrency`, whose
   * target is target_concurrency.
   */
  autoscaling_target?: number | null;
}

/** How clients of the deployed endpoint authenticate; not part of a revision. */
export interface EndpointAuth {
  token_id: number | null;
  client_certificate_id: number | null;
  /** Asked for a client certificate bound to this deployment (issued by the PKI). */
  private_endpoint: boolean;
}

/**
 * The gateway's policy for one endpoint: applied at once by every gateway, never part of a
 * revision (no replica restarts for it), like the endpoint's credentials.
 */
export interface EndpointLimits {
  /** Largest request body the gateway passes on, in bytes; null: the server's `--max-request-body`. */
  max_request_body_bytes: number | null;
  /**
   * Longest wait, in seconds, for a replica's first response — HTTP: its response headers;
   * gRPC: its first response message (grpc-js sends the response headers with it). null: the
   * gateway's default (`--upstream-headers-timeout` for HTTP, `--grpc-first-message-timeout`
   * for gRPC, which is off by default).
   */
  first_response_timeout_seconds: number | null;
  /** Per-credential limits; null: none. */
  rate_limit: RateLimit | null;
  /** The gateway's queue for this endpoint when its replicas are saturated; null: the defaults (DEFAULT_FLOW_CONTROL). */
  flow_control: FlowControl | null;
}

/**
 * Flow control of one endpoint: past saturation a request waits in a queue ordered by class
 * (X-Priority) and shared fairly between credentials; a wait past its class's limit, or a
 * full queue, is answered 429 with Retry-After.
 */
export interface FlowControl {
  /** Requests that may wait at once, all classes together; 0: none waits (shed at once). */
  max_queue: number;
  /** Longest wait of each class, in seconds (0: never waits). */
  max_wait_seconds: Record<Priority, number>;
}

export const DEFAULT_FLOW_CONTROL: FlowControl = Object.freeze({
  max_queue: 1000,
  max_wait_seconds: Object.freeze({ critical: 60, standard: 30, sheddable: 5 }),
});

/** EndpointLimits as stored: records written before first_response_timeout_seconds or flow_control existed lack them. */
export type StoredLimits = Omit<EndpointLimits, 'first_response_timeout_seconds' | 'flow_control'> & {
  first_response_timeout_seconds?: number | null;
  flow_control?: FlowControl | null;
};

/** Applied to each credential (bearer token or client certificate) separately. */
export interface RateLimit {
  /** Sustained requests per second (a burst of one second's worth is allowed); null: no limit. */
  requests_per_second: number | null;
  /** Prompt plus completion tokens per minute, as the responses' `usage` reports them; null: no limit. */
  tokens_per_minute: number | null;
}

export const NO_LIMITS: EndpointLimits = Object.freeze({ max_request_body_bytes: null, first_response_timeout_seconds: null, rate_limit: null, flow_control: null });

/** A record's limits, every key present: absent limits, or a key absent from an older record, read as null. */
export function limitsOf(d: { limits?: StoredLimits }): EndpointLimits {
  const limits = d.limits ?? NO_LIMITS;
  return {
    max_request_body_bytes: limits.max_request_body_bytes ?? null,
    first_response_timeout_seconds: limits.first_response_timeout_seconds ?? null,
    rate_limit: limits.rate_limit ?? null,
    flow_control: limits.flow_control ?? null,
  };
}

/** One entry of a deployment's traffic list, as stored (and as the API shows it). */
export interface TrafficTarget {
  /** A fixed revision number; null when the entry follows the newest revision (`latest`). */
  revision: number | null;
  /** Follows the newest revision: a spec change (automatic rollout) moves this share to it. */
  latest: boolean;
  /** Whole percent, 0–100; the list sums to 100. */
  percent: number;
  /** Gives the revision its own host `<tag>-<name>.<domain>`; null: none. */
  tag: string | null;
}

/** `automatic`: a spec change rolls out to the new revision (its `latest` share); `manual`: it starts at 0 %. */
export type RolloutMode = 'automatic' | 'manual';
export interface RevisionRecord {
  revision: number;
  created_at: string;
  /** Why it exists: the create, a spec edit, a rollback to an earlier one, or a clone. */
  reason: 'create' | 'update' | 'rollback' | 'clone';
  /** For a rollback: the revision whose spec was copied. */
  source_revision: number | null;
  status: RevisionStatus;
  /** Why the revision failed (its replicas never became ready within the rollout deadline). */
  failure_reason?: string | null;
  spec: DeploymentSpec;
}

/** The controller's progress replacing one revision's replicas by another's (observed state). */
export interface RolloutState {
  revision: number;
  /** The revision being replaced; null for the first one. */
  from_revision: number | null;
  state: 'in_progress' | 'complete' | 'failed';
  reason: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface DeploymentRecord {
  id: number;
  /** The project that owns it (domain/access.ts: projectOf); absent in records from before projects: `default`. */
  project?: string;
  family: Family;
  name: string;
  cluster_id: number;
  spec: DeploymentSpec;
  scaling: ScalingSpec;
  auth: EndpointAuth;
  /** The gateway's limits for the endpoint; absent in records written before they existed (read them with limitsOf). */
  limits?: StoredLimits;
  /** Number of the revision whose spec is current. */
  revision: number;
  revisions: RevisionRecord[];
  /**
   * Replica counts the controller is working towards, per component (observed state written
   * by the controller; the autoscaler moves them within [min, max]). Absent until reconciled.
   */
  desired_replicas?: Record<string, number>;
  /**
   * While traffic splits between revisions (domain/traffic.ts: splitOf): per revision number,
   * its desired replicas per component (observed state written by the controller; each
   * revision is autoscaled on its own). Absent or null without a split.
   */
  revision_desired?: Record<string, Record<string, number>> | null;
  /** The revision whose replicas serve: the last one fully rolled out (observed state). */
  serving_revision?: number | null;
  rollout?: RolloutState | null;
  /**
   * How requests are split between revisions (domain/traffic.ts): desired state, never part
   * of a revision. Absent or null: every request goes to the newest revision (rolling update).
   */
  traffic?: TrafficTarget[] | null;
  /** `manual`: a spec change makes a revision at 0 % until `traffic` gives it a share; absent: `automatic`. */
  rollout_mode?: RolloutMode;
  /** Paused: the controller runs no replica; `scaling` is kept, so resume restores it. */
  paused: boolean;
  status: DeploymentStatus;
  /**
   * Why it is not ready yet, or not all its replicas are, in words (observed state): what a
   * replica of the newest revision is waiting on — "pulling <image>: 45%", "image not found:
   * …", a crash and its restart. Null when there is nothing to say; absent in older records.
   */
  status_reason?: string | null;
  created_at: string;
  updated_at: string;
}

export interface TokenRecord {
  id: number;
  /** The owning project; absent in older records: `default`. */
  project?: string;
  name: string;
  /** SHA-256 hex of the token value; the value itself is never stored. */
  hash: string;
  /** Records from before hints were dropped held the token's last four characters here; removed at start-up, never returned. */
  hint?: string;
  /** The highest X-Priority class a request with this token gets; null or absent (older records): any. */
  max_priority?: Priority | null;
  created_at: string;
}

/**
 * `admin`: the platform admin (no project); a project role otherwise. `member` is how records
 * from before projects named a non-admin account: read as `developer` of `default`.
 */
export type ServiceAccountRole = 'admin' | ProjectRole | 'member';

export interface ServiceAccountRecord {
  id: number;
  /** The project it acts in; null or absent for an admin. Absent on an older member: `default`. */
  project?: string | null;
  name: string;
  role: ServiceAccountRole;
  key_hash: string;
  /** Records from before hints were dropped held the key's last four characters here; removed at start-up, never returned. */
  hint?: string;
  created_at: string;
}

/** The key types the platform CA issues certificates for. */
export const KEY_TYPES = ['ecdsa-p256', 'rsa-2048'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

export interface CertificateRecord {
  id: number;
  /** The owning project; absent in older records: `default`. */
  project?: string;
  name: string;
  deployment_id: number | null;
  serial: string;
  fingerprint_sha256: string;
  certificate_pem: string;
  /** Private key, sealed. */
  sealed_key: string;
  not_after: string;
  revoked_at: string | null;
  /** The highest X-Priority class a request with this certificate gets; null or absent (older records): any. */
  max_priority?: Priority | null;
  /** The private key's type; absent (records from before EC keys): rsa-2048. */
  key_type?: KeyType;
  created_at: string;
}

export type ReplicaState = 'starting' | 'ready' | 'draining' | 'stopped' | 'failed';

/** Observed state of one replica, written by the controller from what its runtime sees. */
export interface ReplicaRecord {
  id: number;
  deployment_id: number;
  revision: number;
  component: string;
  /** `<deployment>-r<revision>-<id>`: the replica id engines report (system_fingerprint). */
  name: string;
  /** host:port the gateway forwards to; empty until the process has a port. */
  address: string;
  state: ReplicaState;
  restarts: number;
  /** The process (and process group) id on this node, for reaping after a crash. */
  pid: number | null;
  /** Prometheus scrape target of the replica (metrics port and path). */
  metrics_target: { address: string; path: string } | null;
  /** Why it is not ready, as its runtime says (pulling its image, a crash); null or absent when ready. */
  detail?: string | null;
  /**
   * Set when a stop of the service left it running (ISO time): its lifetime is counted up to
   * then, and the start that takes it back counts on from there. Null or absent otherwise.
   */
  counted_until?: string | null;
  updated_at: string;
}

/** One deployment's usage in one clock hour; counters only ever grow (exact, not sampled). */
export interface UsageRecord {
  id: number;
  /** The project of the deployment; absent in older records: `default`. */
  project?: string;
  deployment_id: number;
  /** Start of the hour, ISO 8601 UTC (e.g. 2026-11-23T16:00:00.000Z). */
  hour: string;
  requests: number;
  /** Requests answered with a 5xx status (by the platform or the replica). */
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** Requests refused with 429 by the deployment's rate_limit (counted in `requests` too). */
  rate_limited?: number;
  /** Replica lifetime × GPUs of its hardware instance. */
  gpu_seconds: number;
  /** Replica lifetime by component (Replica; Frontend, Worker, Prefill, Decode). */
  replica_seconds: Record<string, number>;
  /**
   * The same figures by the revision (its number) of the replica that served the request or
   * lived the seconds, so revisions sharing traffic can be compared. Requests that never
   * reached a replica (refused, held and given up) count only in the deployment's figures.
   * Absent on records written before revisions were counted: none.
   */
  revisions?: Record<string, RevisionUsage>;
  /**
   * The last batch each writing process (usage ledger) added, by writer: a batch retried
   * after its write went unanswered is not added twice. Internal; not shown by the API.
   */
  flushed?: Record<string, number>;
  updated_at: string;
}

/** One revision's part of an hour's usage (UsageRecord.revisions). */
export interface RevisionUsage {
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  gpu_seconds: number;
}

/**
 * Credentials for a private image registry, kept in the vault so deployments can name them
 * (registry_credential_id) instead of repeating them: the password sealed, never returned.
 */
export interface RegistryCredentialRecord {
  id: number;
  /** The owning project; absent in older records: `default`. */
  project?: string;
  name: string;
  username: string;
  sealed_password: string;
  /**
   * The registry host (host[:port], normalised: docker.io for Docker Hub) the password is
   * sent to, and the only one. Absent on records from before credentials were bound: the
   * control API binds those at start-up where the deployments using them agree on one host;
   * null when it could not (then the credential is not used until an admin binds it).
   */
  registry?: string | null;
  /** Records from before hints were dropped held the password's last four characters here; removed at start-up, never returned. */
  hint?: string;
  created_at: string;
}

/** Kubernetes' event types: `warning` for what someone may have to act on. */
export type EventType = 'normal' | 'warning';

/**
 * What the controller and the autoscaler record of a deployment: one decision or change each
 * (a scale, a rollout step, a replica restarting, an image pulled). Kept in the store per
 * deployment, the newest ones only, and deleted with it; identical ones close together are
 * folded into one with a count, as kubectl shows them.
 */
export interface DeploymentEvent {
  /** When it last happened (ISO 8601). */
  time: string;
  /** When it first happened; `time` unless folded. */
  first_time: string;
  type: EventType;
  /** One CamelCase word: ScaledUp, RolloutStarted, ReplicaRestarted, PullFailed, … */
  reason: string;
  message: string;
  /** How many times it happened (folded); 1 at first. */
  count: number;
}

/** An event as its writer gives it: the store folds and counts. */
export type NewDeploymentEvent = Pick<DeploymentEvent, 'time' | 'type' | 'reason' | 'message'>;

/**
 * A member of a project: a person by the e-mail address their identity provider gives
 * (`user:alice@example.com`) or everyone in one of its groups (`group:ml-platform`).
 */
export interface ProjectMember {
  subject: string;
  role: ProjectRole;
}

/** A team: it owns deployments, vault tokens, certificates, registry credentials, service accounts and usage. */
export interface ProjectRecord {
  id: number;
  /** A DNS label, unique and never changed: it is part of endpoint addresses. */
  name: string;
  /** GPUs the project's deployments may reserve (the spec's quota rule); null: only the cluster's capacity. */
  gpu_quota: number | null;
  members: ProjectMember[];
  created_at: string;
  updated_at: string;
}

/** A person who signed in through the identity provider (OpenID Connect). */
export interface UserRecord {
  id: number;
  /** The provider's issuer and subject (`sub`): who they are, whatever their e-mail becomes. */
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
  /** The groups of their last sign-in or refresh (the configured group claim). */
  groups: string[];
  created_at: string;
  last_sign_in_at: string;
}

/** A signed-in person's session: a console cookie or a CLI's session token. */
export interface SessionRecord {
  id: number;
  user_id: number;
  client: 'console' | 'cli';
  /** SHA-256 hex of the session token; the token itself is never stored. */
  token_hash: string;
  /** SHA-256 hex of the CSRF token the console sends on mutating calls (console sessions). */
  csrf_hash: string | null;
  /** SHA-256 hex of the CLI's refresh token (cli sessions); null for the console. */
  refresh_hash: string | null;
  /** The identity provider's refresh token, sealed: groups are read again on refresh. */
  sealed_idp_refresh_token: string | null;
  /** When the provider was last asked who this person is now (their groups); absent: at created_at. */
  idp_checked_at?: string;
  expires_at: string;
  created_at: string;
}

/** What an audit entry says happened to a call: done, refused (401, 403, 404 by policy) or failed. */
export type AuditResult = 'allowed' | 'refused' | 'failed';

/** One entry of the audit log: append-only, never changed or deleted through the API, never a secret. */
export interface AuditRecord {
  id: number;
  time: string;
  request_id: string;
  actor: { kind: 'service_account' | 'user' | 'anonymous'; id: number | null; name: string | null };
  /** The caller's role in the project (`admin` for the platform admin); null when unknown. */
  role: ProjectRole | 'admin' | null;
  /** The project acted in; null for platform-wide calls. */
  project: string | null;
  /** The rule of the route (domain/access.ts), or an event such as `auth.sign_in`. */
  action: Action | 'auth.sign_in' | 'auth.sign_in_refused' | 'auth.sign_out' | 'auth.refresh';
  /** `METHOD /path/{id}` as the OpenAPI document names the route; null for events. */
  route: string | null;
  target: { kind: string; id: number | string | null; name: string | null } | null;
  result: AuditResult;
  status: number;
  source_address: string;
}

/** Every kind the store holds, by name. */
export interface RecordMap {
  deployment: DeploymentRecord;
  token: TokenRecord;
  registry_credential: RegistryCredentialRecord;
  service_account: ServiceAccountRecord;
  certificate: CertificateRecord;
  replica: ReplicaRecord;
  usage: UsageRecord;
  project: ProjectRecord;
  user: UserRecord;
  session: SessionRecord;
  audit: AuditRecord;
}

export type Kind = keyof RecordMap;
export const KINDS: readonly Kind[] = [
  'deployment',
  'token',
  'registry_credential',
  'service_account',
  'certificate',
  'replica',
  'usage',
  'project',
  'user',
  'session',
  'audit',
];
