import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseServeConfig } from './config.js';

const parse = (argv: string[], env: Record<string, string> = {}) => parseServeConfig(argv, env, '/srv/app');

describe('serve config', () => {
  it('has the embedded defaults', () => {
    const c = parse([]);
    expect(c).toMatchObject({
      role: 'all',
      gatewayHost: '0.0.0.0',
      gatewayPort: 443,
      apiHost: '127.0.0.1',
      apiPort: 8080,
      metricsPort: 9464,
      domain: 'endpoints.localhost',
      dataDir: '/srv/app/data',
      certsDir: '/srv/app/certs',
      redisUrl: null,
      runtime: 'auto',
      gpus: null,
      gpuRequest: 'nvidia',
      engineImage: null,
      dockerSubnet: null,
      drainOnStop: false,
      gpuQuota: 32,
      adminKey: null,
    });
  });

  it('reads --registries (INFERGATE_REGISTRIES): hosts normalised, * kept, empty by default; a bad entry stops the start naming it', () => {
    expect(parse([]).registries).toEqual([]);
    expect(parse(['--registries', '127.0.0.1:5000, Index.Docker.IO ,*']).registries).toEqual(['127.0.0.1:5000', 'docker.io', '*']);
    expect(parse([], { INFERGATE_REGISTRIES: 'registry.example.com:5000' }).registries).toEqual(['registry.example.com:5000']);
    expect(() => parse(['--registries', 'nvcr.io,https://x.example'])).toThrow(ConfigError);
    expect(() => parse(['--registries', 'nvcr.io,https://x.example'])).toThrow(/--registries entry "https:\/\/x\.example" must be/);
  });

  it('takes every INFERGATE_* override, and a flag wins over the environment', () => {
    const env = {
      INFERGATE_GATEWAY_PORT: '8443',
      INFERGATE_API_PORT: '18080',
      INFERGATE_METRICS_PORT: '19464',
      INFERGATE_DATA_DIR: '/var/lib/ig/data',
      INFERGATE_CERTS_DIR: 'certs2',
      INFERGATE_DOMAIN: 'Infer.Example.COM',
      INFERGATE_ADMIN_KEY: 'igk_0123456789abcdef',
      INFERGATE_REDIS_URL: 'redis://127.0.0.1:6390',
      INFERGATE_GPU_QUOTA: '64',
    };
    const c = parse([], env);
    expect(c).toMatchObject({
      gatewayPort: 8443,
      apiPort: 18080,
      metricsPort: 19464,
      dataDir: '/var/lib/ig/data',
      certsDir: '/srv/app/certs2',
      domain: 'infer.example.com',
      adminKey: 'igk_0123456789abcdef',
      redisUrl: 'redis://127.0.0.1:6390',
      gpuQuota: 64,
    });
    expect(parse(['--gateway-port', '9443'], env).gatewayPort).toBe(9443);
  });

  it.each([
    [['--api-port', '80a'], /--api-port must be a whole number/],
    [['--gateway-port', '70000'], /--gateway-port must be between 0 and 65535/],
    [['--role', 'everything'], /--role must be all, control or gateway/],
    [['--log-level', 'loud'], /--log-level must be fatal, error, warn, info, debug, trace or silent, not "loud"/],
    [['--domain', 'bad_domain!'], /--domain "bad_domain!" is not a valid DNS name/],
    [['--api-host', '0.0.0.0'], /not a loopback address.*--api-tls-cert/],
    [['--api-tls-cert', 'a.pem'], /must be given together/],
    [['--redis', 'localhost:6379'], /redis:\/\//],
    [['--bogus'], /bogus/],
    [['--redis-prefix', 'has space'], /--redis-prefix must be/],
    [['--tls-cert', 'c.pem'], /--tls-cert and --tls-key/],
    [['--affinity-load-factor', '1'], /--affinity-load-factor must be/],
    [['--upstream-idle-timeout', '1h'], /--upstream-idle-timeout must be/],
  ])('refuses %j with a message naming the flag', (argv, message) => {
    expect(() => parse(argv)).toThrow(ConfigError);
    expect(() => parse(argv)).toThrow(message);
  });

  it('refuses a short INFERGATE_ADMIN_KEY', () => {
    expect(() => parse([], { INFERGATE_ADMIN_KEY: 'short' })).toThrow(/at least 16/);
  });

  it('allows a non-loopback control API with TLS', () => {
    const c = parse(['--api-host', '0.0.0.0', '--api-tls-cert', 'c.pem', '--api-tls-key', 'k.pem']);
    expect(c.apiTlsCert).toBe('/srv/app/c.pem');
  });

  it('lets a standby take over 10 s after the leader stops renewing, settable down to 3 s', () => {
    expect(parse([]).controllerLeaseTtlMs).toBe(10_000);
    expect(parse(['--controller-lease-ttl', '4']).controllerLeaseTtlMs).toBe(4_000);
    expect(parse([], { INFERGATE_CONTROLLER_LEASE_TTL: '30' }).controllerLeaseTtlMs).toBe(30_000);
    expect(() => parse(['--controller-lease-ttl', '1'])).toThrow(ConfigError);
  });

  it('picks the runtime (auto by default, env or flag), this host\'s GPUs and how containers ask for them, with one-line errors', () => {
    expect(parse(['--runtime', 'docker']).runtime).toBe('docker');
    expect(parse([], { INFERGATE_RUNTIME: 'local' }).runtime).toBe('local');
    expect(() => parse(['--runtime', 'kubernetes'])).toThrow(/--runtime must be one of local, docker or auto|--runtime/);
    expect(parse(['--gpus', '0, 1,2']).gpus).toEqual(['0', '1', '2']);
    expect(() => parse(['--gpus', '0,0'])).toThrow(/--gpus/);
    expect(parse(['--gpu-request', 'cdi']).gpuRequest).toBe('cdi');
    expect(() => parse(['--gpu-request', 'amd'])).toThrow(/--gpu-request/);
    expect(parse(['--engine-image', 'registry.example.com/infergate/engine:1']).engineImage).toBe('registry.example.com/infergate/engine:1');
    expect(parse(['--drain-on-stop']).drainOnStop).toBe(true);
    expect(parse([], { INFERGATE_DRAIN_ON_STOP: '1' }).drainOnStop).toBe(true);
  });

  it("takes the Docker network's subnet as an IPv4 network address in CIDR form, by flag or environment", () => {
    expect(parse(['--docker-subnet', '10.213.0.0/24']).dockerSubnet).toBe('10.213.0.0/24');
    expect(parse([], { INFERGATE_DOCKER_SUBNET: '172.30.0.0/16' }).dockerSubnet).toBe('172.30.0.0/16');
    expect(() => parse(['--docker-subnet', '10.213.0.7/24'])).toThrow('--docker-subnet "10.213.0.7/24" has host bits set: the range starts at 10.213.0.0/24');
    expect(() => parse(['--docker-subnet', '10.213.0.0/30'])).toThrow('--docker-subnet must be between a /8 and a /29, not a /30');
    for (const bad of ['10.213.0.0', '10.213.0.0/4', '300.1.0.0/16', 'fd00::/64', '127.0.0.0/8']) {
      expect(() => parse(['--docker-subnet', bad]), bad).toThrow(/^--docker-subnet (must be|".*" is not)/);
    }
  });

  it('runs one gateway worker per core with Redis, one with the file store, and refuses workers that could not share state', () => {
    const cores = Math.min(os.availableParallelism(), 64);
    expect(parse([]).gatewayWorkers).toBe(1);
    expect(parse(['--redis', 'redis://127.0.0.1:6379']).gatewayWorkers).toBe(cores);
    expect(parse(['--redis', 'redis://127.0.0.1:6379', '--role', 'control']).gatewayWorkers).toBe(1);
    expect(parse(['--redis', 'redis://127.0.0.1:6379', '--gateway-workers', '3']).gatewayWorkers).toBe(3);
    expect(parse(['--redis', 'redis://127.0.0.1:6379'], { INFERGATE_GATEWAY_WORKERS: '1' }).gatewayWorkers).toBe(1);
    expect(() => parse(['--gateway-workers', '2'])).toThrow(/needs --redis/);
    expect(parse(['--gateway-workers', '1']).gatewayWorkers).toBe(1);
    expect(() => parse(['--redis', 'redis://127.0.0.1:6379', '--role', 'control', '--gateway-workers', '2'])).toThrow(/runs no gateway/);
    expect(() => parse(['--redis', 'redis://127.0.0.1:6379', '--gateway-workers', '0'])).toThrow(/between 1 and 64/);
    expect(() => parse(['--redis', 'redis://127.0.0.1:6379', '--gateway-workers', 'many'])).toThrow(/auto or a whole number/);
  });

  it('has generous upstream timeouts and c = 1.25 by default, all overridable', () => {
    expect(parse([])).toMatchObject({ upstreamHeadersTimeoutMs: 3_600_000, upstreamIdleTimeoutMs: 3_600_000, affinityLoadFactor: 1.25, tlsCert: null });
    const c = parse(['--upstream-idle-timeout', '0', '--affinity-load-factor', '1.5', '--tls-cert', 'w.crt', '--tls-key', 'w.key']);
    expect(c).toMatchObject({ upstreamIdleTimeoutMs: 0, affinityLoadFactor: 1.5, tlsCert: '/srv/app/w.crt', tlsKey: '/srv/app/w.key' });
  });

  it('opens replica connections within 5 s and leaves a gRPC call\'s first message unbounded by default, both settable', () => {
    expect(parse([])).toMatchObject({ upstreamConnectTimeoutMs: 5_000, grpcFirstMessageTimeoutMs: 0 });
    expect(parse(['--upstream-connect-timeout', '2', '--grpc-first-message-timeout', '90'])).toMatchObject({ upstreamConnectTimeoutMs: 2_000, grpcFirstMessageTimeoutMs: 90_000 });
    expect(parse([], { INFERGATE_UPSTREAM_CONNECT_TIMEOUT: '7', INFERGATE_GRPC_FIRST_MESSAGE_TIMEOUT: '30' })).toMatchObject({ upstreamConnectTimeoutMs: 7_000, grpcFirstMessageTimeoutMs: 30_000 });
    expect(() => parse(['--upstream-connect-timeout', '0'])).toThrow(/--upstream-connect-timeout must be between 1 and 600/);
    expect(() => parse(['--grpc-first-message-timeout', '1.5'])).toThrow(/--grpc-first-message-timeout must be a whole number/);
  });

  it('has the M7 hardening defaults: sandbox auto, host commands admin-only, bounded connections and bodies', () => {
    expect(parse([])).toMatchObject({
      sandbox: 'auto',
      sandboxUser: { uid: 65534, gid: 65534 },
      sandboxBinds: [],
      allowUnsandboxedHostCommands: false,
      allowMemberHostCommands: false,
      limits: {
        tlsHandshakeTimeoutMs: 10_000,
        keepAliveTimeoutMs: 65_000,
        h2IdleTimeoutMs: 120_000,
        headersTimeoutMs: 30_000,
        gateway: { maxConnections: 8192, maxConnectionsPerClient: 256 },
        api: { maxConnections: 512, maxConnectionsPerClient: 64 },
      },
      bodyIdleTimeoutMs: 30_000,
      maxRequestBodyBytes: 16 * 1024 * 1024,
      authFailureRate: 50,
    });
  });

  it('takes switches as flags or as 1/true/yes in the environment', () => {
    expect(parse(['--allow-member-host-commands']).allowMemberHostCommands).toBe(true);
    expect(parse([], { INFERGATE_ALLOW_UNSANDBOXED_HOST_COMMANDS: 'true' }).allowUnsandboxedHostCommands).toBe(true);
    expect(parse([], { INFERGATE_ALLOW_UNSANDBOXED_HOST_COMMANDS: '0' }).allowUnsandboxedHostCommands).toBe(false);
    expect(() => parse([], { INFERGATE_ALLOW_MEMBER_HOST_COMMANDS: 'maybe' })).toThrow(/INFERGATE_ALLOW_MEMBER_HOST_COMMANDS must be 1, true or yes/);
  });

  it.each([
    [['--sandbox', 'docker'], /--sandbox must be auto, bwrap or none/],
    [['--sandbox-user', '0:0'], /unprivileged/],
    [['--sandbox-user', 'nobody'], /uid:gid in numbers/],
    [['--max-request-body', '16 parsecs'], /--max-request-body must be a size/],
    [['--max-request-body', '12'], /between 1KiB and 64GiB/],
    [['--tls-handshake-timeout', '0'], /--tls-handshake-timeout must be between 1 and 600/],
  ])('refuses %j', (argv, message) => {
    expect(() => parse(argv)).toThrow(message);
  });

  it('reads sizes in bytes, binary and decimal units', () => {
    expect(parse(['--max-request-body', '512KiB']).maxRequestBodyBytes).toBe(524_288);
    expect(parse(['--max-request-body', '2GiB']).maxRequestBodyBytes).toBe(2 * 1024 ** 3);
    expect(parse(['--max-request-body', '1048576']).maxRequestBodyBytes).toBe(1_048_576);
    expect(parse(['--max-request-body', '10MB']).maxRequestBodyBytes).toBe(10_000_000);
  });

  it('reads the admin key from a 0600 file and refuses one others can read', async () => {
    const { mkdtempSync, writeFileSync, chmodSync } = await import('node:fs');
    const os = await import('node:os');
    const dir = mkdtempSync(`${os.tmpdir()}/ig-key-`);
    writeFileSync(`${dir}/admin.key`, 'igk_from_a_file_0123456789\n', { mode: 0o600 });
    const c = parseServeConfig(['--admin-key-file', `${dir}/admin.key`], {}, dir);
    expect(c).toMatchObject({ adminKey: 'igk_from_a_file_0123456789', adminKeyFile: `${dir}/admin.key` });
    chmodSync(`${dir}/admin.key`, 0o644);
    expect(() => parseServeConfig(['--admin-key-file', `${dir}/admin.key`], {}, dir)).toThrow(/readable by other users.*chmod 600/);
    chmodSync(`${dir}/admin.key`, 0o600);
    expect(() => parseServeConfig(['--admin-key-file', `${dir}/admin.key`], { INFERGATE_ADMIN_KEY: 'x'.repeat(20) }, dir)).toThrow(/not both/);
  });

  it('signs people in only when --oidc-issuer is given, with the client secret from a 0600 file or the environment, never a flag', async () => {
    const { mkdtempSync, writeFileSync, chmodSync, rmSync } = await import('node:fs');
    expect(parse([]).oidc).toBeNull();
    const env = { INFERGATE_OIDC_CLIENT_SECRET: 'from-the-environment' };
    const c = parse(['--oidc-issuer', 'https://id.example.com/realms/ml/', '--oidc-client-id', 'infergate', '--oidc-admin-group', 'platform'], env);
    expect(c.oidc).toEqual({
      issuer: 'https://id.example.com/realms/ml',
      clientId: 'infergate',
      clientSecret: 'from-the-environment',
      groupsClaim: 'groups',
      adminGroup: 'platform',
      providerName: 'id.example.com',
      scopes: ['openid', 'email', 'profile', 'offline_access'],
      sessionLifetimeMs: 12 * 3600_000,
    });
    const tuned = parse(['--oidc-issuer', 'http://127.0.0.1:5556/dex', '--oidc-client-id', 'ig', '--oidc-groups-claim', 'roles', '--oidc-provider-name', 'Dex', '--oidc-scopes', 'email groups', '--session-lifetime', '90m', '--api-public-url', 'https://infergate.example.com/'], env);
    expect(tuned.oidc).toMatchObject({ groupsClaim: 'roles', providerName: 'Dex', scopes: ['openid', 'email', 'groups'], sessionLifetimeMs: 90 * 60_000 });
    expect(tuned.apiPublicUrl).toBe('https://infergate.example.com');

    const dir = mkdtempSync(`${os.tmpdir()}/ig-oidc-`);
    writeFileSync(`${dir}/secret`, 'from-a-file\n', { mode: 0o600 });
    expect(parseServeConfig(['--oidc-issuer', 'https://id.example.com', '--oidc-client-id', 'ig', '--oidc-client-secret-file', 'secret'], {}, dir).oidc?.clientSecret).toBe('from-a-file');
    chmodSync(`${dir}/secret`, 0o644);
    expect(() => parseServeConfig(['--oidc-issuer', 'https://id.example.com', '--oidc-client-id', 'ig', '--oidc-client-secret-file', 'secret'], {}, dir)).toThrow(/--oidc-client-secret-file .* readable by other users/);
    chmodSync(`${dir}/secret`, 0o600);
    expect(() => parseServeConfig(['--oidc-issuer', 'https://id.example.com', '--oidc-client-id', 'ig', '--oidc-client-secret-file', 'secret'], env, dir)).toThrow(/not both/);
    rmSync(dir, { recursive: true, force: true });
    // There is no flag that takes the secret itself: it would show in ps.
    expect(() => parse(['--oidc-client-secret', 'x'])).toThrow(ConfigError);
  });

  it('refuses an incomplete or unsafe identity provider setting, naming the flag', () => {
    const env = { INFERGATE_OIDC_CLIENT_SECRET: 's' };
    expect(() => parse(['--oidc-issuer', 'https://id.example.com'], env)).toThrow(/--oidc-client-id/);
    expect(() => parse(['--oidc-issuer', 'https://id.example.com', '--oidc-client-id', 'ig'])).toThrow(/client secret/);
    expect(() => parse(['--oidc-client-id', 'ig'])).toThrow(/need --oidc-issuer/);
    expect(() => parse(['--oidc-issuer', 'http://id.example.com', '--oidc-client-id', 'ig'], env)).toThrow(/https/);
    expect(() => parse(['--oidc-issuer', 'https://id.example.com', '--oidc-client-id', 'ig', '--session-lifetime', '1m'], env)).toThrow(/--session-lifetime/);
    expect(() => parse(['--oidc-issuer', 'https://id.example.com', '--oidc-client-id', 'ig', '--session-lifetime', 'forever'], env)).toThrow(/--session-lifetime/);
    expect(() => parse(['--api-public-url', 'ftp://x'])).toThrow(/--api-public-url/);
    expect(() => parse(['--oidc-issuer', 'https://id.example.com', '--oidc-client-id', 'ig', '--api-host', '0.0.0.0', '--api-tls-cert', 'c', '--api-tls-key', 'k'], env)).toThrow(/--api-public-url/);
  });
});
