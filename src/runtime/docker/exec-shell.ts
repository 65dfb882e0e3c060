// Owns the terminal's shells in a container: a Docker exec through the Engine API — with a
// TTY (resize, Ctrl-C and job control from the container's pty) or on plain streams with
// stdout and stderr demultiplexed — and its exit status read back from the exec. The exec
// runs as the container's user, with its environment, in its namespaces: nothing of the
// service's environment goes with it. Ending a session kills the exec's processes by their
// pids on this host (the Engine API has no call that ends an exec).

import { PassThrough, type Duplex } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type Dockerode from 'dockerode';
import type { PipeShell, PtyShell, ShellCommand, ShellLauncher } from '../../domain/ports.js';
import { processesInSession, signalPid } from '../process-tree.js';

interface ExecSession {
  exec: Dockerode.Exec;
  stream: Duplex;
}

async function openExec(docker: Dockerode, containerId: string, command: ShellCommand, tty: boolean): Promise<ExecSession> {
  const exec = await docker.getContainer(containerId).exec({
    Cmd: command.argv.length > 0 ? command.argv : ['/bin/sh'],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: tty,
    Env: Object.entries({ ...command.env, ...(tty ? { TERM: 'xterm-256color' } : {}) }).map(([k, v]) => `${k}=${v}`),
    ...(command.cwd !== '' ? { WorkingDir: command.cwd } : {}),
  });
  const stream = (await exec.start({ hijack: true, stdin: true, Tty: tty })) as Duplex;
  return { exec, stream };
}

/** Kills the exec's process and what it started (its session on this host). */
async function killExec(session: ExecSession | null): Promise<void> {
  if (session === null) return;
  const info = await session.exec.inspect().catch(() => null);
  const pid = info?.Running ? info.Pid : 0;
  if (pid > 0) {
    for (let pass = 0; pass < 3; pass++) {
      const members = [...new Set([pid, ...processesInSession(pid)])];
      for (const p of members) signalPid(p, 'SIGKILL');
      if (processesInSession(pid).length === 0) break;
    }
  }
  session.stream.destroy();
}

/** The exit status once the stream ended: null when the exec was killed by a signal or cannot be read. */
async function exitStatus(session: ExecSession): Promise<number | null> {
  const info = await session.exec.inspect().catch(() => null);
  const code = info?.ExitCode;
  return typeof code === 'number' && code < 128 ? code : null;
}

/**
 * Shells are started synchronously by the terminal (the port's contract); the exec opens
 * asynchronously, so input that arrives meanwhile is queued and failures go to onError/onExit.
 */
class Pending {
  session: ExecSession | null = null;
  killed = false;
  private readonly queue: Array<Buffer | string> = [];

  write(data: Buffer | string): void {
    if (this.session !== null) this.session.stream.write(data);
    else this.queue.push(data);
  }

  opened(session: ExecSession): void {
    this.session = session;
    for (const data of this.queue.splice(0)) session.stream.write(data);
  }
}

function pipeShell(docker: Dockerode, containerId: string, command: ShellCommand): PipeShell {
  const pending = new Pending();
  const output = new PassThrough();
  const errors: Array<(err: Error) => void> = [];
  const exits: Array<(status: number | null) => void> = [];
  const finish = (status: number | null) => {
    for (const l of exits.splice(0)) l(status);
  };
  void openExec(docker, containerId, command, false).then(
    (session) => {
      if (pending.killed) return void killExec(session);
      pending.opened(session);
      docker.modem.demuxStream(session.stream, output, output);
      session.stream.on('end', () => void exitStatus(session).then(finish));
      session.stream.on('error', () => {});
    },
    (err: Error) => {
      for (const l of errors) l(err);
      finish(null);
    },
  );
  return {
    write: (data) => pending.write(data),
    onOutput: (listener) => void output.on('data', listener),
    onError: (listener) => void errors.push(listener),
    onExit: (listener) => void exits.push(listener),
    kill() {
      pending.killed = true;
      void killExec(pending.session);
    },
  };
}

function ptyShell(docker: Dockerode, containerId: string, command: ShellCommand, size: { cols: number; rows: number }): PtyShell {
  const pending = new Pending();
  const data: Array<(text: string) => void> = [];
  const exits: Array<(status: number | null) => void> = [];
  const finish = (status: number | null) => {
    for (const l of exits.splice(0)) l(status);
  };
  let current = size;
  void openExec(docker, containerId, command, true).then(
    async (session) => {
      if (pending.killed) return void killExec(session);
      pending.opened(session);
      const decoder = new StringDecoder('utf8');
      session.stream.on('data', (chunk: Buffer) => {
        const text = decoder.write(chunk);
        if (text !== '') for (const l of data) l(text);
      });
      session.stream.on('end', () => void exitStatus(session).then(finish));
      session.stream.on('error', () => {});
      await session.exec.resize({ h: current.rows, w: current.cols }).catch(() => {});
    },
    (err: Error) => {
      for (const l of data) l(`cannot start a shell in the container: ${err.message}\r\n`);
      finish(null);
    },
  );
  return {
    write: (text) => pending.write(text),
    resize(cols, rows) {
      current = { cols, rows };
      void pending.session?.exec.resize({ h: rows, w: cols }).catch(() => {});
    },
    pause: () => void pending.session?.stream.pause(),
    resume: () => void pending.session?.stream.resume(),
    onData: (listener) => void data.push(listener),
    onExit: (listener) => void exits.push(listener),
    kill() {
      pending.killed = true;
      void killExec(pending.session);
    },
  };
}

/** The terminal's launcher for one container. */
export function dockerShells(docker: Dockerode, containerId: string): ShellLauncher {
  return {
    pipe: (command) => pipeShell(docker, containerId, command),
    pty: (command, size) => ptyShell(docker, containerId, command, size),
  };
}
