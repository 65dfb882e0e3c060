// Owns what the service makes of its own directories on the host: at start, the data and
// certificate directories closed to other users (0700, said when one was looser), and the two
// directories replicas write into — `<data-dir>/replicas` (each replica's root, its config
// file) and `<data-dir>/model-cache` (the deployments' caches) — made 0700 and owned by the
// service, and, as root, bind-mounted onto themselves with nosuid and nodev, so that a set-id
// program or a device node a replica or container writes there does nothing when a host user
// runs or opens it at its host path. Docker's bind mounts and bubblewrap's binds of paths
// below take the flags with them. A clean stop unmounts them; a mount an earlier run left
// (after kill -9) is found in /proc/self/mountinfo and used again rather than stacked.
// Rootless, nothing can be mounted: the start-up line says so.

import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { firstExecutable } from './host-tools.js';
import { FIXED_ENV } from './sandbox.js';

const run = promisify(execFile);


/** The flags every writable host path of a replica carries on the host. */
export const REPLICA_MOUNT_FLAGS = ['nosuid', 'nodev'] as const;

/**
 * Makes `dir` 0700 when it exists with a looser mode; the start-up line saying so, or null
 * when there was nothing to do. A directory the service cannot change is said too.
 */
export function tightenDir(dir: string, what: string): string | null {
  let mode: number;
  try {
    mode = statSync(dir).mode & 0o777;
  } catch {
    return null; // made later, 0700, by whoever needs it
  }
  if ((mode & 0o077) === 0) return null;
  try {
    chmodSync(dir, 0o700);
  } catch (err) {
    return `infergate: WARNING: the ${what} ${dir} is mode ${octal(mode)} and could not be made 0700 (${(err as Error).message}): other users may read it`;
  }
  return `infergate: the ${what} ${dir} was mode ${octal(mode)}: made 0700, so no other user of this host can enter it`;
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}

// ---- the mount table ------------------------------------------------------------------------

export interface MountEntry {
  id: number;
  parent: number;
  /** major:minor of the filesystem. */
  device: string;
  /** The directory of the filesystem this mount shows (a bind's source, relative to its filesystem). */
  root: string;
  mountPoint: string;
  /** Per-mount options: rw/ro, nosuid, nodev, noexec, relatime, … */
  options: string[];
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** /proc/self/mountinfo, parsed (proc(5)); lines it cannot read are skipped. */
export function parseMountInfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length < 6) continue;
    const [id, parent, device, root, mountPoint, options] = f as [string, string, string, string, string, string];
    out.push({ id: Number(id), parent: Number(parent), device, root: unescape(root), mountPoint: unescape(mountPoint), options: options.split(',') });
  }
  return out;
}

export function readMountTable(): MountEntry[] {
  return parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8'));
}

/** The mount a process sees at exactly `dir` (the last one mounted there), or null when none is. */
export function topMountAt(entries: readonly MountEntry[], dir: string): MountEntry | null {
  const here = entries.filter((e) => e.mountPoint === dir);
  // A mount stacked on another at the same point has it as its parent.
  return here.find((e) => !here.some((o) => o.parent === e.id)) ?? null;
}

/**
 * Whether `entry` is a directory bound onto itself — what this module mounts: it shows the
 * same filesystem and directory as the mount below it does at that point.
 */
export function isSelfBind(entries: readonly MountEntry[], entry: MountEntry): boolean {
  const below = entries.find((e) => e.id === entry.parent);
  if (below === undefined || below.device !== entry.device) return false;
  const rel = path.relative(below.mountPoint, entry.mountPoint);
  if (rel.startsWith('..')) return false;
  return path.posix.join(below.root, rel) === entry.root;
}

/** Mount points at or below `dir`, the deepest and last mounted first: the order to unmount them in. */
export function mountsBelow(entries: readonly MountEntry[], dir: string): MountEntry[] {
  const inside = entries.filter((e) => e.mountPoint === dir || e.mountPoint.startsWith(`${dir}/`));
  return inside.sort((a, b) => b.mountPoint.split('/').length - a.mountPoint.split('/').length || b.id - a.id);
}

function hasFlags(entry: MountEntry): boolean {
  return REPLICA_MOUNT_FLAGS.every((f) => entry.options.includes(f));
}

// ---- the replica directories ----------------------------------------------------------------

export interface ReplicaDirsGuard {
  /** Start-up lines: what was done, or why it could not be. */
  lines: string[];
  /** At a clean stop: unmounts what this start mounted (or took over from an earlier run). */
  release(): Promise<void>;
}

/**
 * Prepares the directories replicas write into: made (0700, the service's own), and as root
 * mounted nosuid,nodev on the host. `dirs` are absolute; they lie in the data directory.
 */
export async function guardReplicaDirs(dirs: readonly string[], logger: Logger): Promise<ReplicaDirsGuard> {
  const lines: string[] = [];
  const uid = process.getuid?.() ?? -1;
  const gid = process.getgid?.() ?? -1;
  for (const dir of dirs) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = statSync(dir);
    // Owned by the service (root, as root): a replica's own directories below are chowned to its user.
    if (uid === 0 && (st.uid !== uid || st.gid !== gid)) chownSync(dir, uid, gid);
    const tightened = tightenDir(dir, 'replica directory');
    if (tightened) lines.push(tightened);
  }
  const real = dirs.map((d) => realpathSync(d));
  if (uid !== 0) {
    lines.push(
      `infergate: WARNING: not root, so ${real.join(' and ')} are not mounted nosuid,nodev: a set-id file a replica writes there keeps its bit ` +
        "(owned by the service's own uid); the data directory's 0700 keeps other users from it",
    );
    return { lines, release: () => Promise.resolve() };
  }
  const mount = firstExecutable(['/usr/bin/mount', '/bin/mount']);
  const umount = firstExecutable(['/usr/bin/umount', '/bin/umount']);
  if (mount === null || umount === null) {
    lines.push(`infergate: WARNING: mount (util-linux) is not installed, so ${real.join(' and ')} are not mounted nosuid,nodev: a set-id file a replica writes there keeps its effect on the host`);
    return { lines, release: () => Promise.resolve() };
  }
  const owned: string[] = [];
  for (const dir of real) {
    try {
      const how = await mountNoSuid(mount, dir);
      if (how !== 'operator') owned.push(dir);
      logger.info({ dir, how }, 'replica directory mounted nosuid,nodev');
    } catch (err) {
      const why = ((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n')[0];
      lines.push(`infergate: WARNING: ${dir} could not be mounted nosuid,nodev (${why}): a set-id file a replica writes there keeps its effect on the host`);
      logger.warn({ dir, err: why }, 'replica directory not mounted nosuid,nodev');
    }
  }
  if (owned.length > 0) lines.push(`infergate: ${owned.join(' and ')} mounted nosuid,nodev: a set-id program or device node a replica writes there has no effect on this host`);
  return {
    lines,
    release: async () => {
      for (const dir of owned) await unmountSelfBind(umount, dir, logger);
    },
  };
}

/**
 * `dir` mounted nosuid,nodev: 'mounted' now, 'reused' (an earlier run's mount, after a crash),
 * or 'operator' (already a mount with both flags, e.g. a disk of its own: left as it is).
 */
async function mountNoSuid(mount: string, dir: string): Promise<'mounted' | 'reused' | 'operator'> {
  const table = readMountTable();
  const top = topMountAt(table, dir);
  if (top !== null && isSelfBind(table, top)) {
    if (!hasFlags(top)) await run(mount, ['-o', `remount,bind,${REPLICA_MOUNT_FLAGS.join(',')}`, dir], { env: FIXED_ENV });
    return 'reused';
  }
  if (top !== null && hasFlags(top)) return 'operator';
  await run(mount, ['--bind', dir, dir], { env: FIXED_ENV });
  await run(mount, ['-o', `remount,bind,${REPLICA_MOUNT_FLAGS.join(',')}`, dir], { env: FIXED_ENV });
  return 'mounted';
}

async function unmountSelfBind(umount: string, dir: string, logger: Logger): Promise<void> {
  const table = readMountTable();
  const top = topMountAt(table, dir);
  if (top === null || !isSelfBind(table, top)) return;
  try {
    await run(umount, [dir], { env: FIXED_ENV });
  } catch {
    // Busy (a process still has a file open there): detached now, gone once it lets go.
    await run(umount, ['--lazy', dir], { env: FIXED_ENV }).catch((err: Error) => logger.warn({ dir, err: err.message }, 'could not unmount a replica directory'));
  }
}
