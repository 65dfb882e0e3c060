// Owns the decisions a client request passes through in the gateway before forwarding, each
// a small function with one job (docs/request-lifecycle.md lists them):
//   headers (count, no second Host or Authorization) → target (absolute form only for its
//   own host) → route (Host → deployment, or on a path host `/endpoints/<name>[.<project>]/`
//   → deployment) → authenticate (client certificate or Bearer) → rate limit → admit
//   (paused / ready). A phase either lets the request continue or ends
//   it with a rejection.

import { constantTimeEqualHex, sha256Hex } from '../core/secrets.js';
import { ENDPOINTS_PATH_PREFIX, addressName, endpointHost } from '../domain/endpoint-address.js';
import type { Priority } from '../domain/priority.js';
import { DEFAULT_PROJECT } from '../domain/access.js';
import type { AuthFailureReason, Protocol } from './metrics.js';
import { hostName, isPathHost, parsePathAddress } from './path-address.js';
import type { RateDecision } from './rate-limiter.js';
import type { Route, RoutingTable } from './routing-table.js';

export interface Rejection {
  status: number;
  code: string;
  message: string;
  headers?: Record<string, string>;
  /** Why authentication failed, for the metrics; set on 401s only. */
  authFailure?: AuthFailureReason;
}

export type PhaseResult<T> = { ok: true; value: T } | { ok: false; rejection: Rejection };

const reject = (status: number, code: string, message: string, headers?: Record<string, string>, authFailure?: AuthFailureReason) =>
  ({ ok: false, rejection: { status, code, message, headers, authFailure } }) as const;

/** The deployment a request goes to, and the path its replica is sent. */
export interface Routed {
  route: Route;
  path: string;
}

/**
 * A deployment's own host routes by Host, the path untouched (`a.<domain>/endpoints/b/` is
 * a's). Only a request to localhost, an IP literal or the bare domain may name its deployment
 * in the path, `/endpoints/<name>/…` (another project's: `/endpoints/<name>.<project>/…`),
 * which is then stripped (path-address.ts); gRPC is routed by host only. Anything else is
 * 404: no endpoint exists outside the routing table.
 */
export function routePhase(
  table: Pick<RoutingTable, 'lookup' | 'lookupName' | 'domain'>,
  host: string | undefined,
  target: string,
  protocol: Protocol,
): PhaseResult<Routed> {
  const byHost = table.lookup(host);
  if (byHost) return { ok: true, value: { route: byHost, path: target } };
  if (host === undefined || !isPathHost(host, table.domain)) {
    return reject(404, 'not_found', `no endpoint is served at ${host ?? '(no Host header)'}`);
  }
  const here = hostName(host);
  if (protocol === 'grpc') {
    return reject(404, 'not_found', `gRPC endpoints are addressed by host only: call ${endpointHost('<name>', table.domain)} (${endpointHost('<name>', table.domain, '<project>')} outside the default project), not ${here}`);
  }
  const address = parsePathAddress(target);
  if (address === null) {
    return reject(
      404,
      'not_found',
      `no endpoint is served at ${here} outside ${ENDPOINTS_PATH_PREFIX}/: call https://${here}${ENDPOINTS_PATH_PREFIX}/<name>/… (or https://${endpointHost('<name>', table.domain)}/…; outside the default project ${ENDPOINTS_PATH_PREFIX}/<name>.<project>/… or https://${endpointHost('<name>', table.domain, '<project>')}/…)`,
    );
  }
  if (!address.ok) return reject(400, 'invalid_request', address.message);
  const route = table.lookupName(address.name, address.project);
  if (!route) {
    const spelt = addressName(address.name, address.project);
    const where = address.project === DEFAULT_PROJECT ? '' : ` in project ${address.project}`;
    return reject(404, 'not_found', `no endpoint is named ${address.name}${where} (${ENDPOINTS_PATH_PREFIX}/${spelt}/)`);
  }
  if (route.protocol === 'grpc') {
    return reject(404, 'not_found', `deployment ${route.name} serves gRPC, which is addressed by host only: ${route.host}`);
  }
  return { ok: true, value: { route, path: address.path } };
}

/**
 * SHA-256 of recently presented tokens. A client sends the same token on every request, and
 * hashing it each time was a visible share of the gateway's CPU per request; the cache is
 * bounded and holds only values a client already sent, next to their (non-secret) hashes.
 */
const presentedHashes = new Map<string, string>();
const HASH_CACHE_SIZE = 4096;

function hashOfPresented(token: string): string {
  let hash = presentedHashes.get(token);
  if (hash === undefined) {
    hash = sha256Hex(token);
    if (presentedHashes.size >= HASH_CACHE_SIZE) presentedHashes.clear();
    presentedHashes.set(token, hash);
  }
  return hash;
}

function bearerOf(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header);
  return m?.[1] ?? null;
}

/** What the client presented: its Authorization header and its verified certificate. */
export interface Credentials {
  authorization: string | undefined;
  /** Fingerprint of a client certificate that chains to the platform CA, else null. */
  certificateFingerprint: string | null;
}

export type AuthMethod = 'certificate' | 'bearer';

/** Who passed: the method, the credential's public identity (the key of its rate limits) and its cap. */
export interface Authenticated {
  method: AuthMethod;
  /** `cert:<fingerprint>` or `token:<sha256>`: never the secret itself. */
  credential: string;
  /** The highest X-Priority class the credential that passed may have; null: any. */
  maxPriority: Priority | null;
}

/**
 * Header lines a request may carry. nghttp2's own limit (128 pairs) resets the stream with no
 * answer; the gateway lets more through the parser and answers 431 itself, over HTTP/1.1
 * and HTTP/2 alike.
 */
export const MAX_REQUEST_HEADERS = 128;

/**
 * The header fields as a whole: not too many (431), and no field the gateway decides on sent
 * twice — two Host or two Authorization lines are an ambiguity two hops could resolve
 * differently (RFC 9112 §3.2 requires 400 for a second Host). HTTP/2 pseudo-headers are not
 * counted.
 */
export function headersPhase(rawHeaders: readonly string[]): PhaseResult<null> {
  let count = 0;
  let hosts = 0;
  let authorizations = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.charCodeAt(0) === 58 /* ':' */) continue;
    count++;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++;
  }
  if (count > MAX_REQUEST_HEADERS) {
    return reject(431, 'headers_too_large', `the request has ${count} header fields; at most ${MAX_REQUEST_HEADERS} are accepted`);
  }
  if (hosts > 1) return reject(400, 'invalid_request', 'the request has more than one Host header');
  if (authorizations > 1) return reject(400, 'invalid_request', 'the request has more than one Authorization header; send one credential');
  return { ok: true, value: null };
}

/**
 * The request target as the path forwarded to the replica. The absolute form (`GET
 * https://host/path`) is accepted only when it names the same host as the Host header the
 * request is routed and authenticated by (RFC 9112 §3.2.2 makes the target's host win; a
 * disagreement is refused rather than resolved), and goes on in origin form.
 */
export function targetPhase(url: string | undefined, host: string | undefined): PhaseResult<string> {
  if (url !== undefined && url.startsWith('/')) return { ok: true, value: url };
  let target: URL | null = null;
  try {
    target = url === undefined ? null : new URL(url);
  } catch {
    target = null;
  }
  const bare = (h: string) => h.toLowerCase().replace(/:\d+$/, '');
  if (target === null || (target.protocol !== 'https:' && target.protocol !== 'http:')) {
    return reject(400, 'invalid_request', 'the request target must be a path (or an absolute https URL)');
  }
  if (host === undefined || bare(target.host) !== bare(host)) {
    return reject(400, 'invalid_request', `the request target names ${target.hostname}, but the Host header ${host ?? '(none)'}`);
  }
  return { ok: true, value: `${target.pathname}${target.search}` };
}

/**
 * Either credential is enough when both are bound. The certificate is checked first: a client
 * using only its certificate may still send a dummy API key, as client libraries require
 * one (spec, Authentication 3). A certificate is found by its fingerprint in the route's
 * accepted set, a plain map lookup: a fingerprint is public, and the TLS handshake has already
 * proved the client holds the key and that the certificate chains to the platform CA. Token
 * hashes, derived from a secret, are compared in constant time.
 */
export function authenticatePhase(route: Route, creds: Credentials): PhaseResult<Authenticated> {
  if (creds.certificateFingerprint !== null) {
    const cap = route.clientCertificates.get(creds.certificateFingerprint);
    if (cap !== undefined) {
      return { ok: true, value: { method: 'certificate', credential: `cert:${creds.certificateFingerprint}`, maxPriority: cap } };
    }
  }
  const presented = bearerOf(creds.authorization);
  if (presented !== null && route.tokenHash !== null && constantTimeEqualHex(hashOfPresented(presented), route.tokenHash)) {
    return { ok: true, value: { method: 'bearer', credential: `token:${route.tokenHash}`, maxPriority: route.tokenMaxPriority } };
  }
  const challenge = `Bearer realm="${route.host}"`;
  if (presented !== null) {
    return reject(401, 'unauthenticated', 'the bearer token is not valid for this endpoint', {
      'www-authenticate': `${challenge}, error="invalid_token"`,
    }, 'invalid_token');
  }
  if (creds.certificateFingerprint !== null) {
    return reject(401, 'unauthenticated', 'the client certificate is not accepted by this endpoint (neither bound to it nor issued for it, or revoked)', {
      'www-authenticate': challenge,
    }, 'certificate_not_accepted');
  }
  const accepted = [route.tokenHash !== null ? 'Authorization: Bearer <token>' : null, route.clientCertificates.size > 0 ? 'one of its client certificates' : null]
    .filter(Boolean)
    .join(' or ');
  return reject(401, 'unauthenticated', `this endpoint requires ${accepted || 'a credential, and none is bound to it'}`, {
    'www-authenticate': challenge,
  }, 'missing_credential');
}

/** A credential over its deployment's rate limit: 429 with Retry-After. */
export function rateLimitPhase(decision: RateDecision): PhaseResult<null> {
  if (decision.ok) return { ok: true, value: null };
  return reject(429, 'rate_limited', decision.message, { 'retry-after': String(decision.retryAfterSeconds) });
}

/** A paused deployment answers 503 before its body is read. */
export function pausedPhase(route: Route): PhaseResult<null> {
  if (!route.paused) return { ok: true, value: null };
  return reject(503, 'unavailable', `deployment ${route.name} is paused; resume it to serve requests`);
}

/** Paused and not-ready deployments answer 503 with a message that says which. */
export function admitPhase(route: Route): PhaseResult<Route['replicas']> {
  const paused = pausedPhase(route);
  if (!paused.ok) return paused;
  if (route.replicas.length === 0 && route.tag !== null) {
    const { name, revision } = route.tag;
    return reject(503, 'unavailable', `tag ${name} of deployment ${route.name} reaches only revision ${revision}, which has no ready replica yet; retry once it is ready (its status is in the deployment's revision_replicas), or call ${route.name} itself`, {
      'retry-after': '5',
    });
  }
  if (route.replicas.length === 0) {
    return reject(503, 'unavailable', `deployment ${route.name} is not ready (${route.status}): no replica is ready yet`, {
      'retry-after': '5',
    });
  }
  return { ok: true, value: route.replicas };
}
