// Unit tests of the gateway's start-up banner: both endpoint addresses, and why the path one
// is there (no wildcard DNS for *.localhost in getaddrinfo; one record rather than a wildcard).

import { describe, expect, it } from 'vitest';
import { parseServeConfig } from '../config/config.js';
import { gatewayBanner } from './gateway-role.js';

const config = (...argv: string[]) => parseServeConfig(argv, {}, '/srv/infergate');

describe('gatewayBanner', () => {
  it('names the host address and, for SDKs without *.localhost DNS, the path address', () => {
    const [, endpoints] = gatewayBanner(config('--gateway-port', '8443'), 8443, false);
    expect(endpoints).toBe(
      'infergate: endpoint domain endpoints.localhost; endpoints at https://<name>.endpoints.localhost:8443/ and, for SDKs and hosts without *.localhost DNS, https://localhost:8443/endpoints/<name>/ (HTTP; gRPC by host only)',
    );
  });

  it('puts the path address on the bare domain behind a real domain, and says what an operator certificate must cover', () => {
    const [, platform] = gatewayBanner(config('--domain', 'infer.example.com'), 443, false);
    expect(platform).toContain('endpoints at https://<name>.infer.example.com/ and, with one DNS record for infer.example.com rather than a wildcard, https://infer.example.com/endpoints/<name>/');
    const [, operator] = gatewayBanner(config('--domain', 'infer.example.com', '--tls-cert', '/etc/c.pem', '--tls-key', '/etc/k.pem'), 443, true);
    expect(operator).toContain('https://infer.example.com/endpoints/<name>/ (where /etc/c.pem covers infer.example.com)');
  });
});
