// Owns the service configuration: the table of `infergate serve` flags, their INFERGATE_*
// environment overrides and embedded defaults (docs/operations.md lists them), validated into
// one Config. Parsing and precedence (flag > environment > default) are flags/flags.ts's.

import { readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Flags, helpText, wholeNumber, type FlagSpec, type Program } from '../flags/flags.js';
import { parseGpuList } from '../runtime/docker/gpu-allocator.js';

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
  /** Replica runtime: local processes, Docker containers, or auto (docker when a daemon answers). */
  runtime: RuntimeChoice;
  /** `--gpus`: this host's GPUs for the Docker runtime; null: discovered with nvidia-smi. */
  gpus: string[] | null;
  /** How a container asks for its GPUs: nvidia device requests or CDI device names. */
  gpuRequest: 'nvidia' | 'cdi';
  /** The reference engine image the Docker runtime runs for known engine images on a host without GPUs; null: infergate/engine:<version>. */
  engineImage: string | null;
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
  /** How long the controller lease lasts unrenewed (a standby takes over that long after the leader dies), in ms. */
  controllerLeaseTtlMs: number;
  adminKey: string | null;
  /** `--admin-key-file`: where adminKey came from, when it came from a file. */
  adminKeyFile: string | null;
  logLevel: string;
  /** Replica sandbox: auto (bubblewrap when it works here), bwrap (required) or none. */
  sandbox: SandboxMode;
  /** uid and gid replicas run as when the service runs as root. */
  sandboxUser: { uid: number; gid: number };
  /** Extra host paths replicas see read-only (a host engine installed outside /usr or /opt). */
  sandboxBinds: string[];
  /** Operator's explicit choice to run host commands (and the terminal) without a sandbox. */
  allowUnsandboxedHostCommands: boolean;
  /** Members may deploy host commands (default: admins only). */
  allowMemberHostCommands: boolean;
  /** Connection limits of the gateway and the control API. */
  limits: ConnectionLimitsConfig;
  /** Request bodies at the gateway: longest silence, in ms, and the default size limit in bytes. */
  bodyIdleTimeoutMs: number;
  maxRequestBodyBytes: number;
  /** Authentication failures per second a client address gets before its 401s are held; 0: never held. */
  authFailureRate: number;
  /** One log line per gateway request, written when it ends. */
  accessLog: boolean;
  /** Gateway processes accepting on the gateway port (node:cluster); 1 runs the gateway in this process. */
  gatewayWorkers: number;
}

export type SandboxMode = 'auto' | 'bwrap' | 'none';
export type RuntimeChoice = 'local' | 'docker' | 'auto';

/** Per listener: 0 turns a cap off. Timeouts in ms. */
export interface ConnectionLimitsConfig {
  tlsHandshakeTimeoutMs: number;
  keepAliveTimeoutMs: number;
  h2IdleTimeoutMs: number;
  headersTimeoutMs: number;
  gateway: { maxConnections: number; maxConnectionsPerClient: number };
  api: { maxConnections: number; maxConnectionsPerClient: number };
}

/** A configuration the service cannot start with; the message names the flag to fix. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Every flag, its env override and default — also the source of `infergate serve --help`. */
export const SERVE_OPTIONS: FlagSpec[] = [
  { flag: 'role', default: 'all', help: 'all | control | gateway' },
  { flag: 'gateway-workers', env: 'INFERGATE_GATEWAY_WORKERS', default: 'auto', help: 'gateway processes sharing the gateway port: a number, or auto (one per core with --redis; 1 with the file store, which one process keeps)' },
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
  { flag: 'runtime', env: 'INFERGATE_RUNTIME', default: 'auto', help: 'replica runtime: local (processes, in the bubblewrap sandbox), docker (containers on Docker Engine, DOCKER_HOST or /var/run/docker.sock) or auto (docker when a daemon answers, else local)' },
  { flag: 'gpus', env: 'INFERGATE_GPUS', default: '', help: 'docker runtime: comma-separated GPU indexes or UUIDs replicas may use (default: what nvidia-smi lists; none: known engine images are simulated)' },
  { flag: 'gpu-request', env: 'INFERGATE_GPU_REQUEST', default: 'nvidia', help: 'docker runtime: how containers get their GPUs: nvidia (device requests, NVIDIA Container Toolkit) or cdi (CDI device names)' },
  { flag: 'engine-image', env: 'INFERGATE_ENGINE_IMAGE', default: '', help: 'docker runtime: the reference engine image (default infergate/engine:<version>, built on first use or by `infergate image build`)' },
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
  { flag: 'controller-lease-ttl', env: 'INFERGATE_CONTROLLER_LEASE_TTL', default: '10', help: 'seconds the controller lease lasts unrenewed: how soon a standby control process takes over from a leader that died (renewed every second)' },
  { flag: 'rollout-deadline', env: 'INFERGATE_ROLLOUT_DEADLINE', default: '600', help: 'seconds a new revision has to get its replicas ready before it is marked failed (the old one keeps serving)' },
  { flag: 'activator-timeout', env: 'INFERGATE_ACTIVATOR_TIMEOUT', default: '120', help: 'seconds a held request waits for a replica before 503 (raise it for slow model loads)' },
  { flag: 'log-level', env: 'INFERGATE_LOG_LEVEL', default: 'info', help: 'pino log level' },
  { flag: 'admin-key-file', env: 'INFERGATE_ADMIN_KEY_FILE', default: '', help: 'file holding the admin service-account key (recommended over INFERGATE_ADMIN_KEY, which stays readable in /proc/<pid>/environ)' },
  { flag: 'sandbox', env: 'INFERGATE_SANDBOX', default: 'auto', help: 'replica sandbox: auto (bubblewrap when it works here), bwrap (refuse to start without it) or none' },
  { flag: 'sandbox-user', env: 'INFERGATE_SANDBOX_USER', default: '65534:65534', help: 'uid:gid replicas run as when the service runs as root' },
  { flag: 'sandbox-bind', env: 'INFERGATE_SANDBOX_BIND', default: '', help: 'comma-separated host paths replicas may read (e.g. an engine installed outside /usr and /opt)' },
  { flag: 'allow-unsandboxed-host-commands', env: 'INFERGATE_ALLOW_UNSANDBOXED_HOST_COMMANDS', default: '', boolean: true, help: 'run host commands and the terminal even when no sandbox is available (they run as the service\'s user)' },
  { flag: 'allow-member-host-commands', env: 'INFERGATE_ALLOW_MEMBER_HOST_COMMANDS', default: '', boolean: true, help: 'let member service accounts deploy host commands (images the runtime does not simulate); default: admins only' },
  { flag: 'tls-handshake-timeout', env: 'INFERGATE_TLS_HANDSHAKE_TIMEOUT', default: '10', help: 'seconds a connection has to finish its TLS handshake (gateway, and the control API over HTTPS)' },
  { flag: 'keep-alive-timeout', env: 'INFERGATE_KEEP_ALIVE_TIMEOUT', default: '65', help: 'seconds an idle HTTP/1.1 keep-alive connection stays open' },
  { flag: 'h2-idle-timeout', env: 'INFERGATE_H2_IDLE_TIMEOUT', default: '120', help: 'seconds an HTTP/2 connection with no open stream stays open' },
  { flag: 'request-headers-timeout', env: 'INFERGATE_REQUEST_HEADERS_TIMEOUT', default: '30', help: 'seconds a client has to send a request\'s headers' },
  { flag: 'max-connections', env: 'INFERGATE_MAX_CONNECTIONS', default: '8192', help: 'open connections the gateway accepts in all (0: no cap)' },
  { flag: 'max-connections-per-client', env: 'INFERGATE_MAX_CONNECTIONS_PER_CLIENT', default: '256', help: 'open gateway connections per client address (0: no cap; raise it behind a load balancer)' },
  { flag: 'api-max-connections', env: 'INFERGATE_API_MAX_CONNECTIONS', default: '512', help: 'open connections the control API accepts in all (0: no cap)' },
  { flag: 'api-max-connections-per-client', env: 'INFERGATE_API_MAX_CONNECTIONS_PER_CLIENT', default: '64', help: 'open control API connections per client address (0: no cap)' },
  { flag: 'body-idle-timeout', env: 'INFERGATE_BODY_IDLE_TIMEOUT', default: '30', help: 'seconds a request body may stay silent before the gateway answers 408' },
  { flag: 'auth-failure-rate', env: 'INFERGATE_AUTH_FAILURE_RATE', default: '50', help: 'authentication failures per second a client address may have (4× at once) before its 401s are answered 1 s late (0: never)' },
  { flag: 'access-log', env: 'INFERGATE_ACCESS_LOG', default: '', boolean: true, help: 'log one line per gateway request when it ends (deployment, method, path without query, status, credential kind, replica, time)' },
  { flag: 'max-request-body', env: 'INFERGATE_MAX_REQUEST_BODY', default: '16MiB', help: 'request body size limit of deployments that set none (max_request_body_bytes); bytes, or KiB/MiB/GiB' },
];

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
const DOMAIN_RE = /^(?=.{1,200}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

const SERVE: Program = { name: 'serve', flags: SERVE_OPTIONS, error: ConfigError };

export function serveHelp(): string {
  return helpText(SERVE, { width: 32, outro: ['INFERGATE_ADMIN_KEY sets the admin service-account key instead of generating one.'] });
}

/** Parses `serve` arguments and the environment into a validated Config. */
export function parseServeConfig(argv: string[], env: NodeJS.ProcessEnv, cwd = process.cwd()): Config {
  const f = Flags.parse(SERVE, argv, env);
  const pick = (flag: string): string => f.string(flag);
  const orNull = (v: string): string | null => (v === '' ? null : v);

  const role = f.oneOf('role', ['all', 'control', 'gateway'] as const);
  const runtime = f.oneOf('runtime', ['local', 'docker', 'auto'] as const);
  const gpusFlag = pick('gpus');
  let gpus: string[] | null = null;
  try {
    gpus = gpusFlag === '' ? null : parseGpuList(gpusFlag);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }

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
  const gpuQuota = f.integer('gpu-quota', 0, 1_000_000);
  const adminKeyFile = orNull(pick('admin-key-file'));
  if (adminKeyFile !== null && env.INFERGATE_ADMIN_KEY) {
    throw new ConfigError('give the admin key once: --admin-key-file or INFERGATE_ADMIN_KEY, not both');
  }
  const adminKey = adminKeyFile !== null ? readAdminKeyFile(path.resolve(cwd, adminKeyFile)) : orNull(env.INFERGATE_ADMIN_KEY ?? '');
  if (adminKey !== null && adminKey.length < 16) {
    throw new ConfigError(`${adminKeyFile !== null ? `--admin-key-file ${adminKeyFile}` : 'INFERGATE_ADMIN_KEY'}: the admin key must be at least 16 characters`);
  }
  if (adminKey !== null && !/^[\x21-\x7e]+$/.test(adminKey)) {
    throw new ConfigError('the admin key may contain only printable ASCII without spaces (it is sent as a Bearer token)');
  }
  const sandbox = f.oneOf('sandbox', ['auto', 'bwrap', 'none'] as const);
  const redisUrl = orNull(pick('redis'));
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError(`--redis must be a redis:// or rediss:// URL, not "${redisUrl}"`);
  }
  const redisPrefix = pick('redis-prefix');
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/.test(redisPrefix)) {
    throw new ConfigError(`--redis-prefix must be 1-64 letters, digits or _.:- , not "${redisPrefix}"`);
  }
  const resolve = (p: string | null): string | null => (p === null ? null : path.resolve(cwd, p));
  const gatewayWorkers = parseGatewayWorkers(f.string('gateway-workers'), role, redisUrl);

  return {
    role,
    gatewayHost: pick('gateway-host'),
    gatewayPort: f.port('gateway-port'),
    apiHost,
    apiPort: f.port('api-port'),
    apiTlsCert: resolve(apiTlsCert),
    apiTlsKey: resolve(apiTlsKey),
    tlsCert: resolve(tlsCert),
    tlsKey: resolve(tlsKey),
    upstreamHeadersTimeoutMs: f.integer('upstream-headers-timeout', 0, 86_400) * 1000,
    upstreamIdleTimeoutMs: f.integer('upstream-idle-timeout', 0, 86_400) * 1000,
    affinityLoadFactor,
    metricsHost: pick('metrics-host'),
    metricsPort: f.port('metrics-port'),
    domain,
    dataDir: path.resolve(cwd, pick('data-dir')),
    certsDir: path.resolve(cwd, pick('certs-dir')),
    redisUrl,
    redisPrefix,
    runtime,
    gpus,
    gpuRequest: f.oneOf('gpu-request', ['nvidia', 'cdi'] as const),
    engineImage: orNull(pick('engine-image')),
    catalogFile: resolve(orNull(pick('catalog'))),
    imageMapFile: resolve(orNull(pick('image-map'))),
    gpuQuota,
    drainTimeoutMs: f.integer('drain-timeout', 0, 3600) * 1000,
    stopGraceMs: f.integer('stop-grace', 0, 600) * 1000,
    ...autoscaleWindows(f),
    scaleToZeroGraceMs: f.integer('scale-to-zero-grace', 0, 86_400) * 1000,
    activatorQueueSize: f.integer('activator-queue-size', 1, 1_000_000),
    activatorTimeoutMs: f.integer('activator-timeout', 1, 86_400) * 1000,
    rolloutSurge: f.integer('rollout-surge', 1, 100),
    rolloutDeadlineMs: f.integer('rollout-deadline', 1, 86_400) * 1000,
    // At least 3 s: renewed every second, a shorter lease would be lost to one slow store round trip.
    controllerLeaseTtlMs: f.integer('controller-lease-ttl', 3, 600) * 1000,
    adminKey,
    adminKeyFile: adminKeyFile === null ? null : path.resolve(cwd, adminKeyFile),
    logLevel: f.logLevel(),
    sandbox,
    sandboxUser: parseUser(pick('sandbox-user')),
    sandboxBinds: pick('sandbox-bind')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '')
      .map((p) => path.resolve(cwd, p)),
    allowUnsandboxedHostCommands: f.enabled('allow-unsandboxed-host-commands'),
    allowMemberHostCommands: f.enabled('allow-member-host-commands'),
    limits: {
      tlsHandshakeTimeoutMs: f.integer('tls-handshake-timeout', 1, 600) * 1000,
      keepAliveTimeoutMs: f.integer('keep-alive-timeout', 1, 3600) * 1000,
      h2IdleTimeoutMs: f.integer('h2-idle-timeout', 1, 86_400) * 1000,
      headersTimeoutMs: f.integer('request-headers-timeout', 1, 600) * 1000,
      gateway: {
        maxConnections: f.integer('max-connections', 0, 10_000_000),
        maxConnectionsPerClient: f.integer('max-connections-per-client', 0, 10_000_000),
      },
      api: {
        maxConnections: f.integer('api-max-connections', 0, 10_000_000),
        maxConnectionsPerClient: f.integer('api-max-connections-per-client', 0, 10_000_000),
      },
    },
    bodyIdleTimeoutMs: f.integer('body-idle-timeout', 1, 3600) * 1000,
    maxRequestBodyBytes: f.size('max-request-body'),
    authFailureRate: f.integer('auth-failure-rate', 0, 1_000_000),
    accessLog: f.enabled('access-log'),
    gatewayWorkers,
  };
}

const MAX_GATEWAY_WORKERS = 64;

/**
 * `auto` is one worker per core where workers can share state (Redis), else 1. Several workers
 * need Redis: each is its own process, and the file store is kept by one process only.
 */
function parseGatewayWorkers(raw: string, role: Config['role'], redisUrl: string | null): number {
  if (raw === 'auto') return role !== 'control' && redisUrl !== null ? Math.min(os.availableParallelism(), MAX_GATEWAY_WORKERS) : 1;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`--gateway-workers must be auto or a whole number, not "${raw}"`);
  const n = wholeNumber('gateway-workers', raw, 1, MAX_GATEWAY_WORKERS, ConfigError);
  if (n > 1 && role === 'control') throw new ConfigError(`--gateway-workers ${n}: a --role control process runs no gateway; leave --gateway-workers out`);
  if (n > 1 && redisUrl === null) {
    throw new ConfigError(`--gateway-workers ${n} needs --redis: each worker is a process of its own, and the file store is kept by one process`);
  }
  return n;
}

/** The key file's first line; it must not be readable by others (it is the platform's root credential). */
function readAdminKeyFile(file: string): string {
  let text: string;
  try {
    const mode = statSync(file).mode;
    if ((mode & 0o077) !== 0) {
      throw new ConfigError(`--admin-key-file ${file} is readable by other users (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
    }
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`--admin-key-file ${file}: ${(err as Error).message}`);
  }
  return (text.split('\n')[0] ?? '').trim();
}

/** `uid:gid` (or a lone uid, whose gid is the same number). Root is refused: the point is to drop it. */
function parseUser(raw: string): { uid: number; gid: number } {
  const m = /^(\d+)(?::(\d+))?$/.exec(raw);
  if (!m) throw new ConfigError(`--sandbox-user must be uid:gid in numbers (e.g. 65534:65534), not "${raw}"`);
  const uid = Number(m[1]);
  const gid = Number(m[2] ?? m[1]);
  if (uid === 0 || gid === 0 || uid > 4_294_967_294 || gid > 4_294_967_294) {
    throw new ConfigError(`--sandbox-user must name an unprivileged uid and gid (not 0), not "${raw}"`);
  }
  return { uid, gid };
}

function autoscaleWindows(f: Flags): { autoscaleStableMs: number; autoscalePanicMs: number } {
  const stable = f.integer('autoscale-stable-window', 1, 3600);
  const panic = f.integer('autoscale-panic-window', 1, 3600);
  if (panic > stable) {
    throw new ConfigError(`--autoscale-panic-window (${panic}) must not be longer than --autoscale-stable-window (${stable})`);
  }
  return { autoscaleStableMs: stable * 1000, autoscalePanicMs: panic * 1000 };
}
