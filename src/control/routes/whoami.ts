// Owns GET /whoami: who made the call — a service account by its key or a person by their
// session — whether they are the platform admin, the project the request acts in and their
// role there, every project they may see, and (for the console's cookie session) the CSRF
// token its mutating calls must send. Open to every caller, so a client — the console at
// sign-in — learns what it may do before it tries.

import type { ControlApp, ControlContext } from '../context.js';
import { callerPrincipal, roleIn } from '../principal.js';
import { ErrorResponse, WhoamiResponse } from '../schemas.js';

export function registerWhoamiRoutes(app: ControlApp, ctx: ControlContext): void {
  app.get('/whoami', { schema: { tags: ['service accounts'], response: { 200: WhoamiResponse, 401: ErrorResponse } } }, async (request) => {
    const principal = callerPrincipal(request);
    const names = principal.admin ? (await ctx.deps.store.list('project')).map((p) => p.value.name) : [...principal.roles.keys()];
    return {
      kind: principal.kind,
      id: principal.id,
      name: principal.name,
      admin: principal.admin,
      project: request.project,
      role: principal.admin ? ('admin' as const) : roleIn(principal, request.project),
      projects: [...new Set(names)].sort().map((name) => ({ name, role: roleIn(principal, name) })),
      ...(principal.csrf_token !== undefined ? { csrf_token: principal.csrf_token } : {}),
    };
  });
}
