// Owns finding out, once at start, whether replicas can run sandboxed on this host: which
// tools are there (bubblewrap, setpriv), whether the user-namespace filter loads, who the replicas run as (a dropped uid when
// the service is root, the service's own uid in a user namespace otherwise), what they may
// read (system directories as this host lays them out, the installation, Node, the operator's
// binds) and what must stay hidden (data, certificates, the admin key, TLS keys) — then running the
// exact sandbox with /bin/true, and checking its user can read the installation, since a
// sandbox that cannot start a replica is no sandbox. `--sandbox auto` falls back to no
// sandbox with a warning, `--sandbox bwrap` refuses to start.

import { spawnSync } from 'node:child_process';
import { chownSync, closeSync, existsSync, lstatSync, mkdtempSync, openSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, type Config } from '../config/config.js';
import { envScript } from './env-script.js';
import { hostUserNamespaceFilter } from './seccomp.js';
import { describeSandbox, FIXED_ENV, isWithin, SANDBOX_FD, sandboxArgv, type SandboxHost, type SandboxIdentity, type SystemPath } from './sandbox.js';
import { firstExecutable } from './host-tools.js';

export interface SandboxDetection {
  /** Replicas (host commands and terminals included) run sandboxed. */
  sandboxed: boolean;
  /** The start-up line saying how replicas run. */
  description: string;
  host: SandboxHost | null;
}

export type SandboxSettings = Pick<Config, 'sandbox' | 'sandboxUser' | 'sandboxBinds' | 'dataDir' | 'certsDir' | 'adminKeyFile'> &
  Partial<Pick<Config, 'tlsKey' | 'apiTlsKey'>>;

const SYSTEM_PATHS = ['/usr', '/etc', '/opt', '/bin', '/sbin', '/lib', '/lib64'];

/** Decides how replicas run; throws ConfigError when `--sandbox bwrap` cannot be honoured. */
export function detectSandbox(config: SandboxSettings, self: readonly string[]): SandboxDetection {
  if (config.sandbox === 'none') {
    return {
      sandboxed: false,
      host: null,
      description:
        "infergate: replicas run unsandboxed (--sandbox none), as the service's own user; host commands and the terminal are refused unless --allow-unsandboxed-host-commands",
    };
  }
  const built = buildHost(config, self);
  const found = typeof built === 'string' ? { host: null, failure: built } : probe(built, self);
  if (found.host !== null) {
    return { sandboxed: true, host: found.host, description: `infergate: replicas run sandboxed (${describeSandbox(found.host)})` };
  }
  const { failure } = found;
  if (config.sandbox === 'bwrap') throw new ConfigError(`--sandbox bwrap: the replica sandbox does not work here: ${failure}`);
  return {
    sandboxed: false,
    host: null,
    description:
      `infergate: WARNING: replicas run UNSANDBOXED, as the service's own user (no bubblewrap sandbox: ${failure}); ` +
      'host commands and the terminal are refused unless --allow-unsandboxed-host-commands; install bubblewrap (apt-get install bubblewrap) or pass --sandbox bwrap to require it',
  };
}

/** What this host offers, or why there is no sandbox here. */
function buildHost(config: SandboxSettings, self: readonly string[]): SandboxHost | string {
  const bwrap = firstExecutable(['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap']);
  if (bwrap === null) return 'bwrap is not installed';
  const setpriv = firstExecutable(['/usr/bin/setpriv', '/bin/setpriv']);
  const uid = process.getuid?.() ?? -1;
  const identity: SandboxIdentity = uid === 0 ? { kind: 'root', ...config.sandboxUser } : { kind: 'rootless', uid };
  if (identity.kind === 'root' && setpriv === null) return 'setpriv (util-linux) is not installed, so a root service cannot drop the replicas to an unprivileged user';
  const system = systemPaths();
  for (const bind of config.sandboxBinds) {
    if (!existsSync(bind)) throw new ConfigError(`--sandbox-bind ${bind}: no such file or directory`);
  }
  const readOnly = unique([...installationPaths(self), ...config.sandboxBinds.map(real), ...resolverPaths()]).filter(
    (p) => !system.some((s) => s.symlink === null && isWithin(p, s.path)),
  );
  const bound = [...system.filter((s) => s.symlink === null).map((s) => s.path), ...readOnly];
  const hidden = unique([config.dataDir, config.certsDir].map((dir) => hidingPoint(real(dir), bound, identity)));
  // The operator's private keys may sit anywhere, /etc included: covered wherever a bind shows them.
  const hiddenFiles = [config.tlsKey, config.apiTlsKey].filter((f): f is string => typeof f === 'string').map(real);
  if (config.adminKeyFile !== null) {
    const file = real(config.adminKeyFile);
    const dir = path.dirname(file);
    // Hiding /etc (say) would hide what every replica needs: then only the file is covered.
    const needed = [...system.map((s) => s.path), ...readOnly].some((p) => isWithin(p, dir));
    if (needed) hiddenFiles.push(file);
    else hidden.push(dir);
  }
  return { bwrap, setpriv: setpriv ?? '/usr/bin/setpriv', identity, system, readOnly, hidden, hiddenFiles, seccomp: hostUserNamespaceFilter() !== null };
}

/**
 * Where to hide `dir` when a read-only bind shows it: at `dir`, unless one of its ancestors
 * below the bind is closed to the replica's user (mkdir -p of the data dir makes them 0700) —
 * then at the topmost such ancestor, since the replica's root below it could not be reached
 * through a closed directory, and the user could not see into it anyway.
 */
function hidingPoint(dir: string, bound: readonly string[], identity: SandboxIdentity): string {
  const base = bound.find((b) => isWithin(dir, b));
  if (base === undefined || identity.kind !== 'root') return dir;
  let point = dir;
  for (let p = path.dirname(dir); p !== base && isWithin(p, base); p = path.dirname(p)) {
    try {
      if ((statSync(p).mode & 0o001) === 0) point = p;
    } catch {
      // not there yet: made later with the directory itself
    }
  }
  return point;
}

/** The host's top-level system directories, and which of them are symlinks (merged /usr). */
function systemPaths(): SystemPath[] {
  const out: SystemPath[] = [];
  for (const p of SYSTEM_PATHS) {
    try {
      const st = lstatSync(p);
      if (st.isSymbolicLink()) out.push({ path: p, symlink: readlinkSync(p) });
      else if (st.isDirectory()) out.push({ path: p, symlink: null });
    } catch {
      // not on this host
    }
  }
  return out;
}

/**
 * What replicas need to run `infergate engine` / `infergate frontend` (selfCommand): Node's
 * install prefix, the installation (the package directory holding src/ or dist/ and its
 * node_modules, followed when node_modules is a link), and every file the loader flags name.
 */
export function installationPaths(self: readonly string[]): string[] {
  const out: string[] = [];
  const [node, ...args] = self;
  if (node !== undefined) out.push(path.dirname(path.dirname(real(node))));
  for (const arg of args) {
    const file = arg.startsWith('file:') ? fileURLToPath(arg) : path.isAbsolute(arg) ? arg : null;
    if (file === null || !existsSync(file)) continue;
    const resolved = real(file);
    const inModules = resolved.split(path.sep).indexOf('node_modules');
    if (inModules > 0) {
      out.push(resolved.split(path.sep).slice(0, inModules + 1).join(path.sep));
      continue;
    }
    const pkg = packageRoot(resolved);
    if (pkg === null) {
      out.push(path.dirname(resolved));
      continue;
    }
    out.push(pkg);
    const modules = path.join(pkg, 'node_modules');
    if (existsSync(modules)) out.push(real(modules));
  }
  return out;
}

/** /etc/resolv.conf often links into /run (systemd-resolved): that file, so host engines resolve names. */
function resolverPaths(): string[] {
  try {
    const target = realpathSync('/etc/resolv.conf');
    return target.startsWith('/etc/') ? [] : [target];
  } catch {
    return [];
  }
}

function packageRoot(file: string): string | null {
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
  }
  return null;
}

/**
 * The host that works, or why none does. A kernel that refuses the seccomp filter (seccomp
 * missing) still gets the rest of the sandbox, without the filter, and the start-up line says so.
 */
function probe(full: SandboxHost, self: readonly string[]): { host: SandboxHost; failure: null } | { host: null; failure: string } {
  const failure = probeWith(full, self);
  if (failure === null) return { host: full, failure };
  const without = { ...full, seccomp: false };
  if (full.seccomp && probeWith(without, self) === null) return { host: without, failure: null };
  return { host: null, failure };
}

function probeWith(full: SandboxHost, self: readonly string[]): string | null {
  const host = withExistingHidden(full);
  let root: string | null = null;
  const fds: number[] = [];
  try {
    root = mkdtempSync(path.join(os.tmpdir(), 'infergate-sandbox-probe-'));
    if (host.identity.kind === 'root') chownSync(root, host.identity.uid, host.identity.gid);
    const replica = { root, writable: [], readOnly: [] };
    // The two descriptors every sandbox reads: the environment script and the filter.
    const file = (name: string, content: string | Buffer) => {
      writeFileSync(path.join(root!, name), content, { mode: 0o600 });
      const fd = openSync(path.join(root!, name), 'r');
      fds.push(fd);
      return fd;
    };
    const filter = host.seccomp ? hostUserNamespaceFilter() : null;
    const run = (command: string[]) => {
      const stdio: Array<'ignore' | 'pipe' | number> = ['ignore', 'pipe', 'pipe'];
      stdio[SANDBOX_FD.env] = file(`env-${fds.length}`, envScript({ HOME: root!, PATH: FIXED_ENV.PATH }).script);
      stdio[SANDBOX_FD.seccomp] = filter !== null ? file(`filter-${fds.length}`, filter) : 'ignore';
      return spawnSync(command[0] as string, command.slice(1), { env: FIXED_ENV, stdio, encoding: 'utf8', timeout: 15_000 });
    };
    const plain = run(sandboxArgv(host, replica, ['/bin/true']));
    if (plain.error) return `${host.bwrap}: ${plain.error.message}`;
    if (plain.status !== 0) return `${host.bwrap} failed: ${(plain.stderr || `exit ${plain.status}`).trim().split('\n')[0]}`;
    // The replica's user must reach what replicas run: the Node binary and the installation.
    const [node, ...rest] = installationProbeTargets(host, self);
    const readable = run(sandboxArgv(host, replica, ['/bin/sh', '-c', 'test -x "$1" || exit 3; shift; for f; do test -r "$f" || exit 4; done', 'probe', node ?? '/bin/true', ...rest]));
    if (readable.status === 3) return `the sandbox's user cannot run ${node}`;
    if (readable.status !== 0) return `the sandbox's user (${who(host)}) cannot read the installation (${rest.join(', ')}); make it readable to that user (chmod -R o+rX) or choose another --sandbox-user`;
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    for (const fd of fds) closeSync(fd);
    if (root !== null) rmSync(root, { recursive: true, force: true });
  }
}

/** Node, the script selfCommand runs, and every read-only directory. */
function installationProbeTargets(host: SandboxHost, self: readonly string[]): string[] {
  const script = self[self.length - 1];
  return [self[0] ?? process.execPath, ...(script !== undefined ? [real(script)] : []), ...host.readOnly.filter((p) => existsSync(p) && statSync(p).isDirectory())];
}

/**
 * The host with only the hidden paths that exist now: a tmpfs cannot be mounted on a path a
 * read-only bind does not have. Asked at every launch, since the certificates directory (say)
 * may appear after start-up.
 */
export function withExistingHidden(host: SandboxHost): SandboxHost {
  return { ...host, hidden: host.hidden.filter((p) => existsSync(p)), hiddenFiles: host.hiddenFiles.filter((p) => existsSync(p)) };
}

function who(host: SandboxHost): string {
  return host.identity.kind === 'root' ? `uid ${host.identity.uid}:${host.identity.gid}` : `uid ${host.identity.uid}`;
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

function unique(paths: string[]): string[] {
  return [...new Set(paths)];
}
