// Test helper: a child process a test started — collecting its output until it exits, and
// stopping it by its pid: SIGTERM, then SIGKILL if it is still there after five seconds, or
// SIGKILL for the lot at the end of a file.

import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(child.pid, 'SIGTERM');
  const timer = setTimeout(() => child.pid !== undefined && child.exitCode === null && process.kill(child.pid, 'SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/**
 * SIGKILLs, by pid, every child in the list still running, and resolves once all have
 * exited: what an afterAll does with the processes its tests started.
 */
export async function killChildren(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map((c) => {
      if (c.exitCode !== null || c.signalCode !== null || c.pid === undefined) return Promise.resolve();
      const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err; // gone already
      }
      return exited;
    }),
  );
}

/** What a child process printed, and how it ended. */
export interface ChildRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Collects a child's output until it exits. */
export function runToEnd(child: ChildProcess): Promise<ChildRun> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** Pids of live processes whose command line is exactly `argv` (read from /proc). */
export function processesRunning(argv: string[]): number[] {
  const wanted = argv.join('\0') + '\0';
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'latin1') === wanted;
      } catch {
        return false;
      }
    })
    .map(Number);
}
