// Owns the records of people who sign in: a user per (issuer, subject), updated with their
// e-mail and groups at every sign-in and refresh; sessions (the console's cookie, a CLI's
// session and refresh tokens) created, looked up by token hash, rotated on refresh and
// deleted at sign-out or once expired; the project records a person's roles are computed
// from, kept from the store's change feed; and the audit entries of sign-in, sign-out and
// refresh. The store keeps hashes of tokens only, and the provider's refresh token sealed.

import { isoNow, type Clock } from '../core/clock.js';
import { sha256Hex, type Sealer } from '../core/secrets.js';
import type { AuditRecord, ProjectRecord, SessionRecord, UserRecord } from '../domain/records.js';
import { ConflictError, modify, NotFoundError, VersionConflictError, type Store, type Versioned } from '../store/store.js';
import { csrfTokenOf, newRefreshToken, newSessionToken } from './cookies.js';
import type { IdpIdentity } from './oidc-client.js';

export const SESSION_TOKEN_INDEX = 'session-token';
export const SESSION_REFRESH_INDEX = 'session-refresh';
export const USER_SUBJECT_INDEX = 'user-subject';

/** A session as made: the tokens are in the answer once, the store has their hashes. */
export interface NewSession {
  record: SessionRecord;
  token: string;
  /** The console's CSRF token (console sessions). */
  csrf: string | null;
  /** The CLI's refresh token (cli sessions). */
  refresh: string | null;
}

export type AuditEvent = Pick<AuditRecord, 'request_id' | 'actor' | 'action' | 'result' | 'status' | 'source_address'> & Partial<Pick<AuditRecord, 'role' | 'target'>>;

export class SessionRecords {
  private projects: Promise<ProjectRecord[]> | null = null;
  private readonly unwatch: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    private readonly sealer: Sealer,
    private readonly clock: Clock,
  ) {
    // Roles follow the member lists as they are now: any change to a project drops the copy.
    this.unwatch.push(
      store.watch((e) => {
        if (e.kind === 'project') this.projects = null;
      }),
      store.onResync(() => {
        this.projects = null;
      }),
    );
  }

  close(): void {
    for (const u of this.unwatch.splice(0)) u();
  }

  /** Every project with its members, as the store has them now. */
  async allProjects(): Promise<ProjectRecord[]> {
    if (this.projects) return this.projects;
    const reading = this.store.list('project').then((all) => all.map((p) => p.value));
    this.projects = reading;
    reading.catch(() => {
      if (this.projects === reading) this.projects = null;
    });
    return reading;
  }

  /** The user the provider named, made or updated with what it says now. */
  async upsertUser(identity: IdpIdentity): Promise<UserRecord> {
    const key = `${identity.issuer} ${identity.subject}`;
    const now = isoNow(this.clock);
    const hit = await this.store.lookup(USER_SUBJECT_INDEX, key);
    if (hit?.kind === 'user') {
      const updated = await modify(this.store, 'user', hit.id, (u) => ({ ...u, email: identity.email, name: identity.name, groups: identity.groups, last_sign_in_at: now })).catch(gone);
      if (updated) return updated.value;
    }
    try {
      const created = await this.store.create(
        'user',
        (id) => ({ id, issuer: identity.issuer, subject: identity.subject, email: identity.email, name: identity.name, groups: identity.groups, created_at: now, last_sign_in_at: now }),
        { unique: [{ index: USER_SUBJECT_INDEX, key }] },
      );
      return created.value;
    } catch (err) {
      // Two first sign-ins at once: the other one made the record.
      if (err instanceof ConflictError) return this.upsertUser(identity);
      throw err;
    }
  }

  /** The user's groups and e-mail as the provider says now (a refresh). */
  async updateUser(userId: number, identity: IdpIdentity): Promise<UserRecord | undefined> {
    const updated = await modify(this.store, 'user', userId, (u) => ({ ...u, email: identity.email, name: identity.name, groups: identity.groups })).catch(gone);
    return updated?.value;
  }

  async user(id: number): Promise<UserRecord | undefined> {
    return (await this.store.get('user', id))?.value;
  }

  async createSession(userId: number, client: SessionRecord['client'], lifetimeMs: number, idpRefreshToken: string | null): Promise<NewSession> {
    const token = newSessionToken();
    const csrf = client === 'console' ? csrfTokenOf(token) : null;
    const refresh = client === 'cli' ? newRefreshToken() : null;
    const now = this.clock.now();
    const unique = [{ index: SESSION_TOKEN_INDEX, key: sha256Hex(token) }, ...(refresh ? [{ index: SESSION_REFRESH_INDEX, key: sha256Hex(refresh) }] : [])];
    const created = await this.store.create(
      'session',
      (id) => ({
        id,
        user_id: userId,
        client,
        token_hash: sha256Hex(token),
        csrf_hash: csrf ? sha256Hex(csrf) : null,
        refresh_hash: refresh ? sha256Hex(refresh) : null,
        sealed_idp_refresh_token: idpRefreshToken ? this.sealer.seal(idpRefreshToken) : null,
        expires_at: new Date(now + lifetimeMs).toISOString(),
        created_at: new Date(now).toISOString(),
      }),
      { unique },
    );
    return { record: created.value, token, csrf, refresh };
  }

  /** The session a token belongs to (expired ones included: the caller says why it refuses). */
  async sessionByToken(token: string): Promise<Versioned<SessionRecord> | undefined> {
    return this.byIndex(SESSION_TOKEN_INDEX, token);
  }

  async sessionByRefreshToken(token: string): Promise<SessionRecord | undefined> {
    return (await this.byIndex(SESSION_REFRESH_INDEX, token))?.value;
  }

  private async byIndex(index: string, token: string): Promise<Versioned<SessionRecord> | undefined> {
    const hit = await this.store.lookup(index, sha256Hex(token));
    if (hit?.kind !== 'session') return undefined;
    return this.store.get('session', hit.id);
  }

  /**
   * Claims the session's check at the provider: true for the one request that moved
   * idp_checked_at from the version it read (others go on with the groups they have).
   */
  async claimCheck(session: Versioned<SessionRecord>, at: string): Promise<boolean> {
    try {
      await this.store.update('session', session.value.id, session.version, { ...session.value, idp_checked_at: at });
      return true;
    } catch (err) {
      if (err instanceof VersionConflictError || err instanceof NotFoundError) return false;
      throw err;
    }
  }

  /** Keeps the provider's new refresh token (a provider that rotates them). */
  async replaceIdpRefreshToken(sessionId: number, token: string): Promise<void> {
    const sealed = this.sealer.seal(token);
    await modify(this.store, 'session', sessionId, (s) => ({ ...s, sealed_idp_refresh_token: sealed })).catch(gone);
  }

  /** The provider's refresh token of a session, unsealed; null when it gave none. */
  idpRefreshToken(session: SessionRecord): string | null {
    return session.sealed_idp_refresh_token ? this.sealer.unseal(session.sealed_idp_refresh_token) : null;
  }

  async deleteSession(id: number): Promise<boolean> {
    return this.store.delete('session', id);
  }

  /** Deletes the sessions that can no longer be used: expired, and (CLI) past their refresh window. */
  async sweep(refreshWindowMs: number): Promise<number> {
    const now = this.clock.now();
    let n = 0;
    for (const s of await this.store.list('session')) {
      const end = Date.parse(s.value.expires_at) + (s.value.client === 'cli' ? refreshWindowMs : 0);
      if (end <= now && (await this.store.delete('session', s.value.id, s.version))) n++;
    }
    return n;
  }

  /** Appends an audit entry; never a token, a code or a secret in it. */
  async audit(event: AuditEvent): Promise<Versioned<AuditRecord>> {
    return this.store.create('audit', (id) => ({
      id,
      time: isoNow(this.clock),
      request_id: event.request_id,
      actor: event.actor,
      role: event.role ?? null,
      project: null,
      action: event.action,
      route: null,
      target: event.target ?? null,
      result: event.result,
      status: event.status,
      source_address: event.source_address,
    }));
  }
}

/** A record deleted meanwhile reads as none. */
function gone(err: unknown): undefined {
  if (err instanceof NotFoundError) return undefined;
  throw err;
}
