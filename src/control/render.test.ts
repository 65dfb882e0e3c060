// Unit tests of the endpoint addresses a deployment view carries: the host address as before,
// and the path address's base URL — on localhost for a `.localhost` domain, on the bare domain
// otherwise, the port only when it is not 443, none for gRPC.

import { describe, expect, it } from 'vitest';
import { endpointPathUrl, endpointUrl } from './render.js';

describe('endpoint addresses', () => {
  it.each([
    ['endpoints.localhost', 8443, 'http', 'https://localhost:8443/endpoints/chat'],
    ['endpoints.localhost', 443, 'http', 'https://localhost/endpoints/chat'],
    ['localhost', 8443, 'http', 'https://localhost:8443/endpoints/chat'],
    ['Infer.Localhost', 443, 'http', 'https://localhost/endpoints/chat'],
    ['infer.example.com', 443, 'http', 'https://infer.example.com/endpoints/chat'],
    ['infer.example.com', 8443, 'http', 'https://infer.example.com:8443/endpoints/chat'],
    ['localhost.example.com', 443, 'http', 'https://localhost.example.com/endpoints/chat'],
    ['endpoints.localhost', 8443, 'grpc', null],
  ] as const)('%s:%s (%s) → %s', (domain, port, protocol, expected) => {
    expect(endpointPathUrl('chat', { domain, port }, protocol)).toBe(expected);
  });

  it('keeps the host address as it was', () => {
    expect(endpointUrl('chat', { domain: 'endpoints.localhost', port: 8443 })).toBe('chat.endpoints.localhost:8443');
    expect(endpointUrl('chat', { domain: 'endpoints.localhost', port: 443 })).toBe('chat.endpoints.localhost');
  });
});
