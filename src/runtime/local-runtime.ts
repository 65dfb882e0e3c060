// Owns the local process runtime (the embedded default): replicas are processes on this
// host, under `<data-dir>/replicas/<name>`, logging to `<data-dir>/logs`, sharing the model
// cache `<data-dir>/model-cache` when model caching is on; and the reaping of replicas an
// earlier run of the service left behind.

import path from 'node:path';
import type { Logger } from 'pino';
import type { ImageMap } from '../domain/image-map.js';
import { pickInherited } from './launch-plan.js';
import { DEFAULT_TIMING, LocalReplica, type LocalReplicaTiming } from './local-replica.js';
import { findPdeathsigWrapper, isAlive, processesOfReplica } from './process-tree.js';
import type { LeftoverReplica, ReplicaHandle, ReplicaRequest, Runtime } from './runtime.js';

export interface LocalRuntimeOptions {
  dataDir: string;
  /** argv that runs `infergate` itself (the reference engine is `infergate engine`). */
  selfCommand: string[];
  images: ImageMap;
  logger: Logger;
  timing?: Partial<LocalReplicaTiming>;
}

export function runtimeDirs(dataDir: string) {
  return {
    replicasDir: path.join(dataDir, 'replicas'),
    logsDir: path.join(dataDir, 'logs'),
    cacheDir: path.join(dataDir, 'model-cache'),
  };
}

export class LocalRuntime implements Runtime {
  private readonly pdeathsig = findPdeathsigWrapper();

  constructor(private readonly opts: LocalRuntimeOptions) {
    if (this.pdeathsig === null) {
      opts.logger.warn('setpriv --pdeathsig is not available: replicas of a service killed with SIGKILL are reaped at its next start');
    }
  }

  start(request: ReplicaRequest): ReplicaHandle {
    return new LocalReplica(request, {
      ...runtimeDirs(this.opts.dataDir),
      selfCommand: this.opts.selfCommand,
      images: this.opts.images,
      inherited: pickInherited(process.env),
      pdeathsig: this.pdeathsig,
      timing: { ...DEFAULT_TIMING, ...this.opts.timing },
      logger: this.opts.logger,
    });
  }

  async reap(leftover: LeftoverReplica): Promise<boolean> {
    const pids = processesOfReplica(leftover.name);
    if (pids.length === 0) return false;
    this.opts.logger.warn({ replica: leftover.name, pids }, 'stopping a replica process left by an earlier run');
    for (const pid of pids) signalSafe(pid, 'SIGTERM');
    for (let waited = 0; waited < 5000 && pids.some(isAlive); waited += 100) await new Promise((r) => setTimeout(r, 100));
    for (const pid of pids.filter(isAlive)) signalSafe(pid, 'SIGKILL');
    return true;
  }
}

function signalSafe(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}
