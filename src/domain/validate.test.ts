// Table test of the spec's request rules: one case per rule, each asserting the field, a
// distinctive part of the message and the code, and that it is the only problem (so a case
// fails when its rule is removed and when another rule misfires). Then the spec's own
// disaggregated example, PATCH and clone.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ErrorCode, FieldProblem } from '../core/errors.js';
import { disaggregatedBody } from '../../test/helpers/spec-fixtures.js';
import { DEFAULT_CATALOG } from './catalog.js';
import { DEFAULT_IMAGE_MAP } from './image-map.js';
import { classifyPatch } from './patch-effect.js';
import { effectiveFlowControl } from './validation/limits-rules.js';
import { limitsOf, type DeploymentRecord, type Family } from './records.js';
import {
  toRequest,
  validateClone,
  validateCreate,
  validatePatch,
  type DeploymentDraft,
  type Validation,
  type ValidationContext,
} from './validate.js';

const sha256 = (v: string): string => createHash('sha256').update(v, 'utf8').digest('hex');

const TOKEN = 'endpoint-token-0123';
const VAULT_TOKEN = 'vault-token-abcdef12';
/** A service-account key: a platform credential, never an endpoint's. */
const PLATFORM_KEY = 'igk_platform-key-0123456789';
const CERT = 7;
const VAULT_TOKEN_ID = 3;

const ctx: ValidationContext = {
  catalog: DEFAULT_CATALOG,
  hashToken: sha256,
  liveTokenHashes: new Set([sha256(VAULT_TOKEN)]),
  platformKeyHashes: new Set([sha256(PLATFORM_KEY)]),
  tokenIds: new Set([VAULT_TOKEN_ID]),
  certificateIds: new Set([CERT]),
  takenNames: new Set(['taken-name']),
  images: DEFAULT_IMAGE_MAP,
};

type Body = Record<string, unknown>;

const general = (o: Body = {}): Body => ({
  name: 'web',
  cluster_id: 1,
  hardware_instance_id: 1,
  image: 'infergate/reference-engine',
  tag: 'openai',
  container_port: 8000,
  endpoint_bearer_token: TOKEN,
  ...o,
});

const aggregated = (o: Body = {}): Body => ({
  name: 'agg',
  cluster_id: 1,
  model: 'meta-llama/Llama-3.1-8B-Instruct',
  hardware_instance_id: 1,
  endpoint_bearer_token: TOKEN,
  ...o,
});

/** The spec's example: name, cluster_id, model, serving_mode, worker_pools, token, logging. */
const disaggregated = (o: Body = {}): Body => ({ ...disaggregatedBody('llama-disagg', TOKEN), ...o });

const without = (body: Body, ...keys: string[]): Body => Object.fromEntries(Object.entries(body).filter(([k]) => !keys.includes(k)));

const pools = (prefill: unknown, decode: unknown): Body => ({ worker_pools: { prefill, decode } });
const POOL_1 = { hardware_instance_id: 1, replicas: 1 };
const POOL_2 = { hardware_instance_id: 2, replicas: 2 };

interface Case {
  rule: string;
  family: Family;
  body: unknown;
  field: string;
  message: string;
  code?: ErrorCode;
  /** Number of problems expected; 1 unless the case says otherwise. */
  count?: number;
}

/** Rules both families share: each becomes one case per family. */
function shared(rule: string, change: Body | ((b: Body) => Body), field: string, message: string, code?: ErrorCode): Case[] {
  const apply = (base: Body): Body => (typeof change === 'function' ? change(base) : { ...base, ...change });
  return [
    { rule: `${rule} (general)`, family: 'general', body: apply(general()), field, message, ...(code ? { code } : {}) },
    { rule: `${rule} (orchestrated)`, family: 'orchestrated', body: apply(aggregated()), field, message, ...(code ? { code } : {}) },
  ];
}

const PEM = '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----';

const CASES: Case[] = [
  // Shape of the body.
  { rule: 'body is a JSON object', family: 'general', body: [general()], field: '', message: 'must be a JSON object', code: 'invalid_request' },
  { rule: 'body is a JSON object (null)', family: 'orchestrated', body: null, field: '', message: 'must be a JSON object', code: 'invalid_request' },
  ...shared('unknown field', { foo: 1 }, 'foo', 'unknown field "foo"'),
  { rule: 'preset must be known', family: 'general', body: general({ preset: 'llamafile' }), field: 'preset', message: 'unknown preset "llamafile": choose one of vllm, sglang, tgi, triton, ollama, nim' },
  { rule: 'an unknown image needs a command', family: 'general', body: general({ image: 'my/own-engine' }), field: 'command', message: 'image "my/own-engine" is not one the local runtime can run by itself' },
  ...shared('wrong type: integer', { cluster_id: '1' }, 'cluster_id', 'cluster_id must be an integer, got a string'),
  ...shared('wrong type: boolean', { enable_logging: 'yes' }, 'enable_logging', 'enable_logging must be true or false'),
  ...shared('wrong type: string map', { env: ['A=1'] }, 'env', 'env must be an object mapping names to string values, got an array'),
  { rule: 'image refused in orchestrated', family: 'orchestrated', body: aggregated({ image: 'my/img' }), field: 'image', message: 'custom runtime images are not supported' },
  { rule: 'config_file refused in orchestrated', family: 'orchestrated', body: aggregated({ config_file: { filename: 'a', mount_path: '/etc', content: '' } }), field: 'config_file', message: 'config-file mounts are not supported' },
  { rule: 'command refused in orchestrated', family: 'orchestrated', body: aggregated({ command: ['x'] }), field: 'command', message: 'extra worker arguments go in extra_args' },
  { rule: 'max_concurrency refused in orchestrated', family: 'orchestrated', body: aggregated({ max_concurrency: 2 }), field: 'max_concurrency', message: 'call the target `concurrency`' },
  { rule: 'model refused in general', family: 'general', body: general({ model: 'a/b' }), field: 'model', message: 'is not accepted in general inference deployments' },
  { rule: 'worker_pools refused in general', family: 'general', body: general(pools(POOL_1, POOL_2)), field: 'worker_pools', message: 'exist only in orchestrated inference' },
  { rule: 'concurrency refused in general', family: 'general', body: general({ concurrency: 2 }), field: 'concurrency', message: 'calls the target `max_concurrency`' },

  // name
  ...shared('name required', (b) => without(b, 'name'), 'name', 'name is required'),
  ...shared('name too long', { name: 'a'.repeat(21) }, 'name', 'at most 20 characters'),
  ...shared('name characters', { name: 'my_app' }, 'name', 'only lowercase letters, digits and hyphens'),
  ...shared('name start', { name: '1app' }, 'name', 'must start with a lowercase letter'),
  ...shared('name end', { name: 'app-' }, 'name', 'must end with a letter or digit'),
  ...shared('name taken', { name: 'taken-name' }, 'name', 'already used by another deployment', 'conflict'),

  // cluster_id
  ...shared('cluster_id required', (b) => without(b, 'cluster_id'), 'cluster_id', 'cluster_id is required'),
  ...shared('cluster unknown', { cluster_id: 9 }, 'cluster_id', 'cluster 9 does not exist; GET /clusters'),
  { rule: 'orchestrated needs the operator', family: 'orchestrated', body: aggregated({ cluster_id: 2 }), field: 'cluster_id', message: 'orchestration operator enabled; cluster 2 "local-sim-basic" does not have it: use cluster 1 "local-sim"' },

  // hardware
  { rule: 'hardware required (general)', family: 'general', body: without(general(), 'hardware_instance_id'), field: 'hardware_instance_id', message: 'hardware_instance_id is required' },
  { rule: 'hardware required (aggregated)', family: 'orchestrated', body: without(aggregated(), 'hardware_instance_id'), field: 'hardware_instance_id', message: 'hardware_instance_id is required' },
  ...shared('hardware in cluster', { hardware_instance_id: 9 }, 'hardware_instance_id', 'hardware 9 is not available in cluster 1 "local-sim"; available: 1 (sim-gpu-1x), 2 (sim-gpu-2x), 3 (sim-gpu-8x)', 'hardware_unavailable'),
  { rule: 'pool hardware in cluster', family: 'orchestrated', body: disaggregated(pools(POOL_1, { hardware_instance_id: 4, replicas: 1 })), field: 'worker_pools.decode.hardware_instance_id', message: 'hardware 4 is not available', code: 'hardware_unavailable' },

  // model, serving_mode
  { rule: 'model required', family: 'orchestrated', body: without(aggregated(), 'model'), field: 'model', message: 'model is required' },
  { rule: 'model form', family: 'orchestrated', body: aggregated({ model: 'org/team/model' }), field: 'model', message: 'of the form <org>/<model>' },
  { rule: 'model characters', family: 'orchestrated', body: aggregated({ model: 'org/mo del' }), field: 'model', message: 'of the form <org>/<model>' },
  { rule: 'serving_mode values', family: 'orchestrated', body: aggregated({ serving_mode: 'hybrid' }), field: 'serving_mode', message: 'serving_mode must be "aggregated" or "disaggregated"' },

  // worker_pools
  { rule: 'worker_pools required when disaggregated', family: 'orchestrated', body: without(disaggregated(), 'worker_pools'), field: 'worker_pools', message: 'worker_pools is required when serving_mode is disaggregated' },
  { rule: 'prefill pool required', family: 'orchestrated', body: disaggregated({ worker_pools: { decode: POOL_2 } }), field: 'worker_pools.prefill', message: 'needs both a prefill and a decode pool' },
  { rule: 'decode pool required', family: 'orchestrated', body: disaggregated({ worker_pools: { prefill: POOL_1 } }), field: 'worker_pools.decode', message: 'needs both a prefill and a decode pool' },
  { rule: 'pool is an object', family: 'orchestrated', body: disaggregated(pools(POOL_1, 2)), field: 'worker_pools.decode', message: 'worker_pools.decode must be an object {hardware_instance_id, replicas}, got a number' },
  { rule: 'pool hardware required', family: 'orchestrated', body: disaggregated(pools({ replicas: 1 }, POOL_2)), field: 'worker_pools.prefill.hardware_instance_id', message: 'worker_pools.prefill.hardware_instance_id is required' },
  { rule: 'pool replicas required', family: 'orchestrated', body: disaggregated(pools(POOL_1, { hardware_instance_id: 2 })), field: 'worker_pools.decode.replicas', message: 'worker_pools.decode.replicas is required' },
  { rule: 'pool replicas integer', family: 'orchestrated', body: disaggregated(pools(POOL_1, { hardware_instance_id: 2, replicas: 1.5 })), field: 'worker_pools.decode.replicas', message: 'must be an integer' },
  { rule: 'pool replicas at least 1', family: 'orchestrated', body: disaggregated(pools({ hardware_instance_id: 1, replicas: 0 }, POOL_2)), field: 'worker_pools.prefill.replicas', message: 'worker_pools.prefill.replicas must be at least 1' },
  { rule: 'pools are fixed size', family: 'orchestrated', body: disaggregated(pools(POOL_1, { ...POOL_2, max_replicas: 4 })), field: 'worker_pools.decode.max_replicas', message: 'pools are fixed size, with no independent Prefill/Decode autoscaling' },
  { rule: 'unknown pool field', family: 'orchestrated', body: disaggregated(pools({ ...POOL_1, gpus: 2 }, POOL_2)), field: 'worker_pools.prefill.gpus', message: 'unknown field "worker_pools.prefill.gpus"' },
  { rule: 'unknown pool', family: 'orchestrated', body: disaggregated({ worker_pools: { prefill: POOL_1, decode: POOL_2, router: POOL_1 } }), field: 'worker_pools.router', message: 'has only prefill and decode' },
  { rule: 'worker_pools only when disaggregated', family: 'orchestrated', body: aggregated(pools(POOL_1, POOL_2)), field: 'worker_pools', message: 'worker_pools is only accepted when serving_mode is disaggregated' },
  ...(['hardware_instance_id', 'min_replicas', 'max_replicas', 'concurrency', 'cooldown_period'] as const).map(
    (field): Case => ({
      rule: `aggregated field ${field} refused when disaggregated`,
      family: 'orchestrated',
      body: disaggregated({ [field]: 1 }),
      field,
      message: `${field} is an aggregated field and is not accepted at the top level when serving_mode is disaggregated`,
    }),
  ),

  // replicas, concurrency, cooldown
  { rule: 'orchestrated min_replicas at least 1', family: 'orchestrated', body: aggregated({ min_replicas: 0 }), field: 'min_replicas', message: 'do not scale to zero' },
  { rule: 'general min_replicas at least 0', family: 'general', body: general({ min_replicas: -1 }), field: 'min_replicas', message: 'min_replicas must be 0 or more' },
  ...shared('max_replicas at least min_replicas', { min_replicas: 3, max_replicas: 2 }, 'max_replicas', 'max_replicas (2) must be at least min_replicas (3)'),
  { rule: 'max_replicas at least 1', family: 'general', body: general({ min_replicas: 0, max_replicas: 0 }), field: 'max_replicas', message: 'max_replicas must be at least 1' },
  { rule: 'initial_replicas 0 or more', family: 'general', body: general({ min_replicas: 0, max_concurrency: 4, initial_replicas: -1 }), field: 'initial_replicas', message: 'initial_replicas must be a whole number, 0 or more (0: no replica until the first request), got -1' },
  { rule: 'initial_replicas at most max_replicas', family: 'general', body: general({ min_replicas: 0, max_replicas: 2, max_concurrency: 4, initial_replicas: 3 }), field: 'initial_replicas', message: 'initial_replicas (3) must be at most max_replicas (2)' },
  { rule: 'initial_replicas an integer', family: 'general', body: general({ initial_replicas: 0.5 }), field: 'initial_replicas', message: 'initial_replicas must be an integer' },
  { rule: 'initial_replicas refused in orchestrated', family: 'orchestrated', body: aggregated({ initial_replicas: 0 }), field: 'initial_replicas', message: 'orchestrated deployments never scale to zero' },
  { rule: 'max_concurrency positive', family: 'general', body: general({ max_concurrency: 0 }), field: 'max_concurrency', message: 'max_concurrency must be a positive integer' },
  { rule: 'concurrency positive', family: 'orchestrated', body: aggregated({ concurrency: -2 }), field: 'concurrency', message: 'concurrency must be a positive integer' },
  { rule: 'max_concurrency required when max > min', family: 'general', body: general({ min_replicas: 1, max_replicas: 3 }), field: 'max_concurrency', message: 'max_concurrency is required when max_replicas (3) > min_replicas (1)' },
  { rule: 'concurrency required when max > min', family: 'orchestrated', body: aggregated({ min_replicas: 1, max_replicas: 3 }), field: 'concurrency', message: 'concurrency is required when max_replicas (3) > min_replicas (1)' },
  ...shared('cooldown_period upper bound', { cooldown_period: 3601 }, 'cooldown_period', 'between 0 and 3600 seconds'),
  ...shared('cooldown_period lower bound', { cooldown_period: -1 }, 'cooldown_period', 'between 0 and 3600 seconds'),

  // endpoint auth
  ...shared('an endpoint must be protected', (b) => without(b, 'endpoint_bearer_token'), 'endpoint_bearer_token', 'public endpoints are not supported: give endpoint_bearer_token (or endpoint_token_id), set private_endpoint: true (a client certificate is issued), or give client_certificate_id'),
  ...shared('private_endpoint false is no protection', (b) => ({ ...without(b, 'endpoint_bearer_token'), private_endpoint: false }), 'endpoint_bearer_token', 'every endpoint must be protected'),
  ...shared('token length', { endpoint_bearer_token: 'short' }, 'endpoint_bearer_token', 'must be 8 to 512 characters long'),
  ...shared('token length (long)', { endpoint_bearer_token: 'x'.repeat(513) }, 'endpoint_bearer_token', 'must be 8 to 512 characters long'),
  ...shared('token charset', { endpoint_bearer_token: 'has spaces in it' }, 'endpoint_bearer_token', 'RFC 6750 token68'),
  ...shared('a service-account key is no endpoint token', { endpoint_bearer_token: PLATFORM_KEY }, 'endpoint_bearer_token', 'is a service-account key, a platform credential'),
  ...shared('a service-account key in env', { env: { KEY: `--api-key=${PLATFORM_KEY}` } }, 'env.KEY', 'env.KEY holds a service-account key, a platform credential'),
  ...shared('a service-account key inside a longer env value', { env: { URL: `https://bot:${PLATFORM_KEY}@api.internal/` } }, 'env.URL', 'holds a service-account key'),
  // Credentials outside their own fields: every field is shown to all readers of the deployment.
  ...shared('a service-account key in any field', { annotations: { owner: `key ${PLATFORM_KEY}` } }, 'annotations.owner', 'annotations.owner holds a service-account key'),
  ...shared('a vault token in any field', { annotations: { 'x.io/t': VAULT_TOKEN } }, 'annotations.x.io/t', 'holds an endpoint bearer token'),
  ...shared('the own token in any field', { annotations: { note: TOKEN } }, 'annotations.note', 'give the token in endpoint_bearer_token only'),
  ...shared('a service-account key as a map key', { annotations: { [PLATFORM_KEY]: 'v' } }, 'annotations', 'holds a service-account key'),
  ...shared('a service-account key as the name, never quoted', { name: PLATFORM_KEY }, 'name', 'name holds a service-account key'),
  { rule: 'a service-account key in the command', family: 'general', body: general({ command: ['--api-key', PLATFORM_KEY] }), field: 'command.1', message: 'command.1 holds a service-account key' },
  { rule: 'a service-account key as the image', family: 'general', body: general({ image: PLATFORM_KEY }), field: 'image', message: 'image holds a service-account key' },
  { rule: 'a service-account key as registry_password', family: 'general', body: general({ registry_username: 'u', registry_password: PLATFORM_KEY }), field: 'registry_password', message: 'cannot be used as registry_password' },
  { rule: 'a service-account key as model_hub_token', family: 'orchestrated', body: aggregated({ model_hub_token: PLATFORM_KEY }), field: 'model_hub_token', message: 'cannot be used as model_hub_token' },
  { rule: 'a vault token in extra_args', family: 'orchestrated', body: aggregated({ extra_args: ['--token', VAULT_TOKEN] }), field: 'extra_args.1', message: 'holds an endpoint bearer token' },
  ...shared('certificate exists', { client_certificate_id: 99 }, 'client_certificate_id', 'client certificate 99 does not exist or is revoked'),
  ...shared('vault token exists', (b) => ({ ...without(b, 'endpoint_bearer_token'), endpoint_token_id: 99 }), 'endpoint_token_id', 'vault token 99 does not exist'),
  ...shared('a token by value or by id, not both', { endpoint_token_id: VAULT_TOKEN_ID }, 'endpoint_token_id', 'not both'),

  // env
  ...shared('env name', { env: { '1X': 'v' } }, 'env.1X', 'names use letters, digits and underscores and begin with a letter or underscore'),
  ...shared('env value type', { env: { X: 5 } }, 'env.X', 'env.X must be a string'),
  ...shared('env holds the own token', { env: { API_TOKEN: TOKEN } }, 'env.API_TOKEN', 'endpoint credentials must not be placed in environment variables'),
  ...shared('env holds a vault token', { env: { AUTH: `Bearer ${VAULT_TOKEN}` } }, 'env.AUTH', 'endpoint credentials must not be placed in environment variables'),
  ...shared('env holds a private key', { env: { TLS_KEY: PEM } }, 'env.TLS_KEY', 'endpoint credentials must not be placed in environment variables: it holds a PEM private key'),

  // Names a deployment may not set: the runtime's own, and — where the image runs infergate's simulated engine — those that load code.
  ...shared('a runtime variable in env', { env: { INFERGATE_MODEL_CACHE_DIR: '/' } }, 'env.INFERGATE_MODEL_CACHE_DIR', 'are set by the runtime in every replica'),
  ...shared('NODE_OPTIONS for the simulated engine', { env: { NODE_OPTIONS: '--require ./cfg/x.cjs' } }, 'env.NODE_OPTIONS', "infergate's own simulated engine"),
  ...shared('LD_PRELOAD for the simulated engine', { env: { LD_PRELOAD: '/cache/x.so' } }, 'env.LD_PRELOAD', 'makes the dynamic loader load code'),
  ...shared('LD_LIBRARY_PATH as a secret variable of the simulated engine', { secret_env: { LD_LIBRARY_PATH: '/x' } }, 'secret_env.LD_LIBRARY_PATH', 'load code'),
  ...shared('OPENSSL_CONF for the simulated engine', { env: { OPENSSL_CONF: '/x.cnf' } }, 'env.OPENSSL_CONF', 'load code'),
  { rule: 'NODE_OPTIONS on a preset image the runtime simulates', family: 'general', body: { ...without(general(), 'image', 'tag'), preset: 'vllm', env: { NODE_OPTIONS: '--inspect' } }, field: 'env.NODE_OPTIONS', message: 'load code' },
  // secret_env: env's name rule and credential screen, string or null values, never both plain and secret
  ...shared('wrong type: secret_env', { secret_env: ['A=1'] }, 'secret_env', 'secret_env must be an object mapping names to string values (set or replace) or null (remove), got an array'),
  ...shared('secret_env name', { secret_env: { '1X': 'v' } }, 'secret_env.1X', 'names use letters, digits and underscores and begin with a letter or underscore'),
  ...shared('secret_env value type', { secret_env: { X: 5 } }, 'secret_env.X', 'secret_env.X must be a string (set or replace the variable) or null (remove it), got a number'),
  ...shared('secret_env holds a service-account key', { secret_env: { KEY: `--api-key=${PLATFORM_KEY}` } }, 'secret_env.KEY', 'secret_env.KEY holds a service-account key, a platform credential'),
  ...shared('secret_env holds the own token', { secret_env: { API_TOKEN: TOKEN } }, 'secret_env.API_TOKEN', 'endpoint credentials must not be placed in environment variables'),
  ...shared('secret_env holds a vault token', { secret_env: { AUTH: `Bearer ${VAULT_TOKEN}` } }, 'secret_env.AUTH', "it holds an endpoint bearer token from the vault"),
  ...shared('secret_env holds a private key', { secret_env: { TLS_KEY: PEM } }, 'secret_env.TLS_KEY', 'it holds a PEM private key'),
  ...shared('a service-account key as a secret_env name', { secret_env: { [PLATFORM_KEY]: 'v' } }, 'secret_env', 'secret_env holds a service-account key'),
  ...shared('a name both plain and secret', { env: { SHARED: '1' }, secret_env: { SHARED: '2' } }, 'secret_env.SHARED', 'SHARED is both a plain variable (env.SHARED) and a secret one'),
  ...shared('an always-secret name both in env and secret_env', { env: { REGISTRY_API_KEY: 'a-key' }, secret_env: { REGISTRY_API_KEY: 'b-key' } }, 'secret_env.REGISTRY_API_KEY', 'give it once, in secret_env'),

  // annotations, protocol, lists, names
  ...shared('annotation key', { annotations: { 'bad key': 'v' } }, 'annotations.bad key', 'annotation key "bad key" is invalid'),
  ...shared('annotation value', { annotations: { team: 3 } }, 'annotations.team', 'annotations.team must be a string'),
  ...shared('protocol values', { protocol: 'tcp' }, 'protocol', 'protocol must be "http" or "grpc"'),
  ...shared('routing_policy values', { routing_policy: 'round_robin' }, 'routing_policy', 'routing_policy must be "affinity" or "prefix_aware"'),
  ...shared('prefix_aware needs HTTP', { routing_policy: 'prefix_aware', protocol: 'grpc' }, 'routing_policy', 'a protocol "grpc" deployment uses "affinity"'),
  { rule: 'prefix_aware needs aggregated Workers', family: 'orchestrated', body: disaggregated({ routing_policy: 'prefix_aware' }), field: 'routing_policy', message: 'chooses among aggregated Workers' },
  { rule: 'command is an array of strings', family: 'general', body: general({ command: ['serve', 8000] }), field: 'command', message: 'command must be an array of strings' },
  { rule: 'extra_args is an array of strings', family: 'orchestrated', body: aggregated({ extra_args: '--foo' }), field: 'extra_args', message: 'extra_args must be an array of strings' },
  { rule: 'served_model_name not empty', family: 'orchestrated', body: aggregated({ served_model_name: ' ' }), field: 'served_model_name', message: 'served_model_name must not be empty' },

  // general inference container settings
  { rule: 'container_port required', family: 'general', body: without(general(), 'container_port'), field: 'container_port', message: 'container_port is required' },
  { rule: 'container_port range', family: 'general', body: general({ container_port: 65536 }), field: 'container_port', message: 'container_port must be between 1 and 65535' },
  { rule: 'health_check_path', family: 'general', body: general({ health_check_path: 'health' }), field: 'health_check_path', message: "health_check_path must start with '/'" },
  { rule: 'image required', family: 'general', body: general({ image: '' }), field: 'image', message: 'image is required' },
  { rule: 'image whitespace', family: 'general', body: general({ image: 'my image' }), field: 'image', message: 'image must not contain whitespace' },
  { rule: 'image without tag', family: 'general', body: general({ image: 'vllm/vllm-openai:v0.6.0' }), field: 'image', message: 'put the tag in `tag`' },
  { rule: 'image without digest', family: 'general', body: general({ image: 'vllm/vllm-openai@sha256:abcd' }), field: 'image', message: 'without a tag or digest' },
  { rule: 'tag form', family: 'general', body: general({ tag: '-latest' }), field: 'tag', message: 'tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}' },
  { rule: 'metrics_path needed with metrics_port', family: 'general', body: general({ metrics_port: 9100 }), field: 'metrics_path', message: 'set metrics_port and metrics_path together' },
  { rule: 'metrics_port needed with metrics_path', family: 'general', body: general({ metrics_path: '/metrics' }), field: 'metrics_port', message: 'set metrics_port and metrics_path together' },
  { rule: 'metrics_port range', family: 'general', body: general({ metrics_port: 0, metrics_path: '/metrics' }), field: 'metrics_port', message: 'metrics_port must be between 1 and 65535' },
  { rule: 'metrics_path absolute', family: 'general', body: general({ metrics_port: 9100, metrics_path: 'metrics' }), field: 'metrics_path', message: "metrics_path must start with '/'" },
  { rule: 'registry_password needed with username', family: 'general', body: general({ registry_username: '$oauthtoken' }), field: 'registry_password', message: 'registry_password is required with registry_username' },
  { rule: 'registry_username needed with password', family: 'general', body: general({ registry_password: 'secret-pw' }), field: 'registry_username', message: 'registry_username is required with registry_password' },
  { rule: 'config_file filename without /', family: 'general', body: general({ config_file: { filename: 'a/b.yaml', mount_path: '/etc/app', content: '' } }), field: 'config_file.filename', message: "plain file name: no '/'" },
  { rule: 'config_file filename not ..', family: 'general', body: general({ config_file: { filename: '..', mount_path: '/etc/app', content: '' } }), field: 'config_file.filename', message: 'not . or ..' },
  { rule: 'config_file filename required', family: 'general', body: general({ config_file: { filename: '', mount_path: '/etc/app', content: '' } }), field: 'config_file.filename', message: 'config_file.filename is required' },
  { rule: 'config_file mount_path absolute', family: 'general', body: general({ config_file: { filename: 'a.yaml', mount_path: 'etc/app', content: '' } }), field: 'config_file.mount_path', message: 'absolute directory path' },
  { rule: 'config_file mount_path no ..', family: 'general', body: general({ config_file: { filename: 'a.yaml', mount_path: '/etc/../root', content: '' } }), field: 'config_file.mount_path', message: "must not contain '..' segments" },
  { rule: 'config_file content string', family: 'general', body: general({ config_file: { filename: 'a.yaml', mount_path: '/etc/app', content: 42 } }), field: 'config_file.content', message: 'config_file.content must be a string' },
  { rule: 'config_file content required', family: 'general', body: general({ config_file: { filename: 'a.yaml', mount_path: '/etc/app' } }), field: 'config_file.content', message: 'config_file.content is required' },
  { rule: 'container_capabilities names only the dropped five', family: 'general', body: general({ container_capabilities: ['SETUID', 'SYS_ADMIN'] }), field: 'container_capabilities', message: 'container_capabilities may name only SETUID, SETGID, MKNOD, FSETID, SETFCAP (the capabilities containers lose by default), not "SYS_ADMIN"' },
  { rule: 'container_capabilities never NET_RAW', family: 'general', body: general({ container_capabilities: ['NET_RAW'] }), field: 'container_capabilities', message: 'not "NET_RAW"' },
  { rule: 'container_capabilities names each once', family: 'general', body: general({ container_capabilities: ['MKNOD', 'MKNOD'] }), field: 'container_capabilities', message: 'container_capabilities names MKNOD twice' },
  { rule: 'container_capabilities is an array of strings', family: 'general', body: general({ container_capabilities: 'SETUID' }), field: 'container_capabilities', message: 'container_capabilities must be an array of strings' },
  { rule: 'container_capabilities is a general inference field', family: 'orchestrated', body: aggregated({ container_capabilities: ['SETUID'] }), field: 'container_capabilities', message: 'container_capabilities is not accepted in orchestrated inference deployments' },
  { rule: 'config_file unknown field', family: 'general', body: general({ config_file: { filename: 'a.yaml', mount_path: '/etc/app', content: '', mode: 600 } }), field: 'config_file.mode', message: 'unknown field "config_file.mode"' },
  // Traffic between revisions and the rollout mode.
  ...shared('traffic is a list', { traffic: { revision: 1, percent: 100 } }, 'traffic', 'traffic must be a list of entries like'),
  ...shared('traffic sums to 100', { traffic: [{ latest: true, percent: 60 }] }, 'traffic', 'must sum to 100, got 60'),
  ...shared('traffic names revision or latest', { traffic: [{ percent: 100 }] }, 'traffic[0]', 'exactly one of "revision"'),
  ...shared('traffic tags unique', { traffic: [{ revision: 1, percent: 50, tag: 'x' }, { latest: true, percent: 50, tag: 'x' }] }, 'traffic', 'tag "x" is used twice'),
  ...shared('traffic entry keys', { traffic: [{ latest: true, percent: 100, weight: 1 }] }, 'traffic[0].weight', 'unknown field "weight" in traffic[0]'),
  ...shared('a create names revision 1 or latest', { traffic: [{ revision: 2, percent: 100 }] }, 'traffic[0].revision', 'has no revision 2'),
  ...shared('a tag host is no other name', { traffic: [{ latest: true, percent: 100, tag: 'taken' }], name: 'name' }, 'traffic[0].tag', 'the host of the deployment named "taken-name"'),
  ...shared('rollout_mode values', { rollout_mode: 'canary' }, 'rollout_mode', 'rollout_mode must be "automatic"'),
  // The autoscaling signal.
  ...shared('autoscaling_metric values', { autoscaling_metric: 'gpu' }, 'autoscaling_metric', 'autoscaling_metric must be one of concurrency, queue_depth, kv_cache, ttft, not "gpu"'),
  ...shared('autoscaling_target required', { autoscaling_metric: 'kv_cache' }, 'autoscaling_target', 'autoscaling_target is required with autoscaling_metric kv_cache'),
  ...shared('autoscaling_target range', { autoscaling_metric: 'queue_depth', autoscaling_target: 0.05 }, 'autoscaling_target', 'of queue_depth must be a number from 0.1 to 10000'),
  ...shared('autoscaling_target whole for ttft', { autoscaling_metric: 'ttft', autoscaling_target: 10.5 }, 'autoscaling_target', 'of ttft must be a whole number'),
  ...shared('autoscaling_target a number', { autoscaling_metric: 'ttft', autoscaling_target: '500' }, 'autoscaling_target', 'autoscaling_target must be a number, got a string'),
  { rule: 'autoscaling_target refused with concurrency (general)', family: 'general', body: general({ autoscaling_target: 3 }), field: 'autoscaling_target', message: 'the target is max_concurrency' },
  { rule: 'autoscaling_target refused with concurrency (orchestrated)', family: 'orchestrated', body: aggregated({ autoscaling_target: 3 }), field: 'autoscaling_target', message: 'the target is concurrency' },
  { rule: 'scale to zero needs concurrency or queue_depth', family: 'general', body: general({ min_replicas: 0, autoscaling_metric: 'ttft', autoscaling_target: 500 }), field: 'min_replicas', message: 'ttft is read from running replicas' },
  { rule: 'disaggregated pools do not scale on a signal', family: 'orchestrated', body: disaggregated({ autoscaling_metric: 'queue_depth', autoscaling_target: 2 }), field: 'autoscaling_metric', message: 'fixed sizes' },
  { rule: 'disaggregated pools take no target', family: 'orchestrated', body: disaggregated({ autoscaling_target: 2 }), field: 'autoscaling_target', message: 'fixed sizes' },
];

function problemsOf(result: Validation<unknown>): FieldProblem[] {
  return result.ok ? [] : result.problems;
}

function ok<T>(result: Validation<T>): T {
  if (!result.ok) throw new Error(`expected a valid request, got ${JSON.stringify(result.problems, null, 1)}`);
  return result.value;
}

describe('validateCreate: one case per rule', () => {
  it.each(CASES.map((c) => [c.rule, c] as const))('%s', (_rule, c) => {
    const problems = problemsOf(validateCreate(c.family, c.body, ctx));
    expect(problems, JSON.stringify(problems)).toHaveLength(c.count ?? 1);
    expect(problems).toContainEqual({ field: c.field, message: expect.stringContaining(c.message), code: c.code ?? 'invalid_field' });
  });

  it('never echoes a credential found in env or secret_env', () => {
    for (const field of ['env', 'secret_env']) {
      for (const value of [TOKEN, VAULT_TOKEN, PEM]) {
        const problems = problemsOf(validateCreate('general', general({ [field]: { X: value } }), ctx));
        expect(problems).toHaveLength(1);
        expect(problems[0]?.message).not.toContain(value.slice(0, 12));
      }
    }
  });

  it('checks env and secret_env names with the one rule: the same verdict and words for every name', () => {
    for (const name of ['1X', 'A-B', 'A B', 'É', '', '_OK', 'OK_2']) {
      const plain = problemsOf(validateCreate('general', general({ env: { [name]: 'v' } }), ctx));
      const secret = problemsOf(validateCreate('general', general({ secret_env: { [name]: 'v' } }), ctx));
      expect(secret.map((p) => ({ ...p, field: p.field.replace(/^secret_env\./, 'env.') })), name).toEqual(plain);
    }
  });

  it('never quotes a platform key, wherever it is put', () => {
    for (const body of [
      general({ name: PLATFORM_KEY }),
      general({ image: PLATFORM_KEY }),
      general({ preset: PLATFORM_KEY }),
      general({ env: { [PLATFORM_KEY]: 'v' } }),
      general({ annotations: { [PLATFORM_KEY]: 'v' } }),
      general({ endpoint_bearer_token: PLATFORM_KEY, env: { K: PLATFORM_KEY } }),
      general({ secret_env: { [PLATFORM_KEY]: 'v' } }),
      general({ secret_env: { K: PLATFORM_KEY } }),
    ]) {
      const problems = problemsOf(validateCreate('general', body, ctx));
      expect(problems.length, JSON.stringify(body)).toBeGreaterThan(0);
      expect(JSON.stringify(problems)).not.toContain(PLATFORM_KEY);
    }
  });
});

describe('validateCreate: images that run themselves', () => {
  it('accepts an unknown image with no command where the runtime runs images as containers (the image\'s entrypoint)', () => {
    const body = general({ image: 'my/own-engine', command: [] });
    expect(problemsOf(validateCreate('general', body, { ...ctx, imagesRunThemselves: true }))).toEqual([]);
    expect(problemsOf(validateCreate('general', body, ctx)).map((p) => p.field)).toEqual(['command']);
  });
});

describe('validateCreate: valid requests and defaults', () => {
  it("lets an image that runs its own command set code-loading variables: they act on that command alone, in its sandbox", () => {
    const draft = ok(validateCreate('general', general({ image: 'me/own-server', command: ['/srv/serve'], env: { LD_PRELOAD: '/x.so', NODE_OPTIONS: '--max-old-space-size=64' } }), ctx));
    expect(draft.spec.env).toEqual({ LD_PRELOAD: '/x.so', NODE_OPTIONS: '--max-old-space-size=64' });
    // The runtime's own names stay refused there too.
    expect(problemsOf(validateCreate('general', general({ image: 'me/own-server', command: ['/srv/serve'], env: { INFERGATE_REPLICA_ID: 'x' } }), ctx)).map((p) => p.field)).toEqual([
      'env.INFERGATE_REPLICA_ID',
    ]);
  });

  it.each<[string, Family, Body]>([
    ['general base', 'general', general()],
    ['general scale-to-zero', 'general', general({ min_replicas: 0, max_replicas: 2, max_concurrency: 4 })],
    ['general at zero until its first request', 'general', general({ min_replicas: 0, max_replicas: 2, max_concurrency: 4, initial_replicas: 0 })],
    ['image on a registry with a port, with a host command', 'general', general({ image: 'registry.local:5000/team/engine', command: ['llama-server'] })],
    ['private endpoint alone', 'general', { ...without(general(), 'endpoint_bearer_token'), private_endpoint: true }],
    ['existing certificate alone', 'orchestrated', { ...without(aggregated(), 'endpoint_bearer_token'), client_certificate_id: CERT }],
    ['a vault token as the endpoint token', 'general', general({ endpoint_bearer_token: VAULT_TOKEN })],
    ['token68 with padding', 'general', general({ endpoint_bearer_token: 'abc.DEF~ghi+jk/l==' })],
    ['metrics, registry, config file, env, annotations', 'general', general({
      metrics_port: 9100,
      metrics_path: '/metrics',
      registry_username: '$oauthtoken',
      registry_password: 'registry-key',
      env: { REGISTRY_API_KEY: 'registry-key', _UNDER: '1' },
      config_file: { filename: 'app.yaml', mount_path: '/etc/app', content: 'a: 1\n' },
      annotations: { 'example.com/team': 'ml', owner: 'me' },
    })],
    ['orchestrated aggregated base', 'orchestrated', aggregated()],
    ['orchestrated autoscaled', 'orchestrated', aggregated({ min_replicas: 1, max_replicas: 4, concurrency: 8, cooldown_period: 0 })],
    ['orchestrated with optional settings', 'orchestrated', aggregated({ served_model_name: 'llama', model_hub_token: 'hf_abc', protocol: 'grpc', extra_args: ['--x'], enable_model_caching: true })],
    ['the spec example (disaggregated)', 'orchestrated', disaggregated()],
    ['both pools on the same profile', 'orchestrated', disaggregated(pools(POOL_2, POOL_2))],
    ['null means the default', 'general', general({ tag: null, protocol: null, max_concurrency: null })],
  ])('%s', (_name, family, body) => {
    ok(validateCreate(family, body, ctx));
  });

  it('fills the defaults of a general deployment', () => {
    const d = ok(validateCreate('general', without(general(), 'tag'), ctx));
    expect(d.spec).toMatchObject({
      family: 'general',
      preset: null,
      tag: 'latest',
      protocol: 'http',
      health_check_path: '/',
      enable_logging: true,
      enable_model_caching: false,
      session_affinity: false,
      routing_policy: 'affinity',
      command: [],
      env: {},
      annotations: {},
      metrics_port: null,
      metrics_path: null,
      config_file: null,
      registry_username: null,
      container_capabilities: [],
      secrets: {},
    });
    expect(d.scaling).toEqual({ min_replicas: 1, max_replicas: 1, target_concurrency: null, cooldown_period: 300, pools: null });
    expect(d.auth).toEqual({ token_value: TOKEN, token_id: null, client_certificate_id: null, private_endpoint: false });
    expect(d.plainSecrets).toEqual({});
  });

  it('binds a vault token by id (endpoint_token_id) instead of by value', () => {
    const d = ok(validateCreate('general', { ...without(general(), 'endpoint_bearer_token'), endpoint_token_id: VAULT_TOKEN_ID }, ctx));
    expect(d.auth).toEqual({ token_value: null, token_id: VAULT_TOKEN_ID, client_certificate_id: null, private_endpoint: false });
  });

  it('fills the defaults of an orchestrated deployment (aggregated when serving_mode is omitted)', () => {
    const d = ok(validateCreate('orchestrated', aggregated({ min_replicas: 2 }), ctx));
    expect(d.spec).toMatchObject({ serving_mode: 'aggregated', hardware_instance_id: 1, worker_pools: null, protocol: 'http', routing_policy: 'affinity', enable_logging: true, extra_args: [] });
    expect(d.scaling).toEqual({ min_replicas: 2, max_replicas: 2, target_concurrency: null, cooldown_period: 300, pools: null });
  });

  it('passes secrets by value for the caller to seal, never inside the spec', () => {
    const g = ok(validateCreate('general', general({ registry_username: 'u', registry_password: 'pw-123' }), ctx));
    expect(g.plainSecrets).toEqual({ registry_password: 'pw-123' });
    expect(g.spec.secrets).toEqual({});
    const o = ok(validateCreate('orchestrated', aggregated({ model_hub_token: 'hf_x' }), ctx));
    expect(o.plainSecrets).toEqual({ model_hub_token: 'hf_x' });
  });

  it('takes secret variables by value for the caller to seal; names that are always secret move out of env', () => {
    const d = ok(validateCreate('general', general({ env: { REGISTRY_API_KEY: 'registry-key', MODE: 'fast' }, secret_env: { HF_TOKEN: 'hf_abc', UNSET: null } }), ctx));
    expect(d.spec.env).toEqual({ MODE: 'fast' });
    expect(d.spec.secrets).toEqual({});
    // null on create only means "not set".
    expect(d.plainSecrets).toEqual({ env: { HF_TOKEN: 'hf_abc', REGISTRY_API_KEY: 'registry-key' } });
    const o = ok(validateCreate('orchestrated', aggregated({ secret_env: { API_KEY: 'k-1' } }), ctx));
    expect(o.plainSecrets).toEqual({ env: { API_KEY: 'k-1' } });
    expect(ok(validateCreate('general', general({ secret_env: null }), ctx)).plainSecrets).toEqual({});
  });

  it('returns every problem, unknown fields first, then in the order of the field list', () => {
    // Body order differs from the field list on purpose; 'Bad_' breaks two name rules.
    const body = { cooldown_period: 9999, foo: true, ...general({ name: 'Bad_', container_port: 0 }) };
    const problems = problemsOf(validateCreate('general', body, ctx));
    expect(problems.map((p) => p.field)).toEqual(['foo', 'name', 'name', 'container_port', 'cooldown_period']);
    expect(problems[1]?.message).toContain('only lowercase letters, digits and hyphens');
    expect(problems[2]?.message).toContain('must end with a letter or digit');
  });
});

/** A stored deployment made from a valid draft, as the service would store it. */
function recordOf(draft: DeploymentDraft, id = 1, extra: Partial<DeploymentRecord> = {}): DeploymentRecord {
  const now = '2024-01-01T00:00:00.000Z';
  return {
    id,
    family: draft.family,
    name: draft.name,
    cluster_id: draft.cluster_id,
    spec: draft.spec,
    scaling: draft.scaling,
    auth: { token_id: 5, client_certificate_id: draft.auth.client_certificate_id, private_endpoint: draft.auth.private_endpoint },
    revision: 1,
    revisions: [{ revision: 1, created_at: now, reason: 'create', source_revision: null, status: 'pending', spec: draft.spec }],
    paused: false,
    status: 'pending',
    created_at: now,
    updated_at: now,
    ...extra,
  };
}

const created = (family: Family, body: Body): DeploymentRecord => recordOf(ok(validateCreate(family, body, ctx)));

describe('the spec example: disaggregated create', () => {
  it('is valid, keeps pool hardware in the spec and pool sizes in scaling, and round-trips through toRequest', () => {
    const body = disaggregated();
    const draft = ok(validateCreate('orchestrated', body, ctx));
    expect(draft.spec).toMatchObject({
      serving_mode: 'disaggregated',
      hardware_instance_id: null,
      worker_pools: { prefill: { hardware_instance_id: 1 }, decode: { hardware_instance_id: 2 } },
      enable_logging: true,
    });
    expect(draft.scaling.pools).toEqual({ prefill: 1, decode: 2 });
    const request = toRequest(recordOf(draft));
    expect(request.worker_pools).toEqual(body.worker_pools);
    expect(request).not.toHaveProperty('min_replicas');
    expect(request).not.toHaveProperty('hardware_instance_id');
    expect(request).not.toHaveProperty('endpoint_bearer_token');
  });

  it('fails naming min_replicas when the same request has it at the top level', () => {
    const problems = problemsOf(validateCreate('orchestrated', disaggregated({ min_replicas: 1 }), ctx));
    expect(problems.map((p) => p.field)).toEqual(['min_replicas']);
  });

  it('toRequest of any stored deployment validates again to the same draft', () => {
    for (const [family, body] of [
      ['general', general({ env: { A: '1' }, metrics_port: 9100, metrics_path: '/m', config_file: { filename: 'f', mount_path: '/c', content: 'x' } })],
      ['orchestrated', aggregated({ min_replicas: 1, max_replicas: 3, concurrency: 2 })],
      ['orchestrated', disaggregated()],
    ] as [Family, Body][]) {
      const record = created(family, body);
      const again = ok(validatePatch(record, {}, ctx));
      expect(again.draft.spec).toEqual(record.spec);
      expect(again.draft.scaling).toEqual(record.scaling);
      expect([again.specChanged, again.scalingChanged, again.authChanged]).toEqual([false, false, false]);
    }
  });
});

describe('validatePatch', () => {
  const web = () => created('general', general({ min_replicas: 1, max_replicas: 2, max_concurrency: 4 }));

  it('initial_replicas is kept in scaling when given (absent: the default, not stored), scales in place, and null clears it', () => {
    const d = ok(validateCreate('general', general({ min_replicas: 0, max_replicas: 2, max_concurrency: 4, initial_replicas: 0 }), ctx));
    expect(d.scaling).toMatchObject({ min_replicas: 0, initial_replicas: 0 });
    expect(ok(validateCreate('general', general({ min_replicas: 0, max_replicas: 2, max_concurrency: 4 }), ctx)).scaling).not.toHaveProperty('initial_replicas');
    const record = created('general', general({ min_replicas: 0, max_replicas: 2, max_concurrency: 4, initial_replicas: 0 }));
    expect(toRequest(record)).toMatchObject({ initial_replicas: 0 });
    expect(ok(validatePatch(record, { max_replicas: 3 }, ctx)).draft.scaling).toMatchObject({ initial_replicas: 0, max_replicas: 3 });
    const cleared = ok(validatePatch(record, { initial_replicas: null }, ctx));
    expect(cleared).toMatchObject({ specChanged: false, scalingChanged: true });
    expect(cleared.draft.scaling).not.toHaveProperty('initial_replicas');
    expect(classifyPatch({ initial_replicas: 1 }, record.revision).effect).toBe('scale');
  });

  it('a min/max change scales in place: scalingChanged, not specChanged', () => {
    const r = ok(validatePatch(web(), { min_replicas: 2, max_replicas: 3 }, ctx));
    expect(r).toMatchObject({ specChanged: false, scalingChanged: true, authChanged: false });
    expect(r.draft.scaling).toMatchObject({ min_replicas: 2, max_replicas: 3, target_concurrency: 4 });
  });

  it('an image change is a spec change', () => {
    const r = ok(validatePatch(web(), { image: 'vllm/vllm-openai' }, ctx));
    expect(r).toMatchObject({ specChanged: true, scalingChanged: false });
    expect(r.draft.spec).toMatchObject({ image: 'vllm/vllm-openai', tag: 'openai' });
  });

  it('a secret given is a spec change; null clears it', () => {
    const record = web();
    const given = ok(validatePatch(record, { registry_username: 'u', registry_password: 'pw-1' }, ctx));
    expect(given.specChanged).toBe(true);
    expect(given.draft.plainSecrets).toEqual({ registry_password: 'pw-1' });
    const withSecret = { ...record, spec: { ...record.spec, registry_username: 'u', secrets: { registry_password: 'v1.sealed' } } } as DeploymentRecord;
    expect(ok(validatePatch(withSecret, { tag: 'v2' }, ctx)).draft.plainSecrets).toEqual({}); // absent: keep, no pairing error
    const cleared = ok(validatePatch(withSecret, { registry_username: null, registry_password: null }, ctx));
    expect(cleared.draft.plainSecrets).toEqual({ registry_password: null });
    expect(cleared.specChanged).toBe(true);
    expect(problemsOf(validatePatch(withSecret, { registry_username: null }, ctx)).map((p) => p.field)).toEqual(['registry_username']);
  });

  it('null clears an optional field back to its default', () => {
    const record = created('general', general({ metrics_port: 9100, metrics_path: '/m', command: ['--x'] }));
    const r = ok(validatePatch(record, { metrics_port: null, metrics_path: null, command: null }, ctx));
    expect(r.draft.spec).toMatchObject({ metrics_port: null, metrics_path: null, command: [] });
    expect(r.specChanged).toBe(true);
  });

  it('routing_policy is a spec change; a record from before the field existed means affinity', () => {
    const record = web();
    expect(ok(validatePatch(record, { routing_policy: 'prefix_aware' }, ctx))).toMatchObject({ specChanged: true, draft: { spec: { routing_policy: 'prefix_aware' } } });
    const { routing_policy: _gone, ...older } = record.spec as DeploymentRecord['spec'] & { routing_policy?: string };
    const old = { ...record, spec: older } as DeploymentRecord;
    expect(ok(validatePatch(old, { min_replicas: 2 }, ctx)).specChanged).toBe(false);
    expect(ok(validatePatch(old, { routing_policy: 'affinity' }, ctx)).specChanged).toBe(false);
  });

  it('container_capabilities is a spec change, kept in one order; a record from before the field existed keeps none', () => {
    const record = web();
    expect(ok(validatePatch(record, { container_capabilities: ['SETGID', 'SETUID'] }, ctx))).toMatchObject({ specChanged: true, draft: { spec: { container_capabilities: ['SETUID', 'SETGID'] } } });
    const { container_capabilities: _gone, ...older } = record.spec as DeploymentRecord['spec'] & { container_capabilities?: string[] };
    const old = { ...record, spec: older } as DeploymentRecord;
    expect(ok(validatePatch(old, { min_replicas: 2 }, ctx)).specChanged).toBe(false);
    expect(ok(validatePatch(old, { container_capabilities: [] }, ctx)).specChanged).toBe(false);
    expect(ok(validatePatch(old, { container_capabilities: ['MKNOD'] }, ctx)).specChanged).toBe(true);
  });

  describe('secret_env', () => {
    /** A stored deployment with a secret variable API_KEY and a plain one MODE. */
    const withSecret = (family: Family = 'general'): DeploymentRecord => {
      const record = created(family, family === 'general' ? general({ env: { MODE: 'fast' } }) : aggregated({ env: { MODE: 'fast' } }));
      const spec = { ...record.spec, secrets: { env: { API_KEY: 'v1.sealed-api-key' } } } as DeploymentRecord['spec'];
      return { ...record, spec, revisions: [{ ...record.revisions[0]!, spec }] };
    };

    it.each<Family>(['general', 'orchestrated'])('%s: a body without it keeps every secret: no change, nothing to seal', (family) => {
      const r = ok(validatePatch(withSecret(family), { min_replicas: 1, env: { MODE: 'slow' } }, ctx));
      expect(r.draft.plainSecrets).toEqual({});
      expect(r.draft.spec.env).toEqual({ MODE: 'slow' });
      expect(ok(validatePatch(withSecret(family), { min_replicas: 1 }, ctx)).specChanged).toBe(false);
    });

    it('setting, replacing or removing one is a spec change; removing one not stored is none', () => {
      const add = ok(validatePatch(withSecret(), { secret_env: { HF_TOKEN: 'hf_x' } }, ctx));
      expect(add).toMatchObject({ specChanged: true, draft: { plainSecrets: { env: { HF_TOKEN: 'hf_x' } } } });
      expect(ok(validatePatch(withSecret(), { secret_env: { API_KEY: 'rotated' } }, ctx)).specChanged).toBe(true);
      const removed = ok(validatePatch(withSecret(), { secret_env: { API_KEY: null } }, ctx));
      expect(removed).toMatchObject({ specChanged: true, draft: { plainSecrets: { env: { API_KEY: null } } } });
      expect(ok(validatePatch(withSecret(), { secret_env: { NEVER_SET: null } }, ctx)).specChanged).toBe(false);
      expect(ok(validatePatch(withSecret(), { secret_env: {} }, ctx)).specChanged).toBe(false);
    });

    it('an always-secret name in env is a secret change, and never a plain variable', () => {
      const r = ok(validatePatch(withSecret(), { env: { MODE: 'fast', REGISTRY_API_KEY: 'registry-key' } }, ctx));
      expect(r.specChanged).toBe(true);
      expect(r.draft.spec.env).toEqual({ MODE: 'fast' });
      expect(r.draft.plainSecrets).toEqual({ env: { REGISTRY_API_KEY: 'registry-key' } });
    });

    it('refuses a stored secret given in env, saying how to change it or make it plain', () => {
      const problems = problemsOf(validatePatch(withSecret(), { env: { MODE: 'fast', API_KEY: 'now-plain' } }, ctx));
      expect(problems).toEqual([{ field: 'env.API_KEY', code: 'invalid_field', message: expect.stringContaining('API_KEY is a secret variable of this deployment') }]);
      expect(problems[0]!.message).toContain('"secret_env": {"API_KEY": null}');
      expect(JSON.stringify(problems)).not.toContain('now-plain');
      // ...which, done in the same request, makes it a plain variable.
      const plain = ok(validatePatch(withSecret(), { env: { API_KEY: 'now-plain' }, secret_env: { API_KEY: null } }, ctx));
      expect(plain.draft.spec.env).toEqual({ API_KEY: 'now-plain' });
      expect(plain.draft.plainSecrets).toEqual({ env: { API_KEY: null } });
    });

    it('refuses making a stored plain variable secret while env still holds it', () => {
      expect(problemsOf(validatePatch(withSecret(), { secret_env: { MODE: 'hidden' } }, ctx)).map((p) => p.field)).toEqual(['secret_env.MODE']);
      expect(ok(validatePatch(withSecret(), { env: {}, secret_env: { MODE: 'hidden' } }, ctx)).draft).toMatchObject({ spec: { env: {} }, plainSecrets: { env: { MODE: 'hidden' } } });
    });

    it('a clone keeps the source secrets (the caller copies them) and merges its own over them', () => {
      expect(ok(validateClone(withSecret(), { name: 'copy' }, ctx)).plainSecrets).toEqual({});
      const d = ok(validateClone(withSecret(), { name: 'copy', secret_env: { API_KEY: null, OTHER: 'o-1' } }, ctx));
      expect(d.plainSecrets).toEqual({ env: { API_KEY: null, OTHER: 'o-1' } });
      expect(problemsOf(validateClone(withSecret(), { name: 'copy', env: { API_KEY: 'x' } }, ctx)).map((p) => p.field)).toEqual(['env.API_KEY']);
    });
  });

  it("refuses to make a host command with LD_PRELOAD a simulated image, whether the variable is plain or secret", () => {
    const stored = created('general', general({ image: 'me/own-server', command: ['/srv/serve'], env: { LD_PRELOAD: '/x.so' } }));
    // As the service stores it: the secret sealed into the spec.
    const host = { ...stored, spec: { ...stored.spec, secrets: { env: { NODE_OPTIONS: 'sealed:v1' } } } };
    const problems = problemsOf(validatePatch(host, { image: 'infergate/reference-engine', command: [] }, ctx));
    expect(problems.map((p) => p.field).sort()).toEqual(['env.LD_PRELOAD', 'secret_env.NODE_OPTIONS']);
    // Removing them in the same request is the way through.
    expect(ok(validatePatch(host, { image: 'infergate/reference-engine', command: [], env: {}, secret_env: { NODE_OPTIONS: null } }, ctx)).specChanged).toBe(true);
  });

  it('env with the same entries in another order is no change', () => {
    const record = created('general', general({ env: { A: '1', B: '2' } }));
    expect(ok(validatePatch(record, { env: { B: '2', A: '1' } }, ctx)).specChanged).toBe(false);
  });

  it.each([
    ['name', { name: 'renamed' }],
    ['cluster_id', { cluster_id: 2 }],
  ])('refuses to change %s and suggests clone', (field, body) => {
    const problems = problemsOf(validatePatch(web(), body, ctx));
    expect(problems).toEqual([{ field, code: 'invalid_field', message: expect.stringContaining(`${field} cannot be changed`) }]);
    expect(problems[0]?.message).toContain('/deployments/general/1/clone');
  });

  it('refuses to change serving_mode', () => {
    const problems = problemsOf(validatePatch(created('orchestrated', disaggregated()), { serving_mode: 'aggregated' }, ctx));
    expect(problems.map((p) => [p.field, p.message.includes('cannot be changed')])).toEqual([['serving_mode', true]]);
  });

  it('accepts the unchanged name', () => {
    expect(ok(validatePatch(web(), { name: 'web', max_concurrency: 8 }, ctx)).scalingChanged).toBe(true);
  });

  it('merges worker_pools per pool: only decode.replicas', () => {
    const r = ok(validatePatch(created('orchestrated', disaggregated()), { worker_pools: { decode: { replicas: 3 } } }, ctx));
    expect(r.draft.scaling.pools).toEqual({ prefill: 1, decode: 3 });
    expect(r).toMatchObject({ specChanged: false, scalingChanged: true });
    const hw = ok(validatePatch(created('orchestrated', disaggregated()), { worker_pools: { prefill: { hardware_instance_id: 3 } } }, ctx));
    expect(hw).toMatchObject({ specChanged: true, scalingChanged: false });
  });

  it('applies the create rules to the merged request', () => {
    const disagg = created('orchestrated', disaggregated());
    expect(problemsOf(validatePatch(disagg, { min_replicas: 2 }, ctx)).map((p) => p.field)).toEqual(['min_replicas']);
    expect(problemsOf(validatePatch(disagg, { worker_pools: { prefill: { replicas: 0 } } }, ctx)).map((p) => p.field)).toEqual([
      'worker_pools.prefill.replicas',
    ]);
    expect(problemsOf(validatePatch(web(), { max_replicas: 5, max_concurrency: null }, ctx)).map((p) => p.field)).toEqual(['max_concurrency']);
    expect(problemsOf(validatePatch(web(), { image: 'x:1' }, ctx)).map((p) => p.field)).toEqual(['image']);
  });

  it('keeps the existing token binding when the body gives no credential', () => {
    const r = ok(validatePatch(web(), { max_replicas: 4 }, ctx));
    expect(r.draft.auth).toEqual({ token_value: null, token_id: 5, client_certificate_id: null, private_endpoint: false });
    expect(r.authChanged).toBe(false);
  });

  it('changes auth without a revision, and refuses to leave the endpoint unprotected', () => {
    const r = ok(validatePatch(web(), { endpoint_bearer_token: 'a-new-token-value' }, ctx));
    expect(r).toMatchObject({ specChanged: false, scalingChanged: false, authChanged: true });
    expect(r.draft.auth).toMatchObject({ token_value: 'a-new-token-value', token_id: null });
    const cert = ok(validatePatch(web(), { endpoint_bearer_token: null, client_certificate_id: CERT }, ctx));
    expect(cert.draft.auth).toMatchObject({ token_id: null, client_certificate_id: CERT });
    const bare = problemsOf(validatePatch(web(), { endpoint_bearer_token: null }, ctx));
    expect(bare.map((p) => p.field)).toEqual(['endpoint_bearer_token']);
    expect(problemsOf(validatePatch(web(), { client_certificate_id: 99 }, ctx)).map((p) => p.field)).toEqual(['client_certificate_id']);
  });

  it('refuses a service-account key as the new token and never echoes it', () => {
    const problems = problemsOf(validatePatch(web(), { endpoint_bearer_token: PLATFORM_KEY }, ctx));
    expect(problems.map((p) => p.field)).toEqual(['endpoint_bearer_token']);
    expect(JSON.stringify(problems)).not.toContain(PLATFORM_KEY);
  });

  describe('private_endpoint: false', () => {
    const withCert = (token: boolean) => {
      const record = web();
      return { ...record, auth: { token_id: token ? 5 : null, client_certificate_id: CERT, private_endpoint: true } } as DeploymentRecord;
    };

    it('unbinds the certificate when a token still protects the endpoint', () => {
      const r = ok(validatePatch(withCert(true), { private_endpoint: false }, ctx));
      expect(r.draft.auth).toEqual({ token_value: null, token_id: 5, client_certificate_id: null, private_endpoint: false });
      expect(r.authChanged).toBe(true);
      expect(ok(validatePatch(withCert(true), { private_endpoint: null }, ctx)).draft.auth.client_certificate_id).toBeNull();
    });

    it('keeps a certificate named in the same body', () => {
      const r = ok(validatePatch(withCert(false), { private_endpoint: false, client_certificate_id: CERT }, ctx));
      expect(r.draft.auth).toMatchObject({ client_certificate_id: CERT, private_endpoint: false });
    });

    it('is refused, naming private_endpoint and why, when nothing else protects the endpoint', () => {
      const problems = problemsOf(validatePatch(withCert(false), { private_endpoint: false }, ctx));
      expect(problems).toEqual([{ field: 'private_endpoint', code: 'invalid_field', message: expect.stringContaining('bind a bearer token first') }]);
      expect(problems[0]?.message).toContain(`client certificate ${CERT}`);
      // ...and accepted with a token in the same request.
      expect(ok(validatePatch(withCert(false), { private_endpoint: false, endpoint_bearer_token: TOKEN }, ctx)).draft.auth).toMatchObject({
        token_value: TOKEN,
        client_certificate_id: null,
      });
    });

    it('a clone with private_endpoint false does not carry the source certificate', () => {
      const d = ok(validateClone(withCert(true), { name: 'open-copy', private_endpoint: false }, ctx));
      expect(d.auth).toMatchObject({ token_id: 5, client_certificate_id: null, private_endpoint: false });
      expect(problemsOf(validateClone(withCert(false), { name: 'bare-copy', private_endpoint: false }, ctx)).map((p) => p.field)).toEqual([
        'private_endpoint',
      ]);
    });
  });

  it('refuses a body that is not an object', () => {
    expect(problemsOf(validatePatch(web(), 'x', ctx))).toEqual([{ field: '', code: 'invalid_request', message: expect.any(String) }]);
  });
});

describe('validateClone', () => {
  const source = () => created('orchestrated', disaggregated());

  it('copies worker_pools, spec and auth binding under the new name', () => {
    const src = source();
    const d = ok(validateClone(src, { name: 'llama-copy', worker_pools: toRequest(src).worker_pools }, ctx));
    expect(d.name).toBe('llama-copy');
    expect(d.spec).toEqual(src.spec);
    expect(d.scaling).toEqual(src.scaling);
    expect(d.auth).toEqual({ token_value: null, token_id: 5, client_certificate_id: null, private_endpoint: false });
    expect(d.plainSecrets).toEqual({}); // the caller copies the sealed secrets
    const bare = ok(validateClone(src, { name: 'llama-copy2' }, ctx));
    expect(toRequest(recordOf(bare)).worker_pools).toEqual(disaggregated().worker_pools);
  });

  it('applies overrides through the same rules', () => {
    const d = ok(validateClone(source(), { name: 'bigger', worker_pools: { decode: { replicas: 4 } } }, ctx));
    expect(d.scaling.pools).toEqual({ prefill: 1, decode: 4 });
    expect(problemsOf(validateClone(source(), { name: 'x', min_replicas: 1 }, ctx)).map((p) => p.field)).toEqual(['min_replicas']);
  });

  it('switching serving_mode drops the source fields of the other mode', () => {
    const d = ok(validateClone(source(), { name: 'agg-copy', serving_mode: 'aggregated', hardware_instance_id: 2 }, ctx));
    expect(d.spec).toMatchObject({ serving_mode: 'aggregated', worker_pools: null, hardware_instance_id: 2 });
    expect(d.scaling.pools).toBeNull();
  });

  it('needs a name of its own', () => {
    expect(problemsOf(validateClone(source(), {}, ctx)).map((p) => [p.field, p.message])).toEqual([['name', expect.stringContaining('name is required')]]);
    const taken = problemsOf(validateClone(source(), { name: 'taken-name' }, ctx));
    expect(taken.map((p) => [p.field, p.code])).toEqual([['name', 'conflict']]);
  });

  it('a general clone onto another cluster', () => {
    const d = ok(validateClone(created('general', general()), { name: 'web-2', cluster_id: 2 }, ctx));
    expect(d.cluster_id).toBe(2);
  });
});

describe('presets', () => {
  const bare = (o: Body = {}): Body => ({
    ...without(general({ preset: 'vllm', command: ['vllm', 'serve', 'org/m'] }), 'image', 'tag', 'container_port', 'protocol', 'health_check_path'),
    ...o,
  });

  it('a preset fills image, tag, port, protocol and health path, never the command', () => {
    const d = ok(validateCreate('general', without(bare(), 'command'), ctx));
    expect(d.spec).toMatchObject({ preset: 'vllm', image: 'vllm/vllm-openai', tag: 'latest', container_port: 8000, protocol: 'http', health_check_path: '/health', command: [] });
  });

  it("the user's own fields win over the preset's", () => {
    const d = ok(validateCreate('general', bare({ tag: 'v0.9.1', container_port: 9000 }), ctx));
    expect(d.spec).toMatchObject({ image: 'vllm/vllm-openai', tag: 'v0.9.1', container_port: 9000 });
  });

  it('the vendor container preset: port 8000, /v1/health/ready and the literal $oauthtoken, which then needs the password', () => {
    const problems = problemsOf(validateCreate('general', bare({ preset: 'nim', command: [] }), ctx));
    expect(problems.map((p) => p.field)).toEqual(['registry_password']);
    const d = ok(validateCreate('general', bare({ preset: 'nim', command: [], registry_password: 'key-1', env: { REGISTRY_API_KEY: 'key-1' } }), ctx));
    expect(d.spec).toMatchObject({ image: 'nvcr.io/nim/meta/llama-3.1-8b-instruct', container_port: 8000, protocol: 'http', health_check_path: '/v1/health/ready', registry_username: '$oauthtoken', command: [] });
  });

  it('Triton is gRPC; a PATCH naming another preset switches its fields', () => {
    const d = ok(validateCreate('general', bare({ preset: 'triton' }), ctx));
    expect(d.spec).toMatchObject({ protocol: 'grpc', container_port: 8001 });
    const record = created('general', bare({ preset: 'triton' }));
    const r = ok(validatePatch(record, { preset: 'ollama', command: [] }, ctx));
    expect(r.specChanged).toBe(true);
    expect(r.draft.spec).toMatchObject({ preset: 'ollama', image: 'ollama/ollama', container_port: 11434, protocol: 'http', health_check_path: '/' });
  });
});

describe('endpoint limits (max_request_body_bytes, first_response_timeout_seconds, rate_limit)', () => {
  it('are optional, default to none, and are kept for both families', () => {
    expect(ok(validateCreate('general', general(), ctx)).limits).toEqual({ max_request_body_bytes: null, first_response_timeout_seconds: null, rate_limit: null, flow_control: null });
    const draft = ok(
      validateCreate(
        'orchestrated',
        aggregated({ max_request_body_bytes: 65_536, first_response_timeout_seconds: 120, rate_limit: { requests_per_second: 0.5, tokens_per_minute: 1000 } }),
        ctx,
      ),
    );
    expect(draft.limits).toEqual({
      max_request_body_bytes: 65_536,
      first_response_timeout_seconds: 120,
      rate_limit: { requests_per_second: 0.5, tokens_per_minute: 1000 },
      flow_control: null,
    });
  });

  it.each([1, 30, 86_400, null])('first_response_timeout_seconds %j is accepted (null: the gateway default)', (seconds) => {
    expect(ok(validateCreate('general', general({ first_response_timeout_seconds: seconds }), ctx)).limits.first_response_timeout_seconds).toBe(seconds);
    expect(ok(validateCreate('orchestrated', aggregated({ first_response_timeout_seconds: seconds }), ctx)).limits.first_response_timeout_seconds).toBe(seconds);
  });

  it('an empty rate_limit is no limit at all', () => {
    expect(ok(validateCreate('general', general({ rate_limit: {} }), ctx)).limits.rate_limit).toBeNull();
    expect(ok(validateCreate('general', general({ rate_limit: { tokens_per_minute: null } }), ctx)).limits.rate_limit).toBeNull();
  });

  it.each([
    [{ max_request_body_bytes: 10 }, 'max_request_body_bytes', /between 1024/],
    [{ max_request_body_bytes: 65 * 1024 ** 3 }, 'max_request_body_bytes', /64 GiB/],
    [{ max_request_body_bytes: '1MiB' }, 'max_request_body_bytes', /must be an integer/],
    [{ first_response_timeout_seconds: 0 }, 'first_response_timeout_seconds', /whole number of seconds from 1 to 86400 \(a day\), got 0; omit it \(or null\)/],
    [{ first_response_timeout_seconds: -5 }, 'first_response_timeout_seconds', /from 1 to 86400.*got -5/],
    [{ first_response_timeout_seconds: 86_401 }, 'first_response_timeout_seconds', /from 1 to 86400.*got 86401/],
    [{ first_response_timeout_seconds: 1.5 }, 'first_response_timeout_seconds', /must be an integer/],
    [{ first_response_timeout_seconds: '30' }, 'first_response_timeout_seconds', /must be an integer/],
    [{ first_response_timeout_seconds: '30s' }, 'first_response_timeout_seconds', /must be an integer/],
    [{ rate_limit: { requests_per_second: 0 } }, 'rate_limit.requests_per_second', /above 0/],
    [{ rate_limit: { requests_per_second: '5' } }, 'rate_limit.requests_per_second', /got a string/],
    [{ rate_limit: { tokens_per_minute: 1.5 } }, 'rate_limit.tokens_per_minute', /whole number/],
    [{ rate_limit: { tokens_per_minute: -1 } }, 'rate_limit.tokens_per_minute', /whole number from 1/],
    [{ rate_limit: { burst: 3 } }, 'rate_limit.burst', /unknown field "rate_limit.burst"/],
    [{ rate_limit: 5 }, 'rate_limit', /must be an object \{requests_per_second, tokens_per_minute\}/],
  ])('%j is refused naming %s', (extra, field, message) => {
    const problems = problemsOf(validateCreate('general', general(extra), ctx));
    expect(problems.map((p) => p.field)).toEqual([field]);
    expect(problems[0]!.message).toMatch(message);
  });

  it('a PATCH of the limits changes them in place: limitsChanged, no revision', () => {
    const record = { ...created('general', general()), limits: { max_request_body_bytes: null, rate_limit: { requests_per_second: 5, tokens_per_minute: null } } };
    const r = ok(validatePatch(record, { rate_limit: { tokens_per_minute: 600 } }, ctx));
    expect(r).toMatchObject({ specChanged: false, scalingChanged: false, limitsChanged: true });
    // rate_limit is replaced as a whole: the request rate not given is no longer limited
    expect(r.draft.limits.rate_limit).toEqual({ requests_per_second: null, tokens_per_minute: 600 });
    expect(ok(validatePatch(record, {}, ctx)).limitsChanged).toBe(false);
    expect(ok(validatePatch(record, { rate_limit: null }, ctx)).draft.limits.rate_limit).toBeNull();
  });

  it('a PATCH of first_response_timeout_seconds changes it in place: limitsChanged, no revision; null clears it', () => {
    const record = { ...created('general', general()), limits: { max_request_body_bytes: 4096, first_response_timeout_seconds: null, rate_limit: null } };
    const r = ok(validatePatch(record, { first_response_timeout_seconds: 300 }, ctx));
    expect(r).toMatchObject({ specChanged: false, scalingChanged: false, authChanged: false, limitsChanged: true });
    expect(r.draft.limits).toEqual({ max_request_body_bytes: 4096, first_response_timeout_seconds: 300, rate_limit: null, flow_control: null });
    const set = { ...record, limits: r.draft.limits };
    expect(ok(validatePatch(set, { first_response_timeout_seconds: 300 }, ctx)).limitsChanged).toBe(false);
    expect(ok(validatePatch(set, { rate_limit: { requests_per_second: 2 } }, ctx)).draft.limits.first_response_timeout_seconds).toBe(300);
    const cleared = ok(validatePatch(set, { first_response_timeout_seconds: null }, ctx));
    expect(cleared).toMatchObject({ specChanged: false, limitsChanged: true });
    expect(cleared.draft.limits.first_response_timeout_seconds).toBeNull();
    expect(problemsOf(validatePatch(set, { first_response_timeout_seconds: 0 }, ctx)).map((p) => p.field)).toEqual(['first_response_timeout_seconds']);
  });

  it('the patch forecast puts first_response_timeout_seconds with the limits that take effect at once', () => {
    const plan = classifyPatch({ first_response_timeout_seconds: 60 }, 4);
    expect(plan).toMatchObject({ effect: 'at_once', atOnceFields: ['first_response_timeout_seconds'], revisionFields: [] });
  });

  it('a record written before limits existed reads as no limits, and a clone carries them over', () => {
    const old = created('general', general());
    delete (old as Partial<DeploymentRecord>).limits;
    expect(ok(validatePatch(old, {}, ctx)).limitsChanged).toBe(false);
    const source = { ...created('general', general()), limits: { max_request_body_bytes: 4096, first_response_timeout_seconds: 90, rate_limit: null } };
    expect(ok(validateClone(source, { name: 'copy' }, ctx)).limits).toEqual({ max_request_body_bytes: 4096, first_response_timeout_seconds: 90, rate_limit: null, flow_control: null });
    expect(ok(validateClone(source, { name: 'copy', first_response_timeout_seconds: null }, ctx)).limits.first_response_timeout_seconds).toBeNull();
  });

  it('a record whose limits predate first_response_timeout_seconds reads it as null, and is unchanged by a PATCH that does not set it', () => {
    const old = { ...created('general', general()), limits: { max_request_body_bytes: 4096, rate_limit: null } };
    expect(limitsOf(old)).toEqual({ max_request_body_bytes: 4096, first_response_timeout_seconds: null, rate_limit: null, flow_control: null });
    expect(limitsOf({})).toEqual({ max_request_body_bytes: null, first_response_timeout_seconds: null, rate_limit: null, flow_control: null });
    expect(ok(validatePatch(old, {}, ctx)).limitsChanged).toBe(false);
    expect(ok(validatePatch(old, { min_replicas: 1 }, ctx)).limitsChanged).toBe(false);
    expect(ok(validatePatch(old, { first_response_timeout_seconds: 45 }, ctx))).toMatchObject({ specChanged: false, limitsChanged: true });
    expect(ok(validateClone(old, { name: 'copy' }, ctx)).limits.first_response_timeout_seconds).toBeNull();
  });
});

describe('endpoint limit flow_control', () => {
  const DEFAULTS = { max_queue: 1000, max_wait_seconds: { critical: 60, standard: 30, sheddable: 5 } };
  /** A stored deployment with the limits its create request gave. */
  const stored = (family: Family, body: Body): DeploymentRecord => {
    const draft = ok(validateCreate(family, body, ctx));
    return recordOf(draft, 1, { limits: draft.limits });
  };

  it('absent or null is the defaults, stored as null, for both families', () => {
    expect(ok(validateCreate('general', general(), ctx)).limits.flow_control).toBeNull();
    expect(ok(validateCreate('general', general({ flow_control: null }), ctx)).limits.flow_control).toBeNull();
    expect(ok(validateCreate('orchestrated', aggregated({ flow_control: null }), ctx)).limits.flow_control).toBeNull();
  });

  it.each([
    [{}, DEFAULTS],
    [{ max_queue: 0 }, { ...DEFAULTS, max_queue: 0 }],
    [{ max_queue: 100_000, max_wait_seconds: { sheddable: 0 } }, { max_queue: 100_000, max_wait_seconds: { critical: 60, standard: 30, sheddable: 0 } }],
    [{ max_wait_seconds: { critical: 3600, standard: null } }, { max_queue: 1000, max_wait_seconds: { critical: 3600, standard: 30, sheddable: 5 } }],
    [{ max_queue: null, max_wait_seconds: null }, DEFAULTS],
  ])('%j is stored complete, keys left out taking the defaults', (given, stored) => {
    expect(ok(validateCreate('general', general({ flow_control: given }), ctx)).limits.flow_control).toEqual(stored);
    expect(ok(validateCreate('orchestrated', aggregated({ flow_control: given }), ctx)).limits.flow_control).toEqual(stored);
  });

  it.each([
    [{ max_queue: -1 }, 'flow_control.max_queue', /^flow_control\.max_queue must be a whole number from 0 to 100000 .*got -1; omit it for the default, 1000$/],
    [{ max_queue: 100_001 }, 'flow_control.max_queue', /from 0 to 100000.*got 100001/],
    [{ max_queue: 2.5 }, 'flow_control.max_queue', /whole number.*got 2\.5/],
    [{ max_queue: '10' }, 'flow_control.max_queue', /got a string/],
    [{ max_wait_seconds: { sheddable: 3601 } }, 'flow_control.max_wait_seconds.sheddable', /^flow_control\.max_wait_seconds\.sheddable must be a whole number of seconds from 0 to 3600 .*got 3601; omit it for the default, 5$/],
    [{ max_wait_seconds: { critical: -5 } }, 'flow_control.max_wait_seconds.critical', /from 0 to 3600.*got -5/],
    [{ max_wait_seconds: { standard: true } }, 'flow_control.max_wait_seconds.standard', /got a boolean/],
    [{ max_wait_seconds: 30 }, 'flow_control.max_wait_seconds', /must be an object \{critical, standard, sheddable\} of seconds, got a number/],
    [{ max_wait_seconds: { urgent: 1 } }, 'flow_control.max_wait_seconds.urgent', /unknown field "flow_control\.max_wait_seconds\.urgent": the priority classes are critical, standard, sheddable/],
    [{ queue: 5 }, 'flow_control.queue', /unknown field "flow_control\.queue": flow_control has max_queue and max_wait_seconds/],
  ])('%j is refused naming %s', (given, field, message) => {
    for (const [family, body] of [['general', general({ flow_control: given })], ['orchestrated', aggregated({ flow_control: given })]] as const) {
      const problems = problemsOf(validateCreate(family, body, ctx));
      expect(problems.map((p) => p.field)).toEqual([field]);
      expect(problems[0]).toMatchObject({ code: 'invalid_field', message: expect.stringMatching(message) });
    }
  });

  it.each([5, 'defaults', [1]])('flow_control %j (not an object) is refused by its shape', (given) => {
    const problems = problemsOf(validateCreate('general', general({ flow_control: given }), ctx));
    expect(problems.map((p) => p.field)).toEqual(['flow_control']);
    expect(problems[0]!.message).toMatch(/^flow_control must be an object \{max_queue, max_wait_seconds: \{critical, standard, sheddable\}\}, or null for the defaults, got /);
  });

  it('a PATCH replaces the object (keys left out go back to the defaults), takes effect at once, and null clears it', () => {
    const record = stored('general', general({ flow_control: { max_queue: 50, max_wait_seconds: { critical: 120, sheddable: 1 } } }));
    expect(record.limits?.flow_control).toEqual({ max_queue: 50, max_wait_seconds: { critical: 120, standard: 30, sheddable: 1 } });
    const r = ok(validatePatch(record, { flow_control: { max_wait_seconds: { standard: 10 } } }, ctx));
    expect(r).toMatchObject({ specChanged: false, scalingChanged: false, authChanged: false, limitsChanged: true });
    expect(r.draft.limits.flow_control).toEqual({ max_queue: 1000, max_wait_seconds: { critical: 60, standard: 10, sheddable: 5 } });
    // Not named in the PATCH: kept as stored, and no change.
    const kept = ok(validatePatch(record, { cooldown_period: 60 }, ctx));
    expect(kept).toMatchObject({ limitsChanged: false });
    expect(kept.draft.limits.flow_control).toEqual(record.limits?.flow_control);
    expect(ok(validatePatch(record, { flow_control: structuredClone(record.limits?.flow_control) }, ctx)).limitsChanged).toBe(false);
    const cleared = ok(validatePatch(record, { flow_control: null }, ctx));
    expect(cleared).toMatchObject({ specChanged: false, limitsChanged: true });
    expect(cleared.draft.limits.flow_control).toBeNull();
    expect(problemsOf(validatePatch(record, { flow_control: { max_queue: -1 } }, ctx)).map((p) => p.field)).toEqual(['flow_control.max_queue']);
  });

  it('a clone carries it over unless overridden; toRequest gives it complete', () => {
    const source = stored('orchestrated', aggregated({ flow_control: { max_queue: 7 } }));
    expect(toRequest(source).flow_control).toEqual({ ...DEFAULTS, max_queue: 7 });
    expect(ok(validateClone(source, { name: 'copy' }, ctx)).limits.flow_control).toEqual({ ...DEFAULTS, max_queue: 7 });
    expect(ok(validateClone(source, { name: 'copy', flow_control: null }, ctx)).limits.flow_control).toBeNull();
    expect(toRequest(stored('general', general())).flow_control).toBeUndefined();
  });

  it('the patch forecast puts flow_control with the limits that take effect at once', () => {
    expect(classifyPatch({ flow_control: { max_queue: 1 } }, 2)).toMatchObject({ effect: 'at_once', atOnceFields: ['flow_control'], revisionFields: [] });
  });

  it('effectiveFlowControl compares what the gateway applies, and leaves a malformed value to the API', () => {
    expect(effectiveFlowControl(null)).toEqual(DEFAULTS);
    expect(effectiveFlowControl(undefined)).toEqual(DEFAULTS);
    expect(effectiveFlowControl({ max_wait_seconds: { sheddable: 2 } })).toEqual({ ...DEFAULTS, max_wait_seconds: { ...DEFAULTS.max_wait_seconds, sheddable: 2 } });
    expect(effectiveFlowControl({ max_queu: 5 })).toBeUndefined();
    expect(effectiveFlowControl({ max_wait_seconds: { urgent: 5 } })).toBeUndefined();
    expect(effectiveFlowControl({ max_wait_seconds: 5 })).toBeUndefined();
    expect(effectiveFlowControl(5)).toBeUndefined();
  });
});

describe('traffic, rollout_mode and the autoscaling signal', () => {
  const stored = (extra: Partial<DeploymentRecord> = {}): DeploymentRecord => {
    const d = created('general', general());
    const spec2 = { ...d.spec, env: { EDITION: 'two' } };
    return {
      ...d,
      spec: spec2,
      revision: 2,
      revisions: [...d.revisions, { revision: 2, created_at: d.created_at, reason: 'update', source_revision: null, status: 'pending', spec: spec2 }],
      ...extra,
    };
  };

  it('defaults to no list, automatic rollout and concurrency (no metric fields stored, so older records compare equal)', () => {
    const d = ok(validateCreate('general', general(), ctx));
    expect([d.traffic, d.rollout_mode]).toEqual([null, 'automatic']);
    expect(d.scaling).toEqual({ min_replicas: 1, max_replicas: 1, target_concurrency: null, cooldown_period: 300, pools: null });
    const q = ok(validateCreate('general', general({ max_replicas: 3, autoscaling_metric: 'queue_depth', autoscaling_target: 2 }), ctx));
    expect(q.scaling).toMatchObject({ target_concurrency: null, autoscaling_metric: 'queue_depth', autoscaling_target: 2 });
    expect(toRequest(recordOf(q))).toMatchObject({ autoscaling_metric: 'queue_depth', autoscaling_target: 2, rollout_mode: 'automatic' });
    expect(toRequest(recordOf(d))).not.toHaveProperty('autoscaling_metric');
  });

  it('a PATCH of traffic changes traffic only: no spec change, checked against the stored revisions', () => {
    const r = ok(validatePatch(stored(), { traffic: [{ revision: 1, percent: 90 }, { latest: true, percent: 10, tag: 'canary' }] }, ctx));
    expect([r.specChanged, r.scalingChanged, r.trafficChanged, r.rolloutModeChanged]).toEqual([false, false, true, false]);
    expect(r.draft.traffic).toEqual([{ revision: 1, latest: false, percent: 90, tag: null }, { revision: null, latest: true, percent: 10, tag: 'canary' }]);
    expect(problemsOf(validatePatch(stored(), { traffic: [{ revision: 3, percent: 100 }] }, ctx))).toEqual([
      { field: 'traffic[0].revision', code: 'invalid_field', message: 'web has no revision 3; its revisions are 1 to 2' },
    ]);
    // The stored list stands through unrelated edits, and rollout_mode alone is a change of its own.
    const split = stored({ traffic: r.draft.traffic });
    const other = ok(validatePatch(split, { cooldown_period: 60 }, ctx));
    expect([other.trafficChanged, other.draft.traffic]).toEqual([false, split.traffic]);
    expect(ok(validatePatch(split, { rollout_mode: 'manual' }, ctx)).rolloutModeChanged).toBe(true);
    expect(ok(validatePatch(split, { traffic: null }, ctx))).toMatchObject({ trafficChanged: true, draft: { traffic: null } });
  });

  it('a failed revision in the stored list does not stand in the way of an unrelated PATCH, only of one that names it', () => {
    const d = stored({ traffic: [{ revision: 1, latest: false, percent: 50, tag: null }, { revision: 2, latest: false, percent: 50, tag: null }] });
    const failed = { ...d, revisions: d.revisions.map((x) => (x.revision === 2 ? { ...x, status: 'failed' as const } : x)) };
    expect(problemsOf(validatePatch(failed, { cooldown_period: 60 }, ctx))).toEqual([]);
    expect(problemsOf(validatePatch(failed, { traffic: [{ revision: 2, percent: 100 }] }, ctx)).map((p) => p.field)).toEqual(['traffic[0].revision']);
  });

  it('with a spec change, latest and N+1 name the new revision', () => {
    const r = ok(validatePatch(stored(), { env: { EDITION: 'three' }, traffic: [{ revision: 2, percent: 90 }, { revision: 3, percent: 10 }] }, ctx));
    expect([r.specChanged, r.trafficChanged]).toEqual([true, true]);
  });

  it('manual mode: a spec change without traffic pins latest to the previous revision; with traffic, the list given stands', () => {
    const none = ok(validatePatch(stored({ rollout_mode: 'manual' }), { env: { EDITION: 'three' } }, ctx));
    expect(none.draft.traffic).toEqual([{ revision: 2, latest: false, percent: 100, tag: null }]);
    const canary = stored({ rollout_mode: 'manual', traffic: [{ revision: 1, latest: false, percent: 80, tag: null }, { revision: null, latest: true, percent: 20, tag: 'c' }] });
    expect(ok(validatePatch(canary, { env: { EDITION: 'three' } }, ctx)).draft.traffic).toEqual([
      { revision: 1, latest: false, percent: 80, tag: null },
      { revision: 2, latest: false, percent: 20, tag: 'c' },
    ]);
    const given = ok(validatePatch(canary, { env: { EDITION: 'three' }, traffic: [{ latest: true, percent: 100 }] }, ctx));
    expect(given.draft.traffic).toEqual([{ revision: null, latest: true, percent: 100, tag: null }]);
    // Switching to manual in the same PATCH as the spec change already starts it at 0 %.
    expect(ok(validatePatch(stored(), { rollout_mode: 'manual', env: { EDITION: 'three' } }, ctx)).draft.traffic).toEqual([{ revision: 2, latest: false, percent: 100, tag: null }]);
    // A newest revision that failed: the one serving keeps the share.
    const failedNewest = stored({ rollout_mode: 'manual', serving_revision: 1 });
    failedNewest.revisions[1] = { ...failedNewest.revisions[1]!, status: 'failed' };
    expect(ok(validatePatch(failedNewest, { env: { EDITION: 'three' } }, ctx)).draft.traffic).toEqual([{ revision: 1, latest: false, percent: 100, tag: null }]);
  });

  it('a metric change without a target drops the inherited one; scaling changes in place', () => {
    const q = stored({ scaling: { min_replicas: 1, max_replicas: 3, target_concurrency: null, cooldown_period: 300, pools: null, autoscaling_metric: 'queue_depth', autoscaling_target: 4 } });
    expect(problemsOf(validatePatch(q, { autoscaling_metric: 'ttft' }, ctx)).map((p) => p.field)).toEqual(['autoscaling_target']);
    const same = ok(validatePatch(q, { autoscaling_metric: 'queue_depth' }, ctx));
    expect(same.scalingChanged).toBe(false);
    const conc = ok(validatePatch(q, { autoscaling_metric: 'concurrency', max_concurrency: 2 }, ctx));
    expect([conc.scalingChanged, conc.specChanged, conc.draft.scaling]).toEqual([true, false, { min_replicas: 1, max_replicas: 3, target_concurrency: 2, cooldown_period: 300, pools: null }]);
  });

  it('tag hosts: never another deployment name, another deployment tag host, nor a new name taken by a tag', () => {
    const withOthers: ValidationContext = {
      ...ctx,
      otherDeployments: [{ name: 'b-c', traffic: [{ revision: 1, latest: false, percent: 100, tag: 'a' }] }],
    };
    expect(problemsOf(validateCreate('general', general({ name: 'c', traffic: [{ latest: true, percent: 100, tag: 'a-b' }] }), withOthers))).toEqual([
      { field: 'traffic[0].tag', code: 'invalid_field', message: expect.stringContaining('which a tag of deployment b-c already uses') },
    ]);
    expect(problemsOf(validateCreate('general', general({ name: 'a-b-c' }), withOthers))).toEqual([
      { field: 'name', code: 'conflict', message: expect.stringContaining("remove the tag from b-c's traffic first") },
    ]);
  });

  it('ranks traffic problems with the traffic field, after the fields before it', () => {
    const problems = problemsOf(validateCreate('general', general({ container_port: 0, traffic: [{ latest: true, percent: 'all' }] }), ctx));
    expect(problems.map((p) => p.field)).toEqual(['container_port', 'traffic[0].percent']);
  });

  it('clone copies rollout_mode and the signal, never traffic', () => {
    const src = stored({
      rollout_mode: 'manual',
      traffic: [{ revision: 1, latest: false, percent: 50, tag: null }, { revision: 2, latest: false, percent: 50, tag: 'half' }],
      scaling: { min_replicas: 1, max_replicas: 3, target_concurrency: null, cooldown_period: 300, pools: null, autoscaling_metric: 'kv_cache', autoscaling_target: 70 },
    });
    const c = ok(validateClone(src, { name: 'copy' }, ctx));
    expect([c.traffic, c.rollout_mode, c.scaling.autoscaling_metric, c.scaling.autoscaling_target]).toEqual([null, 'manual', 'kv_cache', 70]);
    // A clone may give its own list, naming its revision 1.
    expect(ok(validateClone(src, { name: 'copy', traffic: [{ revision: 1, percent: 100, tag: 'new' }] }, ctx)).traffic).toEqual([{ revision: 1, latest: false, percent: 100, tag: 'new' }]);
  });
});
