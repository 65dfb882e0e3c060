// Owns `infergate admin`: operator commands that act on the store directly, on the host that
// holds it, for when the control API cannot help — today `reset-key`, which gives the admin
// account a new key when its key was lost. It takes serve's store flags (--data-dir,
// --redis-url, --redis-prefix, or their environment variables).

import { ConfigError, parseServeConfig } from '../config/config.js';
import { FileStore } from '../store/file-store.js';
import { RedisStore } from '../store/redis-store.js';
import type { Store } from '../store/store.js';
import { resetAdminKey } from './admin-key.js';

const USAGE = `usage: infergate admin reset-key [--data-dir DIR | --redis-url URL [--redis-prefix P]]

  reset-key  give the admin service account a new key, write it to <data-dir>/admin.key (mode 0600)
             and print it once; the old key stops signing in. With the embedded store, stop
             infergate first (it holds the data directory's lock).

It reads the same store flags and environment variables as infergate serve.`;

export async function runAdmin(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(USAGE + '\n');
    return;
  }
  if (sub !== 'reset-key') throw new ConfigError(`unknown admin command "${sub}"\n${USAGE}`);
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(USAGE + '\n');
    return;
  }
  const config = parseServeConfig(rest, process.env);
  const store: Store = config.redisUrl ? new RedisStore({ url: config.redisUrl, prefix: config.redisPrefix }) : new FileStore({ dir: config.dataDir });
  await store.open();
  try {
    const { key, file } = await resetAdminKey(store, config.dataDir);
    process.stdout.write(`infergate: the admin account has a new key, written to ${file} (mode 0600); shown once: ${key}\n`);
    process.stdout.write('infergate: the old admin key no longer signs in; sign in to the console or `infergate login` with the new one\n');
  } finally {
    await store.close();
  }
}
