// Owns the phases a client request passes through in the gateway, each a small function
// with one job (docs/request-lifecycle.md lists them):
//   route (Host → deployment) → authenticate (Bearer) → admit (paused / ready) → forward.
// A phase either lets the request continue or ends it with a status and a message.

import { constantTimeEqualHex, sha256Hex } from '../core/secrets.js';
import type { Route, RoutingTable } from './routing-table.js';

export interface Rejection {
  status: number;
  code: string;
  message: string;
  headers?: Record<string, string>;
}

export type PhaseResult<T> = { ok: true; value: T } | { ok: false; rejection: Rejection };

const reject = (status: number, code: string, message: string, headers?: Record<string, string>) =>
  ({ ok: false, rejection: { status, code, message, headers } }) as const;

/** Unknown hosts get 404: no endpoint exists outside the routing table (no public endpoint). */
export function routePhase(table: RoutingTable, host: string | undefined): PhaseResult<Route> {
  const route = table.lookup(host);
  if (!route) return reject(404, 'not_found', `no endpoint is served at ${host ?? '(no Host header)'}`);
  return { ok: true, value: route };
}

function bearerOf(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header);
  return m?.[1] ?? null;
}

/**
 * Bearer authentication: the token's SHA-256 compared in constant time with the bound
 * token's. Client certificates join in the gateway issue (M2).
 */
export function authenticatePhase(route: Route, authorization: string | undefined): PhaseResult<'bearer'> {
  const challenge = { 'www-authenticate': `Bearer realm="${route.host}"` };
  const presented = bearerOf(authorization);
  if (presented === null) {
    return reject(401, 'unauthenticated', 'this endpoint requires Authorization: Bearer <token>', challenge);
  }
  if (route.tokenHash === null || !constantTimeEqualHex(sha256Hex(presented), route.tokenHash)) {
    return reject(401, 'unauthenticated', 'the bearer token is not valid for this endpoint', {
      'www-authenticate': `Bearer realm="${route.host}", error="invalid_token"`,
    });
  }
  return { ok: true, value: 'bearer' };
}

/** Paused and not-ready deployments answer 503 with a message that says which. */
export function admitPhase(route: Route): PhaseResult<Route['readyReplicas']> {
  if (route.paused) {
    return reject(503, 'unavailable', `deployment ${route.name} is paused; resume it to serve requests`);
  }
  if (route.readyReplicas.length === 0) {
    return reject(503, 'unavailable', `deployment ${route.name} is not ready (${route.status}): no replica is ready yet`, {
      'retry-after': '5',
    });
  }
  return { ok: true, value: route.readyReplicas };
}
