// Owns keeping a person's CLI sign-in alive: a saved session token that has expired (or is
// about to, or that the API refuses as expired) is renewed with the context's refresh token
// at POST /auth/token — where the service asks the identity provider again, so a person it
// disabled or a group it removed stops counting — and the new session and refresh tokens are
// written back to the context file (mode 0600). A refused refresh says to sign in again.

import { ApiRefusal } from './errors.js';
import { readContexts, writeContexts, type Connection } from './contexts.js';
import type { Requester } from './http-request.js';

/** Renewed this long before the session token expires, so a command does not start on one about to end. */
const EARLY_MS = 30_000;

interface RefreshAnswer {
  session_token: string;
  refresh_token: string;
  expires_at: string;
  user: { email: string | null };
}

/** Whether the connection's saved session should be refreshed before it is used. */
export function sessionDue(connection: Connection, now = Date.now()): boolean {
  const at = connection.session?.expiresAt;
  return at !== null && at !== undefined && Date.parse(at) - EARLY_MS <= now;
}

/**
 * Refreshes the connection's saved session: the connection then carries the new session
 * token, and the context file both new tokens. Throws ApiRefusal when the service refuses.
 */
export async function refreshSession(connection: Connection, request: Requester, timeoutMs: number): Promise<void> {
  const saved = connection.session;
  if (!saved) return;
  const res = await request(`${connection.api}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ refresh_token: saved.refreshToken }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) {
    let message = `the control API answered ${res.status}`;
    try {
      message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
    } catch {
      // not the API's error shape
    }
    throw new ApiRefusal(res.status, 'unauthenticated', `your sign-in could not be renewed: ${message}`, null);
  }
  const answer = JSON.parse(text) as RefreshAnswer;
  // Read again before writing: another command may have changed another context meanwhile.
  const contents = readContexts(saved.file);
  const context = contents.contexts[saved.context];
  if (context) {
    contents.contexts[saved.context] = { ...context, key: answer.session_token, refresh_token: answer.refresh_token, expires_at: answer.expires_at, ...(answer.user.email ? { user: answer.user.email } : {}) };
    writeContexts(saved.file, contents);
  }
  connection.key = answer.session_token;
  connection.session = { ...saved, refreshToken: answer.refresh_token, expiresAt: answer.expires_at };
}
