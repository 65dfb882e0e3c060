// Owns finding and signalling replica processes on this node: whole process groups (each
// replica leads its own, so a shell's children go with it), processes an earlier run left
// behind (found by the INFERGATE_REPLICA_ID in their environment, so a recycled pid is never
// mistaken for a replica), the processes inside a replica's sandbox (the runtime signals them,
// not bubblewrap), the processes of a terminal's session, the processes still using a
// replica's directory, and the parent-death signal that keeps unsandboxed replicas from
// outliving a service that was killed outright.
//
// Reading /proc costs one file per live process, so it is read once per need and shared by
// whoever needs it then (ProcessTable): the runtime's periodic checks of every replica, and
// the reaping and sweeping after a takeover, each read the table once for all the replicas
// they concern — never once per replica, which grows with replicas × processes. A pid found
// in a table read earlier is checked again (its environment, or its place in a table read just
// then) before it is signalled, so a pid reused meanwhile is never signalled.

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

interface ProcessInfo {
  pid: number;
  ppid: number;
  /** Field 6 of /proc/<pid>/stat: the session it belongs to. */
  session: number;
  /** Start time, in clock ticks since boot. */
  start: number;
  comm: string;
}

/**
 * The live processes of this host as one read of /proc/<pid>/stat each, answering every
 * question about process trees from that one read; environments and working directories are
 * read only when asked, once per process. Read it once per need and share it between every
 * replica that needs it at that moment.
 */
export class ProcessTable {
  private readonly byParent = new Map<number, ProcessInfo[]>();
  private readonly environs = new Map<number, string | null>();
  private readonly cwds = new Map<number, string | null>();

  private constructor(readonly processes: readonly ProcessInfo[]) {
    for (const p of processes) {
      const siblings = this.byParent.get(p.ppid);
      if (siblings) siblings.push(p);
      else this.byParent.set(p.ppid, [p]);
    }
    for (const siblings of this.byParent.values()) siblings.sort((a, b) => a.start - b.start || a.pid - b.pid);
  }

  /** Tables read so far by this process (for tests and diagnostics: each read opens a file per live process). */
  static reads = 0;

  /** Every live process but this one, read now. */
  static read(): ProcessTable {
    ProcessTable.reads++;
    const out: ProcessInfo[] = [];
    for (const pid of livePids()) {
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      } catch {
        continue; // gone meanwhile
      }
      // "pid (comm) state ppid pgrp session …": comm may hold spaces and parentheses, so read after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({ pid, ppid: Number(fields[1]), session: Number(fields[3]), start: Number(fields[19]), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) });
    }
    return new ProcessTable(out);
  }

  private children(pid: number): readonly ProcessInfo[] {
    return this.byParent.get(pid) ?? [];
  }

  /** See the function of the same name: the processes of the sandbox whose bubblewrap is `bwrapPid`, the command first. */
  sandboxProcesses(bwrapPid: number): number[] {
    let init = bwrapPid;
    for (let depth = 0; depth < 4; depth++) {
      const next = this.children(init)[0];
      if (next === undefined) return [];
      if (next.comm !== 'bwrap') break;
      init = next.pid;
    }
    const out: number[] = [];
    const queue = [...this.children(init)];
    while (queue.length > 0) {
      const p = queue.shift() as ProcessInfo;
      out.push(p.pid);
      queue.push(...this.children(p.pid));
    }
    return out;
  }

  /** See the function of the same name: the processes of session `sid`, the leader included. */
  inSession(sid: number): number[] {
    return this.processes.filter((p) => p.session === sid).map((p) => p.pid);
  }

  /** Pids whose environment holds `NAME=value` (read once per process, then kept with the table). */
  withEnv(name: string, value: string): number[] {
    const marker = `\0${name}=${value}\0`;
    return this.processes.filter((p) => `\0${this.environOf(p.pid) ?? ''}`.includes(marker)).map((p) => p.pid);
  }

  /** See processesUsing: pids whose environment names `dir` as their replica root, or whose working directory lies in it. */
  using(dir: string): number[] {
    const marker = `\0INFERGATE_REPLICA_ROOT=${dir}\0`;
    return this.processes
      .filter((p) => {
        if (`\0${this.environOf(p.pid) ?? ''}`.includes(marker)) return true;
        const cwd = this.cwdOf(p.pid);
        if (cwd === null) return false;
        const rel = path.relative(dir, cwd);
        return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
      })
      .map((p) => p.pid);
  }

  private cwdOf(pid: number): string | null {
    if (!this.cwds.has(pid)) {
      let cwd: string | null = null;
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // gone meanwhile
      }
      this.cwds.set(pid, cwd);
    }
    return this.cwds.get(pid) ?? null;
  }

  private environOf(pid: number): string | null {
    if (!this.environs.has(pid)) this.environs.set(pid, environOf(pid));
    return this.environs.get(pid) ?? null;
  }
}

/** Pids of live processes whose environment says they belong to replica `name` (Linux /proc). */
export function processesOfReplica(name: string, table: ProcessTable = ProcessTable.read()): number[] {
  return table.withEnv('INFERGATE_REPLICA_ID', name);
}

/** Whether `pid` still names replica `name` in its environment: read again just before it is signalled. */
export function isProcessOfReplica(pid: number, name: string): boolean {
  return `\0${environOf(pid) ?? ''}`.includes(`\0INFERGATE_REPLICA_ID=${name}\0`);
}

/**
 * Live processes of session `sid` (field 6 of /proc/<pid>/stat, in this host's pids), the
 * leader included: what a terminal started, its jobs in process groups of their own too.
 */
export function processesInSession(sid: number, table: ProcessTable = ProcessTable.read()): number[] {
  return table.inSession(sid);
}

/**
 * The processes of a sandbox whose bubblewrap is `bwrapPid`, in host pids: bubblewrap's own
 * chain (it forks the PID namespace's init) is walked down to the first process that is not
 * bubblewrap — the command — and every descendant of the innermost bubblewrap is listed, the
 * command first: processes that left their session (a `setsid` child) are re-parented to that
 * init, so they are there too. Empty while the command has not started.
 */
export function sandboxProcesses(bwrapPid: number, table: ProcessTable = ProcessTable.read()): number[] {
  return table.sandboxProcesses(bwrapPid);
}

/**
 * Live processes that use directory `dir`: their environment names it as their replica root,
 * or their working directory lies in it. A replica directory one of them uses is not a leftover,
 * whoever started that process (a standby service on the same host, say).
 */
export function processesUsing(dir: string, table: ProcessTable = ProcessTable.read()): number[] {
  return table.using(dir);
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
