// Owns the replica sandbox's command lines, as pure functions of what the host offers: the
// bubblewrap argv a replica runs under (own PID, IPC and UTS namespaces, a default-deny view
// of files — system directories and the installation read-only, the service's data and
// certificate directories hidden, the replica's root as its writable place, a private /tmp,
// a new /proc — the host network shared so its port works, and an unprivileged user), and
// the argv of a shell opened inside a running replica's sandbox (the terminal). Probing what
// the host offers is sandbox-probe.ts's job.

import path from 'node:path';

/**
 * Who runs the sandbox. `root`: bubblewrap runs as root without a user namespace and the
 * command drops to `uid:gid` through setpriv with every capability set emptied. `rootless`:
 * the service is not root, so bubblewrap makes a user namespace and the replica keeps the
 * service's own unprivileged uid — the mounts, not the uid, keep it from the service's files.
 */
export type SandboxIdentity = { kind: 'root'; uid: number; gid: number } | { kind: 'rootless'; uid: number };

/** A top-level system path as this host has it: a directory bound read-only, or a symlink recreated. */
export interface SystemPath {
  path: string;
  /** The link's target when the host's path is a symlink (`/bin` → `usr/bin`), else null. */
  symlink: string | null;
}

/** What the host offers every replica (resolved once at start by the probe). */
export interface SandboxHost {
  bwrap: string;
  setpriv: string;
  nsenter: string | null;
  identity: SandboxIdentity;
  system: SystemPath[];
  /** Further read-only host paths, absolute and resolved: the installation, Node's prefix, --sandbox-bind. */
  readOnly: string[];
  /** Directories replicas must not see although a read-only path covers them: an empty tmpfs hides them. */
  hidden: string[];
  /** Files to hide where hiding their whole directory would hide what replicas need (bound over with /dev/null). */
  hiddenFiles: string[];
}

/** What one replica adds: its root (writable, its working directory) and what else it may use. */
export interface SandboxedReplica {
  root: string;
  /** Writable besides the root: the shared model cache when model caching is on. */
  writable: string[];
  /** Read-only besides the host's: the Frontend's workers file directory. */
  readOnly: string[];
}

/** Namespaces every sandbox gets. The network is deliberately shared: the gateway reaches the replica's port on loopback. */
const NAMESPACES = ['--unshare-pid', '--unshare-ipc', '--unshare-uts'];

/**
 * The argv that runs `command` as `replica` in the sandbox. `--die-with-parent` takes the
 * sandbox down with the service even when it is killed outright; `--new-session` puts the
 * command in its own session and process group, so the runtime can signal exactly it (and its
 * group) for a graceful stop without killing bubblewrap first — whose death tears the whole
 * PID namespace down with SIGKILL at once. It also keeps a replica away from the service's
 * terminal (TIOCSTI). A terminal shell (`newSession: false`) must keep the pseudo-terminal it
 * was given as its controlling terminal, or Ctrl-C would end the whole shell instead of its
 * foreground job; that terminal is the shell's own, made for that session, so there is no one
 * else's to inject into.
 */
export function sandboxArgv(host: SandboxHost, replica: SandboxedReplica, command: readonly string[], opts: { newSession?: boolean } = {}): string[] {
  const args: string[] = [host.bwrap, ...NAMESPACES, '--die-with-parent', ...(opts.newSession === false ? [] : ['--new-session'])];
  if (host.identity.kind === 'rootless') args.push('--unshare-user');
  // A plain tmpfs is root's 0755: the replica's user could not write its own /tmp.
  args.push('--perms', '1777', '--tmpfs', '/tmp');
  const bound: string[] = [];
  for (const p of host.system) {
    if (p.symlink !== null) args.push('--symlink', p.symlink, p.path);
    else {
      args.push('--ro-bind', p.path, p.path);
      bound.push(p.path);
    }
  }
  // A new /dev (null, zero, random, pts, shm) and a new /proc: the service's /proc/<pid>/environ is not there.
  args.push('--dev', '/dev', '--proc', '/proc');
  const made = new Set<string>(['/', '/tmp', '/dev', '/proc', ...host.system.map((p) => p.path)]);
  const bind = (flag: '--ro-bind' | '--bind', p: string) => {
    args.push(...parents(p, made), flag, p, p);
    bound.push(p);
    made.add(p);
  };
  for (const p of unique([...host.readOnly])) if (!covered(p, bound)) bind('--ro-bind', p);
  // Hidden after the binds that would show them, before the replica's own paths that may lie inside them.
  for (const p of host.hidden) if (covered(p, bound)) args.push('--tmpfs', p);
  for (const f of host.hiddenFiles) if (covered(f, bound)) args.push('--ro-bind', '/dev/null', f);
  for (const p of unique(replica.readOnly)) bind('--ro-bind', p);
  for (const p of unique([replica.root, ...replica.writable])) bind('--bind', p);
  args.push('--chdir', replica.root, '--');
  return [...args, ...dropPrivileges(host), ...command];
}

/**
 * The argv of a shell inside a running replica's sandbox, as the replica's user. As root:
 * nsenter joins the PID, mount, IPC and UTS namespaces of the replica's command (`pid`, a host
 * pid), so the shell sees the replica's processes, files and /tmp, then setpriv drops to the
 * replica's uid. Rootless, the namespaces belong to a user namespace nested inside the one
 * bubblewrap made, which nsenter (util-linux before 2.39) cannot reach: the shell gets a
 * sandbox of its own with the same view of files and the same user, but not the replica's
 * process list, and keeps its controlling terminal (see sandboxArgv).
 */
export function shellArgv(host: SandboxHost, replica: SandboxedReplica, pid: number | null, shell = '/bin/sh'): string[] {
  if (host.identity.kind === 'root' && host.nsenter !== null && pid !== null) {
    // `-r -w`: the target's root and working directory. nsenter's --wd=<dir> would open <dir>
    // before entering the mount namespace — a host directory the new root cannot name — so
    // the shell changes to the replica's root itself.
    const enter = [host.nsenter, '-t', String(pid), '-p', '-m', '-i', '-u', '-r', '-w', '--'];
    return [...enter, ...dropPrivileges(host), '/bin/sh', '-c', 'cd "$1" && exec "$2"', 'infergate-shell', replica.root, shell];
  }
  return sandboxArgv(host, replica, [shell], { newSession: false });
}

/** How the sandbox is described at start-up. */
export function describeSandbox(host: SandboxHost): string {
  const id = host.identity;
  return id.kind === 'root'
    ? `bubblewrap, PID namespace, uid ${id.uid}:${id.gid}`
    : `bubblewrap, PID and user namespace, the service's own uid ${id.uid} (rootless)`;
}

function dropPrivileges(host: SandboxHost): string[] {
  const id = host.identity;
  if (id.kind !== 'root') return [];
  return [host.setpriv, '--reuid', String(id.uid), '--regid', String(id.gid), '--clear-groups', '--no-new-privs', '--bounding-set', '-all', '--inh-caps', '-all', '--'];
}

/** True when `p` is `base` or lies below it. */
export function isWithin(p: string, base: string): boolean {
  const rel = path.relative(base, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function covered(p: string, bound: readonly string[]): boolean {
  return bound.some((b) => isWithin(p, b));
}

/**
 * `--dir` for every ancestor of `p`. bubblewrap would make missing ones itself, but with mode
 * 0700, which the replica's user could not pass through (also inside a hiding tmpfs); on a
 * directory the sandbox already shows, `--dir` changes nothing.
 */
function parents(p: string, made: Set<string>): string[] {
  const out: string[] = [];
  const ancestors: string[] = [];
  for (let dir = path.dirname(p); dir !== '/' && dir !== '.'; dir = path.dirname(dir)) ancestors.unshift(dir);
  for (const dir of ancestors) {
    if (made.has(dir)) continue;
    out.push('--perms', '0755', '--dir', dir);
    made.add(dir);
  }
  return out;
}

function unique(paths: readonly string[]): string[] {
  return [...new Set(paths)];
}
