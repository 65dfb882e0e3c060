// Owns the admin key at start-up and its reset: the first start writes data/admin.key before
// it creates the admin account (a crash in between leaves a file the next start uses, never
// an account whose key nobody saw); later starts say where the key is, or — when the file is
// gone or no longer signs in — how to get a new one (`infergate admin reset-key`).

import { systemClock } from '../core/clock.js';
import { generateCredential, SERVICE_KEY_PREFIX } from '../core/secrets.js';
import { Credentials } from '../control/credentials.js';
import type { Store } from '../store/store.js';
import { adminKeyPath, readAdminKey, writeAdminKey } from './key-files.js';

/** The command that makes a new admin key, as a person would type it for this data directory. */
export function resetCommand(dataDir: string, redisUrl: string | null): string {
  return `infergate admin reset-key ${redisUrl !== null ? '--redis-url <the same URL>' : `--data-dir ${dataDir}`}`;
}

interface AdminKeyOptions {
  dataDir: string;
  redisUrl: string | null;
  /** The key the operator gave (--admin-key-file or INFERGATE_ADMIN_KEY), or null. */
  fixedKey: string | null;
  /** Where the fixed key came from, for the start-up line. */
  fixedKeyFile: string | null;
}

/** Sees to the admin account and returns the start-up line that says where its key is. */
export async function ensureAdminKey(store: Store, options: AdminKeyOptions): Promise<string> {
  const credentials = new Credentials(store, systemClock);
  if (options.fixedKey !== null) {
    await credentials.ensureAdmin(options.fixedKey);
    return options.fixedKeyFile !== null
      ? `infergate: admin key: from ${options.fixedKeyFile}`
      : 'infergate: admin key: the value of INFERGATE_ADMIN_KEY (it stays readable in /proc/<pid>/environ to root and this user; --admin-key-file is preferred)';
  }
  const file = adminKeyPath(options.dataDir);
  const saved = await readAdminKey(options.dataDir);
  if (!(await credentials.hasServiceAccounts())) {
    // The file first: the account is made only once its key is on disk.
    const key = saved ?? generateCredential(SERVICE_KEY_PREFIX);
    if (saved === null) await writeAdminKey(options.dataDir, key);
    await credentials.setAdminKey(key);
    return saved === null
      ? `infergate: admin key created and written to ${file} (mode 0600); shown once: ${key}`
      : `infergate: admin key: in ${file} (the admin account was created from it)`;
  }
  const reset = resetCommand(options.dataDir, options.redisUrl);
  if (saved === null) {
    return (
      `infergate: admin key: an admin account exists but ${file} does not; sign in with the key you saved, ` +
      `or stop infergate and run \`${reset}\` for a new one (or start with --admin-key-file FILE)`
    );
  }
  if (!(await credentials.authenticate(saved))) {
    return `infergate: admin key: ${file} no longer signs in (the admin key was changed since); stop infergate and run \`${reset}\` for a new one, or use the key you set`;
  }
  return `infergate: admin key: in ${file}`;
}

/**
 * Gives the admin account a new key, writes it to data/admin.key (0600) and returns it. The
 * old key stops signing in at once. Needs the store to itself when it is the data directory
 * (its lock file refuses a second process), so the service is stopped first.
 */
export async function resetAdminKey(store: Store, dataDir: string): Promise<{ key: string; file: string }> {
  const key = generateCredential(SERVICE_KEY_PREFIX);
  const file = await writeAdminKey(dataDir, key);
  await new Credentials(store, systemClock).setAdminKey(key);
  return { key, file };
}
