// Test helper: a child process a test started — collecting its output until it exits, and
// stopping it by its pid: SIGTERM, then SIGKILL if it is still there after five seconds.

import type { ChildProcess } from 'node:child_process';

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(child.pid, 'SIGTERM');
  const timer = setTimeout(() => child.pid !== undefined && child.exitCode === null && process.kill(child.pid, 'SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
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
