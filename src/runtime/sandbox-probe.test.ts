import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../config/config.js';
import { detectSandbox, installationPaths, type SandboxSettings } from './sandbox-probe.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SELF = [process.execPath, path.join(REPO, 'src/cli/main.ts')];
/**
 * The real probe runs bubblewrap as root (as the service runs here and in CI), and its user
 * must be able to read this checkout (`.ci/run` makes sure; a private clone elsewhere skips).
 */
const othersMayRead = (p: string): boolean => (statSync(p).mode & 0o005) === 0o005;
const canProbe = process.getuid?.() === 0 && existsSync('/usr/bin/bwrap') && othersMayRead(REPO);

let dir: string;
let settings: SandboxSettings;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-probe-'));
  settings = { sandbox: 'auto', sandboxUser: { uid: 65534, gid: 65534 }, sandboxBinds: [], dataDir: path.join(dir, 'data'), certsDir: path.join(dir, 'certs'), adminKeyFile: null };
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('detectSandbox', () => {
  it('--sandbox none: never sandboxed, and says so', () => {
    const d = detectSandbox({ ...settings, sandbox: 'none' }, SELF);
    expect(d).toMatchObject({ sandboxed: false, host: null });
    expect(d.description).toContain('--sandbox none');
  });

  it('a --sandbox-bind path that does not exist is a configuration error naming the flag', () => {
    expect(() => detectSandbox({ ...settings, sandboxBinds: [path.join(dir, 'missing')] }, SELF)).toThrow(/--sandbox-bind/);
  });

  it.skipIf(!canProbe)('auto, where bubblewrap works: sandboxed as 65534, the installation readable, the data and certs dirs hidden', () => {
    const d = detectSandbox(settings, SELF);
    expect(d.sandboxed).toBe(true);
    expect(d.description).toBe('infergate: replicas run sandboxed (bubblewrap, PID namespace, uid 65534:65534, no user namespaces inside)');
    expect(d.host?.identity).toEqual({ kind: 'root', uid: 65534, gid: 65534 });
    expect(d.host?.readOnly).toContain(REPO);
    expect(d.host?.hidden).toEqual([path.join(dir, 'data'), path.join(dir, 'certs')]);
  });

  it.skipIf(!canProbe)("the operator's TLS keys and the admin key file are hidden too", () => {
    const d = detectSandbox({ ...settings, tlsKey: '/etc/ssl/private/gw.key', apiTlsKey: path.join(dir, 'api.key'), adminKeyFile: '/etc/infergate-admin.key' }, SELF);
    expect(d.host?.hiddenFiles).toEqual(['/etc/ssl/private/gw.key', path.join(dir, 'api.key'), '/etc/infergate-admin.key']);
  });

  it.skipIf(!canProbe)('a data dir under a bound path is hidden at its topmost ancestor closed to the sandbox user (else its replicas were unreachable)', () => {
    const closed = path.join(dir, 'state');
    chmodSync(dir, 0o755); // an operator's bind the sandbox user can read
    mkdirSync(path.join(closed, 'data'), { recursive: true, mode: 0o700 });
    const d = detectSandbox({ ...settings, sandboxBinds: [dir], dataDir: path.join(closed, 'data'), certsDir: path.join(dir, 'certs') }, SELF);
    expect(d.host?.hidden).toEqual([closed, path.join(dir, 'certs')]);
  });

  it.skipIf(!canProbe)('an installation the sandbox user cannot read: auto falls back with a warning, bwrap refuses to start', () => {
    const install = path.join(dir, 'install');
    mkdirSync(path.join(install, 'dist'), { recursive: true, mode: 0o700 });
    writeFileSync(path.join(install, 'package.json'), '{}');
    writeFileSync(path.join(install, 'dist', 'main.js'), '');
    const self = [process.execPath, path.join(install, 'dist', 'main.js')];
    const auto = detectSandbox(settings, self);
    expect(auto.sandboxed).toBe(false);
    expect(auto.description).toMatch(/^infergate: WARNING: replicas run UNSANDBOXED/);
    expect(auto.description).toContain('cannot read the installation');
    expect(() => detectSandbox({ ...settings, sandbox: 'bwrap' }, self)).toThrow(ConfigError);
    expect(() => detectSandbox({ ...settings, sandbox: 'bwrap' }, self)).toThrow(/--sandbox bwrap/);
  });
});

describe('installationPaths', () => {
  it("binds Node's prefix, the package of the script with its node_modules, and a loader's node_modules", () => {
    const paths = installationPaths([process.execPath, '--import', 'file:///nonexistent/tsx/loader.mjs', path.join(REPO, 'src/cli/main.ts')]);
    expect(paths).toContain(path.dirname(path.dirname(process.execPath)));
    expect(paths).toContain(REPO);
    expect(paths.some((p) => p.endsWith('node_modules'))).toBe(true);
    expect(paths).not.toContain('/nonexistent/tsx');
  });
});
