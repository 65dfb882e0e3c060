// Owns the reference engine's command line: every knob is a flag (a few fall back to the
// environment the replica runtime sets), validated into one EngineOptions. Precedence:
// flag > environment > default. A bad flag or value is an EngineOptionsError whose message
// names the flag; the CLI prints it as one line and exits 1.

import { parseArgs } from 'node:util';

export type Flavor = 'openai' | 'ollama' | 'nim';

export interface EngineOptions {
  flavor: Flavor;
  host: string;
  port: number;
  /** The served model name (openai, nim); ollama serves whatever is pulled. */
  model: string;
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
  /** A second listener serving only GET /metrics; null: /metrics on the main port only. */
  metricsPort: number | null;
  pullMs: number;
  shutdownGraceMs: number;
  logLevel: string;
}

/** A command line the engine cannot start with; the message names the flag to fix. */
export class EngineOptionsError extends Error {
  override name = 'EngineOptionsError';
}

interface OptionDoc {
  flag: string;
  env?: string;
  /** '' means "no default" (the option stays unset). */
  default: string;
  help: string;
}

/** Every flag, its env fallback and default — also the source of `infergate engine --help`. */
export const ENGINE_OPTIONS: OptionDoc[] = [
  { flag: 'flavor', default: 'openai', help: 'openai | ollama | nim (v2, gRPC, is not built yet)' },
  { flag: 'host', default: '0.0.0.0', help: 'listen address' },
  { flag: 'port', env: 'PORT', default: '8000', help: 'listen port (0: any free port)' },
  { flag: 'model', default: 'sim/model', help: 'served model name (openai, nim)' },
  { flag: 'startup-ms', default: '2000', help: 'simulated model load time on a cold start' },
  { flag: 'warm-load-ratio', default: '0.1', help: 'load (and ollama pull) time multiplier when the model cache is warm, 0..1' },
  { flag: 'ttft-ms', default: '50', help: 'time to first token once a sequence runs' },
  { flag: 'itl-ms', default: '10', help: 'inter-token latency with one running sequence' },
  { flag: 'itl-growth', default: '0.05', help: 'each further running sequence adds this fraction of itl-ms' },
  { flag: 'max-running', default: '8', help: 'concurrent sequences; more wait in a FIFO queue' },
  { flag: 'max-tokens-default', default: '16', help: 'completion length cap when a request gives no max_tokens' },
  { flag: 'replica-id', env: 'INFERGATE_REPLICA_ID', default: '', help: 'reported as system_fingerprint [default: sim-<pid>]' },
  { flag: 'cache-dir', env: 'INFERGATE_MODEL_CACHE_DIR', default: '', help: 'model cache directory shared by replicas [default: none]' },
  { flag: 'metrics-port', default: '', help: 'also serve GET /metrics on this port [default: main port only]' },
  { flag: 'pull-ms', default: '1500', help: 'simulated pull duration (ollama)' },
  { flag: 'shutdown-grace-ms', default: '5000', help: 'on SIGTERM/SIGINT, how long running sequences may finish' },
  { flag: 'log-level', default: 'info', help: 'pino log level' },
];

const FLAVORS: readonly string[] = ['openai', 'ollama', 'nim'];
const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** The model name becomes a cache directory name: keep it to characters that cannot escape it. */
export const MODEL_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,255}$/;

export function engineHelp(): string {
  const rows = ENGINE_OPTIONS.map((o) => {
    const env = o.env ? ` (env ${o.env})` : '';
    const def = o.default ? ` [default: ${o.default}]` : '';
    return `  --${o.flag.padEnd(20)} ${o.help}${def}${env}`;
  });
  return [
    'usage: infergate engine [options]',
    '',
    'The reference engine: a SIMULATED inference server (no GPU, no real model) for running,',
    'testing and benchmarking the platform. REGISTRY_API_KEY must be set for the nim flavor to load.',
    'Text is deterministic per prompt. Tokens are estimated: one word = one token; a prompt costs',
    'its words plus 4 per message.',
    '',
    ...rows,
  ].join('\n');
}

/** Parses `engine` arguments and the environment into validated EngineOptions. */
export function parseEngineOptions(argv: string[], env: NodeJS.ProcessEnv, pid = process.pid): EngineOptions {
  const options = Object.fromEntries(ENGINE_OPTIONS.map((o) => [o.flag, { type: 'string' as const }]));
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (err) {
    // parseArgs explains some mistakes over several lines; the CLI promises one.
    const message = (err as Error).message.replace(/\s*\n\s*/g, ' ');
    throw new EngineOptionsError(`${message} (see infergate engine --help)`);
  }
  const pick = (flag: string): string => {
    const doc = ENGINE_OPTIONS.find((o) => o.flag === flag);
    const fromFlag = values[flag];
    if (typeof fromFlag === 'string') return fromFlag;
    const fromEnv = doc?.env ? env[doc.env] : undefined;
    if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
    return doc?.default ?? '';
  };

  const flavor = pick('flavor');
  if (flavor === 'v2') {
    throw new EngineOptionsError('--flavor v2 (KServe v2 over gRPC) is not built yet; use openai, ollama or nim');
  }
  if (!FLAVORS.includes(flavor)) {
    throw new EngineOptionsError(`--flavor must be openai, ollama or nim, not "${flavor}"`);
  }
  const model = pick('model');
  if (!MODEL_NAME_RE.test(model)) {
    throw new EngineOptionsError(`--model must start with a letter or digit and use only letters, digits and ._:/@- , not "${model}"`);
  }
  const host = pick('host');
  if (host === '') throw new EngineOptionsError('--host must not be empty');
  const replicaId = pick('replica-id') || `sim-${pid}`;
  const logLevel = pick('log-level');
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new EngineOptionsError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, not "${logLevel}"`);
  }
  const metricsPortRaw = pick('metrics-port');
  const cacheDir = pick('cache-dir');

  return {
    flavor: flavor as Flavor,
    host,
    port: integer('port', pick('port'), 0, 65535),
    model,
    startupMs: integer('startup-ms', pick('startup-ms'), 0, 86_400_000),
    warmLoadRatio: decimal('warm-load-ratio', pick('warm-load-ratio'), 0, 1),
    ttftMs: decimal('ttft-ms', pick('ttft-ms'), 0, 3_600_000),
    itlMs: decimal('itl-ms', pick('itl-ms'), 0, 60_000),
    itlGrowth: decimal('itl-growth', pick('itl-growth'), 0, 100),
    maxRunning: integer('max-running', pick('max-running'), 1, 100_000),
    maxTokensDefault: integer('max-tokens-default', pick('max-tokens-default'), 1, 1_000_000),
    replicaId,
    cacheDir: cacheDir === '' ? null : cacheDir,
    metricsPort: metricsPortRaw === '' ? null : integer('metrics-port', metricsPortRaw, 0, 65535),
    pullMs: integer('pull-ms', pick('pull-ms'), 0, 86_400_000),
    shutdownGraceMs: integer('shutdown-grace-ms', pick('shutdown-grace-ms'), 0, 3_600_000),
    logLevel,
  };
}

function integer(flag: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw)) throw new EngineOptionsError(`--${flag} must be a whole number, not "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new EngineOptionsError(`--${flag} must be between ${min} and ${max}, not ${n}`);
  return n;
}

function decimal(flag: string, raw: string, min: number, max: number): number {
  const n = /^\d+(\.\d+)?$|^\.\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isFinite(n)) throw new EngineOptionsError(`--${flag} must be a non-negative number, not "${raw}"`);
  if (n < min || n > max) throw new EngineOptionsError(`--${flag} must be between ${min} and ${max}, not ${n}`);
  return n;
}
