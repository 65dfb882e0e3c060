// Owns GET /audit: the audit log, newest first, filtered and paged. An owner reads their
// project's entries (the request's project, or `project=` naming another they own); the
// platform admin every project's, or one's with `project=`. Nothing here or anywhere in the
// API changes or deletes an entry.

import { Type } from '../../core/typebox.js';
import { ACTION_ROLES, PROJECT_NAME_PATTERN, PROJECT_ROLES } from '../../domain/access.js';
import { authorize, callerPrincipal } from '../principal.js';
import { checkTime, type AuditLog } from '../audit-log.js';
import type { AuditResult } from '../../domain/records.js';
import type { ControlApp } from '../context.js';
import { PAGE_QUERY_FIELDS, PageResponse } from '../paging.js';
import { ErrorResponse } from '../schemas.js';

const ACTIONS: string[] = [...Object.keys(ACTION_ROLES), 'auth.sign_in', 'auth.sign_in_refused', 'auth.sign_out', 'auth.refresh'];
const RESULTS: AuditResult[] = ['allowed', 'refused', 'failed'];
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const AuditEntryResponse = Type.Object({
  id: Type.Integer(),
  time: Type.String({ format: 'date-time' }),
  request_id: Type.String({ description: 'the X-Request-Id of the call (its server log line has the same)' }),
  actor: Type.Object({
    kind: Type.Enum(['service_account', 'user', 'anonymous'] as const),
    id: Nullable(Type.Integer()),
    name: Nullable(Type.String()),
  }),
  role: Nullable(Type.Enum([...PROJECT_ROLES, 'admin' as const])),
  project: Nullable(Type.String({ description: 'the project acted in; null for platform-wide calls and callers not known' })),
  action: Type.Enum(ACTIONS, { description: 'the rule of the route (who may do what), or a sign-in event' }),
  route: Nullable(Type.String({ description: '`METHOD /path/{param}` as the OpenAPI document names the route' })),
  target: Nullable(
    Type.Object({
      kind: Type.String(),
      id: Nullable(Type.Union([Type.Integer(), Type.String()])),
      name: Nullable(Type.String()),
    }),
  ),
  result: Type.Enum(RESULTS, { description: 'refused: 401, 403, or a 404 for another project; failed: any other error' }),
  status: Type.Integer(),
  source_address: Type.String({ description: "the connection's peer address (the API does not trust X-Forwarded-For)" }),
});

const AuditQuery = Type.Object(
  {
    project: Type.Optional(Type.String({ pattern: PROJECT_NAME_PATTERN.source, description: 'one project (the admin; an owner may name another project they own); left out: the request project, or every project for the admin' })),
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 320, description: 'the name of the service account or person' })),
    action: Type.Optional(Type.Enum(ACTIONS)),
    result: Type.Optional(Type.Enum(RESULTS)),
    since: Type.Optional(Type.String({ maxLength: 40, description: 'entries at or after this time (ISO 8601)' })),
    until: Type.Optional(Type.String({ maxLength: 40, description: 'entries at or before this time (ISO 8601)' })),
    ...PAGE_QUERY_FIELDS,
  },
  { additionalProperties: false },
);

export function registerAuditRoutes(app: ControlApp, audit: AuditLog): void {
  app.get(
    '/audit',
    {
      schema: {
        tags: ['audit'],
        description: `The audit log, newest first: every mutating call and every refused one. ${'`limit`'} defaults to 100.`,
        querystring: AuditQuery,
        response: { 200: PageResponse(AuditEntryResponse), 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse },
      },
    },
    async (request) => {
      const principal = callerPrincipal(request);
      const q = request.query;
      checkTime('since', q.since);
      checkTime('until', q.until);
      let project: string | null;
      if (principal.admin) project = q.project ?? null;
      else {
        project = q.project ?? request.project;
        // The hook checked the request's project; another one named here is checked the same way.
        if (project !== request.project) authorize(request, 'audit.read', project);
      }
      return audit.query({ ...q, project });
    },
  );
}
