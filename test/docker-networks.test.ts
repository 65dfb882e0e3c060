// The Docker runtime's network, against real daemons: one per service, made at start, reused
// across restarts (a kill -9 included), made again before a container when another process of
// the store removed it, removed at a clean stop — kept, and said, while a container of the
// service remains — so 40 starts with 40 fresh data directories, each stopped
// with SIGTERM, leave at most one infergate network on the daemon. On a second dockerd whose
// only address pool is taken (run in a network namespace of its own, never the host's), a start
// says what to do and exits 1 without a stack; an overlapping --docker-subnet is refused the
// same way; a free one is used. Skipped loudly without a daemon (or, for the second daemon,
// without root, ip, nsenter and dockerd), failed under CI=true.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { dockerAnswers, dockerClient } from '../src/runtime/docker/client.js';
import { dockerScope } from '../src/runtime/docker/docker-runtime.js';
import { LABEL } from '../src/runtime/docker/container-spec.js';
import { readMountTable } from '../src/runtime/host-dirs.js';
import { seedCerts } from './helpers/certs-template.js';
import { dockerGate, ensureEngineImage, removeContainersWithLabel } from './helpers/docker.js';
import { pool } from './helpers/pool.js';
import { engineBody, FAST_ENGINE, platformDirs, startPlatform } from './helpers/platform.js';
import { startServe, type ServeProcess } from './helpers/serve-process.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const available = await dockerGate();
const CI = process.env.CI === 'true';

let root: string;
let serial = 0;
/** Every serve this file started: a failed test leaves none running behind it. */
const started: ServeProcess[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'infergate-networks-'));
});
/** Every data directory this file made: what the host's daemon may hold of each is removed at the end. */
const dataDirs: string[] = [];

afterAll(async () => {
  for (const p of started) p.kill('SIGKILL');
  await Promise.all(started.map((p) => p.exited));
  if (available) {
    const docker = dockerClient();
    for (const dataDir of dataDirs) {
      const scope = dockerScope(dataDir, null);
      await removeContainersWithLabel(docker, LABEL.scope, scope);
      await docker.getNetwork(`infergate-${scope}`).remove().catch(() => {});
    }
  }
  if (root) await removeTempDir(root);
}, 120_000);

/** A fresh data directory (the run's certificates copied in: no key generation per start). */
async function freshDirs(): Promise<{ dataDir: string; certsDir: string }> {
  const dir = path.join(root, `s${serial++}`);
  const certsDir = path.join(dir, 'certs');
  await seedCerts(inject('certsTemplate'), certsDir);
  dataDirs.push(path.join(dir, 'data'));
  return { dataDir: path.join(dir, 'data'), certsDir };
}

async function serveDocker(dirs: { dataDir: string; certsDir: string }, args: string[] = [], env: Record<string, string> = {}, expectStart = true): Promise<ServeProcess> {
  const p = await startServe({ ...dirs, args: ['--runtime', 'docker', ...args], env, expectStart });
  started.push(p);
  return p;
}

function scopeOf(p: ServeProcess): string {
  const scope = /network infergate-([0-9a-f]+)/.exec(p.output())?.[1];
  if (scope === undefined) throw new Error(`no network named in the start-up banner:\n${p.output()}`);
  return scope;
}

async function networkNamed(docker: Dockerode, name: string): Promise<Dockerode.NetworkInspectInfo | undefined> {
  return (await docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
}

async function stopCleanly(p: ServeProcess): Promise<void> {
  p.kill('SIGTERM');
  const { code } = await p.exited;
  expect(code, p.output()).toBe(0);
}

describe.skipIf(!available)('one Docker network per service', () => {
  const docker = dockerClient();
  /** Scopes of every service this file started on the host's daemon. */
  const scopes = new Set<string>();

  it('40 starts with fresh data directories, each stopped with SIGTERM, leave at most one infergate network', async () => {
    const STARTS = 40;
    const made: string[] = [];
    // A few at a time, each next one as soon as one has stopped.
    await pool(STARTS, 4, async () => {
      const p = await serveDocker(await freshDirs());
      const scope = scopeOf(p);
      scopes.add(scope);
      // Made at start: the count below would prove nothing otherwise.
      if (await networkNamed(docker, `infergate-${scope}`)) made.push(scope);
      await stopCleanly(p);
    });
    expect(made).toHaveLength(STARTS);
    expect(new Set(made).size).toBe(STARTS);
    const left = (await docker.listNetworks()).filter((n) => n.Name.startsWith('infergate-') && scopes.has(n.Name.slice('infergate-'.length)));
    expect(left.length, left.map((n) => n.Name).join(', ')).toBeLessThanOrEqual(1);
  }, 300_000);

  it('is reused across restarts (kill -9 included; the replica directories\' mounts too), kept and said while a container of the service remains, and removed once none does', async () => {
    const dirs = await freshDirs();
    const first = await serveDocker(dirs);
    const scope = scopeOf(first);
    scopes.add(scope);
    const name = `infergate-${scope}`;
    const id = (await networkNamed(docker, name))?.Id;
    expect(id).toBeDefined();
    first.kill('SIGKILL');
    await first.exited;
    expect((await networkNamed(docker, name))?.Id).toBe(id);

    const second = await serveDocker(dirs);
    expect((await networkNamed(docker, name))?.Id).toBe(id);
    // The replica directories' mounts the killed run left are used again, not stacked.
    for (const dir of ['replicas', 'model-cache']) expect(readMountTable().filter((m) => m.mountPoint === path.join(dirs.dataDir, dir))).toHaveLength(1);
    // A container of the service's scope on its network, as a replica of another control process of the store would be.
    const container = await docker.createContainer({
      Image: await ensureEngineImage(),
      Entrypoint: ['/usr/bin/sleep', '300'],
      Labels: { [LABEL.scope]: scope },
      HostConfig: { NetworkMode: name },
    });
    await container.start();
    await stopCleanly(second);
    expect(second.output()).toMatch(/docker network kept: containers still use it/);
    expect((await networkNamed(docker, name))?.Id).toBe(id);

    await container.remove({ force: true });
    await stopCleanly(await serveDocker(dirs));
    expect(await networkNamed(docker, name)).toBeUndefined();
  }, 120_000);

  it('is made again before a container is made, when another process of the store removed it meanwhile', async () => {
    const dirs = await platformDirs(root, `p${serial++}`);
    dataDirs.push(dirs.dataDir);
    const platform = await startPlatform(dirs, ['--runtime', 'docker', '--engine-image', await ensureEngineImage(), '--stop-grace', '1', '--drain-timeout', '1']);
    try {
      const scope = scopeOf(platform.serve);
      scopes.add(scope);
      const name = `infergate-${scope}`;
      // What a standby's clean stop does while this leader has no container yet.
      await docker.getNetwork(name).remove();
      const created = await platform.call('POST', '/deployments/general', { ...engineBody('after-removal', 'tok-networks-0123456789'), command: FAST_ENGINE });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      await platform.waitFor(created.body.id as number, (d) => d.status === 'ready', 60_000, 'ready on a network made again');
      expect(await networkNamed(docker, name)).toBeDefined();
    } finally {
      await stopCleanly(platform.serve);
    }
  }, 120_000);
});

// ---- a second daemon, its only address pool taken ---------------------------------------------

/** Whether `name` is a program on PATH (the sbin directories included, as root's PATH has them). */
function onPath(name: string): boolean {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin'];
  return dirs.some((d) => d !== '' && existsSync(path.join(d, name)));
}

const tools = ['ip', 'nsenter', 'dockerd'].filter((t) => !onPath(t));
const secondDaemonHere = available && process.getuid?.() === 0 && tools.length === 0;
if (available && !secondDaemonHere && !CI) {
  console.warn(`\n*** the full-pools tests are SKIPPED: they start a second dockerd in a network namespace, which needs root and ${tools.join(', ') || 'root'} ***\n`);
}

describe.skipIf(!(secondDaemonHere || (available && CI)))('a daemon whose address pools are full', () => {
  // One /24 pool of /24 networks: the filler takes the only one.
  const third = 10 + (process.pid % 200);
  const POOL = `10.231.${third}.0/24`;
  const FREE = `10.232.${third}.0/24`;
  const netns = `infergate-test-${process.pid}`;
  let dir: string;
  let dockerd: ChildProcess | undefined;
  let daemonLog = '';
  let second: Dockerode;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-dockerd-'));
    execFileSync('ip', ['netns', 'add', netns]);
    // nsenter, not `ip netns exec`: that one remounts /sys, and dockerd then finds no devices cgroup.
    dockerd = spawn(
      'nsenter',
      [
        `--net=/var/run/netns/${netns}`,
        'dockerd',
        '--data-root', path.join(dir, 'data'),
        '--exec-root', path.join(dir, 'exec'),
        '--pidfile', path.join(dir, 'dockerd.pid'),
        '-H', `unix://${dir}/docker.sock`,
        '--bridge=none',
        '--iptables=false',
        '--default-address-pool', `base=${POOL},size=24`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const keep = (b: Buffer) => (daemonLog = (daemonLog + b.toString()).slice(-8192));
    dockerd.stdout?.on('data', keep);
    dockerd.stderr?.on('data', keep);
    env = { DOCKER_HOST: `unix://${dir}/docker.sock` };
    second = dockerClient(env);
    const started = dockerd;
    await vi.waitFor(
      async () => {
        if (started.exitCode !== null) throw new Error(`the second dockerd exited (${started.exitCode}):\n${daemonLog}`);
        const answer = await dockerAnswers(second, 1000);
        if (!answer.ok) throw new Error(answer.reason);
      },
      { timeout: 60_000, interval: 250 },
    );
    await second.createNetwork({ Name: 'filler', Driver: 'bridge' });
  }, 90_000);

  afterAll(async () => {
    if (dockerd?.exitCode === null) {
      const exited = new Promise((resolve) => dockerd!.once('exit', resolve));
      dockerd.kill('SIGTERM');
      await exited;
    }
    try {
      execFileSync('ip', ['netns', 'del', netns], { stdio: 'ignore' });
    } catch {
      // never made
    }
    if (dir) await removeTempDir(dir);
  }, 60_000);

  it("the filler took the daemon's only pool", async () => {
    const filler = await second.getNetwork('filler').inspect();
    expect(filler.IPAM?.Config?.map((c: { Subnet?: string }) => c.Subnet)).toEqual([POOL]);
  });

  it('a start says the cause and what to do, and exits 1 without a stack', async () => {
    const dirs = await freshDirs();
    const p = await serveDocker(dirs, [], env, false);
    const { code } = await p.exited;
    const out = p.output();
    expect(code, out).toBe(1);
    expect(out).toContain(`infergate: error: the Docker daemon at unix://${dir}/docker.sock has no address pool left for this service's network infergate-`);
    expect(out).toContain('could not find an available, non-overlapping IPv4 address pool');
    for (const fix of ['docker network prune', '--docker-subnet', 'default-address-pools']) expect(out).toContain(fix);
    expect(out).not.toMatch(/unexpected error|^\s+at /m);
    // The failed start took its mounts down with it.
    expect(readMountTable().filter((m) => m.mountPoint.startsWith(`${dirs.dataDir}/`))).toEqual([]);
  }, 60_000);

  it('a --docker-subnet that overlaps a network of the daemon is refused the same way', async () => {
    const p = await serveDocker(await freshDirs(), ['--docker-subnet', POOL], env, false);
    const { code } = await p.exited;
    expect(code, p.output()).toBe(1);
    expect(p.output()).toContain(`infergate: error: --docker-subnet ${POOL} overlaps a network the Docker daemon at unix://${dir}/docker.sock already has`);
    expect(p.output()).not.toMatch(/unexpected error|^\s+at /m);
  }, 60_000);

  it('a free --docker-subnet (flag or INFERGATE_DOCKER_SUBNET) gives the service its network there; a clean stop removes it', async () => {
    const p = await serveDocker(await freshDirs(), [], { ...env, INFERGATE_DOCKER_SUBNET: FREE });
    const name = `infergate-${scopeOf(p)}`;
    const network = await networkNamed(second, name);
    expect(network?.IPAM?.Config?.map((c) => c.Subnet)).toEqual([FREE]);
    await stopCleanly(p);
    expect(await networkNamed(second, name)).toBeUndefined();
  }, 60_000);
});
