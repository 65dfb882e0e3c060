// Owns who a request acts as and where: the Principal the credential check sets (a service
// account by its key, or a person by their session), the project the request acts in (the
// X-Infergate-Project header, else the caller's home project), and the checks routes make
// with the rule table of domain/access.ts. A caller with no role in a project is answered as
// if the project (and everything in it) did not exist: 404, never a 403 that confirms it.

import type { FastifyRequest } from 'fastify';
import { PlatformError } from '../core/errors.js';
import { DEFAULT_PROJECT, may, projectOf, refusalReason, type Action, type ProjectRole } from '../domain/access.js';
import { serviceAccountMembership } from '../domain/membership.js';
import type { ServiceAccountRecord } from '../domain/records.js';

/** The header that chooses the project a request acts in. */
export const PROJECT_HEADER = 'x-infergate-project';

export interface Principal {
  kind: 'service_account' | 'user';
  /** The service account's or the user's record id. */
  id: number;
  /** The service account's name, or the person's e-mail address (else their subject). */
  name: string;
  /** The platform admin: every action in every project. */
  admin: boolean;
  /** Project name → role; a service account has one entry (none for the admin). */
  roles: ReadonlyMap<string, ProjectRole>;
  /** How it authenticated: a key or session token in Authorization, or the console's cookie (mutations need the CSRF header). */
  via: 'key' | 'session_token' | 'cookie';
  /** The session record, for a person. */
  session_id: number | null;
  /** A console session's CSRF token (GET /whoami hands it to the console for its mutating calls). */
  csrf_token?: string;
}

/**
 * A session the request carries (the console's cookie or a CLI's session token), as a
 * principal; null when it carries none (then the service-account key check runs). Throws
 * PlatformError `unauthenticated` for an expired or unknown session and `forbidden` for a
 * cookie-authenticated mutation without the right CSRF header. Implemented where people sign
 * in; absent when no identity provider is configured.
 */
export interface SessionAuthenticator {
  authenticate(request: FastifyRequest): Promise<Principal | null>;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    /** The project the request acts in (set with the principal). */
    project: string;
  }
}

/**
 * A 404 the rules answer: a project the caller cannot see, or a record of another project. The
 * caller gets the same answer as for something that does not exist; the audit log records it
 * as refused (a plain 404 is not).
 */
export class HiddenByPolicy extends PlatformError {
  constructor(message: string) {
    super('not_found', message);
  }
}

/** The 404 for a project the caller cannot see, as for one that does not exist. */
export const hiddenProject = (name: string): HiddenByPolicy => new HiddenByPolicy(`no project named ${name}`);

/** The authenticated caller; the auth hook has set it on every route that is not public. */
export function callerPrincipal(request: { principal: Principal | null }): Principal {
  if (!request.principal) throw new PlatformError('unauthenticated', 'missing platform credential: send Authorization: Bearer <service-account key>, or sign in');
  return request.principal;
}

/** The caller's role in `project`, or null when they are not a member (the admin's is null too). */
export function roleIn(principal: Principal, project: string): ProjectRole | null {
  return principal.roles.get(project) ?? null;
}

/** Whether the caller may see `project` at all: the admin, or a member of it. */
export function canSeeProject(principal: Principal, project: string): boolean {
  return principal.admin || principal.roles.has(project);
}

/** The project a caller acts in without choosing one: a service account's own; a person's `default` when a member, else their first. */
export function homeProject(principal: Principal): string {
  if (principal.roles.has(DEFAULT_PROJECT) || principal.admin) return DEFAULT_PROJECT;
  const first = [...principal.roles.keys()].sort()[0];
  return first ?? DEFAULT_PROJECT;
}

/**
 * Throws unless the caller may take `action` in `project` (default: the request's): 404 when
 * they cannot see the project, 403 with the reason when their role may not.
 */
export function authorize(request: { principal: Principal | null; project: string }, action: Action, project = request.project): void {
  const principal = callerPrincipal(request);
  if (action === 'self' || principal.admin) return;
  if (!canSeeProject(principal, project)) throw hiddenProject(project);
  const role = roleIn(principal, project);
  if (!may(role, false, action)) throw new PlatformError('forbidden', refusalReason(role, action));
}

/**
 * The record if it belongs to the request's project; otherwise the same 404 as a record that
 * does not exist (`what`: "deployment 5"), so another project's ids confirm nothing.
 */
export function inProject<T extends { project?: string | null }>(request: { project: string }, record: T | undefined, what: string): T {
  if (record === undefined) throw new PlatformError('not_found', `${what} does not exist`);
  if (projectOf(record) !== request.project) throw new HiddenByPolicy(`${what} does not exist`);
  return record;
}

/** A service account as a principal: the admin, or one role in one project. */
export function serviceAccountPrincipal(account: ServiceAccountRecord): Principal {
  const membership = serviceAccountMembership(account);
  return {
    kind: 'service_account',
    id: account.id,
    name: account.name,
    admin: membership === null,
    roles: new Map(membership ? [[membership.project, membership.role]] : []),
    via: 'key',
    session_id: null,
  };
}
