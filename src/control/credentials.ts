// Owns platform credentials (service accounts, which authenticate automation to the
// control API) and endpoint bearer tokens in the vault (which protect deployed endpoints).
// The two never stand in for each other (spec, Authentication 4). Values are shown once,
// at creation; the store keeps only their SHA-256. A token may carry a cap on the X-Priority
// class of its requests, set at creation and changed later by anyone who may manage tokens.
// Tokens and non-admin service accounts belong to a project: names are unique per project, and
// another project's record is answered as one that does not exist.

import { isoNow, type Clock } from '../core/clock.js';
import { notFound, PlatformError } from '../core/errors.js';
import { generateCredential, SERVICE_KEY_PREFIX, sha256Hex, TOKEN_PREFIX } from '../core/secrets.js';
import type { Priority } from '../domain/priority.js';
import type { ServiceAccountRecord, ServiceAccountRole, TokenRecord } from '../domain/records.js';
import { projectOf } from '../domain/access.js';
import { uniqueKey } from './caller.js';
import { ConflictError, modify, NotFoundError, type Store } from '../store/store.js';
import { TOKEN_HASH_INDEX } from './deployment-service.js';

export const SA_KEY_INDEX = 'service-account-key';
export const SA_NAME_INDEX = 'service-account-name';
export const ADMIN_ACCOUNT = 'admin';

export class Credentials {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** The service account a platform key belongs to, or undefined. */
  async authenticate(key: string): Promise<ServiceAccountRecord | undefined> {
    const hit = await this.store.lookup(SA_KEY_INDEX, sha256Hex(key));
    if (!hit || hit.kind !== 'service_account') return undefined;
    return (await this.store.get('service_account', hit.id))?.value;
  }

  /** True when the value is an endpoint bearer token (used to explain a 401). */
  async isEndpointToken(value: string): Promise<boolean> {
    return (await this.store.lookup(TOKEN_HASH_INDEX, sha256Hex(value))) !== undefined;
  }

  /** `project`: the project it acts in; null for an admin account (which belongs to none). */
  async createServiceAccount(
    name: string,
    role: ServiceAccountRole,
    key = generateCredential(SERVICE_KEY_PREFIX),
    project: string | null = null,
  ): Promise<{ account: ServiceAccountRecord; key: string }> {
    const hash = sha256Hex(key);
    // Admin accounts keep the bare name, as every account did before projects.
    const nameKey = project === null ? name : uniqueKey(project, name);
    try {
      const created = await this.store.create(
        'service_account',
        (id) => ({ id, ...(project !== null && { project }), name, role, key_hash: hash, created_at: isoNow(this.clock) }),
        { unique: [{ index: SA_NAME_INDEX, key: nameKey }, { index: SA_KEY_INDEX, key: hash }] },
      );
      return { account: created.value, key };
    } catch (err) {
      if (err instanceof ConflictError && err.index === SA_NAME_INDEX) {
        throw new PlatformError('conflict', `a service account named "${name}" already exists`, { field: 'name' });
      }
      throw err;
    }
  }

  async listServiceAccounts(): Promise<ServiceAccountRecord[]> {
    return (await this.store.list('service_account')).map((a) => a.value);
  }

  /**
   * The account, if the caller sees it: one of `project` (the request's), or an admin account
   * when the caller is the admin; any other is answered as one that does not exist.
   */
  async getServiceAccount(id: number, project: string, admin: boolean): Promise<ServiceAccountRecord> {
    const found = await this.store.get('service_account', id);
    const a = found?.value;
    const visible = a !== undefined && (a.role === 'admin' ? admin : projectOf(a) === project);
    if (!visible) throw notFound('service account', id);
    return a;
  }

  /** The last admin cannot be deleted: nobody could manage accounts afterwards. */
  async deleteServiceAccount(id: number, project: string, admin: boolean): Promise<void> {
    const account = await this.getServiceAccount(id, project, admin);
    if (account.role === 'admin') {
      const admins = (await this.listServiceAccounts()).filter((a) => a.role === 'admin');
      if (admins.length <= 1) {
        throw new PlatformError('conflict', `service account ${account.name} is the last admin; create another admin first`);
      }
    }
    await this.store.delete('service_account', id);
  }

  /**
   * The admin account on start with a key given by the operator (--admin-key-file or
   * INFERGATE_ADMIN_KEY): the admin's key is set to it, created or rotated.
   */
  async ensureAdmin(fixedKey: string): Promise<void> {
    if (await this.authenticate(fixedKey)) return;
    await this.setAdminKey(fixedKey);
  }

  /** True once any service account exists (the first start has happened). */
  async hasServiceAccounts(): Promise<boolean> {
    return (await this.listServiceAccounts()).length > 0;
  }

  /**
   * Makes `key` the key of the account named admin (role admin), replacing that account when
   * it exists: a key's hash is a unique index, so the account is deleted and made again.
   * Returns the new account.
   */
  async setAdminKey(key: string = generateCredential(SERVICE_KEY_PREFIX)): Promise<{ account: ServiceAccountRecord; key: string }> {
    // Not a project's account that happens to be named admin: those always name their project.
    const existing = (await this.listServiceAccounts()).find((a) => a.name === ADMIN_ACCOUNT && (a.project ?? null) === null);
    if (existing) await this.store.delete('service_account', existing.id);
    return this.createServiceAccount(ADMIN_ACCOUNT, 'admin', key);
  }

  async createToken(name: string, maxPriority: Priority | null, project: string): Promise<{ token: TokenRecord; value: string }> {
    const value = generateCredential(TOKEN_PREFIX);
    const hash = sha256Hex(value);
    const created = await this.store.create(
      'token',
      (id) => ({ id, project, name, hash, max_priority: maxPriority, created_at: isoNow(this.clock) }),
      { unique: [{ index: TOKEN_HASH_INDEX, key: hash }] },
    );
    return { token: created.value, value };
  }

  /** The token, if it is the project's; another project's is answered as one that does not exist. */
  async getToken(id: number, project: string): Promise<TokenRecord> {
    const found = await this.store.get('token', id);
    if (!found || projectOf(found.value) !== project) throw notFound('token', id);
    return found.value;
  }

  /** Raises, lowers or removes (null) the token's cap; gateways apply it within a second. */
  async setTokenMaxPriority(id: number, maxPriority: Priority | null, project: string): Promise<TokenRecord> {
    await this.getToken(id, project);
    try {
      return (await modify(this.store, 'token', id, (t) => ((t.max_priority ?? null) === maxPriority ? undefined : { ...t, max_priority: maxPriority }))).value;
    } catch (err) {
      if (err instanceof NotFoundError) throw notFound('token', id);
      throw err;
    }
  }

  /**
   * Deleting a token revokes it at once, also for deployments bound to it: a leaked token
   * must be revocable without first editing every deployment.
   */
  async deleteToken(id: number, project: string): Promise<void> {
    await this.getToken(id, project);
    if (!(await this.store.delete('token', id))) throw notFound('token', id);
  }
}
