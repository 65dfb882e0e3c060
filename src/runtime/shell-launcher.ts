// Owns starting a terminal's shell as a process on this host: on pipes (its own process group,
// killed whole), or on a pseudo-terminal with node-pty (ending it kills every process of the
// pty's session, jobs the shell put in process groups of their own included). The control API
// reaches this only through the ShellLauncher port (domain/ports.ts).

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import type { PipeShell, PtyShell, ShellCommand, ShellLauncher } from '../domain/ports.js';
import { processesInSession, signalPid } from './process-tree.js';

type NodePty = typeof import('node-pty');
let nodePty: NodePty | undefined;

/**
 * node-pty is a native addon compiled at install; loaded at the first tty session rather than
 * with the service, so an install that skipped its build (`--ignore-scripts`) still starts and
 * serves everything else, pipe terminals included, and the tty session says what is missing.
 */
function loadNodePty(): NodePty {
  if (nodePty) return nodePty;
  try {
    nodePty = createRequire(import.meta.url)('node-pty') as NodePty;
    return nodePty;
  } catch (err) {
    throw new Error(`no pseudo-terminal: node-pty is not built (npm rebuild node-pty): ${(err as Error).message}`);
  }
}

function pipeShell(command: ShellCommand): PipeShell {
  const [file, ...args] = command.argv;
  const shell = spawn(file ?? '/bin/sh', args, { cwd: command.cwd, env: command.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  shell.stdin.on('error', () => {}); // the shell exited while input was on its way
  return {
    write: (data) => shell.stdin.write(data),
    onOutput(listener) {
      shell.stdout.on('data', listener);
      shell.stderr.on('data', listener);
    },
    onError: (listener) => shell.on('error', listener),
    // 'close', not 'exit': the exit can come before the last output is read.
    onExit: (listener) => shell.on('close', (status: number | null) => listener(status)),
    kill() {
      if (shell.exitCode === null && shell.pid !== undefined) {
        try {
          process.kill(-shell.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
}

function ptyShell(command: ShellCommand, size: { cols: number; rows: number }): PtyShell {
  const [file, ...args] = command.argv;
  const term = loadNodePty().spawn(file ?? '/bin/sh', args, {
    name: 'xterm-256color',
    cols: size.cols,
    rows: size.rows,
    cwd: command.cwd,
    env: { ...command.env, TERM: 'xterm-256color' },
  });
  const leader = term.pid;
  return {
    write: (data) => term.write(data),
    resize: (cols, rows) => term.resize(cols, rows),
    pause: () => term.pause(),
    resume: () => term.resume(),
    onData: (listener) => void term.onData(listener),
    onExit: (listener) => void term.onExit(({ exitCode, signal }) => listener(signal ? null : exitCode)),
    kill() {
      // Several passes: a process may fork while the first pass signals its parent.
      for (let pass = 0; pass < 3; pass++) {
        const members = processesInSession(leader);
        if (members.length === 0) break;
        for (const pid of members) signalPid(pid, 'SIGKILL');
      }
    },
  };
}

export const localShells: ShellLauncher = { pipe: pipeShell, pty: ptyShell };
