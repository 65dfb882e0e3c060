// Owns the local process runtime (the embedded default): replicas are processes on this
// host — in the replica sandbox when the host has one — under `<data-dir>/replicas/<name>`,
// logging to `<data-dir>/logs`, with a model cache per deployment under
// `<data-dir>/model-cache` when model caching is on, and the sandbox's seccomp program in
// `<data-dir>/sandbox/`, each in its pod where the host gives pods (pods.ts); the reaping of
// replicas an earlier run of the service left behind, and the sweeping of the directories they
// left (config files may hold secrets) and of their pods' network namespaces. The process table
// is read once per need for all replicas: one read shared by every reap of a takeover, one per
// sweep, and one per round of the listen checks of replicas on the host's network.

import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ImageMap } from '../domain/image-map.js';
import { PortBook } from './free-port.js';
import { pickInherited } from './launch-plan.js';
import { DEFAULT_TIMING, LocalReplica, type LocalReplicaTiming } from './local-replica.js';
import { ListenChecks } from './listen-checks.js';
import { findPdeathsigWrapper, isAlive, isProcessOfReplica, ProcessTable, signalPid } from './process-tree.js';
import { Pods, type PodSettings } from './pods.js';
import type { LeftoverReplica, ReplicaHandle, ReplicaRequest, Runtime } from './runtime.js';
import type { SandboxHost } from './sandbox.js';
import { hostUserNamespaceFilter } from './seccomp.js';

export interface LocalRuntimeOptions {
  dataDir: string;
  /** argv that runs `infergate` itself (the reference engine is `infergate engine`). */
  selfCommand: string[];
  images: ImageMap;
  logger: Logger;
  /** The replica sandbox (sandbox-probe.ts); null: replicas run unsandboxed. */
  sandbox: SandboxHost | null;
  /** `--allow-unsandboxed-host-commands`: host commands and shells may run without a sandbox. */
  allowUnsandboxedHostCommands: boolean;
  /** What this host offers pods (pods.ts's detectReplicaNetwork); null: replicas share the host's network. */
  pods: PodSettings | null;
  /** The service's scope (service-scope.ts): its pods are named with it. */
  scope: string;
  timing?: Partial<LocalReplicaTiming>;
}

/** How long the reaps of one takeover share a process table: each may wait seconds for processes to end. */
const REAP_TABLE_MS = 10_000;

export function runtimeDirs(dataDir: string) {
  return {
    replicasDir: path.join(dataDir, 'replicas'),
    logsDir: path.join(dataDir, 'logs'),
    cacheDir: path.join(dataDir, 'model-cache'),
    sandboxDir: path.join(dataDir, 'sandbox'),
  };
}

/**
 * Writes the user-namespace filter where every sandbox start and terminal reads it. It is
 * rewritten at every start (the program may change with a release); the data directory is
 * hidden from replicas, so none can alter it.
 */
function writeSeccompFile(dir: string): string | null {
  const filter = hostUserNamespaceFilter();
  if (filter === null) return null;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'userns-filter.bpf');
  writeFileSync(file, filter, { mode: 0o644 });
  return file;
}

export class LocalRuntime implements Runtime {
  private readonly pdeathsig: string | null;
  private readonly seccompFile: string | null;
  /** Names of the replicas this runtime runs: their directories are never swept. */
  private readonly running = new Set<string>();
  private readonly pods: Pods | null;
  private readonly ports = new PortBook();
  private readonly listenChecks: ListenChecks;
  /** The process table the reaps of one takeover share: read at the first reap, dropped at the sweep that ends it, or once stale. */
  private reapTable: { table: ProcessTable; readAt: number } | null = null;

  constructor(private readonly opts: LocalRuntimeOptions) {
    // In the sandbox, bubblewrap's --die-with-parent does what setpriv --pdeathsig does outside it.
    this.pdeathsig = opts.sandbox === null ? findPdeathsigWrapper() : null;
    this.seccompFile = opts.sandbox?.seccomp ? writeSeccompFile(runtimeDirs(opts.dataDir).sandboxDir) : null;
    this.pods = opts.pods !== null ? new Pods({ settings: opts.pods, scope: opts.scope, logger: opts.logger }) : null;
    this.listenChecks = new ListenChecks({ ...DEFAULT_TIMING, ...opts.timing }.listenCheckMs);
    if (opts.sandbox === null && this.pdeathsig === null) {
      opts.logger.warn('setpriv --pdeathsig is not available: replicas of a service killed with SIGKILL are reaped at its next start');
    }
  }

  /** Its replicas are processes of the service (bubblewrap's --die-with-parent, setpriv --pdeathsig): they stop with it. */
  readonly replicasOutliveService = false;

  get description(): string {
    return this.opts.sandbox === null ? 'replicas run as processes on this host, unsandboxed' : 'replicas run as processes on this host, in the replica sandbox (bubblewrap)';
  }

  start(request: ReplicaRequest): ReplicaHandle {
    this.running.add(request.name);
    const replica = new LocalReplica(request, {
      ...runtimeDirs(this.opts.dataDir),
      selfCommand: this.opts.selfCommand,
      images: this.opts.images,
      inherited: pickInherited(process.env),
      pdeathsig: this.pdeathsig,
      sandbox: this.opts.sandbox,
      seccompFile: this.seccompFile,
      allowUnsandboxedHostCommands: this.opts.allowUnsandboxedHostCommands,
      pods: this.pods,
      ports: this.ports,
      listenChecks: this.listenChecks,
      timing: { ...DEFAULT_TIMING, ...this.opts.timing },
      logger: this.opts.logger,
    });
    replica.onChange((o) => {
      if (o.phase === 'stopped') this.running.delete(request.name);
    });
    return replica;
  }

  shellRefusal(): string | null {
    if (this.opts.sandbox !== null || this.opts.allowUnsandboxedHostCommands) return null;
    return (
      "the terminal runs a shell on this node, and this node has no replica sandbox (bubblewrap): it would run as the service's own user; " +
      'install bubblewrap, or start the service with --allow-unsandboxed-host-commands to open terminals anyway'
    );
  }

  /** A process cannot be supervised again by another parent: what an earlier run left is reaped instead. */
  adopt(): Promise<ReplicaHandle | null> {
    return Promise.resolve(null);
  }

  async reap(leftover: LeftoverReplica): Promise<boolean> {
    // A takeover reaps every leftover record in a row: one read of the table serves them all,
    // and each pid is checked again just before it is signalled.
    const pids = this.tableForReaps()
      .withEnv('INFERGATE_REPLICA_ID', leftover.name)
      .filter((pid) => isProcessOfReplica(pid, leftover.name));
    if (pids.length === 0) return false;
    this.opts.logger.warn({ replica: leftover.name, pids }, 'stopping a replica process left by an earlier run');
    for (const pid of pids) signalPid(pid, 'SIGTERM');
    for (let waited = 0; waited < 5000 && pids.some(isAlive); waited += 100) await new Promise((r) => setTimeout(r, 100));
    for (const pid of pids.filter(isAlive)) signalPid(pid, 'SIGKILL');
    return true;
  }

  async sweep(keep: ReadonlySet<string> = new Set()): Promise<string[]> {
    this.reapTable = null;
    const { replicasDir } = runtimeDirs(this.opts.dataDir);
    const namespaces = (await this.pods?.sweep()) ?? [];
    let names: string[];
    try {
      names = readdirSync(replicasDir);
    } catch {
      return namespaces;
    }
    const removed: string[] = [];
    // Read now, once for every directory (not the reaps' table: a process may have started since).
    let table: ProcessTable | null = null;
    for (const name of names) {
      const dir = path.join(replicasDir, name);
      if (this.running.has(name) || keep.has(name)) continue;
      table ??= ProcessTable.read();
      // A live process using it may belong to another service on this host (a standby on a shared store).
      if (table.using(dir).length > 0) continue;
      await rm(dir, { recursive: true, force: true });
      removed.push(name);
    }
    if (removed.length > 0) this.opts.logger.warn({ replicas: removed }, 'removed replica directories left by an earlier run');
    return [...namespaces, ...removed];
  }

  /** The table the reaps of one takeover share (they come in a row, then the sweep); read again once it is a few seconds old. */
  private tableForReaps(): ProcessTable {
    const now = performance.now();
    if (this.reapTable === null || now - this.reapTable.readAt > REAP_TABLE_MS) this.reapTable = { table: ProcessTable.read(), readAt: now };
    return this.reapTable.table;
  }
}
