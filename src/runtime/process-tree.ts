// Owns finding and signalling replica processes on this node: whole process groups (each
// replica leads its own, so a shell's children go with it), processes an earlier run left
// behind (found by the INFERGATE_REPLICA_ID in their environment, so a recycled pid is never
// mistaken for a replica), and the parent-death signal that keeps replicas from outliving
// a service that was killed outright.

import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
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

/** Pids of live processes whose environment says they belong to replica `name` (Linux /proc). */
export function processesOfReplica(name: string): number[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return [];
  }
  const marker = `\0INFERGATE_REPLICA_ID=${name}\0`;
  return pids.map(Number).filter((pid) => pid !== process.pid && `\0${environOf(pid) ?? ''}`.includes(marker));
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
