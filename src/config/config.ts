// Owns the service configuration: the `infergate serve` command line and INFERGATE_*
// environment (the flag table and its tunables are serve-flags.ts's; docs/operations.md lists
// them), validated into one Config, with what needs the file system or the host (paths,
// the admin key file, GPUs, gateway workers). Parsing and precedence (flag > environment >
// default) are flags/flags.ts's.

import { readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Flags, helpText, wholeNumber } from '../flags/flags.js';
import { parseRegistryList } from '../domain/registry-hosts.js';
import { parseGpuList } from '../runtime/docker/gpu-allocator.js';
import { formatSubnet, parseSubnet, type Subnet } from '../runtime/pod-network.js';
import { ConfigError, readTunables, SERVE, type Tunables } from './serve-flags.js';
import { issuerProblem } from '../identity/issuer.js';

export { ConfigError, SERVE_OPTIONS, type ConnectionLimitsConfig, type Tunables } from './serve-flags.js';

export type Role = 'all' | 'control' | 'gateway';

/** The service's configuration; its tunables (timeouts, caps, sizes, rates) are read in serve-flags.ts. */
export interface Config extends Tunables {
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
  /**
   * `--registries`: the registry hosts the container daemon may pull from, normalised
   * (host[:port], docker.io for Docker Hub, `*` for any host that is not loopback or
   * link-local); empty: `*`.
   */
  registries: string[];
  /** `--docker-subnet`: the IPv4 subnet of the Docker runtime's network; null: from the daemon's default pools. */
  dockerSubnet: string | null;
  /**
   * `--drain-on-stop`: a clean stop drains and removes every replica. Off: the Docker runtime's
   * containers keep running through a stop and the next start takes them back (the local
   * runtime's replicas, processes of the service, stop with it either way).
   */
  drainOnStop: boolean;
  /** The reference engine image the Docker runtime runs for known engine images on a host without GPUs; null: infergate/engine:<version>. */
  engineImage: string | null;
  catalogFile: string | null;
  imageMapFile: string | null;
  gpuQuota: number;
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
  /** Local runtime: pods (a network namespace per pod), the host's network, or pods where they can be made. */
  replicaNetwork: 'auto' | 'pod' | 'host';
  /** The range pods take their /30 links from. */
  replicaSubnet: Subnet;
  /** Members may deploy host commands (default: admins only). */
  allowMemberHostCommands: boolean;
  /** One log line per gateway request, written when it ends. */
  accessLog: boolean;
  /** Gateway processes accepting on the gateway port (node:cluster); 1 runs the gateway in this process. */
  gatewayWorkers: number;
  /** `--api-public-url`: the control API's URL as browsers reach it; null: the address it listens on. */
  apiPublicUrl: string | null;
  /** People's sign-in through an OpenID Connect provider; null: service-account keys only. */
  oidc: OidcConfig | null;
}

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  groupsClaim: string;
  adminGroup: string | null;
  providerName: string;
  scopes: string[];
  sessionLifetimeMs: number;
}

export type SandboxMode = 'auto' | 'bwrap' | 'none';
export type RuntimeChoice = 'local' | 'docker' | 'auto';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]']);
const DOMAIN_RE = /^(?=.{1,200}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

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
  const registries = parseRegistryList(pick('registries'));
  if ('problem' in registries) throw new ConfigError(registries.problem);
  const replicaSubnet = parseSubnet(pick('replica-subnet'));
  if (typeof replicaSubnet === 'string') throw new ConfigError(`--replica-subnet ${replicaSubnet}`);
  const resolve = (p: string | null): string | null => (p === null ? null : path.resolve(cwd, p));
  const gatewayWorkers = parseGatewayWorkers(f.string('gateway-workers'), role, redisUrl);
  const apiPublicUrl = parsePublicUrl(pick('api-public-url'));
  const oidc = parseOidc(f, env, cwd);
  // The provider sends browsers back to the redirect URI: a wildcard listen address is no URL to send them to.
  if (oidc !== null && apiPublicUrl === null && WILDCARD_HOSTS.has(apiHost)) {
    throw new ConfigError(`--oidc-issuer with --api-host ${apiHost} needs --api-public-url: the URL browsers reach the control API at (the redirect URI is <it>/auth/callback)`);
  }

  return {
    ...readTunables(f),
    role,
    gatewayHost: pick('gateway-host'),
    gatewayPort: f.port('gateway-port'),
    apiHost,
    apiPort: f.port('api-port'),
    apiTlsCert: resolve(apiTlsCert),
    apiTlsKey: resolve(apiTlsKey),
    tlsCert: resolve(tlsCert),
    tlsKey: resolve(tlsKey),
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
    registries: registries.list,
    dockerSubnet: parseDockerSubnet(pick('docker-subnet')),
    drainOnStop: f.enabled('drain-on-stop'),
    engineImage: orNull(pick('engine-image')),
    catalogFile: resolve(orNull(pick('catalog'))),
    imageMapFile: resolve(orNull(pick('image-map'))),
    gpuQuota,
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
    replicaNetwork: f.oneOf('replica-network', ['auto', 'pod', 'host'] as const),
    replicaSubnet,
    allowMemberHostCommands: f.enabled('allow-member-host-commands'),
    accessLog: f.enabled('access-log'),
    gatewayWorkers,
    apiPublicUrl,
    oidc,
  };
}

/** `--api-public-url`: an http(s) origin, perhaps with a path prefix; '' is none. */
function parsePublicUrl(raw: string): string | null {
  if (raw === '') return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`--api-public-url "${raw}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(`--api-public-url must be an http:// or https:// URL, not "${raw}"`);
  if (url.search || url.hash) throw new ConfigError('--api-public-url must have no query or fragment');
  return url.href.replace(/\/+$/, '');
}

/** The --oidc-* flags: all or nothing, the secret from a file or the environment (never the command line). */
function parseOidc(f: Flags, env: NodeJS.ProcessEnv, cwd: string): OidcConfig | null {
  const issuer = f.string('oidc-issuer');
  const clientId = f.string('oidc-client-id');
  const secretFile = f.string('oidc-client-secret-file');
  const secretEnv = env.INFERGATE_OIDC_CLIENT_SECRET ?? '';
  const lifetime = parseDuration(f.string('session-lifetime'));
  if (issuer === '') {
    if (clientId !== '' || secretFile !== '' || secretEnv !== '') throw new ConfigError('--oidc-client-id and the client secret need --oidc-issuer');
    return null;
  }
  const problem = issuerProblem(issuer);
  if (problem) throw new ConfigError(`--oidc-issuer ${problem}`);
  if (clientId === '') throw new ConfigError('--oidc-issuer needs --oidc-client-id (the client registered at the provider)');
  if (secretFile !== '' && secretEnv !== '') throw new ConfigError('give the client secret once: --oidc-client-secret-file or INFERGATE_OIDC_CLIENT_SECRET, not both');
  const clientSecret = secretFile !== '' ? readSecretFile('--oidc-client-secret-file', path.resolve(cwd, secretFile)) : secretEnv;
  if (clientSecret === '') throw new ConfigError('--oidc-issuer needs the client secret: --oidc-client-secret-file FILE or INFERGATE_OIDC_CLIENT_SECRET');
  const scopes = f.string('oidc-scopes').split(/[\s,]+/).filter((s) => s !== '');
  if (!scopes.includes('openid')) scopes.unshift('openid');
  const groupsClaim = f.string('oidc-groups-claim');
  if (groupsClaim === '') throw new ConfigError('--oidc-groups-claim must name a claim');
  if (lifetime < 5 * 60_000 || lifetime > 30 * 86_400_000) throw new ConfigError(`--session-lifetime must be between 5m and 30d, not "${f.string('session-lifetime')}"`);
  return {
    issuer: issuer.replace(/\/+$/, ''),
    clientId,
    clientSecret,
    groupsClaim,
    adminGroup: f.optional('oidc-admin-group'),
    providerName: f.optional('oidc-provider-name') ?? new URL(issuer).host,
    scopes,
    sessionLifetimeMs: lifetime,
  };
}

const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90m`, `12h`, `7d`, or seconds; ms. */
function parseDuration(raw: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(raw.trim());
  if (!m) throw new ConfigError(`--session-lifetime must be a duration such as 90m, 12h or 7d, not "${raw}"`);
  return Number(m[1]) * DURATION_UNITS[m[2] || 's']!;
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
  return readSecretFile('--admin-key-file', file);
}

/** A secret file's first line; refused when other users may read it. */
function readSecretFile(flag: string, file: string): string {
  let text: string;
  try {
    const mode = statSync(file).mode;
    if ((mode & 0o077) !== 0) {
      throw new ConfigError(`${flag} ${file} is readable by other users (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
    }
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${flag} ${file}: ${(err as Error).message}`);
  }
  return (text.split('\n')[0] ?? '').trim();
}

/** `--docker-subnet`: an IPv4 range a bridge can use (a /29 at least: its gateway and a container), as its network address; '' is none. */
function parseDockerSubnet(raw: string): string | null {
  if (raw === '') return null;
  const parsed = parseSubnet(raw, 29);
  if (typeof parsed === 'string') throw new ConfigError(`--docker-subnet ${parsed}`);
  return formatSubnet(parsed);
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
