// Owns the request rules that need nothing but the field's own value: limits, patterns and the
// message each refusal carries. The control API's rule modules and the console's form checks
// (console/src/forms/rules.ts, which the console bundles) both call these, so a field is refused
// for the same reason in the same words on either side; test/rule-agreement.test.ts holds them
// to it. Pure: it imports only other pure domain modules, never Node or the service's layers.
// What needs the store or the catalog (a taken name, a hardware id, a live token) stays in the
// rule modules.

import { envNameRefusal } from '../env-names.js';
import type { Priority } from '../priority.js';

export const NAME_MAX = 20;
export const COOLDOWN_MAX = 3600;
export const DEFAULT_COOLDOWN = 300;
export const PORT_MAX = 65535;
export const TOKEN_MIN = 8;
export const TOKEN_MAX = 512;
export const BODY_LIMIT_MIN = 1024;
export const BODY_LIMIT_MAX = 64 * 1024 ** 3;
// The gateway's own --upstream-headers-timeout and --grpc-first-message-timeout stop at a day too.
export const FIRST_RESPONSE_MAX_SECONDS = 86_400;
export const RPS_MAX = 1_000_000;
export const TPM_MAX = 1_000_000_000_000;
export const MAX_QUEUE_MAX = 100_000;
// An hour: a request held longer than that is better answered 429 and retried by its client.
export const MAX_WAIT_MAX_SECONDS = 3_600;

/** RFC 6750's token68: what a bearer token may hold so it travels unquoted in a header. */
export const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Kubernetes' annotation key: an optional DNS-subdomain prefix and '/', then a name of up to 63. */
export const ANNOTATION_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
/** A container image tag, as registries accept it. */
export const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
/** A model-hub identifier, <org>/<model>. */
export const MODEL_ID = /^[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+$/;

/** What a JSON value is, for a message that must not echo it. */
export function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (v === undefined) return 'nothing';
  if (typeof v === 'number') {
    if (Number.isSafeInteger(v)) return 'a number';
    return Number.isInteger(v) ? 'an integer beyond the safe range' : 'a fractional number';
  }
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

// ---------------------------------------------------------------------------------------
// Identity and image.

export const NAME_REQUIRED = `name is required: lowercase letters, digits and hyphens, at most ${NAME_MAX} characters`;

/** Every syntax problem of a name, in the order the API reports them (the console shows the first). */
export function nameProblems(name: string): string[] {
  const out: string[] = [];
  if (name.length > NAME_MAX) out.push(`name must be at most ${NAME_MAX} characters; "${name}" has ${name.length}`);
  if (!/^[a-z0-9-]*$/.test(name)) out.push('name may contain only lowercase letters, digits and hyphens');
  if (!/^[A-Za-z]/.test(name)) out.push('name must start with a lowercase letter');
  if (!/[A-Za-z0-9]$/.test(name)) out.push('name must end with a letter or digit');
  return out;
}

export const IMAGE_REQUIRED = 'image is required: the container image to run, given without a tag';

export function imageProblem(image: string): string | undefined {
  if (/\s/.test(image)) return 'image must not contain whitespace';
  const last = image.slice(image.lastIndexOf('/') + 1);
  if (image.includes('@') || last.includes(':')) return 'image must be given without a tag or digest: put the tag in `tag`';
  return undefined;
}

export function tagProblem(tag: string): string | undefined {
  return TAG.test(tag) ? undefined : 'tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, a container image tag';
}

export const MODEL_REQUIRED = 'model is required: a model-hub identifier of the form <org>/<model>';

export function modelProblem(model: string): string | undefined {
  if (MODEL_ID.test(model)) return undefined;
  return "model must be a model-hub identifier of the form <org>/<model> (letters, digits, '.', '_', '-'), e.g. meta-llama/Llama-3.1-8B-Instruct";
}

/** hardware_instance_id left out: what it chooses differs by family (every replica, or the Worker pool's). */
export function hardwareRequired(family: 'general' | 'orchestrated'): string {
  return `hardware_instance_id is required: the hardware type of every ${family === 'general' ? '' : 'Worker '}replica`;
}

export const SERVED_MODEL_NAME_EMPTY = 'served_model_name must not be empty; omit it and clients send the model-hub identifier';

export const CONTAINER_PORT_REQUIRED = 'container_port is required: the port the container serves HTTP or gRPC on';

export function portProblem(field: string, port: number): string | undefined {
  return port < 1 || port > PORT_MAX ? `${field} must be between 1 and ${PORT_MAX}` : undefined;
}

export function healthPathProblem(path: string): string | undefined {
  return path.startsWith('/') ? undefined : "health_check_path must start with '/', for example /health or /";
}

// ---------------------------------------------------------------------------------------
// Registry, metrics target and config file: pairs that go together.

const REGISTRY_BOTH = 'set both for a private registry, or neither';
export const REGISTRY_PASSWORD_MISSING = `registry_password is required with registry_username: ${REGISTRY_BOTH}`;
export const REGISTRY_USERNAME_MISSING = `registry_username is required with registry_password: ${REGISTRY_BOTH}`;
export const REGISTRY_CREDENTIAL_AND_PAIR = 'give registry_credential_id, or registry_username and registry_password, not both (set the other pair to null to switch)';

const METRICS_TOGETHER = 'set metrics_port and metrics_path together or leave both empty (defaults: the container port and /metrics)';
export const METRICS_PATH_MISSING = `metrics_path is missing: ${METRICS_TOGETHER}`;
export const METRICS_PORT_MISSING = `metrics_port is missing: ${METRICS_TOGETHER}`;

export function metricsPathProblem(path: string): string | undefined {
  return path.startsWith('/') ? undefined : "metrics_path must start with '/', for example /metrics";
}

/** A config file's name: given, and a plain file name. */
export function configFilenameProblem(filename: string): string | undefined {
  if (filename === '') return 'config_file.filename is required: the name of the file to mount';
  if (filename.includes('/') || filename === '.' || filename === '..') return "config_file.filename must be a plain file name: no '/', and not . or ..";
  return undefined;
}

/** A config file's directory: absolute, and no way out of it. */
export function configMountPathProblem(mountPath: string): string | undefined {
  if (!mountPath.startsWith('/')) return "config_file.mount_path must be an absolute directory path, starting with '/'";
  if (mountPath.split('/').includes('..')) return "config_file.mount_path must not contain '..' segments";
  return undefined;
}

// ---------------------------------------------------------------------------------------
// Endpoint protection, environment and annotations.

/** A bearer token's syntax (whether it is a platform key is the server's to know). */
export function tokenProblem(token: string): string | undefined {
  if (token.length < TOKEN_MIN || token.length > TOKEN_MAX) return `endpoint_bearer_token must be ${TOKEN_MIN} to ${TOKEN_MAX} characters long`;
  if (!TOKEN68.test(token)) {
    return 'endpoint_bearer_token may contain only letters, digits and - . _ ~ + / (then optional trailing =), the RFC 6750 token68 characters';
  }
  return undefined;
}

/**
 * The one rule for a variable's name, plain or secret: its syntax, then the names a deployment
 * may not set (env-names.ts). `simulated`: the image runs infergate's own engine.
 */
export function envNameProblem(name: string, simulated: boolean): string | undefined {
  if (!ENV_NAME.test(name)) {
    return `environment variable name "${name}" is invalid: names use letters, digits and underscores and begin with a letter or underscore`;
  }
  return envNameRefusal(name, simulated) ?? undefined;
}

export function envBothProblem(name: string): string {
  return `${name} is both a plain variable (env.${name}) and a secret one; a variable is one or the other: remove it from env to keep it secret, or from secret_env to keep it plain`;
}

export function annotationKeyProblem(key: string): string | undefined {
  if (ANNOTATION_KEY.test(key)) return undefined;
  return `annotation key "${key}" is invalid: an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit`;
}

// ---------------------------------------------------------------------------------------
// Scaling.

export function minReplicasProblem(family: 'general' | 'orchestrated', min: number): string | undefined {
  if (family === 'orchestrated' && min < 1) return 'min_replicas must be at least 1: orchestrated deployments do not scale to zero';
  if (min < 0) return 'min_replicas must be 0 or more (0 allows scale-to-zero)';
  return undefined;
}

/** `min`: the minimum already found valid, else undefined. */
export function maxReplicasProblem(max: number, min: number | undefined): string | undefined {
  if (max < 1) return 'max_replicas must be at least 1';
  if (min !== undefined && max < min) return `max_replicas (${max}) must be at least min_replicas (${min})`;
  return undefined;
}

/** The concurrency target (`max_concurrency` or `concurrency`) when given. */
export function targetProblem(field: string, target: number): string | undefined {
  return target < 1 ? `${field} must be a positive integer: the target number of in-flight requests per replica` : undefined;
}

export function targetRequired(field: string, max: number, min: number): string {
  return `${field} is required when max_replicas (${max}) > min_replicas (${min}): it is the per-replica request target the autoscaler scales on`;
}

export function cooldownProblem(cooldown: number): string | undefined {
  return cooldown < 0 || cooldown > COOLDOWN_MAX ? `cooldown_period must be between 0 and ${COOLDOWN_MAX} seconds` : undefined;
}

// ---------------------------------------------------------------------------------------
// Endpoint limits.

export function bodyLimitProblem(bytes: number): string | undefined {
  if (bytes >= BODY_LIMIT_MIN && bytes <= BODY_LIMIT_MAX) return undefined;
  return `max_request_body_bytes must be between ${BODY_LIMIT_MIN} (1 KiB) and ${BODY_LIMIT_MAX} (64 GiB); omit it (or null) for the server's default`;
}

export function firstResponseTimeoutProblem(seconds: number): string | undefined {
  if (seconds >= 1 && seconds <= FIRST_RESPONSE_MAX_SECONDS) return undefined;
  return `first_response_timeout_seconds must be a whole number of seconds from 1 to ${FIRST_RESPONSE_MAX_SECONDS} (a day), got ${seconds}; omit it (or null) for the gateway's default`;
}

const numberSuffix = (v: unknown): string => `${kindOf(v)}${typeof v === 'number' ? ` ${v}` : ''}`;

/** rate_limit.requests_per_second, given (not null). */
export function requestsPerSecondProblem(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= RPS_MAX) return undefined;
  return `rate_limit.requests_per_second must be a number above 0 and at most ${RPS_MAX} (fractions allowed: 0.5 is one request every 2 s), got ${numberSuffix(v)}`;
}

/** rate_limit.tokens_per_minute, given (not null). */
export function tokensPerMinuteProblem(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 && v <= TPM_MAX) return undefined;
  return `rate_limit.tokens_per_minute must be a whole number from 1 to ${TPM_MAX}, got ${numberSuffix(v)}`;
}

/** A number as a flow-control message quotes it: the value itself, else what it is ("a string"). */
const got = (v: unknown): string => (typeof v === 'number' && Number.isFinite(v) ? String(v) : kindOf(v));
const wholeIn = (v: unknown, max: number): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= max;

/** flow_control.max_queue, given (not null); `fallback` is the default the message offers. */
export function maxQueueProblem(v: unknown, fallback: number): string | undefined {
  if (wholeIn(v, MAX_QUEUE_MAX)) return undefined;
  return (
    `flow_control.max_queue must be a whole number from 0 to ${MAX_QUEUE_MAX} (0: no request waits, one past saturation gets 429 at once), got ${got(v)}; ` +
    `omit it for the default, ${fallback}`
  );
}

/** flow_control.max_wait_seconds.<cls>, given (not null); `fallback` is that class's default. */
export function maxWaitProblem(cls: Priority, v: unknown, fallback: number): string | undefined {
  if (wholeIn(v, MAX_WAIT_MAX_SECONDS)) return undefined;
  const field = `flow_control.max_wait_seconds.${cls}`;
  return (
    `${field} must be a whole number of seconds from 0 to ${MAX_WAIT_MAX_SECONDS} (0: a ${cls} request never waits), got ${got(v)}; ` +
    `omit it for the default, ${fallback}`
  );
}
