import { describe, expect, it } from 'vitest';
import { ConfigError, parseServeConfig } from './config.js';

const parse = (argv: string[], env: Record<string, string> = {}) => parseServeConfig(argv, env, '/srv/app');

describe('serve config', () => {
  it('has the embedded defaults of DESIGN §2', () => {
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
      runtime: 'local',
      gpuQuota: 32,
      adminKey: null,
    });
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

  it('has generous upstream timeouts and c = 1.25 by default, all overridable', () => {
    expect(parse([])).toMatchObject({ upstreamHeadersTimeoutMs: 3_600_000, upstreamIdleTimeoutMs: 3_600_000, affinityLoadFactor: 1.25, tlsCert: null });
    const c = parse(['--upstream-idle-timeout', '0', '--affinity-load-factor', '1.5', '--tls-cert', 'w.crt', '--tls-key', 'w.key']);
    expect(c).toMatchObject({ upstreamIdleTimeoutMs: 0, affinityLoadFactor: 1.5, tlsCert: '/srv/app/w.crt', tlsKey: '/srv/app/w.key' });
  });
});
