// Owns the file store's LOCK file: `<data-dir>/LOCK` holds the pid of the one process that
// owns the data directory, so that two processes never write the same state. A lock whose
// process is gone (killed, crashed) is taken over; one held by a live process is refused.

import { readFile, rm, writeFile } from 'node:fs/promises';
import { StoreError } from './store.js';

/** Lock files held by this process, so a second FileStore here is refused but a stale lock
 * left by an earlier process that happened to have our pid (pid 1 in containers) is not. */
const locksHeldHere = new Set<string>();

export async function acquireLock(dir: string, lockPath: string): Promise<void> {
  // A few rounds only to survive a racing takeover; each round either wins, refuses, or
  // removes a stale lock.
  for (let round = 0; round < 3; round++) {
    try {
      await writeFile(lockPath, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      locksHeldHere.add(lockPath);
      return;
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw new StoreError(`cannot create lock file ${lockPath}: ${reason(err)}`);
    }
    const holder = await readLockPid(lockPath);
    if (holder !== undefined && lockIsLive(holder, lockPath)) {
      throw new StoreError(
        `data dir ${dir} is in use by process ${holder} (lock file ${lockPath}); stop that process or use another --data-dir`,
      );
    }
    await rm(lockPath, { force: true });
  }
  throw new StoreError(`cannot take lock file ${lockPath}: it keeps reappearing`);
}

export async function releaseLock(lockPath: string): Promise<void> {
  locksHeldHere.delete(lockPath);
  // Only remove it if it is still ours: someone may have (wrongly) taken it over meanwhile.
  const holder = await readLockPid(lockPath);
  if (holder === process.pid) await rm(lockPath, { force: true }).catch(() => undefined);
}

/** The pid in the lock file; undefined when the file is unreadable, empty or garbage. */
async function readLockPid(lockPath: string): Promise<number | undefined> {
  try {
    const text = (await readFile(lockPath, 'utf8')).trim();
    const pid = Number(text);
    return /^\d+$/.test(text) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function lockIsLive(pid: number, lockPath: string): boolean {
  if (pid === process.pid) return locksHeldHere.has(lockPath);
  return processIsAlive(pid);
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else — still alive.
    return errorCode(err) === 'EPERM';
  }
}

export function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
