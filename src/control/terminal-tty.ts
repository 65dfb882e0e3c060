// Owns the terminal's `infergate.tty.v1` session: the shell runs on a pseudo-terminal
// (node-pty), so echo, line editing, job control and Ctrl-C come from the pty's line
// discipline, as in any terminal. Frames from the client are text whose first character is a
// channel — `0` + keystrokes for the shell, `1` + `{"cols","rows"}` to resize — and the pty's
// output goes back as text frames as it comes. Ending the session kills every process of the
// pty's session (the runtime's ShellLauncher starts and ends the shell; this module only
// speaks the protocol).

import type { PtyShell, ShellCommand, ShellLauncher } from '../domain/ports.js';

/**
 * The close reason of a terminal whose shell ended: the exit status is in it, so a client
 * (the CLI's exec) can pass it on. Both terminal modes use it.
 */
export function shellExitReason(status: number | null): string {
  return status === null ? 'the shell was killed by a signal' : `the shell exited with status ${status}`;
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

export type TtyTarget = ShellCommand;

export interface TtySession {
  /** Kills every process of the session; safe to call more than once. */
  kill(): void;
}

// The pty is read only while the client keeps up: a `yes` must not fill the server's memory.
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;

/** Starts the shell on a pty of `size` and joins it to `socket`; null when it cannot start. */
export function startTtySession(socket: TtySocket, launcher: ShellLauncher, target: TtyTarget, size: TtySize, onError: (err: Error) => void): TtySession | null {
  let term: PtyShell;
  try {
    term = launcher.pty(target, size);
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
  term.onExit((status) => {
    exited = true;
    if (socket.readyState === socket.OPEN) socket.close(1000, shellExitReason(status));
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
  return { kill: () => term.kill() };
}
