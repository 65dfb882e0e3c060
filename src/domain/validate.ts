// Owns the spec's request rules for both deployment families: create, PATCH (a partial
// body merged over the stored deployment) and clone (the source's request plus overrides).
// Each rule reports its own FieldProblem naming the field at fault (dotted path, e.g.
// `worker_pools.prefill.replicas`, `env.MY_VAR`); every problem found is returned, in the
// order of the family's field list (unknown fields first). On success the request becomes a
// DeploymentDraft: revision-bearing spec, scaling, endpoint auth and plain secrets (the
// caller seals them). Capacity (quota, instances) is domain/quota.ts's job. Pure: no I/O.

import type { ErrorCode, FieldProblem } from '../core/errors.js';
import { describeCluster, findCluster, findHardware, type Catalog, type Cluster } from './catalog.js';
import type {
  ConfigFile,
  DeploymentRecord,
  DeploymentSpec,
  EndpointAuth,
  Family,
  GeneralSpec,
  OrchestratedSpec,
  Protocol,
  ScalingSpec,
  SealedSecrets,
  ServingMode,
} from './records.js';

export interface ValidationContext {
  catalog: Catalog;
  /** sha256 hex, the same hash the vault stores. */
  hashToken(value: string): string;
  /** Hashes of every live endpoint token. */
  liveTokenHashes: ReadonlySet<string>;
  /** Existing, unrevoked client certificates. */
  certificateIds: ReadonlySet<number>;
  /** Names of the other live deployments (both families). */
  takenNames: ReadonlySet<string>;
}

export interface DeploymentDraft {
  family: Family;
  name: string;
  cluster_id: number;
  /** spec.secrets is always {}: the caller seals `plainSecrets` into it. */
  spec: DeploymentSpec;
  /** A key absent = keep the sealed one, null = clear it, a string = replace it. */
  plainSecrets: { registry_password?: string | null; model_hub_token?: string | null };
  scaling: ScalingSpec;
  /** token_value set: bind that value (the caller finds or creates its vault entry). */
  auth: { token_value: string | null; token_id: number | null; client_certificate_id: number | null; private_endpoint: boolean };
}

export type Validation<T> = { ok: true; value: T } | { ok: false; problems: FieldProblem[] };

export interface PatchResult {
  draft: DeploymentDraft;
  /** A revision-bearing field or a secret changed: the caller makes a new revision. */
  specChanged: boolean;
  /** Replica counts, concurrency target, cooldown or pool sizes changed: scale in place. */
  scalingChanged: boolean;
  authChanged: boolean;
}

// ---------------------------------------------------------------------------------------
// Field tables. The order of each list is the order problems are reported in.

type FieldType = 'string' | 'integer' | 'boolean' | 'strings' | 'map' | 'object';

const GENERAL_FIELDS = new Map<string, FieldType>([
  ['name', 'string'],
  ['cluster_id', 'integer'],
  ['preset', 'string'],
  ['hardware_instance_id', 'integer'],
  ['image', 'string'],
  ['tag', 'string'],
  ['container_port', 'integer'],
  ['protocol', 'string'],
  ['health_check_path', 'string'],
  ['registry_username', 'string'],
  ['registry_password', 'string'],
  ['enable_logging', 'boolean'],
  ['enable_model_caching', 'boolean'],
  ['session_affinity', 'boolean'],
  ['command', 'strings'],
  ['metrics_port', 'integer'],
  ['metrics_path', 'string'],
  ['env', 'map'],
  ['config_file', 'object'],
  ['annotations', 'map'],
  ['min_replicas', 'integer'],
  ['max_replicas', 'integer'],
  ['max_concurrency', 'integer'],
  ['cooldown_period', 'integer'],
  ['endpoint_bearer_token', 'string'],
  ['private_endpoint', 'boolean'],
  ['client_certificate_id', 'integer'],
]);

const ORCHESTRATED_FIELDS = new Map<string, FieldType>([
  ['name', 'string'],
  ['cluster_id', 'integer'],
  ['model', 'string'],
  ['serving_mode', 'string'],
  ['worker_pools', 'object'],
  ['endpoint_bearer_token', 'string'],
  ['enable_logging', 'boolean'],
  ['hardware_instance_id', 'integer'],
  ['min_replicas', 'integer'],
  ['max_replicas', 'integer'],
  ['concurrency', 'integer'],
  ['cooldown_period', 'integer'],
  ['served_model_name', 'string'],
  ['model_hub_token', 'string'],
  ['protocol', 'string'],
  ['extra_args', 'strings'],
  ['env', 'map'],
  ['annotations', 'map'],
  ['enable_model_caching', 'boolean'],
  ['client_certificate_id', 'integer'],
  ['private_endpoint', 'boolean'],
]);

const FIELDS: Record<Family, Map<string, FieldType>> = { general: GENERAL_FIELDS, orchestrated: ORCHESTRATED_FIELDS };

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
  ['container_port', 'the platform-supplied runtime chooses its own port; the endpoint is served on 443'],
  ['health_check_path', 'the platform probes the health of its own runtime'],
  ['command', 'the platform supplies the runtime and its command; extra worker arguments go in extra_args'],
  ['config_file', 'config-file mounts are not supported in orchestrated inference'],
  ['session_affinity', 'session affinity is a general inference setting; the orchestrated Frontend routes requests itself'],
  ['metrics_port', METRICS_TARGET],
  ['metrics_path', METRICS_TARGET],
  ['max_concurrency', 'orchestrated deployments call the target `concurrency`'],
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

const NAME_MAX = 20;
const TOKEN_MIN = 8;
const TOKEN_MAX = 512;
const COOLDOWN_MAX = 3600;
const DEFAULT_COOLDOWN = 300;
const PORT_MAX = 65535;

const MODEL_ID = /^[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+$/;
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const PRESET_ID = /^[a-z0-9][a-z0-9-]*$/;
const ANNOTATION_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
const PEM_PRIVATE_KEY = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;

// ---------------------------------------------------------------------------------------
// The request being checked: raw values, problems so far, fields already found malformed.

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

class Req {
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

function kindOf(v: unknown): string {
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

const TYPE_TESTS: Record<FieldType, { test: (v: unknown) => boolean; expected: string }> = {
  string: { test: (v) => typeof v === 'string', expected: 'a string' },
  integer: { test: (v) => typeof v === 'number' && Number.isSafeInteger(v), expected: 'an integer' },
  boolean: { test: (v) => typeof v === 'boolean', expected: 'true or false' },
  strings: { test: (v) => Array.isArray(v) && v.every((s) => typeof s === 'string'), expected: 'an array of strings' },
  map: { test: isObject, expected: 'an object mapping names to string values' },
  object: { test: isObject, expected: 'an object' },
};

const EXPECTED_SHAPE: Record<string, string> = {
  config_file: 'an object {filename, mount_path, content}',
  worker_pools: 'an object {prefill: {hardware_instance_id, replicas}, decode: {hardware_instance_id, replicas}}',
};

/** Unknown fields, the other family's fields, and wrong types. */
function checkShape(req: Req): void {
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

// ---------------------------------------------------------------------------------------
// Rules shared by both families.

interface Options {
  mode: 'create' | 'patch' | 'clone';
  /** What the stored deployment (patch) or the clone's source already holds. */
  inherited: { token_id: number | null; secrets: SealedSecrets } | null;
  /** Check client_certificate_id against the context (patch: only when the body sets it). */
  checkCertificate: boolean;
}

function checkName(req: Req, ctx: ValidationContext, opts: Options): string | undefined {
  const name = req.str('name');
  // PATCH cannot change the name (checked before merging), so the stored one stands.
  if (opts.mode === 'patch') return name;
  if (!req.required('name', 'name is required: lowercase letters, digits and hyphens, at most 20 characters') || name === undefined) {
    return undefined;
  }
  const before = req.problems.length;
  if (name.length > NAME_MAX) req.add('name', `name must be at most ${NAME_MAX} characters; "${name}" has ${name.length}`);
  if (!/^[a-z0-9-]*$/.test(name)) req.add('name', 'name may contain only lowercase letters, digits and hyphens');
  if (!/^[A-Za-z]/.test(name)) req.add('name', 'name must start with a lowercase letter');
  if (!/[A-Za-z0-9]$/.test(name)) req.add('name', 'name must end with a letter or digit');
  if (req.problems.length > before) return undefined;
  if (ctx.takenNames.has(name)) {
    req.add('name', `name "${name}" is already used by another deployment (names are unique across both families)`, 'conflict');
    return undefined;
  }
  return name;
}

function checkCluster(req: Req, ctx: ValidationContext): Cluster | undefined {
  if (!req.required('cluster_id', 'cluster_id is required: GET /clusters lists the clusters')) return undefined;
  const id = req.int('cluster_id');
  if (id === undefined) return undefined;
  const cluster = findCluster(ctx.catalog, id);
  if (!cluster) {
    req.reject('cluster_id', `cluster ${id} does not exist; GET /clusters lists the clusters`);
    return undefined;
  }
  if (req.family === 'orchestrated' && !cluster.orchestration_enabled) {
    const alternative = ctx.catalog.clusters.find((c) => c.orchestration_enabled);
    const hint = alternative ? `use ${describeCluster(alternative)}, which has it` : 'no cluster in the catalog has it; ask support to enable it';
    req.add(
      'cluster_id',
      `orchestrated inference needs a cluster with the orchestration operator enabled; ${describeCluster(cluster)} does not have it: ${hint}`,
    );
  }
  return cluster;
}

/** A hardware profile id (already known to be an integer) must exist in the chosen cluster. */
function checkHardwareId(req: Req, field: string, id: number, cluster: Cluster | undefined): number | undefined {
  if (!cluster || findHardware(cluster, id)) return id;
  const available = cluster.hardware.map((h) => `${h.id} (${h.name})`).join(', ');
  req.add(
    field,
    `${field}: hardware ${id} is not available in ${describeCluster(cluster)}; available: ${available} (GET /clusters/${cluster.id}/hardware)`,
    'hardware_unavailable',
  );
  return undefined;
}

function checkTopLevelHardware(req: Req, cluster: Cluster | undefined, what: string): number | undefined {
  if (!req.required('hardware_instance_id', `hardware_instance_id is required: ${what}`)) return undefined;
  const id = req.int('hardware_instance_id');
  return id === undefined ? undefined : checkHardwareId(req, 'hardware_instance_id', id, cluster);
}

function checkMinReplicas(req: Req): number | undefined {
  if (req.isBad('min_replicas')) return undefined;
  const min = req.int('min_replicas') ?? 1;
  if (req.family === 'orchestrated' && min < 1) {
    req.add('min_replicas', 'min_replicas must be at least 1: orchestrated deployments do not scale to zero');
    return undefined;
  }
  if (min < 0) {
    req.add('min_replicas', 'min_replicas must be 0 or more (0 allows scale-to-zero)');
    return undefined;
  }
  return min;
}

/** Omitted: equal to min_replicas (fixed size), and at least 1. */
function checkMaxReplicas(req: Req, min: number | undefined): number | undefined {
  if (req.isBad('max_replicas')) return undefined;
  const given = req.int('max_replicas');
  if (given === undefined) return min === undefined ? undefined : Math.max(min, 1);
  if (given < 1) {
    req.add('max_replicas', 'max_replicas must be at least 1');
    return undefined;
  }
  if (min !== undefined && given < min) {
    req.add('max_replicas', `max_replicas (${given}) must be at least min_replicas (${min})`);
    return undefined;
  }
  return given;
}

function checkTarget(req: Req, field: string, min: number | undefined, max: number | undefined): number | null | undefined {
  if (req.isBad(field)) return undefined;
  const target = req.int(field);
  if (target !== undefined && target < 1) {
    req.add(field, `${field} must be a positive integer: the target number of in-flight requests per replica`);
    return undefined;
  }
  if (target === undefined && min !== undefined && max !== undefined && max > min) {
    req.add(
      field,
      `${field} is required when max_replicas (${max}) > min_replicas (${min}): it is the per-replica request target the autoscaler scales on`,
    );
    return undefined;
  }
  return target ?? null;
}

function checkCooldown(req: Req): number | undefined {
  if (req.isBad('cooldown_period')) return undefined;
  const cooldown = req.int('cooldown_period') ?? DEFAULT_COOLDOWN;
  if (cooldown < 0 || cooldown > COOLDOWN_MAX) {
    req.add('cooldown_period', `cooldown_period must be between 0 and ${COOLDOWN_MAX} seconds`);
    return undefined;
  }
  return cooldown;
}

/** min/max/target/cooldown of general inference and of orchestrated aggregated. */
function checkScaling(req: Req): ScalingSpec | undefined {
  const min = checkMinReplicas(req);
  const max = checkMaxReplicas(req, min);
  const target = checkTarget(req, req.family === 'general' ? 'max_concurrency' : 'concurrency', min, max);
  const cooldown = checkCooldown(req);
  if (min === undefined || max === undefined || target === undefined || cooldown === undefined) return undefined;
  return { min_replicas: min, max_replicas: max, target_concurrency: target, cooldown_period: cooldown, pools: null };
}

function checkToken(req: Req): string | undefined {
  const token = req.str('endpoint_bearer_token');
  if (token === undefined) return undefined;
  if (token.length < TOKEN_MIN || token.length > TOKEN_MAX) {
    req.reject('endpoint_bearer_token', `endpoint_bearer_token must be ${TOKEN_MIN} to ${TOKEN_MAX} characters long`);
  } else if (!TOKEN68.test(token)) {
    req.reject(
      'endpoint_bearer_token',
      'endpoint_bearer_token may contain only letters, digits and - . _ ~ + / (then optional trailing =), the RFC 6750 token68 characters',
    );
  }
  return token;
}

function checkCertificate(req: Req, ctx: ValidationContext, opts: Options): number | null {
  const id = req.int('client_certificate_id');
  if (id === undefined) return null;
  if (opts.checkCertificate && !ctx.certificateIds.has(id)) {
    req.add(
      'client_certificate_id',
      `client certificate ${id} does not exist or is revoked; GET /certificates lists them, or set private_endpoint: true to issue one`,
    );
  }
  return id;
}

function checkAuth(req: Req, ctx: ValidationContext, opts: Options): DeploymentDraft['auth'] {
  const tokenValue = checkToken(req);
  // A token given by value replaces the binding; null clears it; absent keeps the inherited one.
  const tokenId = req.has('endpoint_bearer_token') ? null : (opts.inherited?.token_id ?? null);
  const certificate = checkCertificate(req, ctx, opts);
  const privateEndpoint = req.bool('private_endpoint') ?? false;
  const anyGiven = req.given('endpoint_bearer_token') || req.given('client_certificate_id');
  if (!anyGiven && tokenId === null && !privateEndpoint) {
    req.add(
      'endpoint_bearer_token',
      'every endpoint must be protected; public endpoints are not supported: give endpoint_bearer_token, ' +
        'set private_endpoint: true (a client certificate is issued), or give client_certificate_id',
    );
  }
  return {
    token_value: tokenValue ?? null,
    token_id: tokenId,
    client_certificate_id: certificate,
    private_endpoint: privateEndpoint,
  };
}

/** Why an environment value looks like an endpoint credential, or null. */
function credentialIn(value: string, ownToken: string | undefined, ctx: ValidationContext): string | null {
  if (PEM_PRIVATE_KEY.test(value)) return 'it holds a PEM private key';
  if (ownToken !== undefined && ownToken.length >= TOKEN_MIN && value.includes(ownToken)) return "it holds this deployment's endpoint bearer token";
  const pieces = [value, value.trim(), ...value.split(/[\s,;"']+/)].filter((p) => p.length >= TOKEN_MIN);
  if (pieces.some((p) => ctx.liveTokenHashes.has(ctx.hashToken(p)))) return 'it holds an endpoint bearer token from the vault';
  return null;
}

function checkEnv(req: Req, ctx: ValidationContext, ownToken: string | undefined): Record<string, string> {
  const env = req.obj('env') ?? {};
  for (const [name, value] of Object.entries(env)) {
    const field = `env.${name}`;
    if (!ENV_NAME.test(name)) {
      req.add(
        field,
        `environment variable name "${name}" is invalid: names use letters, digits and underscores and begin with a letter or underscore`,
      );
    }
    if (typeof value !== 'string') {
      req.add(field, `${field} must be a string, got ${kindOf(value)}`);
      continue;
    }
    const why = credentialIn(value, ownToken, ctx);
    if (why) {
      req.add(
        field,
        `endpoint credentials must not be placed in environment variables: ${why}; ` +
          'protect the endpoint with endpoint_bearer_token or a client certificate instead',
      );
    }
  }
  return stringEntries(env);
}

function checkAnnotations(req: Req): Record<string, string> {
  const annotations = req.obj('annotations') ?? {};
  for (const [key, value] of Object.entries(annotations)) {
    const field = `annotations.${key}`;
    if (!ANNOTATION_KEY.test(key)) {
      req.add(
        field,
        `annotation key "${key}" is invalid: an optional DNS prefix and '/', then up to 63 letters, digits, ` +
          "'-', '_' or '.', beginning and ending with a letter or digit",
      );
    }
    if (typeof value !== 'string') req.add(field, `${field} must be a string, got ${kindOf(value)}`);
  }
  return stringEntries(annotations);
}

const stringEntries = (o: Obj): Record<string, string> =>
  Object.fromEntries(Object.entries(o).filter((e): e is [string, string] => typeof e[1] === 'string'));

function checkProtocol(req: Req): Protocol | undefined {
  const protocol = req.str('protocol') ?? 'http';
  if (protocol === 'http' || protocol === 'grpc') return protocol;
  req.add('protocol', 'protocol must be "http" or "grpc"');
  return undefined;
}

/** A secret by value: a string replaces, null or "" clears, absent keeps (undefined). */
function plainSecret(req: Req, field: 'registry_password' | 'model_hub_token'): string | null | undefined {
  if (!req.has(field) || req.isBad(field)) return undefined;
  const v = req.str(field);
  return v === undefined || v === '' ? null : v;
}

/** The secret is set once this request is applied (given, or inherited and not cleared). */
function secretWillBeSet(req: Req, field: 'registry_password' | 'model_hub_token', opts: Options): boolean {
  const plain = plainSecret(req, field);
  if (plain === undefined) return !req.has(field) && opts.inherited?.secrets[field] !== undefined;
  return plain !== null;
}

// ---------------------------------------------------------------------------------------
// General inference.

function checkImage(req: Req): string | undefined {
  if (!req.required('image', 'image is required: the container image to run, given without a tag')) return undefined;
  const image = req.str('image');
  if (image === undefined) return undefined;
  if (/\s/.test(image)) {
    req.add('image', 'image must not contain whitespace');
    return undefined;
  }
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  if (image.includes('@') || lastSegment.includes(':')) {
    req.add('image', 'image must be given without a tag or digest: put the tag in `tag`');
    return undefined;
  }
  return image;
}

function checkTag(req: Req): string {
  const tag = req.str('tag') ?? 'latest';
  if (!TAG.test(tag)) req.add('tag', 'tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, a container image tag');
  return tag;
}

function checkPreset(req: Req): string | null {
  const preset = req.str('preset');
  if (preset !== undefined && !PRESET_ID.test(preset)) {
    req.add('preset', 'preset must be a preset id: lowercase letters, digits and hyphens, for example vllm');
  }
  return preset ?? null;
}

function checkPort(req: Req, field: string, value: number): void {
  if (value < 1 || value > PORT_MAX) req.add(field, `${field} must be between 1 and ${PORT_MAX}`);
}

function checkContainerPort(req: Req): number | undefined {
  if (!req.required('container_port', 'container_port is required: the port the container serves HTTP or gRPC on')) return undefined;
  const port = req.int('container_port');
  if (port !== undefined) checkPort(req, 'container_port', port);
  return port;
}

function checkHealthPath(req: Req): string {
  const path = req.str('health_check_path') ?? '/';
  if (!path.startsWith('/')) req.add('health_check_path', "health_check_path must start with '/', for example /health or /");
  return path;
}

const nonEmpty = (s: string | undefined): string | null => (s === undefined || s === '' ? null : s);

function checkRegistry(req: Req, opts: Options): string | null {
  const username = nonEmpty(req.str('registry_username'));
  const passwordSet = secretWillBeSet(req, 'registry_password', opts);
  const both = 'set both for a private registry, or neither';
  if (username !== null && !passwordSet && !req.isBad('registry_password')) {
    req.add('registry_password', `registry_password is required with registry_username: ${both}`);
  }
  if (username === null && passwordSet && !req.isBad('registry_username')) {
    req.add('registry_username', `registry_username is required with registry_password: ${both}`);
  }
  return username;
}

function checkMetrics(req: Req): { port: number | null; path: string | null } {
  const port = req.int('metrics_port') ?? null;
  const path = nonEmpty(req.str('metrics_path'));
  const together = 'set metrics_port and metrics_path together or leave both empty (defaults: the container port and /metrics)';
  if (port !== null && path === null && !req.isBad('metrics_path')) req.add('metrics_path', `metrics_path is missing: ${together}`);
  if (port === null && path !== null && !req.isBad('metrics_port')) req.add('metrics_port', `metrics_port is missing: ${together}`);
  if (port !== null) checkPort(req, 'metrics_port', port);
  if (path !== null && !path.startsWith('/')) req.add('metrics_path', "metrics_path must start with '/', for example /metrics");
  return { port, path };
}

const CONFIG_FILE_FIELDS = ['filename', 'mount_path', 'content'];

function checkConfigFile(req: Req): ConfigFile | null {
  const file = req.obj('config_file');
  if (file === undefined) return null;
  for (const key of Object.keys(file)) {
    if (!CONFIG_FILE_FIELDS.includes(key)) {
      req.add(`config_file.${key}`, `unknown field "config_file.${key}": a config file has filename, mount_path and content`);
    }
  }
  const { filename, mount_path: mountPath, content } = file;
  if (typeof filename !== 'string' || filename === '') {
    req.add('config_file.filename', 'config_file.filename is required: the name of the file to mount');
  } else if (filename.includes('/') || filename === '.' || filename === '..') {
    req.add('config_file.filename', "config_file.filename must be a plain file name: no '/', and not . or ..");
  }
  if (typeof mountPath !== 'string' || !mountPath.startsWith('/')) {
    req.add('config_file.mount_path', "config_file.mount_path must be an absolute directory path, starting with '/'");
  } else if (mountPath.split('/').includes('..')) {
    req.add('config_file.mount_path', "config_file.mount_path must not contain '..' segments");
  }
  if (content === undefined) req.add('config_file.content', "config_file.content is required: the file's content (it may be empty)");
  else if (typeof content !== 'string') req.add('config_file.content', `config_file.content must be a string, got ${kindOf(content)}`);
  return { filename: String(filename), mount_path: String(mountPath), content: String(content) };
}

function validateGeneral(req: Req, ctx: ValidationContext, opts: Options): DeploymentDraft | undefined {
  const name = checkName(req, ctx, opts);
  const cluster = checkCluster(req, ctx);
  const preset = checkPreset(req);
  const hardware = checkTopLevelHardware(req, cluster, 'the hardware type of every replica');
  const image = checkImage(req);
  const tag = checkTag(req);
  const containerPort = checkContainerPort(req);
  const protocol = checkProtocol(req);
  const healthPath = checkHealthPath(req);
  const registryUsername = checkRegistry(req, opts);
  const metrics = checkMetrics(req);
  const configFile = checkConfigFile(req);
  const scaling = checkScaling(req);
  const auth = checkAuth(req, ctx, opts);
  const env = checkEnv(req, ctx, auth.token_value ?? undefined);
  const annotations = checkAnnotations(req);
  if (req.problems.length > 0) return undefined;
  const spec: GeneralSpec = {
    family: 'general',
    preset,
    hardware_instance_id: need(hardware),
    image: need(image),
    tag,
    container_port: need(containerPort),
    protocol: need(protocol),
    health_check_path: healthPath,
    registry_username: registryUsername,
    enable_logging: req.bool('enable_logging') ?? true,
    enable_model_caching: req.bool('enable_model_caching') ?? false,
    session_affinity: req.bool('session_affinity') ?? false,
    command: req.strs('command') ?? [],
    metrics_port: metrics.port,
    metrics_path: metrics.path,
    env,
    config_file: configFile,
    annotations,
    secrets: {},
  };
  const registryPassword = plainSecret(req, 'registry_password');
  const plainSecrets = registryPassword === undefined ? {} : { registry_password: registryPassword };
  return { family: 'general', name: need(name), cluster_id: need(cluster).id, spec, plainSecrets, scaling: need(scaling), auth };
}

// ---------------------------------------------------------------------------------------
// Orchestrated inference.

interface Topology {
  hardware_instance_id: number | null;
  worker_pools: OrchestratedSpec['worker_pools'];
  scaling: ScalingSpec;
}

const AGGREGATED_FIELDS: [string, string][] = [
  ['hardware_instance_id', 'each pool names its own worker_pools.<pool>.hardware_instance_id'],
  ['min_replicas', 'pool sizes are fixed: set worker_pools.prefill.replicas and worker_pools.decode.replicas'],
  ['max_replicas', 'pool sizes are fixed: set worker_pools.prefill.replicas and worker_pools.decode.replicas'],
  ['concurrency', 'disaggregated pools are fixed size and do not autoscale'],
  ['cooldown_period', 'disaggregated pools are fixed size and do not autoscale'],
];

const POOLS = ['prefill', 'decode'] as const;
type PoolName = (typeof POOLS)[number];
const POOL_FIELDS = ['hardware_instance_id', 'replicas'];
const POOL_AUTOSCALING = ['min_replicas', 'max_replicas', 'concurrency', 'cooldown_period'];

function checkModel(req: Req): string | undefined {
  if (!req.required('model', 'model is required: a model-hub identifier of the form <org>/<model>')) return undefined;
  const model = req.str('model');
  if (model !== undefined && !MODEL_ID.test(model)) {
    req.add(
      'model',
      "model must be a model-hub identifier of the form <org>/<model> (letters, digits, '.', '_', '-'), e.g. meta-llama/Llama-3.1-8B-Instruct",
    );
    return undefined;
  }
  return model;
}

function checkServingMode(req: Req): ServingMode | undefined {
  if (req.isBad('serving_mode')) return undefined;
  const mode = req.str('serving_mode') ?? 'aggregated';
  if (mode === 'aggregated' || mode === 'disaggregated') return mode;
  req.add('serving_mode', 'serving_mode must be "aggregated" or "disaggregated"');
  return undefined;
}

function checkAggregated(req: Req, cluster: Cluster | undefined): Topology | undefined {
  if (req.given('worker_pools')) {
    req.add(
      'worker_pools',
      'worker_pools is only accepted when serving_mode is disaggregated (serving_mode defaults to aggregated, ' +
        'which sets hardware_instance_id and min_replicas/max_replicas at the top level)',
    );
  }
  const hardware = checkTopLevelHardware(req, cluster, 'the hardware type of every Worker replica');
  const scaling = checkScaling(req);
  if (hardware === undefined || scaling === undefined) return undefined;
  return { hardware_instance_id: hardware, worker_pools: null, scaling };
}

/** An integer inside a pool object, which checkShape does not reach. */
function poolInt(req: Req, field: string, value: unknown, missing: string): number | undefined {
  if (value === undefined || value === null) {
    req.add(field, `${field} is required: ${missing}`);
    return undefined;
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    req.add(field, `${field} must be an integer, got ${kindOf(value)}`);
    return undefined;
  }
  return value;
}

function checkPool(req: Req, pool: PoolName, raw: unknown, cluster: Cluster | undefined): { hardware: number; replicas: number } | undefined {
  const at = `worker_pools.${pool}`;
  if (raw === undefined || raw === null) {
    req.add(at, `${at} is required: a disaggregated deployment needs both a prefill and a decode pool, each with ${POOL_FIELDS.join(' and ')}`);
    return undefined;
  }
  if (!isObject(raw)) {
    req.add(at, `${at} must be an object {hardware_instance_id, replicas}, got ${kindOf(raw)}`);
    return undefined;
  }
  for (const key of Object.keys(raw)) {
    if (POOL_AUTOSCALING.includes(key)) {
      const why = 'pools are fixed size, with no independent Prefill/Decode autoscaling';
      req.add(`${at}.${key}`, `${at}.${key} is not accepted: ${why}; set ${at}.replicas`);
    } else if (!POOL_FIELDS.includes(key)) {
      req.add(`${at}.${key}`, `unknown field "${at}.${key}": a pool has hardware_instance_id and replicas`);
    }
  }
  const hwId = poolInt(req, `${at}.hardware_instance_id`, raw.hardware_instance_id, `the hardware type of the ${pool} replicas`);
  const hardware = hwId === undefined ? undefined : checkHardwareId(req, `${at}.hardware_instance_id`, hwId, cluster);
  const replicas = poolInt(req, `${at}.replicas`, raw.replicas, `the fixed number of ${pool} replicas, at least 1`);
  if (replicas !== undefined && replicas < 1) req.add(`${at}.replicas`, `${at}.replicas must be at least 1`);
  if (hardware === undefined || replicas === undefined || replicas < 1) return undefined;
  return { hardware, replicas };
}

/**
 * Disaggregated scaling lives in `pools`; min_replicas = max_replicas = 1, no target and the
 * default cooldown are placeholders that nothing reads (the pools never autoscale).
 */
function checkDisaggregated(req: Req, cluster: Cluster | undefined): Topology | undefined {
  for (const [field, hint] of AGGREGATED_FIELDS) {
    if (req.given(field)) {
      const where = 'is not accepted at the top level when serving_mode is disaggregated';
      req.add(field, `${field} is an aggregated field and ${where}: ${hint}`);
    }
  }
  if (req.isBad('worker_pools')) return undefined;
  const pools = req.obj('worker_pools');
  if (pools === undefined) {
    req.add(
      'worker_pools',
      'worker_pools is required when serving_mode is disaggregated: give prefill and decode pools, each with hardware_instance_id and replicas',
    );
    return undefined;
  }
  for (const key of Object.keys(pools)) {
    if (!(POOLS as readonly string[]).includes(key)) {
      req.add(`worker_pools.${key}`, `unknown field "worker_pools.${key}": worker_pools has only prefill and decode`);
    }
  }
  const prefill = checkPool(req, 'prefill', pools.prefill, cluster);
  const decode = checkPool(req, 'decode', pools.decode, cluster);
  if (!prefill || !decode) return undefined;
  return {
    hardware_instance_id: null,
    worker_pools: { prefill: { hardware_instance_id: prefill.hardware }, decode: { hardware_instance_id: decode.hardware } },
    scaling: {
      min_replicas: 1,
      max_replicas: 1,
      target_concurrency: null,
      cooldown_period: DEFAULT_COOLDOWN,
      pools: { prefill: prefill.replicas, decode: decode.replicas },
    },
  };
}

function checkServedModelName(req: Req): string | null {
  const served = req.str('served_model_name');
  if (served !== undefined && served.trim() === '') {
    req.add('served_model_name', 'served_model_name must not be empty; omit it and clients send the model-hub identifier');
  }
  return served ?? null;
}

function validateOrchestrated(req: Req, ctx: ValidationContext, opts: Options): DeploymentDraft | undefined {
  const name = checkName(req, ctx, opts);
  const cluster = checkCluster(req, ctx);
  const model = checkModel(req);
  const mode = checkServingMode(req);
  const topology =
    mode === 'disaggregated' ? checkDisaggregated(req, cluster) : mode === 'aggregated' ? checkAggregated(req, cluster) : undefined;
  const auth = checkAuth(req, ctx, opts);
  const servedModelName = checkServedModelName(req);
  const protocol = checkProtocol(req);
  const env = checkEnv(req, ctx, auth.token_value ?? undefined);
  const annotations = checkAnnotations(req);
  if (req.problems.length > 0) return undefined;
  const shape = need(topology);
  const spec: OrchestratedSpec = {
    family: 'orchestrated',
    model: need(model),
    serving_mode: need(mode),
    hardware_instance_id: shape.hardware_instance_id,
    worker_pools: shape.worker_pools,
    served_model_name: servedModelName,
    protocol: need(protocol),
    extra_args: req.strs('extra_args') ?? [],
    env,
    annotations,
    enable_logging: req.bool('enable_logging') ?? true,
    enable_model_caching: req.bool('enable_model_caching') ?? false,
    secrets: {},
  };
  const hubToken = plainSecret(req, 'model_hub_token');
  const plainSecrets = hubToken === undefined ? {} : { model_hub_token: hubToken };
  return { family: 'orchestrated', name: need(name), cluster_id: need(cluster).id, spec, plainSecrets, scaling: shape.scaling, auth };
}

// ---------------------------------------------------------------------------------------
// Entry points.

function need<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('internal: a validated value is missing');
  return value;
}

/** Unknown and foreign fields first, then the family's field order; stable within a field. */
function ordered(family: Family, problems: FieldProblem[]): FieldProblem[] {
  const order = [...FIELDS[family].keys()];
  const rank = (p: FieldProblem): number => {
    if (p.field === '') return -2;
    return order.indexOf(p.field.split('.')[0] ?? '');
  };
  return [...problems].sort((a, b) => rank(a) - rank(b));
}

function validateRequest(family: Family, raw: Obj, ctx: ValidationContext, opts: Options, extra: FieldProblem[] = []): Validation<DeploymentDraft> {
  const req = new Req(family, raw);
  req.problems.push(...extra);
  checkShape(req);
  const draft = family === 'general' ? validateGeneral(req, ctx, opts) : validateOrchestrated(req, ctx, opts);
  if (req.problems.length > 0 || draft === undefined) return { ok: false, problems: ordered(family, req.problems) };
  return { ok: true, value: draft };
}

const notAnObject = (): Validation<never> => ({
  ok: false,
  problems: [{ field: '', message: 'the request body must be a JSON object', code: 'invalid_request' }],
});

export function validateCreate(family: Family, body: unknown, ctx: ValidationContext): Validation<DeploymentDraft> {
  if (!isObject(body)) return notAnObject();
  return validateRequest(family, body, ctx, { mode: 'create', inherited: null, checkCertificate: true });
}

/** A stored deployment as a flat request (no secrets, no token value), as clients would send it. */
export function toRequest(record: DeploymentRecord): Record<string, unknown> {
  const spec =
    record.spec.family === 'general' ? generalRequest(record.spec, record.scaling) : orchestratedRequest(record.spec, record.scaling);
  return withoutNulls({ name: record.name, cluster_id: record.cluster_id, ...spec, ...authRequest(record.auth) });
}

function generalRequest(spec: GeneralSpec, scaling: ScalingSpec): Obj {
  const { family: _family, secrets: _secrets, ...fields } = spec;
  return {
    ...structuredClone(fields),
    min_replicas: scaling.min_replicas,
    max_replicas: scaling.max_replicas,
    max_concurrency: scaling.target_concurrency,
    cooldown_period: scaling.cooldown_period,
  };
}

function orchestratedRequest(spec: OrchestratedSpec, scaling: ScalingSpec): Obj {
  const { family: _family, secrets: _secrets, worker_pools: pools, hardware_instance_id: hardware, ...fields } = spec;
  const common = structuredClone(fields);
  if (spec.serving_mode === 'disaggregated' && pools) {
    const pool = (p: PoolName) => ({ hardware_instance_id: pools[p].hardware_instance_id, replicas: scaling.pools?.[p] ?? 1 });
    return { ...common, worker_pools: { prefill: pool('prefill'), decode: pool('decode') } };
  }
  return {
    ...common,
    hardware_instance_id: hardware,
    min_replicas: scaling.min_replicas,
    max_replicas: scaling.max_replicas,
    concurrency: scaling.target_concurrency,
    cooldown_period: scaling.cooldown_period,
  };
}

function authRequest(auth: EndpointAuth): Obj {
  return { private_endpoint: auth.private_endpoint, client_certificate_id: auth.client_certificate_id };
}

const withoutNulls = (o: Obj): Obj => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));

/** `body` over `base`; worker_pools merge per pool, so a PATCH may carry only decode.replicas. */
function mergeRequest(base: Obj, body: Obj): Obj {
  const merged: Obj = { ...base, ...body };
  if (Object.hasOwn(body, 'worker_pools')) merged.worker_pools = mergePools(base.worker_pools, body.worker_pools);
  return merged;
}

function mergePools(base: unknown, patch: unknown): unknown {
  if (!isObject(base) || !isObject(patch)) return patch;
  const merged: Obj = { ...base, ...patch };
  for (const pool of POOLS) {
    const [b, p] = [base[pool], patch[pool]];
    if (isObject(b) && isObject(p)) merged[pool] = { ...b, ...p };
  }
  return merged;
}

const IMMUTABLE = ['name', 'cluster_id', 'serving_mode'] as const;

function immutableProblems(current: DeploymentRecord, body: Obj): FieldProblem[] {
  const stored: Record<(typeof IMMUTABLE)[number], unknown> = {
    name: current.name,
    cluster_id: current.cluster_id,
    serving_mode: current.spec.family === 'orchestrated' ? current.spec.serving_mode : undefined,
  };
  const clone = `/deployments/${current.family}/${current.id}/clone`;
  const problems: FieldProblem[] = [];
  for (const field of IMMUTABLE) {
    if (stored[field] === undefined || !Object.hasOwn(body, field) || body[field] === stored[field]) continue;
    problems.push({
      field,
      code: 'invalid_field',
      message: `${field} cannot be changed on an existing deployment; clone it instead (POST ${clone} with a new name and the new ${field}) and delete this one`,
    });
  }
  return problems;
}

export function validatePatch(current: DeploymentRecord, body: unknown, ctx: ValidationContext): Validation<PatchResult> {
  if (!isObject(body)) return notAnObject();
  const merged = mergeRequest(toRequest(current), body);
  // The stored values stand; a different one in the body is reported by immutableProblems.
  merged.name = current.name;
  merged.cluster_id = current.cluster_id;
  if (current.spec.family === 'orchestrated') merged.serving_mode = current.spec.serving_mode;
  const opts: Options = {
    mode: 'patch',
    inherited: { token_id: current.auth.token_id, secrets: current.spec.secrets },
    checkCertificate: body.client_certificate_id !== undefined && body.client_certificate_id !== null,
  };
  const result = validateRequest(current.family, merged, ctx, opts, immutableProblems(current, body));
  if (!result.ok) return result;
  const draft = result.value;
  return {
    ok: true,
    value: {
      draft,
      specChanged: !sameSpec(draft.spec, current.spec) || secretsChange(draft.plainSecrets, current.spec.secrets),
      scalingChanged: !deepEqual(draft.scaling, current.scaling),
      authChanged:
        draft.auth.token_value !== null ||
        draft.auth.token_id !== current.auth.token_id ||
        draft.auth.client_certificate_id !== current.auth.client_certificate_id ||
        draft.auth.private_endpoint !== current.auth.private_endpoint,
    },
  };
}

/**
 * body = {name, ...overrides} over the source's request. The source's auth binding and sealed
 * secrets carry over unless overridden (plainSecrets keys absent: the caller copies them).
 * Switching serving_mode drops the source's fields of the other mode.
 */
export function validateClone(source: DeploymentRecord, body: unknown, ctx: ValidationContext): Validation<DeploymentDraft> {
  if (!isObject(body)) return notAnObject();
  const { name: _name, ...base } = toRequest(source);
  const switchesMode = Object.hasOwn(body, 'serving_mode') && (body.serving_mode ?? 'aggregated') !== base.serving_mode;
  if (source.spec.family === 'orchestrated' && switchesMode) {
    const drop = source.spec.serving_mode === 'disaggregated' ? ['worker_pools'] : AGGREGATED_FIELDS.map(([f]) => f);
    for (const field of drop) delete base[field];
  }
  return validateRequest(source.family, mergeRequest(base, body), ctx, {
    mode: 'clone',
    inherited: { token_id: source.auth.token_id, secrets: source.spec.secrets },
    checkCertificate: true,
  });
}

function sameSpec(a: DeploymentSpec, b: DeploymentSpec): boolean {
  const { secrets: _a, ...left } = a;
  const { secrets: _b, ...right } = b;
  return deepEqual(left, right);
}

function secretsChange(plain: DeploymentDraft['plainSecrets'], sealed: SealedSecrets): boolean {
  return (['registry_password', 'model_hub_token'] as const).some((key) => {
    const v = plain[key];
    return typeof v === 'string' || (v === null && sealed[key] !== undefined);
  });
}

/** Structural equality of JSON values; object key order does not matter. */
function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a).filter((k) => a[k] !== undefined);
  const otherKeys = Object.keys(b).filter((k) => b[k] !== undefined);
  return keys.length === otherKeys.length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}
