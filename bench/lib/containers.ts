// Bench helper for bench/container-runtime.ts: what a container bench reads of this host —
// a process tree (a local replica in its sandbox, an engine in its container), the
// docker-proxy publishing a port, the data directory of a running `infergate serve`, the CPU
// the whole machine spent (so what other programs took during a run can be told apart), and
// image ids and progress streams of the Engine API.

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type Dockerode from 'dockerode';
import { cpuMicros } from './processes.js';

/** A process and every descendant, from /proc/<pid>/task/<tid>/children. */
export function processTree(pid: number): number[] {
  const out = [pid];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const kids = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      for (const k of kids) out.push(...processTree(k));
    }
  } catch {
    // gone meanwhile
  }
  return out;
}

export const childrenOf = (pid: number): number[] => processTree(pid).slice(1);

/** utime + stime of the processes, µs; one that is gone counts 0. */
export function cpuOf(pids: number[]): number {
  let sum = 0;
  for (const p of pids) {
    try {
      sum += cpuMicros(p);
    } catch {
      // gone meanwhile
    }
  }
  return sum;
}

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU time the whole machine spent busy so far (every core; user, nice, system, irq, softirq, steal), µs. */
export function machineBusyMicros(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = cpu;
  return ((user + nice + system + irq + softirq + steal) * 1e6) / CLK_TCK;
}

/** The docker-proxy processes publishing 127.0.0.1:<hostPort>. */
export function dockerProxies(hostPort: number): number[] {
  const found: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!(args[0] ?? '').endsWith('docker-proxy')) continue;
    const at = (flag: string) => args[args.indexOf(flag) + 1];
    if (at('-host-port') === String(hostPort) && at('-host-ip') === '127.0.0.1') found.push(Number(d));
  }
  return found;
}

/** INFERGATE_DATA_DIR of a running serve process (what its Docker scope is made from). */
export function dataDirOf(pid: number): string {
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const line = env.find((l) => l.startsWith('INFERGATE_DATA_DIR='));
  if (!line) throw new Error(`serve process ${pid} has no INFERGATE_DATA_DIR`);
  return line.slice('INFERGATE_DATA_DIR='.length);
}

/** An image's id, or null when the host does not have it. */
export async function imageId(docker: Dockerode, ref: string): Promise<string | null> {
  try {
    return (await docker.getImage(ref).inspect()).Id;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return null;
    throw err;
  }
}

/** Waits for an Engine API progress stream to end; rejects with the daemon's error. */
export function followProgress(docker: Dockerode, stream: NodeJS.ReadableStream, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let failure: string | undefined;
    docker.modem.followProgress(
      stream,
      (err: Error | null) => (err ? reject(err) : failure !== undefined ? reject(new Error(`${what}: ${failure}`)) : resolve()),
      (e: { error?: string }) => {
        if (e.error) failure ??= e.error;
      },
    );
  });
}

/**
 * Removes an image by id only when no tag names it any more — what removing the bench's own
 * tags left behind. Image ids are not the bench's alone: the engine image is built
 * reproducibly, so the bench's build has the same id as infergate/engine:<version> whenever
 * dist/ is the same, and removing that id would take everyone's tags with it. Without force:
 * an image a container uses stays.
 */
export async function removeIfUntagged(docker: Dockerode, id: string): Promise<void> {
  try {
    const info = await docker.getImage(id).inspect();
    if ((info.RepoTags ?? []).some((t) => t !== '<none>:<none>')) return;
    await docker.getImage(id).remove();
  } catch {
    // gone, or in use: left as it is
  }
}
