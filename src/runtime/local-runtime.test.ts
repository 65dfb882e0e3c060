import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_IMAGE_MAP } from '../domain/image-map.js';
import { LocalRuntime } from './local-runtime.js';
import { isAlive, ProcessTable } from './process-tree.js';
import type { ReplicaRequest } from './runtime.js';
import { replicaRequest } from '../../test/helpers/replica-request.js';

let dataDir: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'infergate-local-runtime-'));
});

afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

function runtime(allowUnsandboxedHostCommands: boolean): LocalRuntime {
  return new LocalRuntime({ dataDir, selfCommand: ['/bin/false'], images: DEFAULT_IMAGE_MAP, logger: pino({ level: 'silent' }), sandbox: null, allowUnsandboxedHostCommands, pods: null, scope: 'test' });
}

function hostCommand(name: string): ReplicaRequest {
  return replicaRequest({
    name,
    image: 'example.com/custom-engine',
    tag: '1',
    command: ['/bin/sh', '-c', 'touch "$INFERGATE_REPLICA_ROOT/ran"; exec sleep 30'],
    healthPath: '/',
  });
}

const logOf = (name: string) => readFileSync(path.join(dataDir, 'logs', '1', '1', 'Replica', `${name}.log`), 'utf8');

describe('host commands without a sandbox', () => {
  it('are refused unless the operator allowed them: a log line names the flag and the command never runs', async () => {
    const replica = runtime(false).start(hostCommand('web-r1-1'));
    await expect.poll(() => existsSync(path.join(dataDir, 'logs', '1', '1', 'Replica', 'web-r1-1.log')) && logOf('web-r1-1').includes('--allow-unsandboxed-host-commands')).toBe(true);
    // The refusal is final: it spawned nothing, and nothing is due to try again.
    expect(replica.observe()).toMatchObject({ phase: 'starting', pid: null, restarts: 0 });
    expect(replica.shellContext()).toBeNull();
    await replica.stop(1000);
    expect(existsSync(path.join(dataDir, 'replicas', 'web-r1-1', 'ran'))).toBe(false);
  });

  it('run when allowed (--allow-unsandboxed-host-commands)', async () => {
    const replica = runtime(true).start(hostCommand('web-r1-2'));
    await expect.poll(() => existsSync(path.join(dataDir, 'replicas', 'web-r1-2', 'ran'))).toBe(true);
    expect(replica.shellContext()).toMatchObject({ argv: ['/bin/sh'], cwd: path.join(dataDir, 'replicas', 'web-r1-2') });
    await replica.stop(1000);
  });

  it('and the terminal is refused without a sandbox unless allowed, naming the flag', () => {
    expect(runtime(false).shellRefusal()).toContain('--allow-unsandboxed-host-commands');
    expect(runtime(true).shellRefusal()).toBeNull();
  });
});

describe('sweep', () => {
  it('removes replica directories no live process uses, and keeps those one does', async () => {
    const replicas = path.join(dataDir, 'replicas');
    for (const name of ['old-r1-1', 'busy-r1-2', 'cwd-r1-3']) mkdirSync(path.join(replicas, name, 'etc'), { recursive: true });
    // One process names a directory as its replica root, another merely works in one.
    const byEnv = spawn('sleep', ['30'], { env: { PATH: process.env.PATH, INFERGATE_REPLICA_ROOT: path.join(replicas, 'busy-r1-2') }, stdio: 'ignore' });
    const byCwd = spawn('sleep', ['30'], { cwd: path.join(replicas, 'cwd-r1-3', 'etc'), stdio: 'ignore' });
    children.push(byEnv, byCwd);
    await Promise.all([once(byEnv, 'spawn'), once(byCwd, 'spawn')]); // exec'd: their environment and cwd are in /proc
    expect((await runtime(false).sweep()).sort()).toEqual(['old-r1-1']);
    expect(existsSync(path.join(replicas, 'old-r1-1'))).toBe(false);
    expect(existsSync(path.join(replicas, 'busy-r1-2'))).toBe(true);
    expect(existsSync(path.join(replicas, 'cwd-r1-3'))).toBe(true);
  });

  it('never removes the directory of a replica this runtime runs', async () => {
    const rt = runtime(false);
    const replica = rt.start(hostCommand('mine-r1-4'));
    await expect.poll(() => existsSync(path.join(dataDir, 'replicas', 'mine-r1-4'))).toBe(true);
    expect(await rt.sweep()).toEqual([]);
    await replica.stop(1000);
  });
});

describe('reap', () => {
  it('stops what an earlier run left of each replica, reading the process table once for a whole takeover', async () => {
    const left = ['gone-r1-1', 'gone-r1-2', 'gone-r1-3', 'gone-r1-4'].map((name) => {
      const child = spawn('sleep', ['30'], { env: { PATH: process.env.PATH, INFERGATE_REPLICA_ID: name }, stdio: 'ignore' });
      children.push(child);
      return { name, child };
    });
    const bystander = spawn('sleep', ['30'], { env: { PATH: process.env.PATH, INFERGATE_REPLICA_ID: 'kept-r1-5' }, stdio: 'ignore' });
    children.push(bystander);
    await Promise.all([...left.map((l) => once(l.child, 'spawn')), once(bystander, 'spawn')]);
    const rt = runtime(false);
    const reads = ProcessTable.reads;
    for (const l of left) expect(await rt.reap({ name: l.name, pid: null, restarts: 0 })).toBe(true);
    expect(ProcessTable.reads - reads).toBe(1); // not one per replica
    for (const l of left) expect(isAlive(l.child.pid!)).toBe(false);
    expect(isAlive(bystander.pid!)).toBe(true);
    expect(await rt.reap({ name: 'never-r1-9', pid: null, restarts: 0 })).toBe(false);
  });
});
