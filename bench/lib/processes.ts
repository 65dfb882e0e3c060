// Bench helper: child processes the bench starts — spawned, waited for, measured (CPU time
// from /proc/<pid>/stat) and stopped by pid, every one of them, also on errors and Ctrl-C.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';

const children = new Set<ChildProcess>();
const cleanups: Array<() => Promise<unknown>> = [];

/** Runs at the end, after the children are stopped: e.g. removing the temp dir. */
export function onCleanup(fn: () => Promise<unknown>): void {
  cleanups.push(fn);
}

/** Still running: a child killed by a signal has a null exitCode but a signalCode. */
const running = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null && child.pid !== undefined;

/** Signals a child by pid; one that is already gone is not an error. */
function signal(child: ChildProcess, sig: NodeJS.Signals): void {
  try {
    if (running(child)) process.kill(child.pid!, sig);
  } catch {
    // exited meanwhile
  }
}

/** Stops every child by pid (SIGTERM, SIGKILL after 5 s), then runs the cleanups. */
export async function stopAll(): Promise<void> {
  const exits = [...children].map(
    (child) =>
      new Promise<void>((done) => {
        if (!running(child)) return done();
        child.once('exit', () => done());
        signal(child, 'SIGTERM');
        setTimeout(() => signal(child, 'SIGKILL'), 5000).unref();
      }),
  );
  await Promise.all(exits);
  for (const fn of cleanups.splice(0)) await fn().catch(() => undefined);
}
process.on('exit', () => {
  for (const child of children) signal(child, 'SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    void stopAll().finally(() => process.exit(130));
  });
}

export interface Started {
  child: ChildProcess;
  pid: number;
  output: () => string;
  stop(): Promise<void>;
}

/**
 * Spawns a process and resolves once its output matches `ready` — or, for quiet programs,
 * once it has run for `quietMs` without exiting. Rejects on exit or timeout.
 */
export function start(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; ready?: RegExp; quietMs?: number; timeoutMs?: number }): Promise<Started> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    const stop = () =>
      new Promise<void>((done) => {
        if (!running(child)) return done();
        child.once('exit', () => done());
        signal(child, 'SIGTERM');
        setTimeout(() => signal(child, 'SIGKILL'), 5000).unref();
      });
    const timer = setTimeout(() => reject(new Error(`${cmd} did not become ready in time:\n${out}`)), opts.timeoutMs ?? 20_000);
    const started = () => resolve({ child, pid: child.pid!, output: () => out, stop });
    if (opts.quietMs !== undefined) {
      setTimeout(() => {
        if (child.exitCode !== null) return;
        clearTimeout(timer);
        started();
      }, opts.quietMs);
    }
    const onData = (d: Buffer) => {
      out += d.toString();
      if (opts.ready?.test(out)) {
        clearTimeout(timer);
        resolve({ child, pid: child.pid!, output: () => out, stop });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      children.delete(child);
      clearTimeout(timer);
      reject(new Error(`${cmd} exited with ${code} before it was ready:\n${out}`));
    });
  });
}

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** User + system CPU time of a process so far, in microseconds. */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start at ") ".
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1e6) / CLK_TCK;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
