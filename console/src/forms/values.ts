// Owns the forms' values (what the inputs hold: text as typed, so nothing is lost or reformatted
// when the server refuses) and their two conversions: a stored deployment into values (Settings
// prefill) and values into the request body the API takes. Both the create body and the
// Settings diff go through the same conversion, so the API's defaults (tag latest, path /,
// cooldown 300, max = min) read the same on both sides of a diff. Secret environment
// variables are write-only: the form knows a stored one by name and sends only what changes.

import type { Deployment, VaultToken } from '../api/types';
import { DEFAULT_FLOW_CONTROL } from '../../../src/domain/records';
import type { AutoscalingMetric } from './signal';
import { rowIsSecret, type EnvRow, type StoredSecret } from '../components/env-editor';
import { pairsToRecord, recordToPairs, type Pair } from '../components/form';
import {
  argsToLines,
  DEFAULT_COOLDOWN,
  linesToArgs,
  parseDecimal,
  parseWhole,
  type CommonBody,
  type FlowControlBody,
  type GeneralBody,
  type OrchestratedBody,
  type Problems,
} from './rules';

export interface ScalingValues {
  min_replicas: string;
  max_replicas: string;
  /** max_concurrency (general) or concurrency (orchestrated). */
  target: string;
  cooldown_period: string;
  /** The signal the autoscaler scales on; its target (autoscaling_target) when not concurrency. */
  metric: AutoscalingMetric;
  signal_target: string;
}

export type { EnvRow, StoredSecret };

export interface CommonValues {
  cluster_id: number | null;
  hardware_instance_id: number | null;
  protocol: 'http' | 'grpc';
  enable_logging: boolean;
  enable_model_caching: boolean;
  env: EnvRow[];
  storedSecrets: StoredSecret[];
  annotations: Pair[];
  scaling: ScalingValues;
}

export interface GeneralValues extends CommonValues {
  preset: string;
  image: string;
  tag: string;
  container_port: string;
  health_check_path: string;
  /** Where the registry credentials come from: the two fields below, or the vault's by id. */
  registry_source: RegistrySource;
  registry_username: string;
  /** Empty: none (create) or keep the stored one (Settings). */
  registry_password: string;
  session_affinity: boolean;
  routing_policy: 'affinity' | 'prefix_aware';
  /** One argument per line. */
  command: string;
  metrics_port: string;
  metrics_path: string;
  config_file: { filename: string; mount_path: string; content: string };
}

export interface OrchestratedValues extends CommonValues {
  model: string;
  served_model_name: string;
  /** Empty: none (create) or keep the stored one (Settings). */
  model_hub_token: string;
  /** Settings only: remove the stored model hub token. */
  clear_model_hub_token: boolean;
  /** One argument per line. */
  extra_args: string;
}

/**
 * How the image registry is authenticated to. `own`: the registry_username and
 * registry_password fields (both empty: a public image); `vault:<id>`: registry credentials
 * kept in the vault, bound by their id (registry_credential_id).
 */
export type RegistrySource = 'own' | `vault:${number}`;

export interface LimitsValues {
  max_request_body_bytes: string;
  first_response_timeout_seconds: string;
  requests_per_second: string;
  tokens_per_minute: string;
  flow: FlowControlValues;
}

/** Flow control as typed: all empty means the defaults (no flow_control of its own). */
export interface FlowControlValues {
  max_queue: string;
  critical: string;
  standard: string;
  sheddable: string;
}

export const emptyFlowControl = (): FlowControlValues => ({ max_queue: '', critical: '', standard: '', sheddable: '' });

/**
 * How the endpoint token is chosen. `vault:<id>`: an existing vault token, bound by its id
 * (endpoint_token_id): the vault never shows a value again, and need not.
 */
export type TokenChoice = 'keep' | 'new' | 'paste' | 'none' | `vault:${number}`;

export interface CreatedToken {
  id: number;
  name: string;
  value: string;
}

export interface AuthValues {
  choice: TokenChoice;
  /** The pasted value (paste). */
  value: string;
  /** A token this form created in the vault; reused on a retry so a refusal makes no second one. */
  created: CreatedToken | null;
  private_endpoint: boolean;
}

export interface Built<T> {
  body: T;
  /** Problems found while reading the inputs (a number that is not one), keyed by API field. */
  problems: Problems;
}

// ---------------------------------------------------------------------------------------
// Empty forms.

const emptyScaling = (): ScalingValues => ({
  min_replicas: '1',
  max_replicas: '1',
  target: '',
  cooldown_period: String(DEFAULT_COOLDOWN),
  metric: 'concurrency',
  signal_target: '',
});

export function emptyGeneral(): GeneralValues {
  return {
    cluster_id: null,
    hardware_instance_id: null,
    protocol: 'http',
    enable_logging: true,
    enable_model_caching: false,
    env: [],
    storedSecrets: [],
    annotations: [],
    scaling: emptyScaling(),
    preset: '',
    image: '',
    tag: 'latest',
    container_port: '',
    health_check_path: '/',
    registry_source: 'own',
    registry_username: '',
    registry_password: '',
    session_affinity: false,
    routing_policy: 'affinity',
    command: '',
    metrics_port: '',
    metrics_path: '',
    config_file: { filename: '', mount_path: '', content: '' },
  };
}

export function emptyOrchestrated(): OrchestratedValues {
  return {
    cluster_id: null,
    hardware_instance_id: null,
    protocol: 'http',
    enable_logging: true,
    enable_model_caching: false,
    env: [],
    storedSecrets: [],
    annotations: [],
    scaling: emptyScaling(),
    model: '',
    served_model_name: '',
    model_hub_token: '',
    clear_model_hub_token: false,
    extra_args: '',
  };
}

export const emptyAuth = (choice: TokenChoice): AuthValues => ({ choice, value: '', created: null, private_endpoint: false });

// ---------------------------------------------------------------------------------------
// A stored deployment as values (Settings).

const text = (n: number | null | undefined): string => (n === null || n === undefined ? '' : String(n));

function commonFrom(d: Deployment, target: number | null | undefined): CommonValues {
  return {
    cluster_id: d.cluster_id,
    hardware_instance_id: d.hardware_instance_id ?? null,
    protocol: d.protocol === 'grpc' ? 'grpc' : 'http',
    enable_logging: d.enable_logging ?? true,
    enable_model_caching: d.enable_model_caching ?? false,
    env: recordToPairs(d.env).map((p) => ({ ...p, secret: false })),
    storedSecrets: (d.secret_env ?? []).map((name) => ({ name, action: 'keep' as const, value: '' })),
    annotations: recordToPairs(d.annotations),
    scaling: {
      min_replicas: text(d.min_replicas),
      max_replicas: text(d.max_replicas),
      target: text(target),
      cooldown_period: text(d.cooldown_period),
      metric: d.autoscaling_metric ?? 'concurrency',
      signal_target: d.autoscaling_metric && d.autoscaling_metric !== 'concurrency' ? text(d.autoscaling_target) : '',
    },
  };
}

export function generalFrom(d: Deployment): GeneralValues {
  return {
    ...commonFrom(d, d.max_concurrency),
    preset: d.preset ?? '',
    image: d.image ?? '',
    tag: d.tag ?? 'latest',
    container_port: text(d.container_port),
    health_check_path: d.health_check_path ?? '/',
    registry_source: d.registry_credential_id != null ? `vault:${d.registry_credential_id}` : 'own',
    registry_username: d.registry_username ?? '',
    registry_password: '',
    session_affinity: d.session_affinity ?? false,
    routing_policy: d.routing_policy ?? 'affinity',
    command: argsToLines(d.command),
    metrics_port: text(d.metrics_port),
    metrics_path: d.metrics_path ?? '',
    config_file: d.config_file ? { ...d.config_file } : { filename: '', mount_path: '', content: '' },
  };
}

export function orchestratedFrom(d: Deployment): OrchestratedValues {
  return {
    ...commonFrom(d, d.concurrency),
    model: d.model ?? '',
    served_model_name: d.served_model_name ?? '',
    model_hub_token: '',
    clear_model_hub_token: false,
    extra_args: argsToLines(d.extra_args),
  };
}

/** The endpoint limits are in the deployment's answer though not in the console's Deployment type. */
export interface WithLimits {
  max_request_body_bytes?: number | null;
  first_response_timeout_seconds?: number | null;
  rate_limit?: { requests_per_second?: number | null; tokens_per_minute?: number | null } | null;
  /** What the gateway applies: the deployment's own, or the defaults (then flow_control_is_default). */
  flow_control?: FlowControlBody;
  flow_control_is_default?: boolean;
}

/** The deployment's own flow control as values; empty when it has none (the defaults apply). */
export function flowControlFrom(d: WithLimits): FlowControlValues {
  const fc = d.flow_control;
  if (!fc || d.flow_control_is_default === true) return emptyFlowControl();
  return { max_queue: text(fc.max_queue), critical: text(fc.max_wait_seconds.critical), standard: text(fc.max_wait_seconds.standard), sheddable: text(fc.max_wait_seconds.sheddable) };
}

export function limitsFrom(d: Deployment & WithLimits): LimitsValues {
  return {
    max_request_body_bytes: text(d.max_request_body_bytes),
    first_response_timeout_seconds: text(d.first_response_timeout_seconds),
    requests_per_second: text(d.rate_limit?.requests_per_second),
    tokens_per_minute: text(d.rate_limit?.tokens_per_minute),
    flow: flowControlFrom(d),
  };
}

// ---------------------------------------------------------------------------------------
// Values as a request body.

class Reader {
  readonly problems: Problems = {};

  whole(field: string, value: string): number | null {
    const parsed = parseWhole(field, value);
    if (parsed.ok) return parsed.value;
    this.problems[field] = parsed.message;
    return null;
  }

  decimal(field: string, value: string): number | null {
    const parsed = parseDecimal(field, value);
    if (parsed.ok) return parsed.value;
    this.problems[field] = parsed.message;
    return null;
  }
}

const nonEmpty = (s: string): string | undefined => (s.trim() === '' ? undefined : s.trim());

/**
 * The environment as the API takes it: plain rows in env; in secret_env, secret rows' values
 * and the stored secrets replaced (a value) or removed (null). A stored secret kept is left out,
 * so it keeps its value. Values are taken as typed: spaces may be part of a secret.
 */
export function environmentBody(v: Pick<CommonValues, 'env' | 'storedSecrets'>): Pick<CommonBody, 'env' | 'secret_env'> {
  const secretEnv: Record<string, string | null> = {};
  for (const s of v.storedSecrets) {
    if (s.action === 'replace') secretEnv[s.name] = s.value;
    else if (s.action === 'remove') secretEnv[s.name] = null;
  }
  for (const row of v.env) if (rowIsSecret(row) && row.key.trim() !== '') secretEnv[row.key.trim()] = row.value;
  const body: Pick<CommonBody, 'env' | 'secret_env'> = { env: pairsToRecord(v.env.filter((row) => !rowIsSecret(row))) };
  if (Object.keys(secretEnv).length > 0) body.secret_env = secretEnv;
  return body;
}

/** The rows after choosing a preset: the variables its engine reads a credential from become secret rows. */
export function withPresetSecrets(rows: readonly EnvRow[], names: readonly string[]): EnvRow[] {
  const out = rows.map((row) => (names.includes(row.key.trim()) ? { ...row, secret: true } : row));
  for (const name of names) if (!out.some((row) => row.key.trim() === name)) out.push({ key: name, value: '', secret: true });
  return out;
}

function commonBody(v: CommonValues, family: 'general' | 'orchestrated', r: Reader): CommonBody & { target?: number } {
  const body: CommonBody & { target?: number } = {
    autoscaling_metric: v.scaling.metric,
    protocol: v.protocol,
    enable_logging: v.enable_logging,
    enable_model_caching: v.enable_model_caching,
    ...environmentBody(v),
    annotations: pairsToRecord(v.annotations),
  };
  if (v.cluster_id !== null) body.cluster_id = v.cluster_id;
  if (v.hardware_instance_id !== null) body.hardware_instance_id = v.hardware_instance_id;
  const targetField = family === 'general' ? 'max_concurrency' : 'concurrency';
  // The API's defaults written out, so a blank field and the default compare equal in a diff.
  const min = r.whole('min_replicas', v.scaling.min_replicas) ?? 1;
  body.min_replicas = min;
  body.max_replicas = r.whole('max_replicas', v.scaling.max_replicas) ?? Math.max(min, 1);
  const target = r.whole(targetField, v.scaling.target);
  if (target !== null) body.target = target;
  body.cooldown_period = r.whole('cooldown_period', v.scaling.cooldown_period) ?? DEFAULT_COOLDOWN;
  // Concurrency's target is the field above: autoscaling_target goes with the other metrics only.
  if (v.scaling.metric !== 'concurrency') {
    const signalTarget = r.decimal('autoscaling_target', v.scaling.signal_target);
    if (signalTarget !== null) body.autoscaling_target = signalTarget;
  }
  return body;
}

/** The vault id of a `vault:<id>` choice, or null. */
export const vaultIdOf = (choice: string): number | null => (choice.startsWith('vault:') ? Number(choice.slice('vault:'.length)) : null);

export function generalBody(v: GeneralValues): Built<GeneralBody> {
  const r = new Reader();
  const { target, ...common } = commonBody(v, 'general', r);
  const body: GeneralBody = { ...common, tag: nonEmpty(v.tag) ?? 'latest', health_check_path: nonEmpty(v.health_check_path) ?? '/' };
  if (target !== undefined) body.max_concurrency = target;
  const preset = nonEmpty(v.preset);
  if (preset) body.preset = preset;
  const image = nonEmpty(v.image);
  if (image) body.image = image;
  const port = r.whole('container_port', v.container_port);
  if (port !== null) body.container_port = port;
  const vaultCredential = vaultIdOf(v.registry_source);
  if (vaultCredential !== null) body.registry_credential_id = vaultCredential;
  else {
    // The fields stay filled while the vault's are chosen (switching back keeps them) but are not sent.
    const username = nonEmpty(v.registry_username);
    if (username) body.registry_username = username;
    // Passwords are taken as typed: spaces may be part of them.
    if (v.registry_password !== '') body.registry_password = v.registry_password;
  }
  body.session_affinity = v.session_affinity;
  body.routing_policy = v.routing_policy;
  body.command = linesToArgs(v.command);
  const metricsPort = r.whole('metrics_port', v.metrics_port);
  if (metricsPort !== null) body.metrics_port = metricsPort;
  const metricsPath = nonEmpty(v.metrics_path);
  if (metricsPath) body.metrics_path = metricsPath;
  const file = v.config_file;
  if (file.filename.trim() !== '' || file.mount_path.trim() !== '' || file.content !== '') {
    body.config_file = { filename: file.filename.trim(), mount_path: file.mount_path.trim(), content: file.content };
  }
  return { body, problems: r.problems };
}

export function orchestratedBody(v: OrchestratedValues): Built<OrchestratedBody> {
  const r = new Reader();
  const { target, ...common } = commonBody(v, 'orchestrated', r);
  const body: OrchestratedBody = { ...common, extra_args: linesToArgs(v.extra_args) };
  if (target !== undefined) body.concurrency = target;
  const model = nonEmpty(v.model);
  if (model) body.model = model;
  const served = nonEmpty(v.served_model_name);
  if (served) body.served_model_name = served;
  if (v.model_hub_token !== '') body.model_hub_token = v.model_hub_token;
  else if (v.clear_model_hub_token) body.model_hub_token = null;
  return { body, problems: r.problems };
}

/**
 * flow_control from the values: left out when every field is empty (the defaults); else complete,
 * an empty field taking its default, so the body compares equal to the stored value it came from.
 */
function readFlowControl(v: FlowControlValues, r: Reader): FlowControlBody | undefined {
  const queue = r.whole('flow_control.max_queue', v.max_queue);
  const wait = (cls: 'critical' | 'standard' | 'sheddable') => r.whole(`flow_control.max_wait_seconds.${cls}`, v[cls]);
  const [critical, standard, sheddable] = [wait('critical'), wait('standard'), wait('sheddable')];
  if (queue === null && critical === null && standard === null && sheddable === null) return undefined;
  const d = DEFAULT_FLOW_CONTROL;
  return {
    max_queue: queue ?? d.max_queue,
    max_wait_seconds: { critical: critical ?? d.max_wait_seconds.critical, standard: standard ?? d.max_wait_seconds.standard, sheddable: sheddable ?? d.max_wait_seconds.sheddable },
  };
}

/** The create forms' flow control alone: `{flow_control}` or nothing (the defaults). */
export function flowControlBody(v: FlowControlValues): Built<Pick<CommonBody, 'flow_control'>> {
  const r = new Reader();
  const flow = readFlowControl(v, r);
  return { body: flow ? { flow_control: flow } : {}, problems: r.problems };
}

export function limitsBody(v: LimitsValues): Built<CommonBody> {
  const r = new Reader();
  const body: CommonBody = {};
  const flow = readFlowControl(v.flow, r);
  if (flow) body.flow_control = flow;
  const bytes = r.whole('max_request_body_bytes', v.max_request_body_bytes);
  if (bytes !== null) body.max_request_body_bytes = bytes;
  const firstResponse = r.whole('first_response_timeout_seconds', v.first_response_timeout_seconds);
  if (firstResponse !== null) body.first_response_timeout_seconds = firstResponse;
  const rps = r.decimal('rate_limit.requests_per_second', v.requests_per_second);
  const tpm = r.whole('rate_limit.tokens_per_minute', v.tokens_per_minute);
  if (rps !== null || tpm !== null) {
    body.rate_limit = {};
    if (rps !== null) body.rate_limit.requests_per_second = rps;
    if (tpm !== null) body.rate_limit.tokens_per_minute = tpm;
  }
  return { body, problems: r.problems };
}

/** Where the endpoint stands after this form: the auth part of the body and whether a token stays bound. */
export interface AuthPlan {
  body: Pick<CommonBody, 'endpoint_bearer_token' | 'endpoint_token_id' | 'private_endpoint'>;
  /** A token protects the endpoint afterwards (given, kept, or created on submit). */
  tokenBound: boolean;
  /** A certificate bound earlier stays bound (Settings, private endpoint left on). */
  certificateKept: boolean;
  /** The console must create a vault token before sending. */
  createOnSubmit: boolean;
  problems: Problems;
}

export function authPlan(a: AuthValues, vault: readonly VaultToken[], current: Deployment | null): AuthPlan {
  const plan: AuthPlan = { body: { private_endpoint: a.private_endpoint }, tokenBound: false, certificateKept: false, createOnSubmit: false, problems: {} };
  const hasToken = current !== null && current.endpoint_token_id !== null;
  if (current !== null && current.client_certificate_id !== null && a.private_endpoint === current.private_endpoint) plan.certificateKept = true;
  if (a.choice === 'keep') plan.tokenBound = hasToken;
  else if (a.choice === 'new') {
    plan.tokenBound = true;
    if (a.created) plan.body.endpoint_bearer_token = a.created.value;
    else plan.createOnSubmit = true;
  } else if (a.choice === 'none') {
    if (hasToken) plan.body.endpoint_bearer_token = null;
  } else if (a.choice.startsWith('vault:')) {
    const vaultId = Number(a.choice.slice('vault:'.length));
    plan.tokenBound = true;
    // Unchanged binding: nothing to send.
    if (current?.endpoint_token_id !== vaultId) plan.body.endpoint_token_id = vaultId;
    if (!vault.some((t) => t.id === vaultId)) plan.problems.endpoint_bearer_token = `vault token ${vaultId} no longer exists; choose another`;
  } else {
    const value = a.value.trim();
    plan.tokenBound = value !== '';
    if (value === '') plan.problems.endpoint_bearer_token = 'paste the token value';
    else plan.body.endpoint_bearer_token = value;
  }
  return plan;
}
