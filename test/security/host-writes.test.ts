// Security: nothing a replica writes on a host path acts on the host. An image that runs as
// root (a derived image with USER 0:0, as a member may deploy under the Docker runtime) copies
// a program into its model cache and makes it setuid root (chmod 4755), tries its config file's
// mount and makes a device node; a sandboxed host command (the local runtime, as nobody) does
// the same in its cache and its own root. On the host the files are there with their set-id
// bit, yet: uid 65534 cannot even reach them (the data directory and the replica directories
// are 0700), and when the test lets it through the directories, the program runs with the
// caller's own uid (the replica directories are mounted nosuid,nodev on the host); the config
// mount is read-only; mknod is refused (MKNOD dropped in the container, no capability in the
// sandbox). And at start, a data or certificate directory left 0755 (made by hand, or by an
// earlier release) is made 0700 and the start says so; a model cache left 0777 and another
// user's becomes 0700 and root's. A service that is not root says it cannot mount them. As
// root with Docker and bubblewrap; each part skipped loudly
// where its piece is missing, except under CI=true.

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerClient } from '../../src/runtime/docker/client.js';
import { LABEL } from '../../src/runtime/docker/container-spec.js';
import { readMountTable, topMountAt } from '../../src/runtime/host-dirs.js';
import { detectSandbox } from '../../src/runtime/sandbox-probe.js';
import { dockerGate, ensureEngineImage, removeContainersWithLabel, removeImage } from '../helpers/docker.js';
import { killLeftoverReplicas, platformDirs, startPlatform, type Platform, type PlatformDirs } from '../helpers/platform.js';
import { startServe } from '../helpers/serve-process.js';
import { removeTempDir } from '../helpers/temp-dirs.js';

const TOKEN = 'tok-host-writes-0123456789';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const asRoot = process.getuid?.() === 0;
const CI = process.env.CI === 'true';
/** Another user of this host, besides the sandbox's nobody. */
const OTHER_UID = 12345;

const probeDir = path.join(os.tmpdir(), `infergate-host-writes-check-${process.pid}`);
const sandboxHere = detectSandbox(
  { sandbox: 'auto', sandboxUser: { uid: 65534, gid: 65534 }, sandboxBinds: [], dataDir: path.join(probeDir, 'data'), certsDir: path.join(probeDir, 'certs'), adminKeyFile: null },
  [process.execPath, path.join(ROOT, 'src/cli/main.ts')],
);
const dockerHere = await dockerGate();
// Mounting needs root; the nosuid promise is root's (docs/security.md says what rootless does).
if (!asRoot && !CI) console.warn('\n*** host-writes tests SKIPPED: not root (the replica directories are mounted nosuid,nodev by a root service only) ***\n');
const runDocker = (asRoot && dockerHere) || CI;
const runSandbox = (asRoot && sandboxHere.sandboxed) || CI;
if (asRoot && !sandboxHere.sandboxed && !CI) console.warn(`\n*** host-writes sandbox tests SKIPPED: ${sandboxHere.description} ***\n`);

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-host-writes-'));
});
afterAll(async () => {
  if (root) await removeTempDir(root);
});

/**
 * `file` run as `uid` (and that gid, no groups), with `args`: what it printed and its status, or
 * the error that kept it from running. Node drops root before exec, so the path is looked up
 * as that user (setpriv keeps its capabilities until exec, and would look it up as root).
 */
function runAs(uid: number, file: string, args: string[]): { out: string; status: number | null } {
  const r = spawnSync(file, args, { uid, gid: uid, encoding: 'utf8' });
  if (r.error) return { out: (r.error as NodeJS.ErrnoException).code ?? r.error.message, status: null };
  return { out: `${r.stdout}${r.stderr}`.trim(), status: r.status };
}

/**
 * Runs `fn` with every directory from the temp root down to `dir` opened for traversal by
 * anyone (o+x), then puts their modes back: what a careless operator's 0755 would have left.
 */
async function traversable<T>(dir: string, fn: () => T): Promise<T> {
  const chain: string[] = [];
  for (let d = dir; d.startsWith(root); d = path.dirname(d)) chain.unshift(d);
  const modes = chain.map((d) => statSync(d).mode & 0o7777);
  try {
    for (const d of chain) await chmod(d, (statSync(d).mode & 0o7777) | 0o001);
    return fn();
  } finally {
    for (const [i, d] of chain.entries()) await chmod(d, modes[i]!);
  }
}

/** The host's mount at exactly `dir`: nosuid and nodev are what this file is about. */
function hostMountOptions(dir: string): string[] {
  return topMountAt(readMountTable(), dir)?.options ?? [];
}

function expectUnreachable(file: string): void {
  for (const uid of [65534, OTHER_UID]) {
    expect(runAs(uid, file, ['-u'])).toEqual({ out: 'EACCES', status: null });
  }
}

describe.skipIf(!asRoot && !CI)('at start, directories an earlier release or an operator left open are closed', () => {
  it('the data and certificate directories are made 0700 and the start says so; replicas/ and model-cache/ become 0700 and root\'s', async () => {
    const dirs = await platformDirs(root, 'loose');
    // As a hand-made data directory, or an earlier release, left them: the cache 0777 and another user's.
    for (const dir of [dirs.dataDir, path.join(dirs.dataDir, 'model-cache'), path.join(dirs.dataDir, 'replicas')]) await mkdir(dir, { recursive: true });
    await chmod(dirs.dataDir, 0o755);
    await chmod(path.join(dirs.dataDir, 'model-cache'), 0o777);
    await chown(path.join(dirs.dataDir, 'model-cache'), OTHER_UID, OTHER_UID);
    await chmod(path.join(dirs.dataDir, 'replicas'), 0o755);
    const platform = await startPlatform(dirs, ['--runtime', 'local']);
    await chmod(dirs.certsDir, 0o755); // seeded before the start: loosened now, closed at the next one
    try {
      const out = platform.serve.output();
      expect(out).toContain(`infergate: the data directory ${dirs.dataDir} was mode 0755: made 0700, so no other user of this host can enter it`);
      expect(out).toContain(`infergate: the replica directory ${path.join(dirs.dataDir, 'model-cache')} was mode 0777: made 0700`);
      expect(statSync(dirs.dataDir).mode & 0o777).toBe(0o700);
      for (const dir of ['model-cache', 'replicas']) {
        const st = statSync(path.join(dirs.dataDir, dir));
        expect({ dir, mode: st.mode & 0o777, uid: st.uid }).toEqual({ dir, mode: 0o700, uid: 0 });
      }
    } finally {
      platform.serve.kill('SIGTERM');
      await platform.serve.exited;
    }
    const again = await startPlatform(dirs, ['--runtime', 'local']);
    try {
      expect(again.serve.output()).toContain(`infergate: the certificate directory ${dirs.certsDir} was mode 0755: made 0700`);
      expect(statSync(dirs.certsDir).mode & 0o777).toBe(0o700);
      expect(again.serve.output()).not.toContain('data directory');
    } finally {
      again.serve.kill('SIGTERM');
      await again.serve.exited;
    }
  }, 60_000);
});

describe.skipIf(!asRoot && !CI)('a service that is not root', () => {
  it('says it cannot mount the replica directories nosuid,nodev, and mounts nothing', async () => {
    // A directory of its own, reachable by the service's uid.
    const home = path.join(root, 'rootless');
    await mkdir(home, { mode: 0o700 });
    await chown(home, OTHER_UID, OTHER_UID);
    await chmod(root, 0o711);
    const dataDir = path.join(home, 'data');
    try {
      const p = await startServe({
        dataDir,
        certsDir: path.join(home, 'certs'),
        wrapper: ['/usr/bin/setpriv', '--reuid', String(OTHER_UID), '--regid', String(OTHER_UID), '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--'],
      });
      try {
        expect(p.output()).toContain(
          `infergate: WARNING: not root, so ${path.join(dataDir, 'replicas')} and ${path.join(dataDir, 'model-cache')} are not mounted nosuid,nodev: a set-id file a replica writes there keeps its bit`,
        );
        expect(readMountTable().filter((m) => m.mountPoint.startsWith(`${dataDir}/`))).toEqual([]);
        expect(statSync(path.join(dataDir, 'model-cache'))).toMatchObject({ uid: OTHER_UID });
        expect(statSync(path.join(dataDir, 'model-cache')).mode & 0o777).toBe(0o700);
      } finally {
        p.kill('SIGTERM');
        await p.exited;
      }
    } finally {
      await chmod(root, 0o700);
    }
  }, 60_000);
});

describe.skipIf(!runDocker)('an image running as root writes a setuid-root program into the model cache', () => {
  const docker: Dockerode = dockerClient();
  const image = `infergate-test/host-writes-root:${process.pid}`;
  let dirs: PlatformDirs;
  let platform: Platform;
  let scope = '';
  let report: { uid: number; cache: string; config: string; mknod: string; mounts: string[] };
  let cacheDir: string;

  beforeAll(async () => {
    const engineImage = await ensureEngineImage();
    // Root inside, and the host's mknod beside the image's tools (its libraries are the ones `id` already needs).
    const { pack } = await import('tar-stream');
    const tar = pack();
    tar.entry({ name: 'Dockerfile' }, `FROM ${engineImage}\nUSER 0:0\nCOPY mknod /usr/bin/mknod\n`);
    tar.entry({ name: 'mknod', mode: 0o755 }, readFileSync('/usr/bin/mknod'));
    tar.finalize();
    const output = await docker.buildImage(tar as unknown as NodeJS.ReadableStream, { t: image, pull: false, rm: true, forcerm: true });
    await new Promise<void>((resolve, reject) => docker.modem.followProgress(output, (err: Error | null) => (err ? reject(err) : resolve())));

    dirs = await platformDirs(root, 'docker');
    platform = await startPlatform(dirs, ['--runtime', 'docker', '--engine-image', engineImage, '--stop-grace', '1', '--drain-timeout', '1']);
    scope = /network infergate-([0-9a-f]+)/.exec(platform.serve.output())?.[1] ?? '';
    // The attack as reported: the image's own program, as root, at start.
    const script = [
      "const fs = require('fs'); const cp = require('child_process'); const r = { uid: process.getuid() };",
      "try { fs.copyFileSync('/usr/bin/id', '/model-cache/rootid'); fs.chmodSync('/model-cache/rootid', 0o4755); r.cache = 'written'; } catch (e) { r.cache = e.code; }",
      "try { fs.writeFileSync(process.env.INFERGATE_CONFIG_FILE, 'overwritten'); r.config = 'written'; } catch (e) { r.config = e.code; }",
      "try { cp.execFileSync('/usr/bin/mknod', ['/model-cache/mem', 'c', '1', '1'], { stdio: 'pipe' }); r.mknod = 'made'; } catch (e) { r.mknod = String(e.stderr).trim(); }",
      "r.mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\\n').filter((l) => l.split(' ')[4] === '/model-cache');",
      "fs.writeFileSync('/model-cache/report.json', JSON.stringify(r));",
      "require('http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), process.env.HOST);",
    ].join('\n');
    const created = await platform.call('POST', '/deployments/general', {
      name: 'rooted',
      cluster_id: 1,
      hardware_instance_id: 1,
      image: image.split(':')[0],
      tag: image.split(':')[1],
      container_port: 8000,
      health_check_path: '/',
      endpoint_bearer_token: TOKEN,
      enable_model_caching: true,
      config_file: { filename: 'app.yaml', mount_path: '/etc/app', content: 'mode: fast\n' },
      command: ['/usr/local/bin/node', '-e', script],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await platform.waitFor(created.body.id as number, (d) => d.status === 'ready', 90_000, 'the rooted container ready');
    cacheDir = path.join(dirs.dataDir, 'model-cache', String(created.body.id));
    report = JSON.parse(await readFile(path.join(cacheDir, 'report.json'), 'utf8')) as typeof report;
  }, 240_000);

  afterAll(async () => {
    platform?.serve.kill('SIGTERM');
    await platform?.serve.exited;
    if (scope) {
      await removeContainersWithLabel(docker, LABEL.scope, scope);
      await docker.getNetwork(`infergate-${scope}`).remove().catch(() => {});
    }
    await removeImage(docker, image);
  }, 60_000);

  it('the container ran as root and wrote the program, setuid root, which is on the host at its path', () => {
    expect(report).toMatchObject({ uid: 0, cache: 'written' });
    const st = statSync(path.join(cacheDir, 'rootid'));
    expect(st.uid).toBe(0);
    expect(st.mode & 0o4000).toBe(0o4000);
  });

  it('uid 65534 (or any other user) cannot even reach it: the data directory and the model cache are 0700, root\'s', () => {
    expect(statSync(dirs.dataDir).mode & 0o777).toBe(0o700);
    const cache = statSync(path.join(dirs.dataDir, 'model-cache'));
    expect({ mode: cache.mode & 0o777, uid: cache.uid }).toEqual({ mode: 0o700, uid: 0 });
    expect(statSync(path.join(dirs.dataDir, 'replicas')).mode & 0o777).toBe(0o700);
    expectUnreachable(path.join(cacheDir, 'rootid'));
  });

  it('let through the directories, it runs as its caller, not as root: the model cache and replica directories are nosuid,nodev on the host', async () => {
    const ran = await traversable(cacheDir, () => runAs(65534, path.join(cacheDir, 'rootid'), ['-u']));
    expect(ran).toEqual({ out: '65534', status: 0 });
    for (const dir of ['model-cache', 'replicas']) expect(hostMountOptions(path.join(dirs.dataDir, dir))).toEqual(expect.arrayContaining(['nosuid', 'nodev']));
    // Inside the container too: Docker's bind of a path below carries the flags.
    expect(report.mounts).toHaveLength(1);
    expect(report.mounts[0]!.split(' ')[5]!.split(',')).toEqual(expect.arrayContaining(['nosuid', 'nodev']));
  });

  it('the config file is mounted read-only and the replica directory holds nothing the container wrote', () => {
    expect(report.config).toBe('EROFS');
    const replicas = readdirSync(path.join(dirs.dataDir, 'replicas'));
    expect(replicas).toHaveLength(1);
    const configDir = path.join(dirs.dataDir, 'replicas', replicas[0]!, 'config');
    expect(readdirSync(configDir)).toEqual(['app.yaml']);
    expect(readFileSync(path.join(configDir, 'app.yaml'), 'utf8')).toBe('mode: fast\n');
    expect(statSync(path.join(dirs.dataDir, 'replicas', replicas[0]!)).mode & 0o777).toBe(0o700);
  });

  it('a device node cannot be made: MKNOD is dropped', () => {
    expect(report.mknod).toMatch(/Operation not permitted/);
    expect(existsSync(path.join(cacheDir, 'mem'))).toBe(false);
  });
});

describe.skipIf(!runSandbox)('a sandboxed replica (local runtime, as nobody) writes set-id programs into its cache and its root', () => {
  let dirs: PlatformDirs;
  let platform: Platform;
  let replicaRoot: string;
  let cacheDir: string;

  beforeAll(async () => {
    dirs = await platformDirs(root, 'local');
    platform = await startPlatform(dirs, ['--runtime', 'local', '--stop-grace', '1', '--drain-timeout', '1']);
    const script = [
      'cd "$INFERGATE_REPLICA_ROOT" || exit 1',
      'cp /usr/bin/id "$INFERGATE_MODEL_CACHE_DIR/nobodyid" && chmod 4755 "$INFERGATE_MODEL_CACHE_DIR/nobodyid"',
      'cp /usr/bin/id ./nobodyid && chmod 4755 ./nobodyid',
      'mknod ./mem c 1 1 2> mknod.err; echo $? > mknod.code',
      // Field 5 of mountinfo is the mount point: the sandbox binds both at their host paths.
      'awk -v a="$INFERGATE_MODEL_CACHE_DIR" -v b="$INFERGATE_REPLICA_ROOT" \'$5 == a || $5 == b { print $5, $6 }\' /proc/self/mountinfo > mounts',
      "exec /usr/bin/node -e \"require('http').createServer((q, r) => r.end('ok')).listen(Number(process.env.PORT))\"",
    ].join('\n');
    const created = await platform.call('POST', '/deployments/general', {
      name: 'nobodys',
      cluster_id: 1,
      hardware_instance_id: 1,
      image: 'example.com/custom-engine',
      tag: '1',
      container_port: 8000,
      health_check_path: '/',
      endpoint_bearer_token: TOKEN,
      enable_model_caching: true,
      command: ['/bin/sh', '-c', script],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await platform.waitFor(created.body.id as number, (d) => d.status === 'ready', 60_000, 'the sandboxed replica ready');
    const [name] = readdirSync(path.join(dirs.dataDir, 'replicas'));
    replicaRoot = path.join(dirs.dataDir, 'replicas', name!);
    cacheDir = path.join(dirs.dataDir, 'model-cache', String(created.body.id));
  }, 120_000);

  afterAll(async () => {
    platform?.serve.kill('SIGTERM');
    await platform?.serve.exited;
    if (dirs) killLeftoverReplicas(dirs.dataDir);
  }, 60_000);

  it("the replica wrote its programs set-id (to nobody's uid) in its cache and its root, and could not make a device node", () => {
    for (const file of [path.join(cacheDir, 'nobodyid'), path.join(replicaRoot, 'nobodyid')]) {
      const st = statSync(file);
      expect({ uid: st.uid, setuid: st.mode & 0o4000 }).toEqual({ uid: 65534, setuid: 0o4000 });
    }
    expect(readFileSync(path.join(replicaRoot, 'mknod.code'), 'utf8').trim()).not.toBe('0');
    expect(readFileSync(path.join(replicaRoot, 'mknod.err'), 'utf8')).toMatch(/Operation not permitted/);
  });

  it('both are nosuid,nodev inside the sandbox and on the host, and 0700 directories keep other users from them', async () => {
    for (const file of [path.join(cacheDir, 'nobodyid'), path.join(replicaRoot, 'nobodyid')]) {
      // Let through the directories, another user runs it as itself, not as nobody.
      const ran = await traversable(path.dirname(file), () => runAs(OTHER_UID, file, ['-u']));
      expect(ran).toEqual({ out: String(OTHER_UID), status: 0 });
      expectUnreachable(file);
    }
    const inside = readFileSync(path.join(replicaRoot, 'mounts'), 'utf8').trim().split('\n');
    expect(inside.map((l) => l.split(' ')[0]).sort()).toEqual([cacheDir, replicaRoot].sort());
    for (const line of inside) expect(line.split(' ')[1]!.split(',')).toEqual(expect.arrayContaining(['nosuid', 'nodev']));
    for (const dir of ['model-cache', 'replicas']) {
      const host = path.join(dirs.dataDir, dir);
      expect(hostMountOptions(host)).toEqual(expect.arrayContaining(['nosuid', 'nodev']));
      expect(statSync(host).mode & 0o777).toBe(0o700);
    }
  });

  it('a clean stop unmounts both: nothing is left mounted in the data directory', async () => {
    expect(readMountTable().map((m) => m.mountPoint)).toContain(path.join(dirs.dataDir, 'model-cache'));
    platform.serve.kill('SIGTERM');
    expect((await platform.serve.exited).code).toBe(0);
    expect(readMountTable().filter((m) => m.mountPoint.startsWith(`${dirs.dataDir}/`))).toEqual([]);
  }, 60_000);
});
