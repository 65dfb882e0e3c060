// Owns the console's checks of a request body before it is sent, for both deployment families,
// keyed by the API's field names (dotted for children: `env.FOO`, `config_file.filename`) so a
// problem lands next to the same control whichever side found it. The limits, patterns and
// messages are the control API's own: they come from src/domain/validation/field-rules.ts, which
// the server's rule modules call too (the console may import src/domain, which is pure, and
// bundles it; test/rule-agreement.test.ts holds both sides to the same verdict and words). This
// module only walks the form's body shape. What only the server can know (a taken name, quota,
// free instances, live vault tokens, the caller's role) is left to it. Imports carry `.js`: the
// root tsconfig (NodeNext) type-checks the unit tests that import this.

import { DEFAULT_FLOW_CONTROL } from '../../../src/domain/records.js';
import { PRIORITIES } from '../../../src/domain/priority.js';
import { credentialHostProblem, registryMove, type BoundCredential, type HeldCredentials } from '../../../src/domain/registry-hosts.js';
import {
  annotationKeyProblem,
  bodyLimitProblem,
  CONTAINER_PORT_REQUIRED,
  configFilenameProblem,
  configMountPathProblem,
  cooldownProblem,
  DEFAULT_COOLDOWN,
  envBothProblem,
  envNameProblem as envNameRule,
  firstResponseTimeoutProblem,
  hardwareRequired,
  healthPathProblem,
  IMAGE_REQUIRED,
  imageProblem as imageRule,
  maxQueueProblem,
  maxReplicasProblem,
  maxWaitProblem,
  METRICS_PATH_MISSING,
  METRICS_PORT_MISSING,
  metricsPathProblem,
  minReplicasProblem,
  MODEL_REQUIRED,
  modelProblem as modelRule,
  NAME_REQUIRED,
  nameProblems,
  portProblem,
  REGISTRY_CREDENTIAL_AND_PAIR,
  REGISTRY_PASSWORD_MISSING,
  REGISTRY_USERNAME_MISSING,
  requestsPerSecondProblem,
  SERVED_MODEL_NAME_EMPTY,
  tagProblem as tagRule,
  targetProblem,
  targetRequired,
  tokenProblem,
  tokensPerMinuteProblem,
} from '../../../src/domain/validation/field-rules.js';

export {
  BODY_LIMIT_MAX,
  BODY_LIMIT_MIN,
  COOLDOWN_MAX,
  DEFAULT_COOLDOWN,
  FIRST_RESPONSE_MAX_SECONDS,
  MAX_QUEUE_MAX,
  MAX_WAIT_MAX_SECONDS,
  NAME_MAX,
  PORT_MAX,
  portProblem,
  tokenProblem,
} from '../../../src/domain/validation/field-rules.js';

export type Problems = Record<string, string>;

export interface ConfigFileBody {
  filename: string;
  mount_path: string;
  content: string;
}

export interface RateLimitBody {
  requests_per_second?: number | null;
  tokens_per_minute?: number | null;
}

/** Flow control as the console sends it: always complete (blanks filled with the defaults). */
export interface FlowControlBody {
  max_queue: number;
  max_wait_seconds: { critical: number; standard: number; sheddable: number };
}

/** The fields both families share, as they go on the wire. */
export interface CommonBody {
  name?: string;
  cluster_id?: number;
  hardware_instance_id?: number;
  protocol?: 'http' | 'grpc';
  enable_logging?: boolean;
  enable_model_caching?: boolean;
  env?: Record<string, string>;
  /** Secret variables: a value sets or replaces, null removes; a name left out keeps its value. */
  secret_env?: Record<string, string | null>;
  annotations?: Record<string, string>;
  min_replicas?: number;
  max_replicas?: number;
  cooldown_period?: number;
  endpoint_bearer_token?: string | null;
  endpoint_token_id?: number | null;
  private_endpoint?: boolean;
  client_certificate_id?: number | null;
  max_request_body_bytes?: number | null;
  first_response_timeout_seconds?: number | null;
  rate_limit?: RateLimitBody | null;
  flow_control?: FlowControlBody | null;
  /** The autoscaling signal (concurrency, queue_depth, kv_cache, ttft) and its target for the metrics other than concurrency. */
  autoscaling_metric?: 'concurrency' | 'queue_depth' | 'kv_cache' | 'ttft';
  autoscaling_target?: number | null;
  /** The split between revisions (Settings only): entries name a revision or latest. */
  traffic?: Array<{ revision: number; percent: number; tag?: string } | { latest: true; percent: number; tag?: string }> | null;
  rollout_mode?: 'automatic' | 'manual';
}

export interface GeneralBody extends CommonBody {
  preset?: string;
  image?: string;
  tag?: string;
  container_port?: number;
  health_check_path?: string;
  registry_username?: string | null;
  registry_password?: string | null;
  /** Registry credentials from the vault, instead of registry_username and registry_password. */
  registry_credential_id?: number | null;
  session_affinity?: boolean;
  routing_policy?: 'affinity' | 'prefix_aware';
  command?: string[];
  metrics_port?: number | null;
  metrics_path?: string | null;
  config_file?: ConfigFileBody | null;
  max_concurrency?: number | null;
}

export interface OrchestratedBody extends CommonBody {
  serving_mode?: 'aggregated';
  model?: string;
  concurrency?: number | null;
  served_model_name?: string | null;
  model_hub_token?: string | null;
  extra_args?: string[];
}

// ---------------------------------------------------------------------------------------
// Reading what was typed: numbers arrive as the text of an input.

export type Parsed = { ok: true; value: number | null } | { ok: false; message: string };

/** A whole number typed in a field; "" is null (the API's default applies). */
export function parseWhole(field: string, text: string): Parsed {
  const t = text.trim();
  if (t === '') return { ok: true, value: null };
  if (!/^-?\d+$/.test(t) || !Number.isSafeInteger(Number(t))) return { ok: false, message: `${field} must be a whole number` };
  return { ok: true, value: Number(t) };
}

/** A positive number that may be a fraction (requests per second); "" is null. */
export function parseDecimal(field: string, text: string): Parsed {
  const t = text.trim();
  if (t === '') return { ok: true, value: null };
  const n = Number(t);
  if (!/^\d*\.?\d+$/.test(t) || !Number.isFinite(n)) return { ok: false, message: `${field} must be a number, e.g. 0.5 or 10` };
  return { ok: true, value: n };
}

/** One argument per line (command, extra arguments); blank lines are dropped. */
export function linesToArgs(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

export function argsToLines(args: readonly string[] | undefined): string {
  return (args ?? []).join('\n');
}

// ---------------------------------------------------------------------------------------
// Single rules. Each returns the first problem, or undefined.

/** The API reports every problem of a name; a field shows one, the first. */
export function nameProblem(name: string | undefined): string | undefined {
  if (name === undefined || name === '') return NAME_REQUIRED;
  return nameProblems(name)[0];
}

export function imageProblem(image: string | undefined): string | undefined {
  if (image === undefined || image === '') return IMAGE_REQUIRED;
  return imageRule(image);
}

export function tagProblem(tag: string | undefined): string | undefined {
  return tag === undefined ? undefined : tagRule(tag);
}

export function modelProblem(model: string | undefined): string | undefined {
  if (model === undefined || model === '') return MODEL_REQUIRED;
  return modelRule(model);
}

/**
 * The API's one rule for a variable's name, plain or secret. `simulated`: the image runs
 * infergate's own engine (always for orchestrated; for general the server alone knows, so the
 * console leaves those names to it).
 */
export function envNameProblem(name: string, simulated = false): string | undefined {
  return envNameRule(name, simulated);
}

/**
 * Environment variable names, plain and secret, and a name never both; values holding
 * credentials are the server's to judge. A secret typed empty is the console's own catch (the
 * API would store it): it is most likely a row added for a preset and not filled in yet.
 */
export function envProblems(env: Record<string, string> | undefined, secretEnv?: Record<string, string | null>, simulated = false): Problems {
  const out: Problems = {};
  for (const name of Object.keys(env ?? {})) {
    const p = envNameProblem(name, simulated);
    if (p) out[`env.${name}`] = p;
  }
  for (const [name, value] of Object.entries(secretEnv ?? {})) {
    const field = `secret_env.${name}`;
    // Removing a secret is always allowed, whatever its name, as the API allows it.
    const p = value === null ? undefined : envNameProblem(name, simulated);
    if (p) out[field] = p;
    else if (value === '') out[field] = `type the value of the secret variable ${name}, or remove its row`;
    else if (value !== null && Object.hasOwn(env ?? {}, name)) out[field] = envBothProblem(name);
  }
  return out;
}

export function annotationProblems(annotations: Record<string, string> | undefined): Problems {
  const out: Problems = {};
  for (const key of Object.keys(annotations ?? {})) {
    const p = annotationKeyProblem(key);
    if (p) out[`annotations.${key}`] = p;
  }
  return out;
}

/** Replicas, the concurrency target (`max_concurrency` or `concurrency`, required only when the deployment scales on concurrency) and the cooldown. */
export function scalingProblems(
  family: 'general' | 'orchestrated',
  body: { min_replicas?: number; max_replicas?: number; cooldown_period?: number; autoscaling_metric?: string },
  target: number | null | undefined,
): Problems {
  const out: Problems = {};
  const targetField = family === 'general' ? 'max_concurrency' : 'concurrency';
  const min = body.min_replicas ?? 1;
  const minProblem = minReplicasProblem(family, min);
  if (minProblem) out.min_replicas = minProblem;
  const max = body.max_replicas ?? Math.max(min, 1);
  const maxProblem = maxReplicasProblem(max, minProblem ? undefined : min);
  if (maxProblem) out.max_replicas = maxProblem;
  const given = target !== undefined && target !== null ? targetProblem(targetField, target) : undefined;
  if (given) out[targetField] = given;
  else if ((target === undefined || target === null) && (body.autoscaling_metric ?? 'concurrency') === 'concurrency' && !out.min_replicas && !out.max_replicas && max > min) {
    out[targetField] = targetRequired(targetField, max, min);
  }
  const cooldown = cooldownProblem(body.cooldown_period ?? DEFAULT_COOLDOWN);
  if (cooldown) out.cooldown_period = cooldown;
  return out;
}

/**
 * No public endpoints: a bearer token or a client certificate. `tokenBound` says whether a
 * token will protect the endpoint after this request (a value in the body, one the console
 * will create on submit, or one already bound and kept).
 */
export function authProblems(body: CommonBody, tokenBound: boolean): Problems {
  const out: Problems = {};
  const token = body.endpoint_bearer_token;
  if (typeof token === 'string') {
    const p = tokenProblem(token);
    if (p) out.endpoint_bearer_token = p;
  }
  const certificate = body.private_endpoint === true || (body.client_certificate_id ?? null) !== null;
  if (!tokenBound && !certificate) {
    out.endpoint_bearer_token =
      'every endpoint must be protected; public endpoints are not supported: choose an endpoint token, or make it a private endpoint (a client certificate is issued)';
  }
  return out;
}

export function limitsProblems(body: CommonBody): Problems {
  const out: Problems = {};
  const bytes = body.max_request_body_bytes;
  const bytesProblem = typeof bytes === 'number' ? bodyLimitProblem(bytes) : undefined;
  if (bytesProblem) out.max_request_body_bytes = bytesProblem;
  const firstResponse = body.first_response_timeout_seconds;
  const firstProblem = typeof firstResponse === 'number' ? firstResponseTimeoutProblem(firstResponse) : undefined;
  if (firstProblem) out.first_response_timeout_seconds = firstProblem;
  const rps = body.rate_limit?.requests_per_second;
  const rpsProblem = typeof rps === 'number' ? requestsPerSecondProblem(rps) : undefined;
  if (rpsProblem) out['rate_limit.requests_per_second'] = rpsProblem;
  const tpm = body.rate_limit?.tokens_per_minute;
  const tpmProblem = typeof tpm === 'number' ? tokensPerMinuteProblem(tpm) : undefined;
  if (tpmProblem) out['rate_limit.tokens_per_minute'] = tpmProblem;
  Object.assign(out, flowControlProblems(body.flow_control));
  return out;
}

/** The API's flow_control ranges: a queue of 0 to 100000, each class's wait 0 to 3600 s; blank fields take the defaults. */
export function flowControlProblems(flow: FlowControlBody | null | undefined): Problems {
  const out: Problems = {};
  if (!flow) return out;
  const queue = maxQueueProblem(flow.max_queue, DEFAULT_FLOW_CONTROL.max_queue);
  if (queue) out['flow_control.max_queue'] = queue;
  for (const cls of PRIORITIES) {
    const wait = maxWaitProblem(cls, flow.max_wait_seconds[cls], DEFAULT_FLOW_CONTROL.max_wait_seconds[cls]);
    if (wait) out[`flow_control.max_wait_seconds.${cls}`] = wait;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Whole requests.

export interface CheckOptions {
  /** Create checks the name; an edit cannot change it. */
  mode: 'create' | 'edit';
  /** An endpoint token will be bound once the request is applied. */
  tokenBound: boolean;
  /** Edit only: the deployment already holds a registry password that this body keeps. */
  registryPasswordStored?: boolean;
  /** The vault's registry credentials with the host each is bound to: one is used only for an image pulled from there. */
  registryCredentials?: readonly BoundCredential[];
}

function checkRegistry(body: GeneralBody, opts: CheckOptions, out: Problems): void {
  const username = body.registry_username ?? '';
  const given = body.registry_password;
  const passwordSet = typeof given === 'string' ? given !== '' : given === undefined && opts.registryPasswordStored === true;
  if (username !== '' && !passwordSet) out.registry_password = REGISTRY_PASSWORD_MISSING;
  if (username === '' && passwordSet) out.registry_username = REGISTRY_USERNAME_MISSING;
  if (typeof body.registry_credential_id === 'number' && (username !== '' || passwordSet)) out.registry_credential_id = REGISTRY_CREDENTIAL_AND_PAIR;
  else if (typeof body.registry_credential_id === 'number' && body.image) {
    const credential = opts.registryCredentials?.find((c) => c.id === body.registry_credential_id);
    const problem = credential ? credentialHostProblem(credential, body.image) : undefined;
    if (problem) out.registry_credential_id = problem;
  }
}

/**
 * Settings: a change that moves the image to another registry host drops the credentials the
 * deployment holds (those of the old host are never sent to the new one), so a `patch` that
 * names none of them is refused, on each field it holds, in the server's words.
 */
export function registryMoveProblems(stored: { image: string } & HeldCredentials, patch: Readonly<Record<string, unknown>>): Problems {
  if (typeof patch.image !== 'string') return {};
  const move = registryMove(stored.image, patch.image, stored, patch);
  return move.moved === null ? {} : Object.fromEntries(move.problems.map((p) => [p.field, p.message]));
}

function checkMetrics(body: GeneralBody, out: Problems): void {
  const port = body.metrics_port ?? null;
  const path = body.metrics_path ?? null;
  if (port !== null && (path === null || path === '')) out.metrics_path = METRICS_PATH_MISSING;
  if (port === null && path !== null && path !== '') out.metrics_port = METRICS_PORT_MISSING;
  if (port !== null) {
    const p = portProblem('metrics_port', port);
    if (p) out.metrics_port = p;
  }
  const pathProblem = path !== null && path !== '' ? metricsPathProblem(path) : undefined;
  if (pathProblem) out.metrics_path = pathProblem;
}

/** Filename and mount path whenever any part is given; the content may be empty (as the API allows). */
function checkConfigFile(file: ConfigFileBody | null | undefined, out: Problems): void {
  if (!file) return;
  const filename = configFilenameProblem(file.filename);
  if (filename) out['config_file.filename'] = filename;
  const mountPath = configMountPathProblem(file.mount_path);
  if (mountPath) out['config_file.mount_path'] = mountPath;
}

/**
 * A preset's example command names what the user must fill in as `<org>/<model>`: left as it
 * is, the engine starts, refuses the argument and restarts forever. Not an API rule (the API
 * takes any command); the console catches it before the first replica fails.
 */
const PLACEHOLDER = /<[A-Za-z][A-Za-z0-9_-]*>/;

export function placeholderProblem(args: readonly string[] | undefined): string | undefined {
  const hit = (args ?? []).map((a) => PLACEHOLDER.exec(a)?.[0]).find((m) => m !== undefined);
  return hit ? `replace ${hit} in the command with a real value (the example's placeholder), e.g. meta-llama/Llama-3.1-8B-Instruct for <org>/<model>` : undefined;
}

export function checkGeneral(body: GeneralBody, opts: CheckOptions): Problems {
  const out: Problems = {};
  if (opts.mode === 'create') {
    const n = nameProblem(body.name);
    if (n) out.name = n;
  }
  if (opts.mode === 'create' && body.cluster_id === undefined) out.cluster_id = 'cluster_id is required: choose a cluster';
  if (body.hardware_instance_id === undefined) out.hardware_instance_id = hardwareRequired('general');
  const image = imageProblem(body.image);
  if (image) out.image = image;
  const tag = tagProblem(body.tag);
  if (tag) out.tag = tag;
  if (body.container_port === undefined) out.container_port = CONTAINER_PORT_REQUIRED;
  else {
    const p = portProblem('container_port', body.container_port);
    if (p) out.container_port = p;
  }
  const health = body.health_check_path === undefined ? undefined : healthPathProblem(body.health_check_path);
  if (health) out.health_check_path = health;
  const placeholder = placeholderProblem(body.command);
  if (placeholder) out.command = placeholder;
  checkRegistry(body, opts, out);
  checkMetrics(body, out);
  checkConfigFile(body.config_file, out);
  Object.assign(out, envProblems(body.env, body.secret_env), annotationProblems(body.annotations));
  Object.assign(out, scalingProblems('general', body, body.max_concurrency), authProblems(body, opts.tokenBound), limitsProblems(body));
  return out;
}

export function checkOrchestrated(body: OrchestratedBody, opts: CheckOptions): Problems {
  const out: Problems = {};
  if (opts.mode === 'create') {
    const n = nameProblem(body.name);
    if (n) out.name = n;
  }
  if (opts.mode === 'create' && body.cluster_id === undefined) out.cluster_id = 'cluster_id is required: choose a cluster with orchestration enabled';
  if (body.hardware_instance_id === undefined) out.hardware_instance_id = hardwareRequired('orchestrated');
  const model = modelProblem(body.model);
  if (model) out.model = model;
  if (typeof body.served_model_name === 'string' && body.served_model_name.trim() === '') {
    out.served_model_name = SERVED_MODEL_NAME_EMPTY;
  }
  // Every orchestrated deployment runs infergate's own engine, so code-loading names are refused.
  Object.assign(out, envProblems(body.env, body.secret_env, true), annotationProblems(body.annotations));
  Object.assign(out, scalingProblems('orchestrated', body, body.concurrency), authProblems(body, opts.tokenBound), limitsProblems(body));
  return out;
}
