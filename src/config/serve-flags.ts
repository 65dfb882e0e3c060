// Owns the table of `infergate serve` flags (with their INFERGATE_* environment overrides and
// embedded defaults) and the pure reading of its tunables — timeouts, caps, sizes, rates —
// into the option shapes of the parts they configure. Pure on purpose: the defaults object
// (defaults.ts) is this reading applied to an empty command line, so the gateway and the
// controller can import it without the file system, the host and the runtime that
// config.ts needs for the rest of a Config.

import { Flags, type FlagSpec, type Program } from '../flags/flags.js';

/** A configuration the service cannot start with; the message names the flag to fix. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Every flag, its env override and default — also the source of `infergate serve --help`. */
export const SERVE_OPTIONS: readonly FlagSpec[] = [
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
  { flag: 'upstream-connect-timeout', env: 'INFERGATE_UPSTREAM_CONNECT_TIMEOUT', default: '5', help: 'seconds to open a connection to a replica (HTTP and gRPC)' },
  { flag: 'grpc-first-message-timeout', env: 'INFERGATE_GRPC_FIRST_MESSAGE_TIMEOUT', default: '0', help: 'seconds a gRPC call may wait for the replica\'s first response message (0: no limit; the client\'s grpc-timeout bounds the call)' },
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
  { flag: 'registries', env: 'INFERGATE_REGISTRIES', default: '', help: "docker runtime: comma-separated registry hosts (host[:port], docker.io for Docker Hub) the daemon may pull from, * for any host that is not loopback or link-local; empty: * (a loopback or link-local registry is pulled from only when listed exactly; this service's own listeners never)" },
  { flag: 'docker-subnet', env: 'INFERGATE_DOCKER_SUBNET', default: '', help: "docker runtime: the IPv4 subnet (CIDR, e.g. 10.213.0.0/24) of this service's network infergate-<scope> (default: one from the daemon's default address pools)" },
  { flag: 'drain-on-stop', env: 'INFERGATE_DRAIN_ON_STOP', default: '', boolean: true, help: "docker runtime: drain and remove every replica when the service stops (default: containers keep running and serving, and the next start on the same data dir or store takes them back; the local runtime's replicas always stop with the service)" },
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
  { flag: 'replica-network', env: 'INFERGATE_REPLICA_NETWORK', default: 'auto', help: 'local runtime: pod (a network namespace per general replica and per orchestrated deployment, reached by this host only; refuse to start without), host (replicas share this host\'s network) or auto (pod when the service is root in the sandbox with iproute2, else host with a warning)' },
  { flag: 'replica-subnet', env: 'INFERGATE_REPLICA_SUBNET', default: '10.213.0.0/16', help: 'local runtime: the IPv4 range pods take their /30 links from (one per pod; services on one host share it, or use ranges that do not overlap)' },
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
  { flag: 'api-public-url', env: 'INFERGATE_API_PUBLIC_URL', default: '', help: "the control API's URL as browsers and the CLI reach it (behind a proxy or a DNS name); default: the address it listens on. People's sign-in redirects to <this>/auth/callback" },
  { flag: 'oidc-issuer', env: 'INFERGATE_OIDC_ISSUER', default: '', help: "people sign in through this OpenID Connect provider (its issuer URL, https; http only on loopback); default: service-account keys only" },
  { flag: 'oidc-client-id', env: 'INFERGATE_OIDC_CLIENT_ID', default: '', help: "this service's client id at the provider (a confidential client; redirect URI <api-public-url>/auth/callback)" },
  { flag: 'oidc-client-secret-file', env: 'INFERGATE_OIDC_CLIENT_SECRET_FILE', default: '', help: 'file holding the client secret (mode 0600), or set INFERGATE_OIDC_CLIENT_SECRET; never on the command line' },
  { flag: 'oidc-groups-claim', env: 'INFERGATE_OIDC_GROUPS_CLAIM', default: 'groups', help: 'the claim (ID token or userinfo) listing a person\'s groups: project members `group:<name>` match them' },
  { flag: 'oidc-admin-group', env: 'INFERGATE_OIDC_ADMIN_GROUP', default: '', help: 'members of this provider group are platform admins; default: none (admins use the admin key)' },
  { flag: 'oidc-provider-name', env: 'INFERGATE_OIDC_PROVIDER_NAME', default: '', help: 'the provider\'s name on the console\'s "Sign in with …" button; default: the issuer\'s host' },
  { flag: 'oidc-scopes', env: 'INFERGATE_OIDC_SCOPES', default: 'openid email profile offline_access', help: 'scopes asked for, space-separated (add groups for Dex; offline_access gives the refresh token the CLI\'s refresh needs)' },
  { flag: 'session-lifetime', env: 'INFERGATE_SESSION_LIFETIME', default: '12h', help: "how long a person's session lasts (the console's cookie, a CLI's session token): 5m to 30d, as 90m, 12h or 7d" },
];

export const SERVE: Program = { name: 'serve', flags: SERVE_OPTIONS, error: ConfigError };

/** Per listener: 0 turns a cap off. Timeouts in ms. */
export interface ConnectionLimitsConfig {
  tlsHandshakeTimeoutMs: number;
  keepAliveTimeoutMs: number;
  h2IdleTimeoutMs: number;
  headersTimeoutMs: number;
  gateway: { maxConnections: number; maxConnectionsPerClient: number };
  api: { maxConnections: number; maxConnectionsPerClient: number };
}

/** The tunables of a Config, as the flags give them (durations in ms). */
export interface Tunables {
  /** Longest wait for a replica's response headers, and longest silence in a body, in ms; 0 = none. */
  upstreamHeadersTimeoutMs: number;
  upstreamIdleTimeoutMs: number;
  /** Longest wait to open a connection to a replica (HTTP and gRPC), in ms. */
  upstreamConnectTimeoutMs: number;
  /** Longest wait for a gRPC replica's first response message, in ms; 0 = none (the client's grpc-timeout bounds the call). */
  grpcFirstMessageTimeoutMs: number;
  /** Bounded-load factor c of consistent hashing on X-Session-Id. */
  affinityLoadFactor: number;
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
  /** Connection limits of the gateway and the control API. */
  limits: ConnectionLimitsConfig;
  /** Request bodies at the gateway: longest silence, in ms, and the default size limit in bytes. */
  bodyIdleTimeoutMs: number;
  maxRequestBodyBytes: number;
  /** Authentication failures per second a client address gets before its 401s are held; 0: never held. */
  authFailureRate: number;
}

/** Reads the tunable flags, range-checked; config.ts and defaults.ts both read them here. */
export function readTunables(f: Flags): Tunables {
  const affinityLoadFactor = Number(f.string('affinity-load-factor'));
  if (!Number.isFinite(affinityLoadFactor) || affinityLoadFactor <= 1 || affinityLoadFactor > 10) {
    throw new ConfigError(`--affinity-load-factor must be a number above 1 and at most 10, not "${f.string('affinity-load-factor')}"`);
  }
  const seconds = (flag: string, min: number, max: number): number => f.integer(flag, min, max) * 1000;
  return {
    upstreamHeadersTimeoutMs: seconds('upstream-headers-timeout', 0, 86_400),
    upstreamIdleTimeoutMs: seconds('upstream-idle-timeout', 0, 86_400),
    upstreamConnectTimeoutMs: seconds('upstream-connect-timeout', 1, 600),
    grpcFirstMessageTimeoutMs: seconds('grpc-first-message-timeout', 0, 86_400),
    affinityLoadFactor,
    drainTimeoutMs: seconds('drain-timeout', 0, 3600),
    stopGraceMs: seconds('stop-grace', 0, 600),
    ...autoscaleWindows(f),
    scaleToZeroGraceMs: seconds('scale-to-zero-grace', 0, 86_400),
    activatorQueueSize: f.integer('activator-queue-size', 1, 1_000_000),
    activatorTimeoutMs: seconds('activator-timeout', 1, 86_400),
    rolloutSurge: f.integer('rollout-surge', 1, 100),
    rolloutDeadlineMs: seconds('rollout-deadline', 1, 86_400),
    // At least 3 s: renewed every second, a shorter lease would be lost to one slow store round trip.
    controllerLeaseTtlMs: seconds('controller-lease-ttl', 3, 600),
    limits: {
      tlsHandshakeTimeoutMs: seconds('tls-handshake-timeout', 1, 600),
      keepAliveTimeoutMs: seconds('keep-alive-timeout', 1, 3600),
      h2IdleTimeoutMs: seconds('h2-idle-timeout', 1, 86_400),
      headersTimeoutMs: seconds('request-headers-timeout', 1, 600),
      gateway: {
        maxConnections: f.integer('max-connections', 0, 10_000_000),
        maxConnectionsPerClient: f.integer('max-connections-per-client', 0, 10_000_000),
      },
      api: {
        maxConnections: f.integer('api-max-connections', 0, 10_000_000),
        maxConnectionsPerClient: f.integer('api-max-connections-per-client', 0, 10_000_000),
      },
    },
    bodyIdleTimeoutMs: seconds('body-idle-timeout', 1, 3600),
    maxRequestBodyBytes: f.size('max-request-body'),
    authFailureRate: f.integer('auth-failure-rate', 0, 1_000_000),
  };
}

function autoscaleWindows(f: Flags): { autoscaleStableMs: number; autoscalePanicMs: number } {
  const stable = f.integer('autoscale-stable-window', 1, 3600);
  const panic = f.integer('autoscale-panic-window', 1, 3600);
  if (panic > stable) {
    throw new ConfigError(`--autoscale-panic-window (${panic}) must not be longer than --autoscale-stable-window (${stable})`);
  }
  return { autoscaleStableMs: stable * 1000, autoscalePanicMs: panic * 1000 };
}

/**
 * The options of the gateway, the control API's listener, the controller and the autoscaler,
 * in their own shapes, for a Config's tunables. The settings no flag sets are written here,
 * once: every part reads them from the defaults object, and `serve` passes them the same way.
 */
export function settingsOf(t: Tunables) {
  const authRate = t.authFailureRate;
  return {
    gateway: {
      upstream: {
        headersMs: t.upstreamHeadersTimeoutMs,
        idleMs: t.upstreamIdleTimeoutMs,
        connectMs: t.upstreamConnectTimeoutMs,
        firstMessageMs: t.grpcFirstMessageTimeoutMs,
      },
      clientTimeouts: {
        tlsHandshakeMs: t.limits.tlsHandshakeTimeoutMs,
        keepAliveMs: t.limits.keepAliveTimeoutMs,
        h2IdleMs: t.limits.h2IdleTimeoutMs,
        headersMs: t.limits.headersTimeoutMs,
      },
      connections: { maxConnections: t.limits.gateway.maxConnections, maxConnectionsPerClient: t.limits.gateway.maxConnectionsPerClient },
      body: { maxBytes: t.maxRequestBodyBytes, idleMs: t.bodyIdleTimeoutMs },
      activator: { queueSize: t.activatorQueueSize, timeoutMs: t.activatorTimeoutMs },
      // A burst of 4 s of failures absorbs a misconfigured client's retries; the held answers
      // per address are bounded so a flood cannot pile up timers (none held when off).
      authFailures: { ratePerSecond: authRate, burst: 4 * authRate, delayMs: 1000, maxHeld: authRate === 0 ? 0 : 512 },
      loadFactor: t.affinityLoadFactor,
      /** Passive health: failures in a row that eject a replica, and the ejection period (doubled per repeat, capped). */
      ejection: { threshold: 3, baseMs: 10_000, maxMs: 300_000 },
      /** How often a gateway on a shared store publishes its load, and how long a report counts without a newer one. */
      loadReports: { intervalMs: 1000, ttlMs: 3000 },
      /** Engine metrics of prefix_aware replicas: how often scraped, the longest scrape, and how long a reading counts. */
      scrape: { intervalMs: 1000, timeoutMs: 500, freshMs: 3000 },
    },
    api: {
      connections: { maxConnections: t.limits.api.maxConnections, maxConnectionsPerClient: t.limits.api.maxConnectionsPerClient },
      timeouts: { headersMs: t.limits.headersTimeoutMs, keepAliveMs: t.limits.keepAliveTimeoutMs, tlsHandshakeMs: t.limits.tlsHandshakeTimeoutMs },
    },
    controller: {
      drainTimeoutMs: t.drainTimeoutMs,
      stopGraceMs: t.stopGraceMs,
      rolloutSurge: t.rolloutSurge,
      rolloutDeadlineMs: t.rolloutDeadlineMs,
      leaseTtlMs: t.controllerLeaseTtlMs,
      /** A reconcile pass (and a lease renewal) at least this often. */
      tickMs: 1000,
      /** How long routing tables in this process take to drop a draining replica before in-flight counts are trusted. */
      drainSettleMs: 200,
      /** How often the store is scanned for usage rows of deployments deleted unseen. */
      leftoverScanMs: 60_000,
    },
    autoscaler: { stableMs: t.autoscaleStableMs, panicMs: t.autoscalePanicMs, scaleToZeroGraceMs: t.scaleToZeroGraceMs },
  };
}

export type Settings = ReturnType<typeof settingsOf>;
