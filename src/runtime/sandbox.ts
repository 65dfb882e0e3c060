// Owns the replica sandbox's command lines, as pure functions of what the host offers: the
// bubblewrap argv a replica runs under (own PID, IPC and UTS namespaces, a default-deny view
// of files — system directories and the installation read-only, the service's data and
// certificate directories hidden, the replica's root as its writable place, a private /tmp,
// a new /proc — an unprivileged user, and a seccomp filter that refuses user namespaces), run
// in its pod's network namespace (entered with nsenter before bubblewrap starts; pods.ts) or,
// where the host gives no pods, in the host's network; and the argv of a shell opened beside a
// running replica (the terminal), in the same pod. Probing what the host offers is
// sandbox-probe.ts's job.
//
// Two rules hold for every process these command lines start with privileges (nsenter,
// bubblewrap, setpriv, the terminal's wrapper): they run with a fixed environment the runtime builds
// (FIXED_ENV), and nothing they execute comes from a filesystem the replica can change. The
// deployment's variables reach only the replica's own process: bubblewrap copies them from a
// descriptor into a read-only file in the sandbox (ENV_FILE), and a shell that already runs as
// the replica's user loads them just before it executes the command. So `LD_PRELOAD` (say)
// acts on the replica's command alone, never on a root process.

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
  identity: SandboxIdentity;
  system: SystemPath[];
  /** Further read-only host paths, absolute and resolved: the installation, Node's prefix, --sandbox-bind. */
  readOnly: string[];
  /** Directories replicas must not see although a read-only path covers them: an empty tmpfs hides them. */
  hidden: string[];
  /** Files to hide where hiding their whole directory would hide what replicas need (bound over with /dev/null). */
  hiddenFiles: string[];
  /** Whether the user-namespace filter (seccomp.ts) is applied; false only where the host cannot load it. */
  seccomp: boolean;
}

/** What one replica adds: its root (writable, its working directory) and what else it may use. */
export interface SandboxedReplica {
  root: string;
  /** Writable besides the root: the shared model cache when model caching is on. */
  writable: string[];
  /** Read-only besides the host's: the Frontend's workers file directory. */
  readOnly: string[];
  /** The pod's network namespace (a file under /var/run/netns) and the nsenter that enters it; absent: the host's network. */
  network?: { nsenter: string; netns: string };
}

/**
 * Namespaces bubblewrap makes for every sandbox. Not the network: a pod's namespace exists
 * before and beyond one replica (its members share it), so it is entered with nsenter before
 * bubblewrap runs; without pods the host's is kept.
 */
const NAMESPACES = ['--unshare-ipc', '--unshare-uts'];

/** The only environment of nsenter, bubblewrap, setpriv, the terminal's wrapper and the pods' ip: nothing a deployment sets. */
export const FIXED_ENV: Readonly<{ PATH: string }> = Object.freeze({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin' });

/**
 * Descriptors the command lines below read; whoever spawns them opens these. ENV: the
 * replica's environment as a shell script (env-script.ts); SECCOMP: the filter's program;
 * PIDNS: the replica's PID namespace, which a terminal joins.
 */
export const SANDBOX_FD = { env: 3, seccomp: 4, pidns: 5 } as const;

/** Where the replica's environment script is inside its sandbox: a read-only copy in the sandbox's own memory. */
export const ENV_FILE = '/run/infergate/env';

/**
 * Run by the replica's user inside the sandbox, as the last step before the command: closes
 * the descriptors above, loads the environment, and becomes the command (same pid, so signals
 * and the process list see the command). PWD is dash's own, not the deployment's.
 */
const LOADER = `exec ${SANDBOX_FD.env}<&- ${SANDBOX_FD.seccomp}<&- ${SANDBOX_FD.pidns}<&-; unset PWD OLDPWD; . ${ENV_FILE} || exit 126; exec "$@"`;

/** How the sandbox is entered: a replica (own PID namespace) or a terminal joining a replica's (root only). */
interface SandboxMode {
  /** false: keep the caller's session (a terminal's shell keeps its pseudo-terminal). */
  newSession: boolean;
  /** Join the PID namespace on SANDBOX_FD.pidns instead of making one. */
  joinPidNamespace: boolean;
}

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
 *
 * The caller provides SANDBOX_FD.env (and SANDBOX_FD.seccomp when `host.seccomp`) and spawns it
 * with FIXED_ENV.
 */
export function sandboxArgv(host: SandboxHost, replica: SandboxedReplica, command: readonly string[], opts: { newSession?: boolean } = {}): string[] {
  return bwrapArgv(host, replica, command, { newSession: opts.newSession ?? true, joinPidNamespace: false });
}

function bwrapArgv(host: SandboxHost, replica: SandboxedReplica, command: readonly string[], mode: SandboxMode): string[] {
  const pid = mode.joinPidNamespace ? ['--pidns', String(SANDBOX_FD.pidns)] : ['--unshare-pid'];
  const args: string[] = [host.bwrap, ...pid, ...NAMESPACES, '--die-with-parent', ...(mode.newSession ? ['--new-session'] : [])];
  if (host.identity.kind === 'rootless') args.push('--unshare-user');
  if (host.seccomp) args.push('--seccomp', String(SANDBOX_FD.seccomp));
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
  // The environment, copied by bubblewrap into its own read-only file: readable by the replica's user only through the loader's shell.
  args.push('--perms', '0444', '--ro-bind-data', String(SANDBOX_FD.env), ENV_FILE);
  const made = new Set<string>(['/', '/tmp', '/dev', '/proc', '/run', '/run/infergate', ...host.system.map((p) => p.path)]);
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
  return [...enterPod(replica), ...args, ...dropPrivileges(host), '/bin/sh', '-c', LOADER, 'infergate-env', ...command];
}

/**
 * nsenter joins the pod's network namespace and becomes bubblewrap (same pid: no fork for a
 * network namespace). `ip netns exec` would do the same but remount /sys on the way.
 */
export function enterPod(replica: SandboxedReplica): string[] {
  return replica.network === undefined ? [] : [replica.network.nsenter, `--net=${replica.network.netns}`, '--'];
}

/** A running replica as a terminal finds it: a process in its sandbox (host pid) and its PID namespace (`pid:[inode]`). */
export interface ShellAnchor {
  pid: number;
  pidNamespace: string;
}

/**
 * Opens the replica's descriptors as root (or the service's user, rootless) with FIXED_ENV,
 * checks they belong to the replica it was asked for, then becomes bubblewrap. Nothing here
 * is executed from the replica's files: `/proc/<pid>/root/…` is only read (a file bubblewrap
 * made read-only in the sandbox's memory), and the namespace is checked before and after, so
 * a pid reused meanwhile is refused rather than entered.
 */
const TERMINAL_WRAPPER = [
  'p=$1 ns=$2 filter=$3; shift 3',
  `exec ${SANDBOX_FD.pidns}<"/proc/$p/ns/pid" ${SANDBOX_FD.env}<"/proc/$p/root${ENV_FILE}" || exit 1`,
  `if [ -n "$filter" ]; then exec ${SANDBOX_FD.seccomp}<"$filter" || exit 1; fi`,
  `if [ "$(readlink /proc/self/fd/${SANDBOX_FD.pidns})" != "$ns" ] || [ "$(readlink "/proc/$p/ns/pid")" != "$ns" ]; then`,
  "  echo 'infergate: the replica restarted while the terminal opened; open it again' >&2; exit 1",
  'fi',
  'exec "$@"',
].join('\n');

/**
 * The argv of a shell beside a running replica, as the replica's user, in a sandbox of its own
 * built from the host's paths exactly as the replica's was (the same files, the same root, the
 * same environment) — never by entering the replica's mount namespace, where the replica
 * could have laid its own program over the one root would run. As root it joins the
 * replica's PID namespace, so the shell sees and can signal the replica's processes; rootless,
 * the PID namespace belongs to a user namespace it cannot join, so the shell has its own. In a
 * pod (`replica.network`) the shell runs in the pod's network namespace: it reaches what the
 * replica reaches, and nothing more.
 * `seccompFile` holds the filter's program (null: `host.seccomp` is false).
 */
export function shellArgv(host: SandboxHost, replica: SandboxedReplica, anchor: ShellAnchor, seccompFile: string | null, shell = '/bin/sh'): string[] {
  const join = host.identity.kind === 'root';
  const sandbox = bwrapArgv(host, replica, [shell], { newSession: false, joinPidNamespace: join });
  return ['/bin/sh', '-c', TERMINAL_WRAPPER, 'infergate-terminal', String(anchor.pid), anchor.pidNamespace, host.seccomp ? (seccompFile ?? '') : '', ...sandbox];
}

/** How the sandbox is described at start-up. */
export function describeSandbox(host: SandboxHost): string {
  const id = host.identity;
  const who = id.kind === 'root' ? `bubblewrap, PID namespace, uid ${id.uid}:${id.gid}` : `bubblewrap, PID and user namespace, the service's own uid ${id.uid} (rootless)`;
  return `${who}, ${host.seccomp ? 'no user namespaces inside' : "WARNING: replicas can make user namespaces (this host's seccomp filter could not be loaded)"}`;
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
