// Owns people signing in through the identity provider, end to end: the console's
// authorization code flow (state, nonce and PKCE verifier sealed in a short-lived HttpOnly
// cookie between /auth/login and /auth/callback), the CLI's device authorization grant
// (the provider's device code handed to the CLI sealed, so no state is kept here), refresh
// (the groups read again at the provider, the tokens rotated), sign-out, and the session
// check of every request (SessionAuthenticator): the session token from the cookie or the
// Authorization header, expiry, CSRF on cookie mutations, the Origin of a cookie WebSocket,
// and the roles from the projects' member lists as they are now.

import type { DeviceView } from '../domain/api-views.js';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.js';
import { PlatformError } from '../core/errors.js';
import type { Sealer } from '../core/secrets.js';
import { rolesOfPerson } from '../domain/membership.js';
import type { AuditRecord, SessionRecord, UserRecord } from '../domain/records.js';
import type { Principal, SessionAuthenticator } from '../control/principal.js';
import type { Store, Versioned } from '../store/store.js';
import { clearCookie, cookieValue, CSRF_HEADER, csrfMatches, csrfTokenOf, LOGIN_COOKIE, REFRESH_TOKEN_PREFIX, SESSION_COOKIE, SESSION_TOKEN_PREFIX, setCookie } from './cookies.js';
import { IdpRefusal, IdpUnavailable, OidcClient, type IdpIdentity, type LoginChecks, type OidcSettings } from './oidc-client.js';
import { SessionRecords } from './sessions.js';

export interface IdentitySettings {
  oidc: OidcSettings;
  /** Members of this provider group are platform admins; null: none are. */
  adminGroup: string | null;
  /** The provider's name on the console's button ("Sign in with …"). */
  providerName: string;
  sessionLifetimeMs: number;
  /** The control API's URL as browsers reach it; null: set by listeningAt once it listens. */
  publicUrl: string | null;
}

export interface IdentityDeps {
  store: Store;
  sealer: Sealer;
  clock: Clock;
  logger?: FastifyBaseLogger;
}

/** How long a CLI may refresh after its session token expired (the provider may end it sooner). */
export const REFRESH_WINDOW_MS = 30 * 24 * 3600_000;
/** How long a browser has from /auth/login to /auth/callback. */
const LOGIN_WINDOW_MS = 10 * 60_000;
const SWEEP_INTERVAL_MS = 3600_000;
/** How often a session's person is looked up at the provider again (their groups; whether it still accepts them). */
export const GROUP_CHECK_MS = 10 * 60_000;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What the CLI gets from the device grant and from refresh. */
export interface CliSession {
  session_token: string;
  refresh_token: string;
  expires_at: string;
  user: { id: number; email: string | null; name: string | null; groups: string[] };
}

/** What POST /auth/device answers (the schema in domain/api-views.ts). */
export type DeviceAnswer = DeviceView;

/** A device grant not yet done: RFC 8628's error codes, answered 400. */
export class DevicePending extends Error {
  override name = 'DevicePending';
  constructor(
    readonly code: 'authorization_pending' | 'slow_down' | 'expired_token' | 'access_denied',
    message: string,
  ) {
    super(message);
  }
}

type RequestLike = Pick<FastifyRequest, 'id' | 'ip' | 'headers' | 'method' | 'url' | 'protocol'> & { ws?: boolean; principal?: Principal | null };

export class IdentityService implements SessionAuthenticator {
  readonly records: SessionRecords;
  private readonly oidc: OidcClient;
  private publicUrl: string | null;
  private sweeper: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: IdentityDeps,
    readonly settings: IdentitySettings,
  ) {
    this.records = new SessionRecords(deps.store, deps.sealer, deps.clock);
    this.oidc = new OidcClient(settings.oidc);
    this.publicUrl = settings.publicUrl?.replace(/\/+$/, '') ?? null;
  }

  /** The API's URL once it listens (unless --api-public-url named it); starts the sweep of dead sessions. */
  listeningAt(url: string): void {
    this.publicUrl ??= url.replace(/\/+$/, '');
    if (this.sweeper === null) {
      this.sweeper = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
      this.sweeper.unref();
      void this.sweep();
      // A misconfigured issuer shows in the log at start-up, not at the first sign-in.
      this.oidc.discover().catch((err: Error) => this.deps.logger?.warn({ issuer: this.settings.oidc.issuer }, err.message));
    }
  }

  close(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    this.records.close();
  }

  private async sweep(): Promise<void> {
    await this.records.sweep(REFRESH_WINDOW_MS).catch((err: unknown) => this.deps.logger?.warn({ err }, 'removing expired sessions failed; tried again in an hour'));
  }

  redirectUri(): string {
    if (this.publicUrl === null) throw new PlatformError('unavailable', 'the control API is not listening yet');
    return `${this.publicUrl}/auth/callback`;
  }

  // ---- every request ----

  async authenticate(request: FastifyRequest): Promise<Principal | null> {
    const presented = this.presentedSession(request);
    if (presented === null) return null;
    const { token, via } = presented;
    const found = await this.records.sessionByToken(token);
    const session = found?.value;
    if (!found || !session || session.client !== (via === 'cookie' ? 'console' : 'cli')) {
      throw new PlatformError('unauthenticated', via === 'cookie' ? 'your session has ended: sign in again' : 'unknown session token: sign in again (infergate login --sso)');
    }
    if (Date.parse(session.expires_at) <= this.deps.clock.now()) {
      throw new PlatformError(
        'unauthenticated',
        via === 'cookie' ? `your session expired at ${session.expires_at}: sign in again` : `session expired at ${session.expires_at}: refresh it (POST /auth/token) or sign in again (infergate login --sso)`,
      );
    }
    if (via === 'cookie') {
      if (request.ws) this.checkOrigin(request);
      else if (!SAFE_METHODS.has(request.method) && !csrfMatches(headerValue(request.headers[CSRF_HEADER]), session.csrf_hash)) {
        throw new PlatformError('forbidden', 'missing or wrong X-CSRF-Token: send the csrf_token of GET /whoami with every call that changes something');
      }
    }
    let user = await this.records.user(session.user_id);
    if (!user) throw new PlatformError('unauthenticated', 'your account is gone: sign in again');
    if (this.checkDue(session)) user = await this.checkAtProvider(request, found, user);
    return {
      ...(await this.principalOf(user, session, via)),
      ...(via === 'cookie' ? { csrf_token: csrfTokenOf(token) } : {}),
    };
  }

  /** Whether the provider should be asked again about this session's person (every GROUP_CHECK_MS). */
  private checkDue(session: SessionRecord): boolean {
    if (session.sealed_idp_refresh_token === null) return false;
    return Date.parse(session.idp_checked_at ?? session.created_at) + GROUP_CHECK_MS <= this.deps.clock.now();
  }

  /**
   * Asks the provider who the person is now, with the session's sealed refresh token: their
   * groups as it says (a group removed there is gone from this request on), or the session
   * ended when it refuses (the person disabled, the grant revoked). One request per session
   * asks; when the provider cannot be reached, the groups of the last answer stay.
   */
  private async checkAtProvider(request: FastifyRequest, session: Versioned<SessionRecord>, user: UserRecord): Promise<UserRecord> {
    if (!(await this.records.claimCheck(session, new Date(this.deps.clock.now()).toISOString()))) return user;
    const idpToken = this.records.idpRefreshToken(session.value);
    if (idpToken === null) return user;
    let identity: IdpIdentity;
    try {
      identity = await this.oidc.refresh(idpToken, user.subject);
    } catch (err) {
      if (!(err instanceof IdpRefusal)) {
        this.deps.logger?.warn({ session: session.value.id, err: (err as Error).message }, 'the identity provider could not be asked about a session; its groups stay as they were');
        return user;
      }
      await this.records.deleteSession(session.value.id);
      await this.audit(request, { actor: actorOf(user), target: targetOf(user), action: 'auth.refresh', result: 'refused', status: 401 });
      throw new PlatformError('unauthenticated', `the identity provider no longer accepts your sign-in (${err.message}): sign in again`);
    }
    if (identity.refreshToken !== null && identity.refreshToken !== idpToken) await this.records.replaceIdpRefreshToken(session.value.id, identity.refreshToken);
    return (await this.records.updateUser(user.id, identity)) ?? user;
  }

  /** The session token a request carries: a Bearer `igs_…`, else the console's cookie; null: none (a key, or nothing). */
  private presentedSession(request: FastifyRequest): { token: string; via: 'cookie' | 'session_token' } | null {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    if (match?.[1]) return match[1].startsWith(SESSION_TOKEN_PREFIX) ? { token: match[1], via: 'session_token' } : null;
    const cookie = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (cookie?.startsWith(SESSION_TOKEN_PREFIX)) {
      // A WebSocket offering a key as its subprotocol authenticates by that key.
      if (request.ws && request.headers['sec-websocket-protocol']?.includes('bearer.infergate.')) return null;
      return { token: cookie, via: 'cookie' };
    }
    return null;
  }

  /** Browsers send Origin on a WebSocket: one from another site must not ride the cookie. */
  private checkOrigin(request: FastifyRequest): void {
    const origin = headerValue(request.headers.origin);
    const own = new Set<string>([`${request.protocol}://${request.headers.host ?? ''}`]);
    if (this.publicUrl) own.add(new URL(this.publicUrl).origin);
    if (origin === undefined || !own.has(origin)) throw new PlatformError('forbidden', 'a WebSocket signed in by the session cookie must come from the console (its Origin)');
  }

  private async principalOf(user: UserRecord, session: SessionRecord, via: Principal['via']): Promise<Principal> {
    return {
      kind: 'user',
      id: user.id,
      name: user.email ?? user.subject,
      admin: this.isAdmin(user),
      roles: rolesOfPerson({ email: user.email, groups: user.groups }, await this.records.allProjects()),
      via,
      session_id: session.id,
    };
  }

  private isAdmin(user: Pick<UserRecord, 'groups'>): boolean {
    return this.settings.adminGroup !== null && user.groups.includes(this.settings.adminGroup);
  }

  // ---- the console: authorization code with PKCE ----

  /** GET /auth/login: where to send the browser, and the sealed checks cookie. */
  async beginLogin(): Promise<{ location: string; cookie: string }> {
    const { url, checks } = await this.oidc.beginLogin(this.redirectUri()).catch(unavailable);
    const sealed = this.deps.sealer.seal(JSON.stringify({ ...checks, exp: this.deps.clock.now() + LOGIN_WINDOW_MS }));
    return { location: url, cookie: setCookie(LOGIN_COOKIE, sealed, { path: '/auth/callback', maxAgeSeconds: LOGIN_WINDOW_MS / 1000 }) };
  }

  /**
   * GET /auth/callback: the code exchanged, the person's user and session made; the cookies
   * to set and where to send the browser (the console, or its sign-in page with the reason).
   */
  async finishLogin(request: RequestLike): Promise<{ location: string; cookies: string[] }> {
    const cookies = [clearCookie(LOGIN_COOKIE, '/auth/callback')];
    const refused = async (reason: string, actor: AuditRecord['actor'] = ANONYMOUS) => {
      await this.audit(request, { actor, action: 'auth.sign_in_refused', result: 'refused', status: 302 });
      return { location: `/?sign_in_error=${encodeURIComponent(reason)}`, cookies };
    };
    const checks = this.loginChecks(request);
    if (checks === null) return refused('the sign-in took too long or began in another browser: start again');
    const query = new URL(request.url, 'http://callback').searchParams;
    if (query.has('error')) return refused(`the identity provider refused: ${query.get('error_description') ?? query.get('error') ?? ''}`.trim());
    let identity: IdpIdentity;
    try {
      identity = await this.oidc.finishLogin(new URL(`${this.redirectUri()}?${query.toString()}`), this.redirectUri(), checks);
    } catch (err) {
      if (err instanceof IdpRefusal) return refused(`the identity provider refused the sign-in: ${err.message}`);
      throw unavailable(err);
    }
    const user = await this.records.upsertUser(identity);
    const made = await this.records.createSession(user.id, 'console', this.settings.sessionLifetimeMs, identity.refreshToken);
    await this.audit(request, { actor: actorOf(user), role: this.isAdmin(user) ? 'admin' : null, target: targetOf(user), action: 'auth.sign_in', result: 'allowed', status: 302 });
    this.deps.logger?.info({ user: user.id, session: made.record.id, client: 'console' }, 'signed in');
    cookies.push(setCookie(SESSION_COOKIE, made.token, { path: '/', maxAgeSeconds: this.settings.sessionLifetimeMs / 1000 }));
    return { location: '/', cookies };
  }

  private loginChecks(request: RequestLike): LoginChecks | null {
    const sealed = cookieValue(request.headers.cookie, LOGIN_COOKIE);
    if (!sealed) return null;
    try {
      const parsed = JSON.parse(this.deps.sealer.unseal(sealed)) as LoginChecks & { exp: number };
      if (typeof parsed.exp !== 'number' || parsed.exp <= this.deps.clock.now()) return null;
      return { state: parsed.state, nonce: parsed.nonce, verifier: parsed.verifier };
    } catch {
      return null;
    }
  }

  // ---- the CLI: device authorization grant, refresh ----

  async startDevice(): Promise<DeviceAnswer> {
    let d;
    try {
      d = await this.oidc.startDevice();
    } catch (err) {
      if (err instanceof IdpRefusal) throw new PlatformError('unavailable', `the identity provider refused the device sign-in (${err.message}); is the device grant enabled for this client?`);
      throw unavailable(err);
    }
    const handle = this.deps.sealer.seal(JSON.stringify({ d: d.device_code, exp: this.deps.clock.now() + d.expires_in * 1000 }));
    return { ...d, device_code: handle };
  }

  async pollDevice(request: RequestLike, handle: string): Promise<CliSession> {
    let deviceCode: string;
    let exp: number;
    try {
      const parsed = JSON.parse(this.deps.sealer.unseal(handle)) as { d: string; exp: number };
      deviceCode = parsed.d;
      exp = parsed.exp;
    } catch {
      throw new PlatformError('invalid_field', 'unknown device_code: start again with POST /auth/device', { field: 'device_code' });
    }
    if (exp <= this.deps.clock.now()) throw new DevicePending('expired_token', 'the device code expired: start again');
    const poll = await this.oidc.pollDevice(deviceCode).catch((err: unknown) => {
      throw err instanceof IdpRefusal ? new PlatformError('unauthenticated', `the identity provider refused the sign-in: ${err.message}`) : unavailable(err);
    });
    if ('pending' in poll) {
      if (poll.pending === 'access_denied') await this.audit(request, { actor: ANONYMOUS, action: 'auth.sign_in_refused', result: 'refused', status: 400 });
      throw new DevicePending(poll.pending, poll.pending === 'authorization_pending' ? 'waiting for the person to confirm the code' : poll.message);
    }
    const user = await this.records.upsertUser(poll.done);
    const answer = await this.cliSession(user, poll.done.refreshToken);
    await this.audit(request, { actor: actorOf(user), role: this.isAdmin(user) ? 'admin' : null, target: targetOf(user), action: 'auth.sign_in', result: 'allowed', status: 200 });
    this.deps.logger?.info({ user: user.id, client: 'cli' }, 'signed in');
    return answer;
  }

  /** POST /auth/token: the provider asked again (a removed group is gone now), the tokens rotated. */
  async refresh(request: RequestLike, refreshToken: string): Promise<CliSession> {
    const session = refreshToken.startsWith(REFRESH_TOKEN_PREFIX) ? await this.records.sessionByRefreshToken(refreshToken) : undefined;
    if (!session) throw new PlatformError('unauthenticated', 'unknown refresh token: sign in again (infergate login --sso)');
    const user = await this.records.user(session.user_id);
    const refuse = async (message: string): Promise<never> => {
      await this.records.deleteSession(session.id);
      await this.audit(request, { actor: user ? actorOf(user) : ANONYMOUS, target: user ? targetOf(user) : null, action: 'auth.refresh', result: 'refused', status: 401 });
      throw new PlatformError('unauthenticated', message);
    };
    if (!user) return refuse('your account is gone: sign in again (infergate login --sso)');
    if (Date.parse(session.expires_at) + REFRESH_WINDOW_MS <= this.deps.clock.now()) return refuse('this sign-in is too old to refresh: sign in again (infergate login --sso)');
    const idpToken = this.records.idpRefreshToken(session);
    if (idpToken === null) return refuse('the identity provider gave no refresh token at sign-in (ask for the offline_access scope): sign in again (infergate login --sso)');
    let identity: IdpIdentity;
    try {
      identity = await this.oidc.refresh(idpToken, user.subject);
    } catch (err) {
      if (err instanceof IdpRefusal) return refuse(`the identity provider refused the refresh (${err.message}): sign in again (infergate login --sso)`);
      throw unavailable(err);
    }
    const updated = (await this.records.updateUser(user.id, identity)) ?? user;
    // Only one refresh of a token wins: the loser finds its session gone.
    if (!(await this.records.deleteSession(session.id))) throw new PlatformError('unauthenticated', 'this refresh token was used already: sign in again (infergate login --sso)');
    const answer = await this.cliSession(updated, identity.refreshToken);
    await this.audit(request, { actor: actorOf(updated), role: this.isAdmin(updated) ? 'admin' : null, target: targetOf(updated), action: 'auth.refresh', result: 'allowed', status: 200 });
    return answer;
  }

  private async cliSession(user: UserRecord, idpRefreshToken: string | null): Promise<CliSession> {
    const made = await this.records.createSession(user.id, 'cli', this.settings.sessionLifetimeMs, idpRefreshToken);
    return {
      session_token: made.token,
      refresh_token: made.refresh ?? '',
      expires_at: made.record.expires_at,
      user: { id: user.id, email: user.email, name: user.name, groups: [...user.groups] },
    };
  }

  // ---- sign-out ----

  /** POST /auth/logout: the session deleted; the cookie that clears the console's. */
  async signOut(request: RequestLike): Promise<string> {
    const principal = request.principal;
    if (!principal || principal.kind !== 'user' || principal.session_id === null) {
      throw new PlatformError('invalid_request', 'a service-account key has no session to end; delete the service account to revoke its key');
    }
    await this.records.deleteSession(principal.session_id);
    await this.audit(request, {
      actor: { kind: 'user', id: principal.id, name: principal.name },
      role: principal.admin ? 'admin' : null,
      target: { kind: 'user', id: principal.id, name: principal.name },
      action: 'auth.sign_out',
      result: 'allowed',
      status: 204,
    });
    return clearCookie(SESSION_COOKIE, '/');
  }

  private async audit(request: RequestLike, event: Pick<AuditRecord, 'actor' | 'action' | 'result' | 'status'> & Partial<Pick<AuditRecord, 'role' | 'target'>>): Promise<void> {
    await this.records
      .audit({ ...event, request_id: String(request.id), source_address: request.ip })
      .catch((err: unknown) => this.deps.logger?.error({ err, action: event.action }, 'writing the audit entry failed'));
  }
}

const ANONYMOUS: AuditRecord['actor'] = { kind: 'anonymous', id: null, name: null };

function actorOf(user: UserRecord): AuditRecord['actor'] {
  return { kind: 'user', id: user.id, name: user.email ?? user.subject };
}

function targetOf(user: UserRecord): AuditRecord['target'] {
  return { kind: 'user', id: user.id, name: user.email ?? user.subject };
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function unavailable(err: unknown): never {
  if (err instanceof PlatformError) throw err;
  if (err instanceof IdpUnavailable) throw new PlatformError('unavailable', err.message);
  throw new PlatformError('unavailable', `the identity provider could not be reached: ${(err as Error).message}`);
}
