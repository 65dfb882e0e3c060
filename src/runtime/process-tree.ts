// Owns finding and signalling replica processes on this node: whole process groups (each
// replica leads its own, so a shell's children go with it), processes an earlier run left
// behind (found by the INFERGATE_REPLICA_ID in their environment, so a recycled pid is never
// mistaken for a replica), the processes inside a replica's sandbox (the runtime signals them,
// not bubblewrap), the processes of a terminal's session, the processes still using a
// replica's directory, and the parent-death signal that keeps unsandboxed replicas from
// outliving a service that was killed outright.

import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Signals one process; one already gone is not an error. */
export function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function environOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1');
  } catch {
    return null;
  }
}

function livePids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .map(Number)
      .filter((pid) => pid !== process.pid);
  } catch {
    return [];
  }
}

/** Pids of live processes whose environment says they belong to replica `name` (Linux /proc). */
export function processesOfReplica(name: string): number[] {
  const marker = `\0INFERGATE_REPLICA_ID=${name}\0`;
  return livePids().filter((pid) => `\0${environOf(pid) ?? ''}`.includes(marker));
}

interface ProcessInfo {
  pid: number;
  ppid: number;
  /** Start time, in clock ticks since boot. */
  start: number;
  comm: string;
}

/** Every live process's parent, start time and name, from /proc/<pid>/stat. */
function processTable(): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  for (const pid of livePids()) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    } catch {
      continue;
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.push({ pid, ppid: Number(fields[1]), start: Number(fields[19]), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) });
  }
  return out;
}

/**
 * Live processes of session `sid` (field 6 of /proc/<pid>/stat, in this host's pids), the
 * leader included: what a terminal started, its jobs in process groups of their own too.
 */
export function processesInSession(sid: number): number[] {
  const out: number[] = [];
  for (const pid of livePids()) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    } catch {
      continue;
    }
    // After "pid (comm) ": state ppid pgrp session …
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]) === sid) out.push(pid);
  }
  return out;
}

/**
 * The processes of a sandbox whose bubblewrap is `bwrapPid`, in host pids: bubblewrap's own
 * chain (it forks the PID namespace's init) is walked down to the first process that is not
 * bubblewrap — the command — and every descendant of the innermost bubblewrap is listed, the
 * command first: processes that left their session (a `setsid` child) are re-parented to that
 * init, so they are there too. Empty while the command has not started.
 */
export function sandboxProcesses(bwrapPid: number): number[] {
  const table = processTable();
  const children = (pid: number) =>
    table
      .filter((p) => p.ppid === pid)
      .sort((a, b) => a.start - b.start || a.pid - b.pid);
  let init = bwrapPid;
  for (let depth = 0; depth < 4; depth++) {
    const next = children(init)[0];
    if (next === undefined) return [];
    if (next.comm !== 'bwrap') break;
    init = next.pid;
  }
  const out: number[] = [];
  const queue = children(init);
  while (queue.length > 0) {
    const p = queue.shift() as ProcessInfo;
    out.push(p.pid);
    queue.push(...children(p.pid));
  }
  return out;
}

/**
 * Live processes that use directory `dir`: their environment names it as their replica root,
 * or their working directory lies in it. A replica directory one of them uses is not a leftover,
 * whoever started that process (a standby service on the same host, say).
 */
export function processesUsing(dir: string): number[] {
  const marker = `\0INFERGATE_REPLICA_ROOT=${dir}\0`;
  return livePids().filter((pid) => {
    if (`\0${environOf(pid) ?? ''}`.includes(marker)) return true;
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      const rel = path.relative(dir, cwd);
      return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
    } catch {
      return false;
    }
  });
}

/**
 * util-linux `setpriv --pdeathsig KILL`, when present: the kernel kills the replica when the
 * service that started it dies, even by SIGKILL. Null when this host has no such tool.
 */
export function findPdeathsigWrapper(): string | null {
  for (const candidate of ['/usr/bin/setpriv', '/bin/setpriv']) {
    const probe = spawnSync(candidate, ['--help'], { encoding: 'utf8' });
    if (probe.status === 0 && probe.stdout.includes('--pdeathsig')) return candidate;
  }
  return null;
}
