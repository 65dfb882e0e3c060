// Owns the key files in the data directory: the sealing key that encrypts secrets at rest
// (secret.key) and the admin key shown on first start (admin.key). Both are 0600.

import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

export class KeyFileError extends Error {
  override name = 'KeyFileError';
}

/**
 * The sealing key: INFERGATE_SECRET_KEY (base64, 32 bytes) when set — every process sharing
 * a Redis store needs the same one — otherwise `<data-dir>/secret.key`, created once.
 */
export async function loadSealingKey(dataDir: string, fromEnv: string | undefined): Promise<Buffer> {
  if (fromEnv) {
    const key = Buffer.from(fromEnv, 'base64');
    if (key.length !== 32) throw new KeyFileError('INFERGATE_SECRET_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)');
    return key;
  }
  const file = path.join(dataDir, 'secret.key');
  try {
    const key = Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
    if (key.length !== 32) throw new KeyFileError(`${file} does not hold a 32-byte base64 key; restore it from a backup`);
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  // 'wx': never replace a key another process wrote meanwhile; secrets sealed with it would be lost.
  await writeFile(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}

export function adminKeyPath(dataDir: string): string {
  return path.join(dataDir, 'admin.key');
}

/**
 * Writes the admin key file whole or not at all (a temporary file renamed over it), 0600
 * from its creation.
 */
export async function writeAdminKey(dataDir: string, key: string): Promise<string> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = adminKeyPath(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, key + '\n', { mode: 0o600, flag: 'w' });
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return file;
}

/** The key in the data directory's admin.key, or null when there is no such file. */
export async function readAdminKey(dataDir: string): Promise<string | null> {
  try {
    const key = (await readFile(adminKeyPath(dataDir), 'utf8')).trim();
    return key === '' ? null : key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
