// Test helper: `infergate serve` as a real child process on free ports with its own data
// and certs directories, waited on until it prints its control API URL. Stopped by pid.

import { spawn, type ChildProcess } from 'node:child_process';
import { DIST_MAIN, ROOT } from './dist-build.js';
import { freePort } from './ports.js';

export interface ServeProcess {
  child: ChildProcess;
  apiUrl: string;
  output(): string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
}

export interface ServeOptions {
  dataDir: string;
  certsDir: string;
  env?: Record<string, string>;
  args?: string[];
  /** Wait for the start-up line (default) or just for the process to exit. */
  expectStart?: boolean;
  /** A command the CLI runs under, e.g. setpriv to drop a capability. */
  wrapper?: string[];
}

export async function servePorts(): Promise<Record<string, string>> {
  return {
    INFERGATE_API_PORT: String(await freePort()),
    INFERGATE_GATEWAY_PORT: String(await freePort()),
    INFERGATE_METRICS_PORT: String(await freePort()),
  };
}

/** The command line of `infergate`: the compiled CLI, kept current by the global setup. */
export const CLI: readonly string[] = [process.execPath, DIST_MAIN];

/** Runs the compiled CLI (dist/, built from src/ by the global setup before any file runs). */
export function spawnCli(args: string[], env: Record<string, string>, wrapper: string[] = []): ChildProcess {
  const command = [...wrapper, ...CLI, ...args];
  return spawn(command[0] as string, command.slice(1), {
    cwd: ROOT,
    // The local runtime unless a test asks for another: with a Docker daemon on the machine,
    // `auto` would put every suite's replicas in containers.
    env: { ...process.env, INFERGATE_RUNTIME: 'local', ...env, INFERGATE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export async function startServe(opts: ServeOptions): Promise<ServeProcess> {
  const env = {
    ...(await servePorts()),
    INFERGATE_DATA_DIR: opts.dataDir,
    INFERGATE_CERTS_DIR: opts.certsDir,
    ...opts.env,
  };
  const child = spawnCli(['serve', ...(opts.args ?? [])], env, opts.wrapper);
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const proc: ServeProcess = {
    child,
    apiUrl: '',
    output: () => out,
    exited,
    kill: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
  if (opts.expectStart === false) return proc;
  proc.apiUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Never leave a half-started process behind: the caller has no handle on it yet.
      child.kill('SIGKILL');
      reject(new Error(`serve did not start within 20 s:\n${out}`));
    }, 20_000);
    const check = () => {
      // "state in …" is the last line of the start-up banner, whatever the role.
      if (/infergate: state in /.test(out)) {
        clearTimeout(timer);
        resolve(/control API listening on (\S+)/.exec(out)?.[1] ?? '');
      }
    };
    child.stdout?.on('data', check);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`serve exited before starting:\n${out}`));
    });
  });
  return proc;
}
