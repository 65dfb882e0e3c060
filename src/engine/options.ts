// Owns the reference engine's command line: every knob is a flag (a few fall back to the
// environment the replica runtime sets), validated into one EngineOptions. Precedence:
// flag > environment > default. A bad flag or value is an EngineOptionsError whose message
// names the flag; the CLI prints it as one line and exits 1.

import { Flags, helpText, type FlagSpec, type Program } from '../flags/flags.js';

export type Flavor = 'openai' | 'ollama' | 'nim' | 'v2';

export interface EngineOptions {
  flavor: Flavor;
  host: string;
  port: number;
  /** The model loaded (its cache directory's name); answers name servedModel. Ollama serves whatever is pulled. */
  model: string;
  /**
   * The name the engine answers to and reports (openai, nim, v2): `--served-model-name`, else
   * the model. Requests may name either, as the orchestrated Frontend's clients may.
   */
  servedModel: string;
  /** Model load time on a cold start, and its multiplier when the model cache is warm. */
  startupMs: number;
  warmLoadRatio: number;
  ttftMs: number;
  /** Inter-token latency with one running sequence; each further one adds itlGrowth × itlMs. */
  itlMs: number;
  itlGrowth: number;
  maxRunning: number;
  maxTokensDefault: number;
  replicaId: string;
  cacheDir: string | null;
  /**
   * Whether the engine exports Prometheus metrics at all. False stands for servers that export
   * none (TGI without its exporter, Triton with metrics off, a custom server): GET /metrics
   * answers 404 and no --metrics-port listener opens, so whatever scrapes it finds nothing.
   */
  metrics: boolean;
  /** A second listener serving only GET /metrics; null: /metrics on the main port only (v2: none). */
  metricsPort: number | null;
  pullMs: number;
  shutdownGraceMs: number;
  /**
   * v2 only: open the gRPC port once the model is loaded (as Triton and vLLM do, so a TCP
   * readiness probe means ready), or at start (ServerReady and health then say loading).
   */
  listen: 'after-load' | 'at-start';
  /** A file holding the model-hub credential (orchestrated workers); never logged. */
  hubTokenFile: string | null;
  logLevel: string;
  /** KV transfer connector (openai flavor): see kv-connector.ts. */
  kv: KvOptions;
  /** Simulated automatic prefix caching and prefill cost (openai flavor): see prefix-cache.ts. */
  prefix: PrefixOptions;
}

export interface PrefixOptions {
  enabled: boolean;
  /** Tokens per cache block. */
  blockSize: number;
  /** KV cache capacity in tokens: the cache holds floor(capacity / blockSize) blocks. */
  capacityTokens: number;
  /** Prefill time per uncached prompt token, on one prefill lane (0: ttft-ms alone). */
  prefillMsPerToken: number;
}

/** A disaggregated worker's side of the KV transfer: prefill serves KV blocks, decode pulls them. */
export type KvRole = 'none' | 'prefill' | 'decode';

export interface KvOptions {
  role: KvRole;
  /** Prefill: TCP port of its KV block server (0: any free port). */
  port: number;
  /** Prefill: the host it advertises as remote_host. */
  host: string;
  bytesPerToken: number;
  blockTokens: number;
}

/** A command line the engine cannot start with; the message names the flag to fix. */
export class EngineOptionsError extends Error {
  override name = 'EngineOptionsError';
}

/** Every flag, its env fallback and default — also the source of `infergate engine --help`. */
export const ENGINE_OPTIONS: FlagSpec[] = [
  { flag: 'flavor', default: 'openai', help: 'openai | ollama | nim | v2 (KServe v2 / Triton gRPC, h2c on --port)' },
  { flag: 'host', default: '0.0.0.0', help: 'listen address' },
  { flag: 'port', env: 'PORT', default: '8000', help: 'listen port (0: any free port)' },
  { flag: 'model', default: 'sim/model', help: 'the model to load (openai, nim, v2)' },
  { flag: 'served-model-name', default: '', help: "the name responses and /v1/models give, as vLLM's flag; requests may name it or --model [default: --model]" },
  { flag: 'startup-ms', default: '2000', help: 'simulated model load time on a cold start' },
  { flag: 'warm-load-ratio', default: '0.1', help: 'load (and ollama pull) time multiplier when the model cache is warm, 0..1' },
  { flag: 'ttft-ms', default: '50', help: 'time to first token once a sequence runs' },
  { flag: 'itl-ms', default: '10', help: 'inter-token latency with one running sequence' },
  { flag: 'itl-growth', default: '0.05', help: 'each further running sequence adds this fraction of itl-ms' },
  { flag: 'max-running', default: '8', help: 'concurrent sequences; more wait in a FIFO queue' },
  { flag: 'max-tokens-default', default: '16', help: 'completion length cap when a request gives no max_tokens' },
  { flag: 'replica-id', env: 'INFERGATE_REPLICA_ID', default: '', help: 'reported as system_fingerprint [default: sim-<pid>]' },
  { flag: 'cache-dir', env: 'INFERGATE_MODEL_CACHE_DIR', default: '', help: 'model cache directory shared by replicas [default: none]' },
  { flag: 'metrics', default: 'true', help: 'true | false: export Prometheus metrics; false: GET /metrics answers 404 and no --metrics-port listener opens, as a server without metrics' },
  { flag: 'metrics-port', default: '', help: 'also serve GET /metrics on this port; v2 serves /metrics only here (its --port is gRPC only, no HTTP) [default: main port only; v2: no /metrics]' },
  { flag: 'pull-ms', default: '1500', help: 'simulated pull duration (ollama)' },
  { flag: 'shutdown-grace-ms', default: '5000', help: 'on SIGTERM/SIGINT, how long running sequences may finish' },
  { flag: 'listen', default: 'after-load', help: 'v2: open the gRPC port after-load (a TCP probe then means ready) or at-start' },
  { flag: 'hub-token-file', default: '', help: 'file with the model-hub credential (read at start, never logged) [default: none]' },
  { flag: 'log-level', default: 'info', help: 'pino log level' },
  { flag: 'kv-role', default: 'none', help: 'KV transfer connector role (openai flavor): none | prefill | decode' },
  { flag: 'kv-port', default: '0', help: 'prefill: TCP port of the KV block server (0: any free port)' },
  { flag: 'kv-host', default: '127.0.0.1', help: 'prefill: host advertised to decode workers as remote_host' },
  { flag: 'kv-bytes-per-token', default: '2048', help: 'simulated KV cache size per prompt token' },
  { flag: 'kv-block-tokens', default: '16', help: 'tokens per KV block' },
  { flag: 'enable-prefix-caching', default: 'false', help: 'true | false: simulated automatic prefix caching (openai flavor): cached prompt blocks skip prefill, usage reports prompt_tokens_details.cached_tokens' },
  { flag: 'block-size', default: '16', help: 'tokens per prefix cache block (full blocks only are cached)' },
  { flag: 'kv-capacity-tokens', default: '65536', help: 'simulated KV cache capacity in tokens; cached blocks beyond it are evicted least recently used first' },
  { flag: 'prefill-ms-per-token', default: '0', help: 'prefill time per uncached prompt token, on one prefill lane shared by running sequences (0: ttft-ms alone)' },
];

const ENGINE: Program = { name: 'engine', flags: ENGINE_OPTIONS, error: EngineOptionsError };
/** The model name becomes a cache directory name: keep it to characters that cannot escape it. */
export const MODEL_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,255}$/;

export function engineHelp(): string {
  return helpText(ENGINE, {
    width: 20,
    intro: [
      'The reference engine: a SIMULATED inference server (no GPU, no real model) for running,',
      'testing and benchmarking the platform. REGISTRY_API_KEY must be set for the nim flavor to load.',
      'Text is deterministic per prompt. Tokens are estimated: one word = one token; a prompt costs',
      'its words plus 4 per message.',
    ],
  });
}

/** Parses `engine` arguments and the environment into validated EngineOptions. */
export function parseEngineOptions(argv: string[], env: NodeJS.ProcessEnv, pid = process.pid): EngineOptions {
  const f = Flags.parse(ENGINE, argv, env);
  const pick = (flag: string): string => f.string(flag);

  const flavor = f.oneOf<Flavor>('flavor', ['openai', 'ollama', 'nim', 'v2']);
  const model = pick('model');
  if (!MODEL_NAME_RE.test(model)) {
    throw new EngineOptionsError(`--model must start with a letter or digit and use only letters, digits and ._:/@- , not "${model}"`);
  }
  const served = f.optional('served-model-name');
  // Not a path: any name a client can send, without control characters.
  if (served !== null && (served.length > 256 || /[\x00-\x1f\x7f]/.test(served))) {
    throw new EngineOptionsError('--served-model-name must be at most 256 characters, without control characters');
  }
  const host = f.required('host');
  const replicaId = pick('replica-id') || `sim-${pid}`;
  const logLevel = f.logLevel();
  const kvRole = f.oneOf<KvRole>('kv-role', ['none', 'prefill', 'decode']);
  if (kvRole !== 'none' && flavor !== 'openai') throw new EngineOptionsError(`--kv-role ${kvRole} needs --flavor openai, not "${flavor}"`);
  const kvHost = f.required('kv-host');

  return {
    flavor,
    host,
    port: f.port('port'),
    model,
    servedModel: served ?? model,
    startupMs: f.integer('startup-ms', 0, 86_400_000),
    warmLoadRatio: f.decimal('warm-load-ratio', 0, 1),
    ttftMs: f.decimal('ttft-ms', 0, 3_600_000),
    itlMs: f.decimal('itl-ms', 0, 60_000),
    itlGrowth: f.decimal('itl-growth', 0, 100),
    maxRunning: f.integer('max-running', 1, 100_000),
    maxTokensDefault: f.integer('max-tokens-default', 1, 1_000_000),
    replicaId,
    cacheDir: f.optional('cache-dir'),
    metrics: f.oneOf('metrics', ['true', 'false'] as const) === 'true',
    metricsPort: f.optional('metrics-port') === null ? null : f.port('metrics-port'),
    pullMs: f.integer('pull-ms', 0, 86_400_000),
    shutdownGraceMs: f.integer('shutdown-grace-ms', 0, 3_600_000),
    listen: f.oneOf('listen', ['after-load', 'at-start'] as const),
    hubTokenFile: f.optional('hub-token-file'),
    logLevel,
    kv: {
      role: kvRole,
      port: f.port('kv-port'),
      host: kvHost,
      bytesPerToken: f.integer('kv-bytes-per-token', 1, 16 << 20),
      blockTokens: f.integer('kv-block-tokens', 1, 1_000_000),
    },
    prefix: {
      enabled: f.oneOf('enable-prefix-caching', ['true', 'false'] as const) === 'true',
      blockSize: f.integer('block-size', 1, 4096),
      capacityTokens: f.integer('kv-capacity-tokens', 1, 1_000_000_000),
      prefillMsPerToken: f.decimal('prefill-ms-per-token', 0, 10_000),
    },
  };
}
