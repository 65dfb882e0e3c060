// Unit tests of the gateway's pure request phases: tables of inputs and the verdict each must
// get, so breaking one rule fails its row.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { admitPhase, authenticatePhase, headersPhase, MAX_REQUEST_HEADERS, pausedPhase, rateLimitPhase, routePhase, targetPhase, type PhaseResult } from './phases.js';
import { testRoute } from '../../test/helpers/route.js';
import type { Route } from './routing-table.js';
import { addressName, endpointHost } from '../domain/endpoint-address.js';

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

/** A routing table of three default-project deployments and project team-a's `a` under endpoints.test, as the phase reads it. */
function table(domain = 'endpoints.test') {
  const route = (name: string, protocol: Route['protocol'] = 'http', project = 'default'): Route =>
    testRoute({ deploymentId: name.length + project.length, name: addressName(name, project), project, host: endpointHost(name, domain, project), protocol });
  const routes = [route('a'), route('bb'), route('rpc', 'grpc'), route('a', 'http', 'team-a')];
  return {
    domain,
    lookup: (host: string | undefined) => routes.find((r) => host !== undefined && r.host === host.replace(/:\d+$/, '').toLowerCase()),
    lookupName: (name: string, project = 'default') => routes.find((r) => r.name === addressName(name, project)),
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
    // Another project's deployment of the same name: its own host and path only.
    ['a.team-a.endpoints.test', '/v1/models', 'a.team-a', '/v1/models'],
    ['localhost:8443', '/endpoints/a.team-a/v1/models', 'a.team-a', '/v1/models'],
    // The default project named explicitly is the default project.
    ['localhost:8443', '/endpoints/a.default/v1/models', 'a', '/v1/models'],
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
    ['localhost:8443', '/endpoints/zz/v1/models', 404, /no endpoint is named zz \(\/endpoints\/zz\/\)/],
    ['localhost:8443', '/endpoints/bb.team-a/v1/models', 404, /no endpoint is named bb in project team-a \(\/endpoints\/bb\.team-a\/\)/],
    ['localhost:8443', '/endpoints/a.team-b/v1/models', 404, /no endpoint is named a in project team-b/],
    ['localhost:8443', '/endpoints/a.team-a.x/v1/models', 400, /not an endpoint name/],
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
      expect(routed('localhost:8443', target, 'grpc')).toMatchObject({
        status: 404,
        message: 'gRPC endpoints are addressed by host only: call <name>.endpoints.test (<name>.<project>.endpoints.test outside the default project), not localhost',
      });
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

/** The rejection's status and code, or 'pass': one word per verdict for the tables below. */
const verdict = <T>(r: PhaseResult<T>): string => (r.ok ? 'pass' : `${r.rejection.status} ${r.rejection.code}`);

describe('headersPhase: counts', () => {
  it.each([
    [raw('Host', 'Authorization', 'content-type'), 'pass'],
    [raw('HOST', 'x-a', 'hoST'), '400 invalid_request'],
    [raw('AUTHORIZATION', 'authorization'), '400 invalid_request'],
    // Same length as the names it looks for, not the names: counted as ordinary fields.
    [raw('hos', 'hostx', 'authorizatio', 'authorizations'), 'pass'],
    [raw(':authority', 'host'), 'pass'],
    [raw(...Array.from({ length: MAX_REQUEST_HEADERS }, (_, i) => `x-${i}`), ':path'), 'pass'],
    [raw(...Array.from({ length: MAX_REQUEST_HEADERS + 1 }, (_, i) => `x-${i}`), 'host', 'host'), '431 headers_too_large'],
  ])('%j → %s', (headers, expected) => {
    expect(verdict(headersPhase(headers))).toBe(expected);
  });
});

describe('authenticatePhase: the Authorization header', () => {
  const hash = (v: string) => createHash('sha256').update(v, 'utf8').digest('hex');
  const route = testRoute({ tokenHash: hash('tok-1') });
  it.each([
    ['Bearer tok-1', 'pass'],
    ['bearer tok-1', 'pass'],
    ['BEARER\ttok-1 ', 'pass'],
    ['Bearer  tok-1', 'pass'],
    ['Bearer tok-1 extra', '401 unauthenticated'],
    ['Bearertok-1', '401 unauthenticated'],
    ['Basic tok-1', '401 unauthenticated'],
    ['tok-1', '401 unauthenticated'],
    ['Bearer tok-2', '401 unauthenticated'],
    ['Bearer tok-1x', '401 unauthenticated'],
    ['Bearer ', '401 unauthenticated'],
  ])('%j → %s', (authorization, expected) => {
    expect(verdict(authenticatePhase(route, { authorization, certificateFingerprint: null }))).toBe(expected);
  });

  it('says invalid_token only for a bearer token it could read; a malformed header counts as none presented', () => {
    const reason = (authorization: string) => {
      const r = authenticatePhase(route, { authorization, certificateFingerprint: null });
      return r.ok ? null : r.rejection.authFailure;
    };
    expect(reason('Bearer wrong')).toBe('invalid_token');
    expect(reason('Basic dXNlcjpwdw==')).toBe('missing_credential');
  });

  it('never passes a token on a route with none bound, and says no credential is bound', () => {
    const r = authenticatePhase(testRoute({ tokenHash: null }), { authorization: 'Bearer anything', certificateFingerprint: null });
    expect(verdict(r)).toBe('401 unauthenticated');
    const none = authenticatePhase(testRoute(), { authorization: undefined, certificateFingerprint: null });
    expect(none.ok ? '' : none.rejection.message).toBe('this endpoint requires a credential, and none is bound to it');
  });

  it('challenges with the route host, and names the invalid token in the challenge', () => {
    const r = authenticatePhase(route, { authorization: 'Bearer wrong', certificateFingerprint: null });
    expect(r.ok ? null : r.rejection.headers).toEqual({ 'www-authenticate': 'Bearer realm="demo.test", error="invalid_token"' });
  });
});

describe('rateLimitPhase', () => {
  it.each([
    [{ ok: true } as const, 'pass', undefined],
    [{ ok: false, limit: 'requests', retryAfterSeconds: 3, message: 'over 10 requests per minute' } as const, '429 rate_limited', '3'],
    [{ ok: false, limit: 'tokens', retryAfterSeconds: 1, message: 'over 1000 tokens per minute' } as const, '429 rate_limited', '1'],
  ])('%j → %s', (decision, expected, retryAfter) => {
    const r = rateLimitPhase(decision);
    expect(verdict(r)).toBe(expected);
    if (!r.ok) {
      expect(r.rejection.headers).toEqual({ 'retry-after': retryAfter });
      expect(r.rejection.message).toBe(decision.ok ? '' : decision.message);
    }
  });
});

describe('pausedPhase and admitPhase', () => {
  const one = [{ id: 1, address: '127.0.0.1:1' }];
  it.each([
    ['ready with a replica', testRoute({ replicas: one }), 'pass', 'pass'],
    ['paused with a replica', testRoute({ paused: true, replicas: one }), '503 unavailable', '503 unavailable'],
    ['paused with none', testRoute({ paused: true }), '503 unavailable', '503 unavailable'],
    ['not paused, no replica', testRoute({ status: 'pending' }), 'pass', '503 unavailable'],
    ['a tag whose revision has no replica', testRoute({ tag: { name: 'canary', revision: 3 } }), 'pass', '503 unavailable'],
  ])('%s → paused %s, admit %s', (_what, route, paused, admitted) => {
    expect(verdict(pausedPhase(route))).toBe(paused);
    expect(verdict(admitPhase(route))).toBe(admitted);
  });

  it('admits to the ready replicas themselves', () => {
    const route = testRoute({ replicas: one });
    expect(admitPhase(route)).toEqual({ ok: true, value: route.replicas });
  });

  it('says which: paused (no retry hint), not ready (with its status), or the tag and its revision', () => {
    const message = (route: Parameters<typeof admitPhase>[0]) => {
      const r = admitPhase(route);
      return r.ok ? null : { message: r.rejection.message, headers: r.rejection.headers };
    };
    expect(message(testRoute({ paused: true, replicas: one }))).toEqual({ message: 'deployment demo is paused; resume it to serve requests', headers: undefined });
    expect(message(testRoute({ status: 'pending' }))).toEqual({ message: 'deployment demo is not ready (pending): no replica is ready yet', headers: { 'retry-after': '5' } });
    expect(message(testRoute({ tag: { name: 'canary', revision: 3 } }))?.message).toMatch(/^tag canary of deployment demo reaches only revision 3, which has no ready replica yet/);
  });
});
