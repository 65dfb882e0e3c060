// Owns the tokens a person's session is made of and how a browser carries them: the session
// token (`igs_…`, in the HttpOnly cookie or a CLI's Authorization header), the CLI's refresh
// token (`igr_…`), the CSRF token derived from the session token (so it is never stored and
// a page of another origin, which cannot read the cookie, cannot compute it), and the
// Set-Cookie lines of the session and of the sealed sign-in state.

import { createHmac, timingSafeEqual } from 'node:crypto';
import { generateCredential, sha256Hex } from '../core/secrets.js';

export const SESSION_TOKEN_PREFIX = 'igs_';
export const REFRESH_TOKEN_PREFIX = 'igr_';
export const SESSION_COOKIE = 'infergate_session';
/** The state, nonce and PKCE verifier between /auth/login and /auth/callback, sealed. */
export const LOGIN_COOKIE = 'infergate_login';
export const CSRF_HEADER = 'x-csrf-token';

export function newSessionToken(): string {
  return generateCredential(SESSION_TOKEN_PREFIX);
}

export function newRefreshToken(): string {
  return generateCredential(REFRESH_TOKEN_PREFIX);
}

/** The CSRF token of a session: an HMAC of the session token, shown to the console by GET /whoami. */
export function csrfTokenOf(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('infergate csrf').digest('base64url');
}

/** Whether `presented` is the CSRF token whose hash the session keeps (constant time). */
export function csrfMatches(presented: string | undefined, csrfHash: string | null): boolean {
  if (presented === undefined || csrfHash === null) return false;
  const a = Buffer.from(sha256Hex(presented), 'hex');
  const b = Buffer.from(csrfHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The value of one cookie in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

interface CookieOptions {
  path: string;
  maxAgeSeconds: number;
}

/**
 * A Set-Cookie line: always HttpOnly (no script reads it), Secure (browsers treat loopback
 * HTTP as secure, so a local console still works) and SameSite=Lax (sent on the provider's
 * redirect back, a top-level GET, never on another site's POST or fetch).
 */
export function setCookie(name: string, value: string, options: CookieOptions): string {
  return `${name}=${value}; Path=${options.path}; Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}; HttpOnly; Secure; SameSite=Lax`;
}

/** The Set-Cookie line that removes a cookie. */
export function clearCookie(name: string, path: string): string {
  return `${name}=; Path=${path}; Max-Age=0; HttpOnly; Secure; SameSite=Lax`;
}
