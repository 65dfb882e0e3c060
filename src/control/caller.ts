// Owns who is calling, as the routes need it beyond the rule table: the caller's role in the
// request's project (for rules that depend on the body, such as host commands), the admin-only
// checks, and the per-project unique key of a name. Kept apart from app.ts, which registers the
// routes, so that routes and app do not import each other.

import { PlatformError } from '../core/errors.js';
import { DEFAULT_PROJECT, type ProjectRole } from '../domain/access.js';
import { callerPrincipal, roleIn, type Principal } from './principal.js';

/** The platform admin, or the caller's role in the request's project (null: none). */
export type CallerRole = 'admin' | ProjectRole | null;

/** The caller's role where the request acts, for rules that depend on what it asks (host commands). */
export function callerRole(request: { principal: Principal | null; project: string }): CallerRole {
  const principal = callerPrincipal(request);
  return principal.admin ? 'admin' : roleIn(principal, request.project);
}

/** The caller's name for log lines. */
export function callerName(request: { principal: Principal | null }): string | undefined {
  return request.principal?.name;
}

/** 403 unless the caller is the platform admin; `what` is the action refused. */
export function requireAdmin(request: { principal: Principal | null }, what: string): void {
  if (!callerPrincipal(request).admin) throw new PlatformError('forbidden', `only the platform admin may ${what}`);
}

/**
 * The key of a name in a store unique index: names are unique per project, the bare name in
 * `default` (so records from before projects keep their keys) and `<project>/<name>` elsewhere
 * (a name never holds a `/`).
 */
export function uniqueKey(project: string, name: string): string {
  return project === DEFAULT_PROJECT ? name : `${project}/${name}`;
}
