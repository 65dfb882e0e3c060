// Owns the service configuration: command-line flags, their INFERGATE_* environment
// overrides and the embedded defaults of DESIGN §2 and §10, validated into one Config.
// Precedence: flag > environment > default.

import { parseArgs } from 'node:util';
import path from 'node:path';

export type Role = 'all' | 'control' | 'gateway';

export interface Config {
  role: Role;
  gatewayHost: string;
  gatewayPort: number;
  apiHost: string;
  apiPort: number;
  apiTlsCert: string | null;
  apiTlsKey: string | null;
  /** Operator-supplied certificate and key for `*.<domain>`; null: the platform CA issues them. */
  tlsCert: string | null;
  tlsKey: string | null;
  /** Longest wait for a replica's response headers, and longest silence in a body, in ms; 0 = none. */
  upstreamHeadersTimeoutMs: number;
  upstreamIdleTimeoutMs: number;
  /** Bounded-load factor c of consistent hashing on X-Session-Id. */
  affinityLoadFactor: number;
  metricsHost: string;
  metricsPort: number;
  domain: string;
  dataDir: string;
  certsDir: string;
  redisUrl: string | null;
  redisPrefix: string;
  runtime: 'local';
  catalogFile: string | null;
  imageMapFile: string | null;
  gpuQuota: number;
  /** Longest wait for a draining replica's in-flight requests, and the SIGTERM→SIGKILL grace, in ms. */
  drainTimeoutMs: number;
  stopGraceMs: number;
  /** Autoscaler windows and the idle grace before zero, in ms. */
  autoscaleStableMs: number;
  autoscalePanicMs: number;
  scaleToZeroGraceMs: number;
  /** Activator: requests held per deployment at zero, and the longest wait, in ms. */
  activatorQueueSize: number;
  activatorTimeoutMs: number;
  /** Rolling updates: replicas beyond the desired count, and the deadline for a new revision. */
  rolloutSurge: number;
  rolloutDeadlineMs: number;
  adminKey: string | null;
  logLevel: string;
}

/** A configuration the service cannot start with; the message names the flag to fix. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

interface OptionDoc {
  flag: string;
  env?: string;
  default: string;
  help: string;
}

/** Every flag, its env override and default — also the source of `infergate serve --help`. */
export const SERVE_OPTIONS: OptionDoc[] = [
  { flag: 'role', default: 'all', help: 'all | control | gateway' },
  { flag: 'gateway-host', env: 'INFERGATE_GATEWAY_HOST', default: '0.0.0.0', help: 'gateway listen address' },
  { flag: 'gateway-port', env: 'INFERGATE_GATEWAY_PORT', default: '443', help: 'gateway TLS port (binding 443 needs root or CAP_NET_BIND_SERVICE)' },
  { flag: 'api-host', env: 'INFERGATE_API_HOST', default: '127.0.0.1', help: 'control API address; non-loopback needs --api-tls-cert/--api-tls-key' },
  { flag: 'api-port', env: 'INFERGATE_API_PORT', default: '8080', help: 'control API port' },
  { flag: 'api-tls-cert', env: 'INFERGATE_API_TLS_CERT', default: '', help: 'PEM certificate for the control API (enables HTTPS)' },
  { flag: 'api-tls-key', env: 'INFERGATE_API_TLS_KEY', default: '', help: 'PEM private key for the control API' },
  { flag: 'tls-cert', env: 'INFERGATE_TLS_CERT', default: '', help: 'PEM certificate (chain) for *.<domain> on the gateway, e.g. from a public CA; default: issued by the platform CA' },
  { flag: 'tls-key', env: 'INFERGATE_TLS_KEY', default: '', help: 'PEM private key for --tls-cert' },
  { flag: 'upstream-headers-timeout', env: 'INFERGATE_UPSTREAM_HEADERS_TIMEOUT', default: '3600', help: 'seconds to wait for a replica to start answering (0: no limit)' },
  { flag: 'upstream-idle-timeout', env: 'INFERGATE_UPSTREAM_IDLE_TIMEOUT', default: '3600', help: 'seconds a response body may stay silent (0: no limit)' },
  { flag: 'affinity-load-factor', env: 'INFERGATE_AFFINITY_LOAD_FACTOR', default: '1.25', help: 'consistent hashing with bounded loads: no replica takes more than this × the mean in-flight load' },
  { flag: 'metrics-host', env: 'INFERGATE_METRICS_HOST', default: '127.0.0.1', help: 'Prometheus metrics address' },
  { flag: 'metrics-port', env: 'INFERGATE_METRICS_PORT', default: '9464', help: 'Prometheus metrics port (/metrics)' },
  { flag: 'domain', env: 'INFERGATE_DOMAIN', default: 'endpoints.localhost', help: 'endpoint domain: <name>.<domain>' },
  { flag: 'data-dir', env: 'INFERGATE_DATA_DIR', default: './data', help: 'file store and admin key location' },
  { flag: 'certs-dir', env: 'INFERGATE_CERTS_DIR', default: './certs', help: 'certificate authority and issued certificates' },
  { flag: 'redis', env: 'INFERGATE_REDIS_URL', default: '', help: 'use the Redis store at this URL instead of the file store' },
  { flag: 'redis-prefix', env: 'INFERGATE_REDIS_PREFIX', default: 'infergate', help: 'key prefix in Redis, so installations can share one server' },
  { flag: 'runtime', env: 'INFERGATE_RUNTIME', default: 'local', help: 'replica runtime (local processes)' },
  { flag: 'catalog', env: 'INFERGATE_CATALOG', default: '', help: 'JSON file replacing the embedded cluster/hardware catalog' },
  { flag: 'image-map', env: 'INFERGATE_IMAGE_MAP', default: '', help: 'JSON file extending the image → engine map' },
  { flag: 'gpu-quota', env: 'INFERGATE_GPU_QUOTA', default: '32', help: 'account GPU quota' },
  { flag: 'drain-timeout', env: 'INFERGATE_DRAIN_TIMEOUT', default: '30', help: 'seconds a stopping replica gets to finish its in-flight requests' },
  { flag: 'stop-grace', env: 'INFERGATE_STOP_GRACE', default: '10', help: 'seconds between SIGTERM and SIGKILL when a replica stops' },
  { flag: 'autoscale-stable-window', env: 'INFERGATE_AUTOSCALE_STABLE_WINDOW', default: '60', help: 'seconds of concurrency the autoscaler averages (also the no-scale-down hold after a start and after panic)' },
  { flag: 'autoscale-panic-window', env: 'INFERGATE_AUTOSCALE_PANIC_WINDOW', default: '6', help: 'seconds of the short window: wanting twice the capacity there scales up at once' },
  { flag: 'scale-to-zero-grace', env: 'INFERGATE_SCALE_TO_ZERO_GRACE', default: '30', help: 'idle seconds beyond cooldown_period before a min-0 deployment goes to zero' },
  { flag: 'activator-queue-size', env: 'INFERGATE_ACTIVATOR_QUEUE_SIZE', default: '256', help: 'requests held per deployment while it scales up from zero; more get 503' },
  { flag: 'rollout-surge', env: 'INFERGATE_ROLLOUT_SURGE', default: '1', help: 'replicas a rolling update may start beyond the desired count at a time' },
  { flag: 'rollout-deadline', env: 'INFERGATE_ROLLOUT_DEADLINE', default: '600', help: 'seconds a new revision has to get its replicas ready before it is marked failed (the old one keeps serving)' },
  { flag: 'activator-timeout', env: 'INFERGATE_ACTIVATOR_TIMEOUT', default: '120', help: 'seconds a held request waits for a replica before 503 (raise it for slow model loads)' },
  { flag: 'log-level', env: 'INFERGATE_LOG_LEVEL', default: 'info', help: 'pino log level' },
];

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
const DOMAIN_RE = /^(?=.{1,200}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

export function serveHelp(): string {
  const rows = SERVE_OPTIONS.map((o) => {
    const env = o.env ? ` (env ${o.env})` : '';
    const def = o.default ? ` [default: ${o.default}]` : '';
    return `  --${o.flag.padEnd(26)} ${o.help}${def}${env}`;
  });
  return ['usage: infergate serve [options]', '', ...rows, '', 'INFERGATE_ADMIN_KEY sets the admin service-account key instead of generating one.'].join('\n');
}

/** Parses `serve` arguments and the environment into a validated Config. */
export function parseServeConfig(argv: string[], env: NodeJS.ProcessEnv, cwd = process.cwd()): Config {
  const options = Object.fromEntries(SERVE_OPTIONS.map((o) => [o.flag, { type: 'string' as const }]));
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new ConfigError(`${(err as Error).message} (see infergate serve --help)`);
  }
  const pick = (flag: string): string => {
    const doc = SERVE_OPTIONS.find((o) => o.flag === flag);
    const fromFlag = values[flag];
    if (typeof fromFlag === 'string') return fromFlag;
    const fromEnv = doc?.env ? env[doc.env] : undefined;
    if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
    return doc?.default ?? '';
  };
  const orNull = (v: string): string | null => (v === '' ? null : v);

  const role = pick('role');
  if (role !== 'all' && role !== 'control' && role !== 'gateway') {
    throw new ConfigError(`--role must be all, control or gateway, not "${role}"`);
  }
  const runtime = pick('runtime');
  if (runtime !== 'local') throw new ConfigError(`--runtime must be local, not "${runtime}"`);

  const domain = pick('domain').toLowerCase();
  if (!DOMAIN_RE.test(domain)) throw new ConfigError(`--domain "${domain}" is not a valid DNS name`);

  const apiHost = pick('api-host');
  const apiTlsCert = orNull(pick('api-tls-cert'));
  const apiTlsKey = orNull(pick('api-tls-key'));
  if ((apiTlsCert === null) !== (apiTlsKey === null)) {
    throw new ConfigError('--api-tls-cert and --api-tls-key must be given together');
  }
  if (!LOOPBACK.has(apiHost) && apiTlsCert === null) {
    throw new ConfigError(
      `--api-host ${apiHost} is not a loopback address: the control API refuses to listen on the network without TLS; pass --api-tls-cert and --api-tls-key`,
    );
  }
  const tlsCert = orNull(pick('tls-cert'));
  const tlsKey = orNull(pick('tls-key'));
  if ((tlsCert === null) !== (tlsKey === null)) {
    throw new ConfigError('--tls-cert and --tls-key must be given together');
  }
  const affinityLoadFactor = Number(pick('affinity-load-factor'));
  if (!Number.isFinite(affinityLoadFactor) || affinityLoadFactor <= 1 || affinityLoadFactor > 10) {
    throw new ConfigError(`--affinity-load-factor must be a number above 1 and at most 10, not "${pick('affinity-load-factor')}"`);
  }
  const gpuQuota = parseInteger('gpu-quota', pick('gpu-quota'), 0, 1_000_000);
  const adminKey = orNull(env.INFERGATE_ADMIN_KEY ?? '');
  if (adminKey !== null && adminKey.length < 16) {
    throw new ConfigError('INFERGATE_ADMIN_KEY must be at least 16 characters');
  }
  const redisUrl = orNull(pick('redis'));
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError(`--redis must be a redis:// or rediss:// URL, not "${redisUrl}"`);
  }
  const redisPrefix = pick('redis-prefix');
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/.test(redisPrefix)) {
    throw new ConfigError(`--redis-prefix must be 1-64 letters, digits or _.:- , not "${redisPrefix}"`);
  }
  const resolve = (p: string | null): string | null => (p === null ? null : path.resolve(cwd, p));

  return {
    role,
    gatewayHost: pick('gateway-host'),
    gatewayPort: parsePort('gateway-port', pick('gateway-port')),
    apiHost,
    apiPort: parsePort('api-port', pick('api-port')),
    apiTlsCert: resolve(apiTlsCert),
    apiTlsKey: resolve(apiTlsKey),
    tlsCert: resolve(tlsCert),
    tlsKey: resolve(tlsKey),
    upstreamHeadersTimeoutMs: parseInteger('upstream-headers-timeout', pick('upstream-headers-timeout'), 0, 86_400) * 1000,
    upstreamIdleTimeoutMs: parseInteger('upstream-idle-timeout', pick('upstream-idle-timeout'), 0, 86_400) * 1000,
    affinityLoadFactor,
    metricsHost: pick('metrics-host'),
    metricsPort: parsePort('metrics-port', pick('metrics-port')),
    domain,
    dataDir: path.resolve(cwd, pick('data-dir')),
    certsDir: path.resolve(cwd, pick('certs-dir')),
    redisUrl,
    redisPrefix,
    runtime,
    catalogFile: resolve(orNull(pick('catalog'))),
    imageMapFile: resolve(orNull(pick('image-map'))),
    gpuQuota,
    drainTimeoutMs: parseInteger('drain-timeout', pick('drain-timeout'), 0, 3600) * 1000,
    stopGraceMs: parseInteger('stop-grace', pick('stop-grace'), 0, 600) * 1000,
    ...autoscaleWindows(pick),
    scaleToZeroGraceMs: parseInteger('scale-to-zero-grace', pick('scale-to-zero-grace'), 0, 86_400) * 1000,
    activatorQueueSize: parseInteger('activator-queue-size', pick('activator-queue-size'), 1, 1_000_000),
    activatorTimeoutMs: parseInteger('activator-timeout', pick('activator-timeout'), 1, 86_400) * 1000,
    rolloutSurge: parseInteger('rollout-surge', pick('rollout-surge'), 1, 100),
    rolloutDeadlineMs: parseInteger('rollout-deadline', pick('rollout-deadline'), 1, 86_400) * 1000,
    adminKey,
    logLevel: pick('log-level'),
  };
}

function autoscaleWindows(pick: (flag: string) => string): { autoscaleStableMs: number; autoscalePanicMs: number } {
  const stable = parseInteger('autoscale-stable-window', pick('autoscale-stable-window'), 1, 3600);
  const panic = parseInteger('autoscale-panic-window', pick('autoscale-panic-window'), 1, 3600);
  if (panic > stable) {
    throw new ConfigError(`--autoscale-panic-window (${panic}) must not be longer than --autoscale-stable-window (${stable})`);
  }
  return { autoscaleStableMs: stable * 1000, autoscalePanicMs: panic * 1000 };
}

/** Port 0 asks the OS for a free port (tests use it); the bound port is printed. */
function parsePort(flag: string, raw: string): number {
  return parseInteger(flag, raw, 0, 65535);
}

function parseInteger(flag: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw)) throw new ConfigError(`--${flag} must be a whole number, not "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`--${flag} must be between ${min} and ${max}, not ${n}`);
  return n;
}
