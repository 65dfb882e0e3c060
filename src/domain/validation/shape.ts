// Owns the shape of a request: which fields each family accepts and their JSON types, the
// refusal reasons for the other family's fields, and Req, the reader every rule goes
// through. A field found malformed here is kept out of every later rule, so one mistake is
// reported once rather than again by each rule that reads the field.

import type { ErrorCode, FieldProblem } from '../../core/errors.js';
import type { Family } from '../records.js';
import { kindOf } from './field-rules.js';

// ---------------------------------------------------------------------------------------
// Field tables. The order of each list is the order problems are reported in.

type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'strings' | 'map' | 'object' | 'list';

const GENERAL_FIELDS = new Map<string, FieldType>([
  ['name', 'string'],
  ['cluster_id', 'integer'],
  ['hardware_instance_id', 'integer'],
  ['preset', 'string'],
  ['image', 'string'],
  ['tag', 'string'],
  ['container_port', 'integer'],
  ['protocol', 'string'],
  ['health_check_path', 'string'],
  ['registry_username', 'string'],
  ['registry_password', 'string'],
  ['registry_credential_id', 'integer'],
  ['enable_logging', 'boolean'],
  ['enable_model_caching', 'boolean'],
  ['session_affinity', 'boolean'],
  ['routing_policy', 'string'],
  ['command', 'strings'],
  ['metrics_port', 'integer'],
  ['metrics_path', 'string'],
  ['env', 'map'],
  ['secret_env', 'map'],
  ['config_file', 'object'],
  ['annotations', 'map'],
  ['container_capabilities', 'strings'],
  ['min_replicas', 'integer'],
  ['max_replicas', 'integer'],
  ['initial_replicas', 'integer'],
  ['max_concurrency', 'integer'],
  ['cooldown_period', 'integer'],
  ['autoscaling_metric', 'string'],
  ['autoscaling_target', 'number'],
  ['endpoint_bearer_token', 'string'],
  ['endpoint_token_id', 'integer'],
  ['private_endpoint', 'boolean'],
  ['client_certificate_id', 'integer'],
  ['max_request_body_bytes', 'integer'],
  ['first_response_timeout_seconds', 'integer'],
  ['rate_limit', 'object'],
  ['flow_control', 'object'],
  ['rollout_mode', 'string'],
  ['traffic', 'list'],
]);

const ORCHESTRATED_FIELDS = new Map<string, FieldType>([
  ['name', 'string'],
  ['cluster_id', 'integer'],
  ['model', 'string'],
  ['serving_mode', 'string'],
  ['worker_pools', 'object'],
  ['endpoint_bearer_token', 'string'],
  ['endpoint_token_id', 'integer'],
  ['enable_logging', 'boolean'],
  ['hardware_instance_id', 'integer'],
  ['min_replicas', 'integer'],
  ['max_replicas', 'integer'],
  ['concurrency', 'integer'],
  ['cooldown_period', 'integer'],
  ['autoscaling_metric', 'string'],
  ['autoscaling_target', 'number'],
  ['served_model_name', 'string'],
  ['model_hub_token', 'string'],
  ['protocol', 'string'],
  ['routing_policy', 'string'],
  ['extra_args', 'strings'],
  ['env', 'map'],
  ['secret_env', 'map'],
  ['annotations', 'map'],
  ['enable_model_caching', 'boolean'],
  ['client_certificate_id', 'integer'],
  ['private_endpoint', 'boolean'],
  ['max_request_body_bytes', 'integer'],
  ['first_response_timeout_seconds', 'integer'],
  ['rate_limit', 'object'],
  ['flow_control', 'object'],
  ['rollout_mode', 'string'],
  ['traffic', 'list'],
]);

export const FIELDS: Record<Family, Map<string, FieldType>> = { general: GENERAL_FIELDS, orchestrated: ORCHESTRATED_FIELDS };

const FAMILY_LABEL: Record<Family, string> = { general: 'general inference', orchestrated: 'orchestrated inference' };

const CUSTOM_IMAGE =
  'the platform supplies the runtime image in orchestrated inference; custom runtime images are not supported (choose the model with `model`)';
const METRICS_TARGET = 'custom metrics scrape targets are a general inference setting; the platform scrapes its own runtime';

/** General-only fields sent to the orchestrated family, and why they are refused. */
const NOT_IN_ORCHESTRATED = new Map<string, string>([
  ['preset', 'presets are general inference recipes; an orchestrated deployment names a `model`'],
  ['image', CUSTOM_IMAGE],
  ['tag', CUSTOM_IMAGE],
  ['registry_username', `registry credentials pull custom images; ${CUSTOM_IMAGE} (a gated model needs model_hub_token)`],
  ['registry_password', `registry credentials pull custom images; ${CUSTOM_IMAGE} (a gated model needs model_hub_token)`],
  ['registry_credential_id', `registry credentials pull custom images; ${CUSTOM_IMAGE} (a gated model needs model_hub_token)`],
  ['container_port', 'the platform-supplied runtime chooses its own port; the endpoint is served on 443'],
  ['health_check_path', 'the platform probes the health of its own runtime'],
  ['command', 'the platform supplies the runtime and its command; extra worker arguments go in extra_args'],
  ['config_file', 'config-file mounts are not supported in orchestrated inference'],
  ['session_affinity', 'session affinity is a general inference setting; the orchestrated Frontend routes requests itself'],
  ['metrics_port', METRICS_TARGET],
  ['metrics_path', METRICS_TARGET],
  ['max_concurrency', 'orchestrated deployments call the target `concurrency`'],
  ['container_capabilities', 'the platform runs its own runtime for orchestrated deployments, with no capability to keep'],
  ['initial_replicas', 'orchestrated deployments never scale to zero: their Workers start at min_replicas'],
]);

const ORCHESTRATED_ONLY = 'serving modes and Prefill/Decode worker pools exist only in orchestrated inference';

/** Orchestrated-only fields sent to the general family, and why they are refused. */
const NOT_IN_GENERAL = new Map<string, string>([
  ['model', 'general inference runs the container given in `image`; a model-hub `model` is an orchestrated inference field'],
  ['serving_mode', ORCHESTRATED_ONLY],
  ['worker_pools', ORCHESTRATED_ONLY],
  ['concurrency', 'general inference calls the target `max_concurrency`'],
  ['served_model_name', 'a served model name is an orchestrated inference setting; your container serves the names it implements'],
  ['model_hub_token', 'a model hub token is an orchestrated inference setting; give your container what it needs in env'],
  ['extra_args', 'general inference passes arguments in `command`'],
]);

const FOREIGN: Record<Family, Map<string, string>> = { general: NOT_IN_GENERAL, orchestrated: NOT_IN_ORCHESTRATED };

// ---------------------------------------------------------------------------------------
// The request being checked: raw values, problems so far, fields already found malformed.

export type Obj = Record<string, unknown>;

export const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export class Req {
  readonly problems: FieldProblem[] = [];
  private readonly bad = new Set<string>();

  constructor(
    readonly family: Family,
    readonly raw: Obj,
  ) {}

  add(field: string, message: string, code: ErrorCode = 'invalid_field'): void {
    this.problems.push({ field, message, code });
  }

  /** Reports a problem and keeps the field's value out of every later rule. */
  reject(field: string, message: string, code: ErrorCode = 'invalid_field'): void {
    this.add(field, message, code);
    this.bad.add(field);
  }

  /** Reports a problem at `path` inside `field` and keeps the whole field out of every later rule. */
  rejectWithin(field: string, path: string, message: string, code: ErrorCode = 'invalid_field'): void {
    this.add(path, message, code);
    this.bad.add(field);
  }

  isBad(field: string): boolean {
    return this.bad.has(field);
  }

  /** The key is in the request, null included (null: clear / use the default). */
  has(field: string): boolean {
    return Object.hasOwn(this.raw, field) && this.raw[field] !== undefined;
  }

  /** The key is in the request with a non-null value. */
  given(field: string): boolean {
    return this.has(field) && this.raw[field] !== null;
  }

  private value(field: string): unknown {
    if (this.bad.has(field) || !Object.hasOwn(this.raw, field)) return undefined;
    return this.raw[field] ?? undefined;
  }

  str(field: string): string | undefined {
    const v = this.value(field);
    return typeof v === 'string' ? v : undefined;
  }

  int(field: string): number | undefined {
    const v = this.value(field);
    return typeof v === 'number' ? v : undefined;
  }

  /** A number, whole or not (the shape check let only finite numbers through). */
  num(field: string): number | undefined {
    return this.int(field);
  }

  /** The raw value of a field the shape check found well-typed (undefined when absent, null or bad). */
  any(field: string): unknown {
    return this.value(field);
  }

  bool(field: string): boolean | undefined {
    const v = this.value(field);
    return typeof v === 'boolean' ? v : undefined;
  }

  strs(field: string): string[] | undefined {
    const v = this.value(field);
    return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : undefined;
  }

  obj(field: string): Obj | undefined {
    const v = this.value(field);
    return isObject(v) ? v : undefined;
  }

  /** A required field: false (and reported, unless already reported) when missing or "". */
  required(field: string, message: string): boolean {
    if (this.given(field) && !(this.raw[field] === '')) return true;
    if (!this.isBad(field)) this.reject(field, message);
    return false;
  }
}

// One definition, shared with the console through field-rules.ts.
export { kindOf };

const TYPE_TESTS: Record<FieldType, { test: (v: unknown) => boolean; expected: string }> = {
  string: { test: (v) => typeof v === 'string', expected: 'a string' },
  integer: { test: (v) => typeof v === 'number' && Number.isSafeInteger(v), expected: 'an integer' },
  number: { test: (v) => typeof v === 'number' && Number.isFinite(v), expected: 'a number' },
  boolean: { test: (v) => typeof v === 'boolean', expected: 'true or false' },
  strings: { test: (v) => Array.isArray(v) && v.every((s) => typeof s === 'string'), expected: 'an array of strings' },
  map: { test: isObject, expected: 'an object mapping names to string values' },
  object: { test: isObject, expected: 'an object' },
  list: { test: Array.isArray, expected: 'a list' },
};

const EXPECTED_SHAPE: Record<string, string> = {
  secret_env: 'an object mapping names to string values (set or replace) or null (remove)',
  config_file: 'an object {filename, mount_path, content}',
  worker_pools: 'an object {prefill: {hardware_instance_id, replicas}, decode: {hardware_instance_id, replicas}}',
  rate_limit: 'an object {requests_per_second, tokens_per_minute}',
  flow_control: 'an object {max_queue, max_wait_seconds: {critical, standard, sheddable}}, or null for the defaults',
  traffic: 'a list of entries like {"revision": 3, "percent": 90} or {"latest": true, "percent": 10, "tag": "canary"}, or null (everything to the newest revision)',
};

/** Unknown fields, the other family's fields, and wrong types. */
export function checkShape(req: Req): void {
  const known = FIELDS[req.family];
  for (const [field, value] of Object.entries(req.raw)) {
    const type = known.get(field);
    if (type === undefined) {
      const why = FOREIGN[req.family].get(field);
      const message = why
        ? `${field} is not accepted in ${FAMILY_LABEL[req.family]} deployments: ${why}`
        : `unknown field "${field}": ${FAMILY_LABEL[req.family]} deployments have no such field`;
      req.reject(field, message);
    } else if (value !== null && value !== undefined && !TYPE_TESTS[type].test(value)) {
      const expected = EXPECTED_SHAPE[field] ?? TYPE_TESTS[type].expected;
      req.reject(field, `${field} must be ${expected}, got ${kindOf(value)}`);
    }
  }
}
