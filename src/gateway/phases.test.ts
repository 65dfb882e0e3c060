import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { authenticatePhase, headersPhase, MAX_REQUEST_HEADERS, routePhase, targetPhase } from './phases.js';
import { testRoute } from '../../test/helpers/route.js';
import type { Route } from './routing-table.js';

const raw = (...names: string[]): string[] => names.flatMap((n) => [n, 'v']);

describe('headersPhase', () => {
  it('passes up to the limit, pseudo-headers not counted', () => {
    const names = Array.from({ length: MAX_REQUEST_HEADERS }, (_, i) => `x-${i}`);
    expect(headersPhase(raw(':method', ':path', ':authority', ':scheme', ...names)).ok).toBe(true);
  });

  it('answers 431 past the limit', () => {
    const r = headersPhase(raw(...Array.from({ length: MAX_REQUEST_HEADERS + 1 }, (_, i) => `x-${i}`)));
    expect(r.ok ? null : r.rejection).toMatchObject({ status: 431, code: 'headers_too_large' });
  });

  it.each([
    [['Host', 'host'], /more than one Host/],
    [['authorization', 'Authorization'], /more than one Authorization/],
  ])('answers 400 to %j', (names, message) => {
    const r = headersPhase(raw(...names));
    expect(r.ok ? null : r.rejection).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(r.ok ? '' : r.rejection.message).toMatch(message);
  });
});

describe('targetPhase', () => {
  it('passes origin-form targets unchanged', () => {
    expect(targetPhase('/v1/models?a=1', 'a.test')).toEqual({ ok: true, value: '/v1/models?a=1' });
  });

  it('turns an absolute-form target for the Host into origin form (port and case ignored)', () => {
    expect(targetPhase('https://A.test:443/v1/x?q=1', 'a.test')).toEqual({ ok: true, value: '/v1/x?q=1' });
  });

  it.each([
    ['https://b.test/v1/models', 'a.test'],
    ['https://b.test/v1/models', undefined],
    ['*', 'a.test'],
    ['ftp://a.test/x', 'a.test'],
    ['not a url', 'a.test'],
  ])('refuses %s with Host %s', (url, host) => {
    const r = targetPhase(url, host);
    expect(r.ok ? null : r.rejection).toMatchObject({ status: 400, code: 'invalid_request' });
  });
});

/** A routing table of three deployments under endpoints.test, as the phase reads it. */
function table(domain = 'endpoints.test') {
  const route = (name: string, protocol: Route['protocol'] = 'http'): Route => testRoute({ deploymentId: name.length, name, host: `${name}.${domain}`, protocol });
  const routes = [route('a'), route('bb'), route('rpc', 'grpc')];
  return {
    domain,
    lookup: (host: string | undefined) => routes.find((r) => host !== undefined && r.host === host.replace(/:\d+$/, '').toLowerCase()),
    lookupName: (name: string) => routes.find((r) => r.name === name),
  };
}

describe('routePhase', () => {
  const routed = (host: string | undefined, target: string, protocol: 'http' | 'grpc' = 'http') => {
    const r = routePhase(table(), host, target, protocol);
    return r.ok ? { to: r.value.route.name, path: r.value.path } : r.rejection;
  };

  it.each([
    // Host addresses: the path is the replica's, untouched, whatever it says.
    ['a.endpoints.test', '/v1/models', 'a', '/v1/models'],
    ['A.endpoints.test:8443', '/v1/models', 'a', '/v1/models'],
    ['a.endpoints.test', '/endpoints/bb/v1/models', 'a', '/endpoints/bb/v1/models'],
    ['a.endpoints.test:8443', '/endpoints/bb', 'a', '/endpoints/bb'],
    ['rpc.endpoints.test', '/inference.GRPCInferenceService/ModelInfer', 'rpc', '/inference.GRPCInferenceService/ModelInfer'],
    // Path addresses on localhost, IP literals and the bare domain: the prefix is stripped.
    ['localhost:8443', '/endpoints/bb/v1/chat/completions', 'bb', '/v1/chat/completions'],
    ['localhost', '/endpoints/a', 'a', '/'],
    ['127.0.0.1:8443', '/endpoints/a/v1/models?x=1', 'a', '/v1/models?x=1'],
    ['[::1]:8443', '/endpoints/bb/v1/models', 'bb', '/v1/models'],
    ['192.0.2.7', '/endpoints/bb/health', 'bb', '/health'],
    ['endpoints.test:8443', '/endpoints/a/v1/models', 'a', '/v1/models'],
  ])('%s %s → %s, %s', (host, target, to, path) => {
    expect(routed(host, target)).toEqual({ to, path });
  });

  it.each([
    // Another deployment's host, or an unknown one under the domain: never a path address.
    ['zz.endpoints.test', '/endpoints/a/v1/models', 404, /no endpoint is served at zz\.endpoints\.test/],
    ['example.com', '/endpoints/a/v1/models', 404, /no endpoint is served at example\.com/],
    [undefined, '/endpoints/a/v1/models', 404, /no Host header/],
    // A path host without a path address, or naming no deployment.
    ['localhost:8443', '/v1/models', 404, /outside \/endpoints\/: call https:\/\/localhost\/endpoints\/<name>\//],
    ['localhost:8443', '/endpoints/zz/v1/models', 404, /no endpoint is named zz/],
    // Shapes that could be read as another deployment by another hop: refused, not resolved.
    ['localhost:8443', '/endpoints/%61/v1/models', 400, /not an endpoint name/],
    ['localhost:8443', '/endpoints/a/../bb/v1/models', 400, /segment/],
    ['127.0.0.1', '/endpoints/a/%2e%2e/bb/v1/models', 400, /segment/],
    ['localhost', '/endpoints//a/v1/models', 400, /name the endpoint/],
    // gRPC: by host only, and a gRPC deployment is not reachable by path.
    ['localhost:8443', '/endpoints/rpc/v1/models', 404, /serves gRPC, which is addressed by host only: rpc\.endpoints\.test/],
  ])('%s %s → %s', (host, target, status, message) => {
    expect(routed(host, target)).toMatchObject({ status, message: expect.stringMatching(message) });
  });

  it('answers a gRPC call to a path host with where gRPC endpoints are', () => {
    for (const target of ['/inference.GRPCInferenceService/ModelInfer', '/endpoints/a/inference.GRPCInferenceService/ModelInfer']) {
      expect(routed('localhost:8443', target, 'grpc')).toMatchObject({ status: 404, message: 'gRPC endpoints are addressed by host only: call <name>.endpoints.test, not localhost' });
    }
    expect(routed('rpc.endpoints.test', '/inference.GRPCInferenceService/ModelInfer', 'grpc')).toMatchObject({ to: 'rpc' });
  });

  it('takes the bare domain as a path host for any domain, and localhost itself as a domain', () => {
    expect(routePhase(table('localhost'), 'localhost:8443', '/endpoints/a/v1', 'http')).toMatchObject({ ok: true, value: { path: '/v1' } });
    expect(routePhase(table('localhost'), 'a.localhost:8443', '/endpoints/bb/v1', 'http')).toMatchObject({ ok: true, value: { route: { name: 'a' }, path: '/endpoints/bb/v1' } });
    expect(routePhase(table('example.com'), 'example.com', '/endpoints/bb/v1', 'http')).toMatchObject({ ok: true, value: { route: { name: 'bb' } } });
  });

  it("challenges with the deployment's own host as realm, whichever address reached it", () => {
    const r = routePhase(table(), 'localhost:8443', '/endpoints/a/v1/models', 'http');
    const auth = authenticatePhase(r.ok ? r.value.route : (undefined as never), { authorization: undefined, certificateFingerprint: null });
    expect(auth.ok ? null : auth.rejection.headers).toEqual({ 'www-authenticate': 'Bearer realm="a.endpoints.test"' });
  });
});

describe('authenticatePhase', () => {
  const hash = (v: string) => createHash('sha256').update(v, 'utf8').digest('hex');
  const route = testRoute({
    tokenHash: hash('tok-secret-1'),
    tokenMaxPriority: 'standard',
    clientCertificates: new Map([
      ['aa01', 'sheddable'],
      ['bb02', null],
    ]),
  });
  const authed = (creds: { authorization?: string; certificateFingerprint?: string | null }) =>
    authenticatePhase(route, { authorization: creds.authorization, certificateFingerprint: creds.certificateFingerprint ?? null });

  it('passes any certificate the route accepts, with that certificate’s cap', () => {
    expect(authed({ certificateFingerprint: 'aa01' })).toEqual({ ok: true, value: { method: 'certificate', credential: 'cert:aa01', maxPriority: 'sheddable' } });
    expect(authed({ certificateFingerprint: 'bb02' })).toEqual({ ok: true, value: { method: 'certificate', credential: 'cert:bb02', maxPriority: null } });
  });

  it('passes the bound token with the token’s cap, also next to a certificate the route does not accept', () => {
    const value = { method: 'bearer', credential: `token:${hash('tok-secret-1')}`, maxPriority: 'standard' };
    expect(authed({ authorization: 'Bearer tok-secret-1' })).toEqual({ ok: true, value });
    expect(authed({ authorization: 'Bearer tok-secret-1', certificateFingerprint: 'cc03' })).toEqual({ ok: true, value });
    // A certificate it accepts wins over a dummy key (client libraries require one).
    expect(authed({ authorization: 'Bearer dummy', certificateFingerprint: 'aa01' })).toMatchObject({ ok: true, value: { method: 'certificate' } });
  });

  it('refuses a certificate it does not accept, and says what the endpoint takes when nothing is presented', () => {
    expect(authed({ certificateFingerprint: 'cc03' })).toMatchObject({ ok: false, rejection: { status: 401, authFailure: 'certificate_not_accepted' } });
    expect(authed({ authorization: 'Bearer wrong' })).toMatchObject({ ok: false, rejection: { status: 401, authFailure: 'invalid_token' } });
    const none = authed({});
    expect(none.ok ? '' : none.rejection.message).toBe('this endpoint requires Authorization: Bearer <token> or one of its client certificates');
    const bare = authenticatePhase(testRoute(), { authorization: undefined, certificateFingerprint: 'aa01' });
    expect(bare).toMatchObject({ ok: false, rejection: { authFailure: 'certificate_not_accepted' } });
  });
});
