// Owns `infergate frontend`'s command line: flags (PORT from the environment as the platform
// sets it) validated into one FrontendOptions; a bad value is a FrontendOptionsError whose
// one-line message names the flag.

import { parseArgs } from 'node:util';

export type FrontendMode = 'aggregated' | 'disaggregated';

export interface FrontendOptions {
  host: string;
  port: number;
  /** What clients speak: chat completions over HTTP, or the v2 inference protocol over gRPC. */
  protocol: 'http' | 'grpc';
  mode: FrontendMode;
  /** The model-hub id the workers serve (e.g. org/model); requests are rewritten to it. */
  model: string;
  /** The name clients see in /v1/models; null: the model id. Clients may name either. */
  servedModelName: string | null;
  /** JSON file of worker addresses, rewritten by the platform as replicas come and go. */
  workersFile: string;
  /** How often the workers file is re-read. */
  pollMs: number;
  logLevel: string;
}

export class FrontendOptionsError extends Error {
  override name = 'FrontendOptionsError';
}

interface OptionDoc {
  flag: string;
  env?: string;
  default: string;
  help: string;
}

export const FRONTEND_OPTIONS: OptionDoc[] = [
  { flag: 'host', default: '0.0.0.0', help: 'listen address' },
  { flag: 'port', env: 'PORT', default: '8000', help: 'listen port (0: any free port)' },
  { flag: 'protocol', default: 'http', help: 'http (chat completions) | grpc (the v2 inference protocol on --port; chat completions inside, on loopback)' },
  { flag: 'mode', default: 'aggregated', help: 'aggregated (workers serve whole requests) | disaggregated (prefill then decode workers)' },
  { flag: 'model', default: '', help: 'model-hub id the workers serve, e.g. org/model (required)' },
  { flag: 'served-model-name', default: '', help: 'the name clients use and /v1/models shows [default: the model id]' },
  { flag: 'workers-file', default: '', help: 'JSON {"workers": ["host:port", …]} (aggregated) or {"prefill": […], "decode": […]} (disaggregated); re-read on change (required)' },
  { flag: 'poll-ms', default: '300', help: 'how often the workers file is re-read' },
  { flag: 'log-level', default: 'info', help: 'pino log level' },
];

const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function frontendHelp(): string {
  const rows = FRONTEND_OPTIONS.map((o) => {
    const env = o.env ? ` (env ${o.env})` : '';
    const def = o.default ? ` [default: ${o.default}]` : '';
    return `  --${o.flag.padEnd(20)} ${o.help}${def}${env}`;
  });
  return [
    'usage: infergate frontend [options]',
    '',
    'The orchestrated runtime Frontend: an OpenAI-compatible HTTP server that spreads requests over',
    'workers (aggregated) or sends each to a prefill worker, then with its kv_transfer_params to a',
    'decode worker (disaggregated, the contract of vLLM disaggregated workers).',
    '',
    ...rows,
  ].join('\n');
}

export function parseFrontendOptions(argv: string[], env: NodeJS.ProcessEnv): FrontendOptions {
  const options = Object.fromEntries(FRONTEND_OPTIONS.map((o) => [o.flag, { type: 'string' as const }]));
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new FrontendOptionsError(`${(err as Error).message.replace(/\s*\n\s*/g, ' ')} (see infergate frontend --help)`);
  }
  const pick = (flag: string): string => {
    const doc = FRONTEND_OPTIONS.find((o) => o.flag === flag);
    const fromFlag = values[flag];
    if (typeof fromFlag === 'string') return fromFlag;
    const fromEnv = doc?.env ? env[doc.env] : undefined;
    if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
    return doc?.default ?? '';
  };
  const protocol = pick('protocol');
  if (protocol !== 'http' && protocol !== 'grpc') throw new FrontendOptionsError(`--protocol must be http or grpc, not "${protocol}"`);
  const mode = pick('mode');
  if (mode !== 'aggregated' && mode !== 'disaggregated') throw new FrontendOptionsError(`--mode must be aggregated or disaggregated, not "${mode}"`);
  const model = pick('model');
  if (model === '') throw new FrontendOptionsError('--model is required (the model-hub id the workers serve, e.g. org/model)');
  const workersFile = pick('workers-file');
  if (workersFile === '') throw new FrontendOptionsError('--workers-file is required');
  const host = pick('host');
  if (host === '') throw new FrontendOptionsError('--host must not be empty');
  const logLevel = pick('log-level');
  if (!LOG_LEVELS.includes(logLevel)) throw new FrontendOptionsError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, not "${logLevel}"`);
  const alias = pick('served-model-name');
  return {
    host,
    port: integer('port', pick('port'), 0, 65535),
    protocol,
    mode,
    model,
    servedModelName: alias === '' ? null : alias,
    workersFile,
    pollMs: integer('poll-ms', pick('poll-ms'), 10, 60_000),
    logLevel,
  };
}

function integer(flag: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw)) throw new FrontendOptionsError(`--${flag} must be a whole number, not "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new FrontendOptionsError(`--${flag} must be between ${min} and ${max}, not ${n}`);
  return n;
}
