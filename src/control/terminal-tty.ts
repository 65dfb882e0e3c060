// Owns the terminal's `infergate.tty.v1` session: the shell runs on a pseudo-terminal
// (node-pty), so echo, line editing, job control and Ctrl-C come from the pty's line
// discipline, as in any terminal. Frames from the client are text whose first character is a
// channel — `0` + keystrokes for the shell, `1` + `{"cols","rows"}` to resize — and the pty's
// output goes back as text frames as it comes. Ending the session kills every process of the
// pty's session, jobs the shell put in process groups of their own included.

import { createRequire } from 'node:module';
import type { IPty } from 'node-pty';
import { processesInSession, signalPid } from '../runtime/process-tree.js';

type NodePty = typeof import('node-pty');
let nodePty: NodePty | undefined;

/**
 * node-pty is a native addon compiled at install; loaded at the first tty session rather than
 * with the API, so an install that skipped its build (`--ignore-scripts`) still starts and
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

export interface TtySize {
  cols: number;
  rows: number;
}

export const DEFAULT_TTY_SIZE: TtySize = { cols: 80, rows: 24 };
export const MAX_TTY_DIMENSION = 1000;

export type TtyFrame = { kind: 'stdin'; data: string } | { kind: 'resize'; size: TtySize } | { kind: 'ignored' };

const dimension = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_TTY_DIMENSION;

/** One client frame; anything malformed (unknown channel, bad resize) is ignored, not fatal. */
export function parseTtyFrame(text: string): TtyFrame {
  const channel = text[0];
  if (channel === '0') return text.length > 1 ? { kind: 'stdin', data: text.slice(1) } : { kind: 'ignored' };
  if (channel === '1') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text.slice(1));
    } catch {
      return { kind: 'ignored' };
    }
    if (typeof parsed !== 'object' || parsed === null) return { kind: 'ignored' };
    const { cols, rows } = parsed as Record<string, unknown>;
    return dimension(cols) && dimension(rows) ? { kind: 'resize', size: { cols, rows } } : { kind: 'ignored' };
  }
  return { kind: 'ignored' };
}

/** The part of a ws WebSocket a session uses (kept narrow so tests can hand in their own). */
export interface TtySocket {
  readonly OPEN: number;
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string, cb?: (err?: Error) => void): void;
  close(code?: number, reason?: string): void;
  on(event: 'message', listener: (data: Buffer) => void): unknown;
}

export interface TtyTarget {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
}

export interface TtySession {
  /** The pty's process (its session leader). */
  pid: number;
  /** Kills every process of the session; safe to call more than once. */
  kill(): void;
}

// The pty is read only while the client keeps up: a `yes` must not fill the server's memory.
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;

/** Starts the shell on a pty of `size` and joins it to `socket`; null when it cannot start. */
export function startTtySession(socket: TtySocket, target: TtyTarget, size: TtySize, onError: (err: Error) => void): TtySession | null {
  const [command, ...args] = target.argv;
  let term: IPty;
  try {
    term = loadNodePty().spawn(command ?? '/bin/sh', args, {
      name: 'xterm-256color',
      cols: size.cols,
      rows: size.rows,
      cwd: target.cwd,
      env: { ...target.env, TERM: 'xterm-256color' },
    });
  } catch (err) {
    onError(err as Error);
    return null;
  }
  let exited = false;
  let paused = false;
  term.onData((data) => {
    if (socket.readyState !== socket.OPEN) return;
    socket.send(data, () => {
      if (paused && socket.bufferedAmount < LOW_WATER) {
        paused = false;
        term.resume();
      }
    });
    if (!paused && socket.bufferedAmount > HIGH_WATER) {
      paused = true;
      term.pause();
    }
  });
  term.onExit(() => {
    exited = true;
    if (socket.readyState === socket.OPEN) socket.close(1000, 'the shell exited');
  });
  socket.on('message', (data: Buffer) => {
    if (exited) return;
    const frame = parseTtyFrame(data.toString('utf8'));
    try {
      if (frame.kind === 'stdin') term.write(frame.data);
      else if (frame.kind === 'resize') term.resize(frame.size.cols, frame.size.rows);
    } catch {
      // the pty closed while the frame was on its way
    }
  });
  const leader = term.pid;
  return {
    pid: leader,
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
