// Owns `infergate frontend`'s command line: flags (PORT from the environment as the platform
// sets it) validated into one FrontendOptions; a bad value is a FrontendOptionsError whose
// one-line message names the flag.

import { Flags, helpText, type FlagSpec, type Program } from '../flags/flags.js';

export type FrontendMode = 'aggregated' | 'disaggregated';
/** How an aggregated Frontend picks a worker: fewest in flight, or by prompt prefix and load. */
export type WorkerPolicy = 'least-loaded' | 'prefix-aware';

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
  routingPolicy: WorkerPolicy;
  logLevel: string;
}

export class FrontendOptionsError extends Error {
  override name = 'FrontendOptionsError';
}

export const FRONTEND_OPTIONS: FlagSpec[] = [
  { flag: 'host', default: '0.0.0.0', help: 'listen address' },
  { flag: 'port', env: 'PORT', default: '8000', help: 'listen port (0: any free port)' },
  { flag: 'protocol', default: 'http', help: 'http (chat completions) | grpc (the v2 inference protocol on --port; chat completions inside, on loopback)' },
  { flag: 'mode', default: 'aggregated', help: 'aggregated (workers serve whole requests) | disaggregated (prefill then decode workers)' },
  { flag: 'model', default: '', help: 'model-hub id the workers serve, e.g. org/model (required)' },
  { flag: 'served-model-name', default: '', help: 'the name clients use and /v1/models shows [default: the model id]' },
  { flag: 'workers-file', default: '', help: 'JSON {"workers": ["host:port", …]} (aggregated) or {"prefill": […], "decode": […]} (disaggregated); re-read on change (required)' },
  { flag: 'poll-ms', default: '300', help: 'how often the workers file is re-read' },
  { flag: 'routing-policy', default: 'least-loaded', help: 'aggregated: least-loaded (fewest in flight) | prefix-aware (where the prompt\'s prefix is cached, weighed against load; X-Session-Id as a hint)' },
  { flag: 'log-level', default: 'info', help: 'pino log level' },
];

const FRONTEND: Program = { name: 'frontend', flags: FRONTEND_OPTIONS, error: FrontendOptionsError };

export function frontendHelp(): string {
  return helpText(FRONTEND, {
    width: 20,
    intro: [
      'The orchestrated runtime Frontend: an OpenAI-compatible HTTP server that spreads requests over',
      'workers (aggregated) or sends each to a prefill worker, then with its kv_transfer_params to a',
      'decode worker (disaggregated, the contract of vLLM disaggregated workers).',
    ],
  });
}

export function parseFrontendOptions(argv: string[], env: NodeJS.ProcessEnv): FrontendOptions {
  const f = Flags.parse(FRONTEND, argv, env);
  const options: FrontendOptions = {
    host: f.required('host'),
    port: f.port('port'),
    protocol: f.oneOf('protocol', ['http', 'grpc'] as const),
    mode: f.oneOf<FrontendMode>('mode', ['aggregated', 'disaggregated']),
    model: f.required('model', 'is required (the model-hub id the workers serve, e.g. org/model)'),
    servedModelName: f.optional('served-model-name'),
    workersFile: f.required('workers-file', 'is required'),
    pollMs: f.integer('poll-ms', 10, 60_000),
    routingPolicy: f.oneOf<WorkerPolicy>('routing-policy', ['least-loaded', 'prefix-aware']),
    logLevel: f.logLevel(),
  };
  if (options.mode === 'disaggregated' && options.routingPolicy === 'prefix-aware') {
    throw new FrontendOptionsError('--routing-policy prefix-aware chooses among aggregated workers; a disaggregated Frontend sends each request to prefill then decode workers (use least-loaded)');
  }
  return options;
}
