// Owns the browser's copy of the control API's request rules for both deployment families, as
// pure functions over the request body the console is about to send, keyed by the API's field
// names (dotted for children: `env.FOO`, `config_file.filename`) so a problem lands next to the
// same control whichever side found it. Messages follow the API's wording. What only the server
// can know (a taken name, quota, free instances, live vault tokens, the caller's role) is left
// to it. No imports: the root tsconfig (NodeNext) type-checks the unit tests that import this.

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

export const NAME_MAX = 20;
export const COOLDOWN_MAX = 3600;
export const DEFAULT_COOLDOWN = 300;
const PORT_MAX = 65535;
const TOKEN_MIN = 8;
const TOKEN_MAX = 512;
const BODY_LIMIT_MIN = 1024;
const BODY_LIMIT_MAX = 64 * 1024 ** 3;
export const MAX_QUEUE_MAX = 100_000;
export const MAX_WAIT_MAX_SECONDS = 3_600;
const PRIORITY_CLASSES = ['critical', 'standard', 'sheddable'] as const;
const FIRST_RESPONSE_MAX_SECONDS = 86_400;

const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ANNOTATION_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const MODEL_ID = /^[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+$/;

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

export function nameProblem(name: string | undefined): string | undefined {
  if (name === undefined || name === '') return 'name is required: lowercase letters, digits and hyphens, at most 20 characters';
  if (name.length > NAME_MAX) return `name must be at most ${NAME_MAX} characters; "${name}" has ${name.length}`;
  if (!/^[a-z0-9-]*$/.test(name)) return 'name may contain only lowercase letters, digits and hyphens';
  if (!/^[A-Za-z]/.test(name)) return 'name must start with a lowercase letter';
  if (!/[A-Za-z0-9]$/.test(name)) return 'name must end with a letter or digit';
  return undefined;
}

export function portProblem(field: string, port: number): string | undefined {
  return port < 1 || port > PORT_MAX ? `${field} must be between 1 and ${PORT_MAX}` : undefined;
}

export function imageProblem(image: string | undefined): string | undefined {
  if (image === undefined || image === '') return 'image is required: the container image to run, given without a tag';
  if (/\s/.test(image)) return 'image must not contain whitespace';
  const last = image.slice(image.lastIndexOf('/') + 1);
  if (image.includes('@') || last.includes(':')) return 'image must be given without a tag or digest: put the tag in `tag`';
  return undefined;
}

export function tagProblem(tag: string | undefined): string | undefined {
  if (tag === undefined) return undefined;
  return TAG.test(tag) ? undefined : 'tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, a container image tag';
}

export function modelProblem(model: string | undefined): string | undefined {
  if (model === undefined || model === '') return 'model is required: a model-hub identifier of the form <org>/<model>';
  if (!MODEL_ID.test(model)) {
    return "model must be a model-hub identifier of the form <org>/<model> (letters, digits, '.', '_', '-'), e.g. meta-llama/Llama-3.1-8B-Instruct";
  }
  return undefined;
}

export function tokenProblem(token: string): string | undefined {
  if (token.length < TOKEN_MIN || token.length > TOKEN_MAX) return `endpoint_bearer_token must be ${TOKEN_MIN} to ${TOKEN_MAX} characters long`;
  if (!TOKEN68.test(token)) {
    return 'endpoint_bearer_token may contain only letters, digits and - . _ ~ + / (then optional trailing =), the RFC 6750 token68 characters';
  }
  return undefined;
}

/** The API's one rule for a variable's name, plain or secret. */
export function envNameProblem(name: string): string | undefined {
  if (ENV_NAME.test(name)) return undefined;
  return `environment variable name "${name}" is invalid: names use letters, digits and underscores and begin with a letter or underscore`;
}

/**
 * Environment variable names, plain and secret, and a name never both; values holding
 * credentials are the server's to judge. A secret typed empty is the console's own catch (the
 * API would store it): it is most likely a row added for a preset and not filled in yet.
 */
export function envProblems(env: Record<string, string> | undefined, secretEnv?: Record<string, string | null>): Problems {
  const out: Problems = {};
  for (const name of Object.keys(env ?? {})) {
    const p = envNameProblem(name);
    if (p) out[`env.${name}`] = p;
  }
  for (const [name, value] of Object.entries(secretEnv ?? {})) {
    const field = `secret_env.${name}`;
    const p = envNameProblem(name);
    if (p) out[field] = p;
    else if (value === '') out[field] = `type the value of the secret variable ${name}, or remove its row`;
    else if (value !== null && Object.hasOwn(env ?? {}, name)) {
      out[field] = `${name} is both a plain variable and a secret one; a variable is one or the other: remove its plain row to keep it secret, or its secret one to keep it plain`;
    }
  }
  return out;
}

export function annotationProblems(annotations: Record<string, string> | undefined): Problems {
  const out: Problems = {};
  for (const key of Object.keys(annotations ?? {})) {
    if (!ANNOTATION_KEY.test(key)) {
      out[`annotations.${key}`] =
        `annotation key "${key}" is invalid: an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit`;
    }
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
  if (family === 'orchestrated' && min < 1) out.min_replicas = 'min_replicas must be at least 1: orchestrated deployments do not scale to zero';
  else if (min < 0) out.min_replicas = 'min_replicas must be 0 or more (0 allows scale-to-zero)';
  const max = body.max_replicas ?? Math.max(min, 1);
  if (max < 1) out.max_replicas = 'max_replicas must be at least 1';
  else if (!out.min_replicas && max < min) out.max_replicas = `max_replicas (${max}) must be at least min_replicas (${min})`;
  if (target !== undefined && target !== null && target < 1) {
    out[targetField] = `${targetField} must be a positive integer: the target number of in-flight requests per replica`;
  } else if ((target === undefined || target === null) && (body.autoscaling_metric ?? 'concurrency') === 'concurrency' && !out.min_replicas && !out.max_replicas && max > min) {
    out[targetField] =
      `${targetField} is required when max_replicas (${max}) > min_replicas (${min}): it is the per-replica request target the autoscaler scales on`;
  }
  const cooldown = body.cooldown_period ?? DEFAULT_COOLDOWN;
  if (cooldown < 0 || cooldown > COOLDOWN_MAX) out.cooldown_period = `cooldown_period must be between 0 and ${COOLDOWN_MAX} seconds`;
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
  if (typeof bytes === 'number' && (bytes < BODY_LIMIT_MIN || bytes > BODY_LIMIT_MAX)) {
    out.max_request_body_bytes = `max_request_body_bytes must be between ${BODY_LIMIT_MIN} (1 KiB) and ${BODY_LIMIT_MAX} (64 GiB); leave it empty for the server's default`;
  }
  const firstResponse = body.first_response_timeout_seconds;
  if (typeof firstResponse === 'number' && (firstResponse < 1 || firstResponse > FIRST_RESPONSE_MAX_SECONDS)) {
    out.first_response_timeout_seconds = `first_response_timeout_seconds must be a whole number of seconds from 1 to ${FIRST_RESPONSE_MAX_SECONDS} (a day); leave it empty for the gateway's default`;
  }
  const rps = body.rate_limit?.requests_per_second;
  if (typeof rps === 'number' && (rps <= 0 || rps > 1_000_000)) {
    out['rate_limit.requests_per_second'] = 'rate_limit.requests_per_second must be a number above 0 and at most 1000000 (0.5 is one request every 2 s)';
  }
  const tpm = body.rate_limit?.tokens_per_minute;
  if (typeof tpm === 'number' && (tpm < 1 || tpm > 1_000_000_000_000)) {
    out['rate_limit.tokens_per_minute'] = 'rate_limit.tokens_per_minute must be a whole number from 1 to 1000000000000';
  }
  Object.assign(out, flowControlProblems(body.flow_control));
  return out;
}

/** The API's flow_control ranges: a queue of 0 to 100000, each class's wait 0 to 3600 s; blank fields take the defaults. */
export function flowControlProblems(flow: FlowControlBody | null | undefined): Problems {
  const out: Problems = {};
  if (!flow) return out;
  if (flow.max_queue < 0 || flow.max_queue > MAX_QUEUE_MAX) {
    out['flow_control.max_queue'] = `flow_control.max_queue must be a whole number from 0 to ${MAX_QUEUE_MAX} (0: no request waits); leave it empty for the default`;
  }
  for (const cls of PRIORITY_CLASSES) {
    const wait = flow.max_wait_seconds[cls];
    if (wait < 0 || wait > MAX_WAIT_MAX_SECONDS) {
      out[`flow_control.max_wait_seconds.${cls}`] = `flow_control.max_wait_seconds.${cls} must be a whole number of seconds from 0 to ${MAX_WAIT_MAX_SECONDS}; leave it empty for the default`;
    }
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
}

function checkRegistry(body: GeneralBody, opts: CheckOptions, out: Problems): void {
  const username = body.registry_username ?? '';
  const given = body.registry_password;
  const passwordSet = typeof given === 'string' ? given !== '' : given === undefined && opts.registryPasswordStored === true;
  const both = 'set both for a private registry, or neither';
  if (username !== '' && !passwordSet) out.registry_password = `registry_password is required with registry_username: ${both}`;
  if (username === '' && passwordSet) out.registry_username = `registry_username is required with registry_password: ${both}`;
  if (typeof body.registry_credential_id === 'number' && (username !== '' || passwordSet)) {
    out.registry_credential_id = 'give registry_credential_id, or registry_username and registry_password, not both (set the other pair to null to switch)';
  }
}

function checkMetrics(body: GeneralBody, out: Problems): void {
  const port = body.metrics_port ?? null;
  const path = body.metrics_path ?? null;
  const together = 'set metrics_port and metrics_path together or leave both empty (defaults: the container port and /metrics)';
  if (port !== null && (path === null || path === '')) out.metrics_path = `metrics_path is missing: ${together}`;
  if (port === null && path !== null && path !== '') out.metrics_port = `metrics_port is missing: ${together}`;
  if (port !== null) {
    const p = portProblem('metrics_port', port);
    if (p) out.metrics_port = p;
  }
  if (path !== null && path !== '' && !path.startsWith('/')) out.metrics_path = "metrics_path must start with '/', for example /metrics";
}

/** Filename and mount path whenever any part is given; the content may be empty (as the API allows). */
function checkConfigFile(file: ConfigFileBody | null | undefined, out: Problems): void {
  if (!file) return;
  const { filename, mount_path: mountPath } = file;
  if (filename === '') out['config_file.filename'] = 'config_file.filename is required: the name of the file to mount';
  else if (filename.includes('/') || filename === '.' || filename === '..') {
    out['config_file.filename'] = "config_file.filename must be a plain file name: no '/', and not . or ..";
  }
  if (!mountPath.startsWith('/')) out['config_file.mount_path'] = "config_file.mount_path must be an absolute directory path, starting with '/'";
  else if (mountPath.split('/').includes('..')) out['config_file.mount_path'] = "config_file.mount_path must not contain '..' segments";
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
  if (body.hardware_instance_id === undefined) out.hardware_instance_id = 'hardware_instance_id is required: the hardware type of every replica';
  const image = imageProblem(body.image);
  if (image) out.image = image;
  const tag = tagProblem(body.tag);
  if (tag) out.tag = tag;
  if (body.container_port === undefined) out.container_port = 'container_port is required: the port the container serves HTTP or gRPC on';
  else {
    const p = portProblem('container_port', body.container_port);
    if (p) out.container_port = p;
  }
  if (body.health_check_path !== undefined && !body.health_check_path.startsWith('/')) {
    out.health_check_path = "health_check_path must start with '/', for example /health or /";
  }
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
  if (body.hardware_instance_id === undefined) out.hardware_instance_id = 'hardware_instance_id is required: the hardware type of every Worker replica';
  const model = modelProblem(body.model);
  if (model) out.model = model;
  if (typeof body.served_model_name === 'string' && body.served_model_name.trim() === '') {
    out.served_model_name = 'served_model_name must not be empty; leave it out and clients send the model-hub identifier';
  }
  Object.assign(out, envProblems(body.env, body.secret_env), annotationProblems(body.annotations));
  Object.assign(out, scalingProblems('orchestrated', body, body.concurrency), authProblems(body, opts.tokenBound), limitsProblems(body));
  return out;
}
