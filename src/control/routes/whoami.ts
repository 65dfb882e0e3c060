// Owns GET /whoami: the service account whose key made the call (id, name, role). Open to
// every account, members included, so a client — the console at sign-in — can check a key and
// learn what it may do before it tries.

import type { ControlApp } from '../context.js';
import { callerAccount } from '../caller.js';
import { serviceAccountMembership } from '../../domain/membership.js';
import { ErrorResponse, WhoamiResponse } from '../schemas.js';

export function registerWhoamiRoutes(app: ControlApp): void {
  app.get('/whoami', { schema: { tags: ['service accounts'], response: { 200: WhoamiResponse, 401: ErrorResponse } } }, async (request) => {
    const account = callerAccount(request);
    return { id: account.id, name: account.name, role: serviceAccountMembership(account)?.role ?? ('admin' as const) };
  });
}
