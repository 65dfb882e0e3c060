import { describe, expect, it } from 'vitest';
import { describeSandbox, isWithin, sandboxArgv, shellArgv, type SandboxHost } from './sandbox.js';

const host: SandboxHost = {
  bwrap: '/usr/bin/bwrap',
  setpriv: '/usr/bin/setpriv',
  nsenter: '/usr/bin/nsenter',
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
};
const replica = { root: '/srv/infergate/data/replicas/web-r1-1', writable: ['/srv/infergate/data/model-cache'], readOnly: ['/srv/infergate/data/orchestrated/4'] };

/** The position of `flag a b` in argv (consecutive), -1 when absent. */
function at(argv: string[], ...seq: string[]): number {
  for (let i = 0; i + seq.length <= argv.length; i++) if (seq.every((s, j) => argv[i + j] === s)) return i;
  return -1;
}

describe('sandboxArgv', () => {
  const argv = sandboxArgv(host, replica, ['/opt/engine/serve', '--port', '4000']);

  it('gives the replica its own PID, IPC and UTS namespaces, shares the network, and dies with the service', () => {
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
      '/opt/engine/serve',
      '--port',
      '4000',
    ]);
  });

  it('rootless: a user namespace, the service uid, no setpriv', () => {
    const rootless = sandboxArgv({ ...host, identity: { kind: 'rootless', uid: 1000 } }, replica, ['/bin/true']);
    expect(rootless).toContain('--unshare-user');
    expect(rootless).not.toContain('/usr/bin/setpriv');
    expect(rootless.slice(rootless.indexOf('--'))).toEqual(['--', '/bin/true']);
  });
});

describe('shellArgv', () => {
  it('root: enters the running replica namespaces with nsenter and drops to its user', () => {
    const argv = shellArgv(host, replica, 4242);
    expect(argv.slice(0, 11)).toEqual(['/usr/bin/nsenter', '-t', '4242', '-p', '-m', '-i', '-u', '-r', '-w', '--', '/usr/bin/setpriv']);
    expect(argv).toContain('--no-new-privs');
    expect(argv.slice(-6)).toEqual(['/bin/sh', '-c', 'cd "$1" && exec "$2"', 'infergate-shell', replica.root, '/bin/sh']);
  });

  it('rootless: a sandbox of its own with the same view of files', () => {
    const rootless = { ...host, identity: { kind: 'rootless' as const, uid: 1000 } };
    const shell = shellArgv(rootless, replica, 4242);
    // The same sandbox as the replica's, but the shell keeps its pseudo-terminal (Ctrl-C reaches the foreground job).
    expect(shell).toEqual(sandboxArgv(rootless, replica, ['/bin/sh']).filter((a) => a !== '--new-session'));
    expect(shell).not.toContain('--new-session');
    expect(sandboxArgv(rootless, replica, ['/bin/sh'])).toContain('--new-session');
  });
});

describe('describeSandbox and isWithin', () => {
  it('says who replicas run as', () => {
    expect(describeSandbox(host)).toBe('bubblewrap, PID namespace, uid 65534:65534');
    expect(describeSandbox({ ...host, identity: { kind: 'rootless', uid: 1000 } })).toContain('rootless');
  });
  it('tells paths inside a directory', () => {
    expect(isWithin('/a/b', '/a')).toBe(true);
    expect(isWithin('/a', '/a')).toBe(true);
    expect(isWithin('/ab', '/a')).toBe(false);
    expect(isWithin('/', '/a')).toBe(false);
  });
});
