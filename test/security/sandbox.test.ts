// Security: replicas run in the sandbox, with a real `infergate serve`. An admin's deployment of
// an image the runtime does not simulate (its command runs on this host) runs as an
// unprivileged uid and cannot read the data directory, the CA key or the service's
// environment; its terminal runs as that uid and sees the replica's processes only; SIGTERM
// reaches its command for a graceful stop; a `setsid` child is gone after pause and after
// DELETE. After the service is killed outright, its replicas die with it and the next start
// removes the replica directories they left. With `--sandbox none`, host commands and the
// terminal are refused, naming the flag that would allow them. Where bubblewrap does not
// work, the sandboxed tests are skipped with a warning, except under CI=true.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { detectSandbox } from '../../src/runtime/sandbox-probe.js';
import { engineBody, PLATFORM_ADMIN_KEY, platformDirs, killLeftoverReplicas, replicaMains, replicaProcesses, startPlatform, usePlatform, type Platform } from '../helpers/platform.js';
import { openTerminal, runInTerminal } from '../helpers/terminal.js';
import { removeTempDir } from '../helpers/temp-dirs.js';

const TOKEN = 'tok-sandbox-0123456789';
const MARKER = `sandbox-marker-${process.pid}-${Date.now()}`;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** As root (here and in CI) replicas drop to nobody; a rootless service keeps its own uid in a user namespace. */
const asRoot = process.getuid?.() === 0;
const REPLICA_UID = asRoot ? '65534' : String(process.getuid?.());

// Whether bubblewrap works on this machine, by the service's own probe. Without it the sandboxed
// tests are skipped with a loud warning — except under CI=true, where they run and fail:
// .ci/run installs bubblewrap, and CI must test the sandbox.
const probeDir = path.join(os.tmpdir(), `infergate-sandbox-check-${process.pid}`);
const sandboxHere = detectSandbox(
  { sandbox: 'auto', sandboxUser: { uid: 65534, gid: 65534 }, sandboxBinds: [], dataDir: path.join(probeDir, 'data'), certsDir: path.join(probeDir, 'certs'), adminKeyFile: null },
  [process.execPath, path.join(ROOT, 'src/cli/main.ts')],
);
const runSandboxed = sandboxHere.sandboxed || process.env.CI === 'true';
if (!runSandboxed) console.warn(`\n*** sandbox tests SKIPPED: ${sandboxHere.description} ***\n`);

/**
 * A host command (an image the runtime does not simulate): it writes what it can see into its
 * root, leaves a `setsid` child, then serves HTTP on $PORT and says when SIGTERM reaches it.
 */
function hostCommand(name: string, env: Record<string, string>): Record<string, unknown> {
  const script = [
    'cd "$INFERGATE_REPLICA_ROOT" || exit 1',
    'id -u > uid',
    '(cat "$DATA_DIR"/state-*.journal || cat "$DATA_DIR/state-00000001.journal" || cat "$DATA_DIR/secret.key") >/dev/null 2>&1 && echo yes > data || echo no > data',
    'ls -a "$DATA_DIR" > data-listing 2>&1',
    'cat "$CERTS_DIR/ca.key" >/dev/null 2>&1 && echo yes > cakey || echo no > cakey',
    'cat "/proc/$SERVE_PID/environ" >/dev/null 2>&1 && echo yes > environ || echo no > environ',
    'cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c "^INFERGATE_ADMIN_KEY=" > admin-key-hits',
    'setsid sleep 333 &',
    `exec /usr/bin/node -e "const s = require('http').createServer((q, r) => r.end('ok')).listen(Number(process.env.PORT)); process.on('SIGTERM', () => { console.log('got SIGTERM: stopping'); process.exit(0); });"`,
  ].join('\n');
  return {
    name,
    cluster_id: 1,
    hardware_instance_id: 1,
    image: 'example.com/custom-engine',
    tag: '1',
    protocol: 'http',
    container_port: 8000,
    health_check_path: '/',
    endpoint_bearer_token: TOKEN,
    command: ['/bin/sh', '-c', script],
    env: { SANDBOX_MARKER: MARKER, ...env },
    min_replicas: 1,
    max_replicas: 1,
  };
}

/** Host processes carrying this test's marker in their environment, with their command line and uid. */
function markedProcesses(): { pid: number; cmdline: string; uid: string }[] {
  const out: { pid: number; cmdline: string; uid: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, 'latin1').includes(`SANDBOX_MARKER=${MARKER}\0`)) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0').join(' ').trim();
      const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${entry}/status`, 'latin1'))?.[1] ?? '';
      out.push({ pid: Number(entry), cmdline, uid });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const setsidChildren = () => markedProcesses().filter((p) => p.cmdline === 'sleep 333');

async function logLines(p: Platform, id: number): Promise<string[]> {
  const res = await p.call('GET', `/deployments/general/${id}/logs?tail=500`);
  return (res.body.lines as { line: string }[]).map((l) => l.line);
}

describe.skipIf(!runSandboxed)('a host command, sandboxed', () => {
  let platform: Platform;
  usePlatform('sandbox', [], (p) => (platform = p));

  it('runs as an unprivileged uid that cannot read the data dir, the CA key or the service environ; its setsid child dies with it', async () => {
    expect(platform.serve.output()).toContain(
      asRoot ? 'infergate: replicas run sandboxed (bubblewrap, PID namespace, uid 65534:65534, no user namespaces inside)' : 'infergate: replicas run sandboxed (bubblewrap, PID and user namespace',
    );
    const env = { DATA_DIR: platform.dataDir, CERTS_DIR: platform.certsDir, SERVE_PID: String(platform.serve.child.pid) };
    const created = await platform.call('POST', '/deployments/general', hostCommand('probe', env));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    await platform.waitFor(id, (d) => d.status === 'ready', 30_000, 'probe ready');

    // What the replica saw, from the files it wrote in its root.
    const replica = replicaMains(platform.dataDir, 'probe-')[0]!.replica;
    const root = path.join(platform.dataDir, 'replicas', replica);
    const seen = async (file: string) => (await readFile(path.join(root, file), 'utf8')).trim();
    expect(await seen('uid')).toBe(REPLICA_UID);
    expect(await seen('data')).toBe('no');
    expect(await seen('data-listing')).not.toMatch(/state-|secret\.key|LOCK/);
    expect(await seen('cakey')).toBe('no');
    expect(await seen('environ')).toBe('no');
    expect(await seen('admin-key-hits')).toBe('0');
    // The service itself can read all of these: the denials are the sandbox's doing.
    expect(readFileSync(path.join(platform.certsDir, 'ca.key'), 'utf8')).toContain('PRIVATE KEY');
    expect(readFileSync(`/proc/${platform.serve.child.pid}/environ`, 'latin1')).toContain(PLATFORM_ADMIN_KEY);

    // Every process of the replica but bubblewrap runs as nobody, the setsid child included.
    const processes = markedProcesses().filter((p) => !p.cmdline.startsWith('/usr/bin/bwrap'));
    expect(processes.map((p) => p.uid)).toEqual(processes.map(() => REPLICA_UID));
    expect(setsidChildren()).toHaveLength(1);

    // The terminal opens inside the sandbox, as the replica's user, seeing only its processes.
    const opened = await openTerminal(platform.apiUrl, PLATFORM_ADMIN_KEY, id);
    if (!('ws' in opened)) throw new Error(`terminal refused: ${opened.status} ${opened.body}`);
    const { ws } = opened;
    expect((await runInTerminal(ws, 'id -u', /\d+\s*$/)).trim()).toBe(REPLICA_UID);
    expect((await runInTerminal(ws, 'pwd', /\n/)).trim()).toBe(root);
    // One line per process it can see: "PID <pid> <command line, cut>".
    const listing = await runInTerminal(ws, 'for p in /proc/[0-9]*; do printf "PID %s " "${p#/proc/}"; tr "\\0" " " < $p/cmdline | head -c 100; echo; done; echo END', /END\s*$/);
    const commands = listing
      .split('\n')
      .filter((l) => l.startsWith('PID '))
      .map((l) => l.replace(/^PID \d+ /, ''));
    if (asRoot) {
      // Inside the replica's own namespaces (rootless, the shell has a sandbox of its own).
      expect(commands.some((c) => c.startsWith('sleep 333'))).toBe(true);
      expect(commands.some((c) => c.startsWith('/usr/bin/node -e'))).toBe(true);
    }
    expect(commands.filter((c) => /main\.ts serve|vitest/.test(c))).toEqual([]);
    // bubblewrap's init, the command, its setsid child, this shell and the loop's own tools: nothing of the host.
    expect(commands.length, JSON.stringify(commands)).toBeLessThan(10);
    expect(await runInTerminal(ws, `cat ${platform.certsDir}/ca.key 2>&1; echo END`, /END\s*$/)).not.toContain('PRIVATE KEY');
    ws.close();

    // Pause stops the replica gracefully: SIGTERM reaches the command, which exits 0; the setsid child goes too.
    expect((await platform.call('POST', `/deployments/general/${id}/pause`)).status).toBe(202);
    await expect.poll(() => replicaMains(platform.dataDir, 'probe-').length, { timeout: 20_000 }).toBe(0);
    await expect.poll(async () => (await logLines(platform, id)).some((l) => /^process \d+ exited/.test(l)), { timeout: 10_000 }).toBe(true);
    const lines = await logLines(platform, id);
    expect(lines, JSON.stringify(lines)).toContain('got SIGTERM: stopping');
    expect(lines.some((l) => /^process \d+ exited with code 0$/.test(l))).toBe(true);
    expect(setsidChildren()).toEqual([]);

    // Resumed, then deleted: again nothing of it is left.
    expect((await platform.call('POST', `/deployments/general/${id}/resume`)).status).toBe(202);
    await platform.waitFor(id, (d) => d.status === 'ready', 30_000, 'probe ready again');
    expect(setsidChildren()).toHaveLength(1);
    expect((await platform.call('DELETE', `/deployments/general/${id}`)).status).toBe(202);
    await expect.poll(() => markedProcesses(), { timeout: 20_000 }).toEqual([]);
  });
});

describe.skipIf(!runSandboxed)('crash leftovers', () => {
  let root: string | undefined;
  const started: Platform[] = [];
  afterAll(async () => {
    for (const p of started) {
      p.serve.kill('SIGKILL');
      await p.serve.exited;
      killLeftoverReplicas(p.dataDir);
    }
    if (root) await removeTempDir(root);
  });

  it('a replica of a service killed with SIGKILL dies with it, and the next start removes its directory and config file', async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-leftovers-'));
    const dirs = await platformDirs(root, 'leftovers');
    const first = await startPlatform(dirs);
    started.push(first);
    const configFile = { filename: 'settings.json', mount_path: '/etc/app', content: '{"api_key": "leftover-secret-0123"}' };
    const created = await first.call('POST', '/deployments/general', engineBody('left', TOKEN, { config_file: configFile }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    await first.waitFor(id, (d) => d.status === 'ready', 30_000, 'left ready');
    const old = replicaMains(dirs.dataDir, 'left-')[0]!.replica;
    const oldDir = path.join(dirs.dataDir, 'replicas', old);
    expect(readFileSync(path.join(oldDir, 'etc/app/settings.json'), 'utf8')).toContain('leftover-secret-0123');

    first.serve.kill('SIGKILL');
    await first.serve.exited;
    // The kernel ends the sandbox with its parent; the directory is what is left behind.
    await expect.poll(() => replicaProcesses(dirs.dataDir), { timeout: 5000 }).toEqual([]);
    expect(existsSync(oldDir)).toBe(true);

    const second = await startPlatform(dirs);
    started.push(second);
    await second.waitFor(id, (d) => d.status === 'ready', 30_000, 'left ready after SIGKILL');
    const now = replicaMains(dirs.dataDir, 'left-').map((r) => r.replica);
    expect(now).toHaveLength(1);
    expect(now).not.toContain(old);
    expect(existsSync(oldDir)).toBe(false);
    expect(readdirSync(path.join(dirs.dataDir, 'replicas'))).toEqual(now);
  });
});

describe('without a sandbox (--sandbox none)', () => {
  let platform: Platform;
  usePlatform('nosandbox', ['--sandbox', 'none'], (p) => (platform = p));

  it('says so at start, refuses to run a host command and refuses the terminal, naming --allow-unsandboxed-host-commands', async () => {
    expect(platform.serve.output()).toContain('replicas run unsandboxed (--sandbox none)');
    const engine = await platform.call('POST', '/deployments/general', engineBody('plain', TOKEN));
    expect(engine.status, JSON.stringify(engine.body)).toBe(201);
    const engineId = engine.body.id as number;
    await platform.waitFor(engineId, (d) => d.status === 'ready', 30_000, 'plain ready');
    const refused = await openTerminal(platform.apiUrl, PLATFORM_ADMIN_KEY, engineId);
    expect(refused).toMatchObject({ status: 409 });
    expect('body' in refused && refused.body).toContain('--allow-unsandboxed-host-commands');

    // The control API refuses it up front, for every role. (A record from before the rule is
    // refused again by the runtime, which never spawns it: src/runtime/local-runtime.test.ts.)
    const created = await platform.call('POST', '/deployments/general', hostCommand('unboxed', { DATA_DIR: platform.dataDir, CERTS_DIR: platform.certsDir, SERVE_PID: '1' }));
    expect(created.status, JSON.stringify(created.body)).toBe(403);
    expect(JSON.stringify(created.body)).toContain('--allow-unsandboxed-host-commands');
    expect(markedProcesses()).toEqual([]);
  });
});
