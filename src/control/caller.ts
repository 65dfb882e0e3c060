// Owns who is calling: the authenticated service account of a request (set by the control
// API's credential check) and the role rules routes apply to it. Kept apart from app.ts, which
// registers the routes, so that routes and app do not import each other.

import { PlatformError } from '../core/errors.js';
import type { ServiceAccountRecord, ServiceAccountRole } from '../domain/records.js';

/** The authenticated caller; the auth hook has set it on every route that is not public. */
export function callerAccount(request: { account: ServiceAccountRecord | null }): ServiceAccountRecord {
  if (!request.account) throw new PlatformError('unauthenticated', 'missing platform credential: send Authorization: Bearer <service-account key>');
  return request.account;
}

/** The authenticated caller's role, for rules that depend on it (host commands). */
export function callerRole(request: { account: ServiceAccountRecord | null }): ServiceAccountRole {
  return callerAccount(request).role;
}

/** 403 unless the caller is an admin service account; `what` is the action refused. */
export function requireAdmin(account: ServiceAccountRecord | null, what = 'manage service accounts'): void {
  if (account?.role !== 'admin') {
    throw new PlatformError('forbidden', `only an admin service account may ${what}`);
  }
}
