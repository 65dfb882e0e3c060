import { describe, expect, it } from 'vitest';
import { describeSandbox, enterPod, isWithin, sandboxArgv, shellArgv, type SandboxHost } from './sandbox.js';

const host: SandboxHost = {
  bwrap: '/usr/bin/bwrap',
  setpriv: '/usr/bin/setpriv',
  identity: { kind: 'root', uid: 65534, gid: 65534 },
  system: [
    { path: '/usr', symlink: null },
    { path: '/etc', symlink: null },
    { path: '/bin', symlink: 'usr/bin' },
    { path: '/lib', symlink: 'usr/lib' },
  ],
  readOnly: ['/srv/infergate', '/srv/node'],
  // The default ./data and ./certs lie inside the installation; /var/lib/other is under no bind.
  hidden: ['/srv/infergate/data', '/srv/infergate/certs', '/var/lib/other'],
  hiddenFiles: ['/etc/infergate-admin.key'],
  seccomp: true,
};
const replica = { root: '/srv/infergate/data/replicas/web-r1-1', writable: ['/srv/infergate/data/model-cache'], readOnly: ['/srv/infergate/data/orchestrated/4'] };

/** The position of `flag a b` in argv (consecutive), -1 when absent. */
function at(argv: string[], ...seq: string[]): number {
  for (let i = 0; i + seq.length <= argv.length; i++) if (seq.every((s, j) => argv[i + j] === s)) return i;
  return -1;
}

describe('sandboxArgv', () => {
  const argv = sandboxArgv(host, replica, ['/opt/engine/serve', '--port', '4000']);

  it('gives the replica its own PID, IPC and UTS namespaces, makes no network namespace, and dies with the service', () => {
    expect(argv.slice(0, 1)).toEqual(['/usr/bin/bwrap']);
    for (const flag of ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--die-with-parent', '--new-session']) expect(argv).toContain(flag);
    expect(argv).not.toContain('--unshare-net');
    expect(argv).not.toContain('--unshare-all');
    expect(argv).not.toContain('--unshare-user');
  });

  it('binds system paths read-only as the host has them, symlinks recreated', () => {
    expect(at(argv, '--ro-bind', '/usr', '/usr')).toBeGreaterThan(0);
    expect(at(argv, '--ro-bind', '/etc', '/etc')).toBeGreaterThan(0);
    expect(at(argv, '--symlink', 'usr/bin', '/bin')).toBeGreaterThan(0);
    expect(at(argv, '--symlink', 'usr/lib', '/lib')).toBeGreaterThan(0);
    expect(at(argv, '--ro-bind', '/srv/infergate', '/srv/infergate')).toBeGreaterThan(0);
    expect(at(argv, '--ro-bind', '/srv/node', '/srv/node')).toBeGreaterThan(0);
  });

  it('has a private /tmp the replica user can write, a new /dev and a new /proc', () => {
    expect(at(argv, '--perms', '1777', '--tmpfs', '/tmp')).toBeGreaterThan(0);
    expect(at(argv, '--dev', '/dev')).toBeGreaterThan(0);
    expect(at(argv, '--proc', '/proc')).toBeGreaterThan(0);
  });

  it('hides the data and certificate directories under the installation, after binding it and before the replica root', () => {
    const install = at(argv, '--ro-bind', '/srv/infergate', '/srv/infergate');
    const data = at(argv, '--tmpfs', '/srv/infergate/data');
    const certs = at(argv, '--tmpfs', '/srv/infergate/certs');
    const root = at(argv, '--bind', replica.root, replica.root);
    expect(install).toBeLessThan(data);
    expect(install).toBeLessThan(certs);
    expect(data).toBeLessThan(root);
    // A path under no bind is not in the sandbox at all: nothing to hide.
    expect(argv).not.toContain('/var/lib/other');
    expect(at(argv, '--ro-bind', '/dev/null', '/etc/infergate-admin.key')).toBeGreaterThan(0);
  });

  it('binds the replica root and the model cache writable at the same paths, the workers directory read-only, and runs in the root', () => {
    expect(at(argv, '--bind', replica.root, replica.root)).toBeGreaterThan(0);
    expect(at(argv, '--bind', '/srv/infergate/data/model-cache', '/srv/infergate/data/model-cache')).toBeGreaterThan(0);
    expect(at(argv, '--ro-bind', '/srv/infergate/data/orchestrated/4', '/srv/infergate/data/orchestrated/4')).toBeGreaterThan(0);
    expect(at(argv, '--chdir', replica.root)).toBeGreaterThan(0);
    // Ancestors are made 0755 (bubblewrap's own are 0700: the replica user could not pass).
    expect(at(argv, '--perms', '0755', '--dir', '/srv/infergate/data/replicas')).toBeGreaterThan(0);
    expect(at(argv, '--perms', '0755', '--dir', '/srv/infergate/data/replicas')).toBeLessThan(at(argv, '--bind', replica.root, replica.root));
  });

  it('drops to the sandbox user with no capabilities before the command (root)', () => {
    const sep = argv.indexOf('--');
    expect(argv.slice(sep)).toEqual([
      '--',
      '/usr/bin/setpriv',
      '--reuid',
      '65534',
      '--regid',
      '65534',
      '--clear-groups',
      '--no-new-privs',
      '--bounding-set',
      '-all',
      '--inh-caps',
      '-all',
      '--',
      '/bin/sh',
      '-c',
      'exec 3<&- 4<&- 5<&-; unset PWD OLDPWD; . /run/infergate/env || exit 126; exec "$@"',
      'infergate-env',
      '/opt/engine/serve',
      '--port',
      '4000',
    ]);
  });

  it("hands the environment over as a read-only file in the sandbox's memory, read from descriptor 3, and loads the seccomp filter from 4", () => {
    expect(at(argv, '--perms', '0444', '--ro-bind-data', '3', '/run/infergate/env')).toBeGreaterThan(0);
    expect(at(argv, '--seccomp', '4')).toBeGreaterThan(0);
    expect(sandboxArgv({ ...host, seccomp: false }, replica, ['/bin/true'])).not.toContain('--seccomp');
  });

  it('rootless: a user namespace, the service uid, no setpriv', () => {
    const rootless = sandboxArgv({ ...host, identity: { kind: 'rootless', uid: 1000 } }, replica, ['/bin/true']);
    expect(rootless).toContain('--unshare-user');
    expect(rootless).not.toContain('/usr/bin/setpriv');
    expect(rootless.slice(rootless.indexOf('--'))).toEqual(['--', '/bin/sh', '-c', expect.stringContaining('. /run/infergate/env'), 'infergate-env', '/bin/true']);
  });
});

describe('in a pod', () => {
  const network = { nsenter: '/usr/bin/nsenter', netns: '/var/run/netns/infergate-3f2a9c01d7-7' };
  const inPod = { ...replica, network };

  it("enters the pod's network namespace with nsenter, which becomes bubblewrap; the rest of the sandbox is unchanged", () => {
    const argv = sandboxArgv(host, inPod, ['/opt/engine/serve']);
    expect(argv.slice(0, 4)).toEqual(['/usr/bin/nsenter', '--net=/var/run/netns/infergate-3f2a9c01d7-7', '--', '/usr/bin/bwrap']);
    expect(argv.slice(3)).toEqual(sandboxArgv(host, replica, ['/opt/engine/serve']));
    expect(argv).not.toContain('--unshare-net');
  });

  it("the terminal's wrapper becomes the same nsenter, network namespace only: never the replica's mount or PID namespace by nsenter", () => {
    const argv = shellArgv(host, inPod, { pid: 4242, pidNamespace: 'pid:[4026532179]' }, '/f');
    expect(argv.slice(3, 10)).toEqual(['infergate-terminal', '4242', 'pid:[4026532179]', '/f', '/usr/bin/nsenter', '--net=/var/run/netns/infergate-3f2a9c01d7-7', '--']);
    expect(argv[10]).toBe('/usr/bin/bwrap');
    expect(argv.slice(10)).toEqual(shellArgv(host, replica, { pid: 4242, pidNamespace: 'pid:[4026532179]' }, '/f').slice(7));
  });

  it('enterPod is nothing without a pod', () => {
    expect(enterPod(replica)).toEqual([]);
    expect(enterPod(inPod)).toEqual(['/usr/bin/nsenter', '--net=/var/run/netns/infergate-3f2a9c01d7-7', '--']);
  });
});

describe('shellArgv', () => {
  const anchor = { pid: 4242, pidNamespace: 'pid:[4026532179]' };

  it("root: a sandbox of its own built from the host's paths, joining the replica's PID namespace — never its mount namespace", () => {
    const argv = shellArgv(host, replica, anchor, '/data/sandbox/userns-filter.bpf');
    // The wrapper opens the replica's PID namespace, its environment file and the filter, checks the namespace, then becomes bubblewrap.
    expect(argv.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(argv.slice(3, 8)).toEqual(['infergate-terminal', '4242', 'pid:[4026532179]', '/data/sandbox/userns-filter.bpf', '/usr/bin/bwrap']);
    expect(argv[2]).toContain('5<"/proc/$p/ns/pid" 3<"/proc/$p/root/run/infergate/env"');
    const bwrap = argv.slice(7);
    expect(at(bwrap, '--pidns', '5')).toBe(1);
    expect(bwrap).not.toContain('--unshare-pid');
    expect(bwrap).not.toContain('--new-session');
    expect(at(bwrap, '--seccomp', '4')).toBeGreaterThan(0);
    expect(at(bwrap, '--bind', replica.root, replica.root)).toBeGreaterThan(0);
    expect(at(bwrap, '--chdir', replica.root)).toBeGreaterThan(0);
    expect(argv.join(' ')).not.toMatch(/nsenter/);
    // Then setpriv to the replica's user, the environment loader and the shell.
    expect(bwrap).toContain('--no-new-privs');
    expect(argv.slice(-1)).toEqual(['/bin/sh']);
  });

  it('rootless: a sandbox of its own with the same view of files, in a PID namespace of its own', () => {
    const rootless = { ...host, identity: { kind: 'rootless' as const, uid: 1000 } };
    const bwrap = shellArgv(rootless, replica, anchor, '/f').slice(7);
    // The same sandbox as the replica's, but the shell keeps its pseudo-terminal (Ctrl-C reaches the foreground job).
    expect(bwrap).toEqual(sandboxArgv(rootless, replica, ['/bin/sh']).filter((a) => a !== '--new-session'));
    expect(bwrap).toContain('--unshare-pid');
    expect(sandboxArgv(rootless, replica, ['/bin/sh'])).toContain('--new-session');
  });

  it('passes no filter file where the host has no filter', () => {
    expect(shellArgv({ ...host, seccomp: false }, replica, anchor, null)[6]).toBe('');
  });
});

describe('describeSandbox and isWithin', () => {
  it('says who replicas run as', () => {
    expect(describeSandbox(host)).toBe('bubblewrap, PID namespace, uid 65534:65534, no user namespaces inside');
    expect(describeSandbox({ ...host, seccomp: false })).toContain('WARNING: replicas can make user namespaces');
    expect(describeSandbox({ ...host, identity: { kind: 'rootless', uid: 1000 } })).toContain('rootless');
  });
  it('tells paths inside a directory', () => {
    expect(isWithin('/a/b', '/a')).toBe(true);
    expect(isWithin('/a', '/a')).toBe(true);
    expect(isWithin('/ab', '/a')).toBe(false);
    expect(isWithin('/', '/a')).toBe(false);
  });
});
