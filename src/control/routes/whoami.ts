// Owns GET /whoami: who made the call — a service account by its key or a person by their
// session — whether it is the platform admin, the project the request acts in and its role
// there, and every project it may act in with its role. Open to every caller, so a client (the
// console at sign-in, the CLI) learns what it may do before it tries; and, for the console's
// cookie session, the CSRF token its mutating calls must send.

import type { ControlApp, ControlContext } from '../context.js';
import { callerPrincipal, roleIn } from '../principal.js';
import { ProjectDirectory } from '../project-directory.js';
import { ErrorResponse, WhoamiResponse } from '../schemas.js';

export function registerWhoamiRoutes(app: ControlApp, ctx: ControlContext): void {
  const directory = new ProjectDirectory(ctx.deps.store, ctx.deps.clock);
  app.get('/whoami', { schema: { tags: ['service accounts'], response: { 200: WhoamiResponse, 401: ErrorResponse } } }, async (request) => {
    const principal = callerPrincipal(request);
    // The admin: every project (a role only where also a member); anyone else: their own.
    const names = principal.admin ? (await directory.list()).map((p) => p.name) : [...principal.roles.keys()].sort();
    const projects = names.map((name) => ({ name, role: roleIn(principal, name) }));
    return {
      kind: principal.kind,
      id: principal.id,
      name: principal.name,
      admin: principal.admin,
      project: request.project,
      role: principal.admin ? ('admin' as const) : roleIn(principal, request.project),
      projects,
      ...(principal.csrf_token !== undefined ? { csrf_token: principal.csrf_token } : {}),
    };
  });
}
