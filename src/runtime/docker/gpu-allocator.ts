// Owns which of this host's GPUs each container holds: handing out free GPUs to a new
// container, recording the GPUs of containers adopted after a restart, and freeing them when
// a container goes. Also reads the host's GPU list, from a `--gpus` flag or from nvidia-smi,
// and says where it came from. One GPU is never held by two owners.

import { execFile } from 'node:child_process';

/** Runs a program without a shell and resolves with its stdout; rejects like execFile does. */
export type RunFile = (file: string, args: string[]) => Promise<string>;

export interface GpuDiscovery {
  ids: string[];
  /** Where `ids` came from, or why there are none: for the runtime's startup message. */
  source: string;
}

export class GpuAllocator {
  /** Every device, in allocation order, with its owner or null when free. */
  private readonly owners = new Map<string, string | null>();

  constructor(devices: readonly string[]) {
    for (const id of [...devices].sort(compareGpuIds)) {
      if (this.owners.has(id)) throw new Error(`GPU ${id} is listed more than once`);
      this.owners.set(id, null);
    }
  }

  /** The host's GPUs in the order acquire hands them out. */
  get devices(): readonly string[] {
    return [...this.owners.keys()];
  }

  get total(): number {
    return this.owners.size;
  }

  get free(): number {
    return this.freeIds().length;
  }

  /**
   * Gives `owner` the `count` lowest free GPUs, or takes nothing and returns null when fewer
   * are free: a replica with half its GPUs would fail to load its model anyway.
   */
  acquire(owner: string, count: number): string[] | null {
    if (!Number.isSafeInteger(count) || count < 0) throw new RangeError(`GPU count must be an integer of at least 0, got ${count}`);
    const free = this.freeIds();
    if (free.length < count) return null;
    const taken = free.slice(0, count);
    for (const id of taken) this.owners.set(id, owner);
    return taken;
  }

  /**
   * Records GPUs a running container already holds (adopted after a restart). A GPU held by
   * another owner is not taken from it but returned as a conflict, for the caller to resolve
   * (two live containers sharing a GPU is the host's problem, not one to paper over here).
   * Ids outside this host's list are ignored: nothing else can be given them.
   */
  claim(owner: string, ids: readonly string[]): string[] {
    const conflicts: string[] = [];
    for (const id of ids) {
      if (!this.owners.has(id)) continue;
      const current = this.owners.get(id) ?? null;
      if (current === null || current === owner) this.owners.set(id, owner);
      else conflicts.push(id);
    }
    return conflicts;
  }

  release(owner: string): void {
    for (const [id, current] of this.owners) {
      if (current === owner) this.owners.set(id, null);
    }
  }

  holder(id: string): string | null {
    return this.owners.get(id) ?? null;
  }

  private freeIds(): string[] {
    return [...this.owners].filter(([, current]) => current === null).map(([id]) => id);
  }
}

/**
 * Index ids by number (so 10 comes after 9), before UUIDs, which keep their string order:
 * "lowest first" then means what nvidia-smi's numbering means.
 */
function compareGpuIds(a: string, b: string): number {
  const na = isIndex(a) ? Number(a) : null;
  const nb = isIndex(b) ? Number(b) : null;
  if (na !== null && nb !== null) return na - nb;
  if (na !== null) return -1;
  if (nb !== null) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

const isIndex = (id: string): boolean => /^\d+$/.test(id);

// What a CDI device name allows after `nvidia.com/gpu=`, which also covers indexes and
// GPU-/MIG- UUIDs for the nvidia driver.
const GPU_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;

// The NVIDIA toolkit reads these as "every GPU" or "no GPU", not as one device; letting one
// through would hand a single owner the whole host behind the allocator's back.
const RESERVED_IDS = new Set(['all', 'none', 'void']);

/** Reads a `--gpus` value such as `0,1,2,3` or `GPU-<uuid>,GPU-<uuid>`, in the flag's order. */
export function parseGpuList(flag: string): string[] {
  const entries = flag.split(',').map((e) => e.trim());
  if (entries.length === 1 && entries[0] === '') {
    throw new Error('--gpus must list at least one GPU id (e.g. 0,1 or GPU-<uuid>); leave the flag out for a host without GPUs');
  }
  const seen = new Set<string>();
  entries.forEach((id, i) => {
    checkGpuId(id, i);
    if (seen.has(id)) throw new Error(`--gpus lists GPU ${id} more than once`);
    seen.add(id);
  });
  return entries;
}

function checkGpuId(id: string, position: number): void {
  if (id === '') throw new Error(`--gpus has an empty entry at position ${position + 1}`);
  if (RESERVED_IDS.has(id.toLowerCase())) {
    throw new Error(`--gpus lists GPUs one by one; "${id}" is not a GPU id (list the indexes, e.g. 0,1,2,3)`);
  }
  if (!GPU_ID.test(id)) throw new Error(`--gpus: "${id}" is not a GPU index or UUID`);
}

const NVIDIA_SMI = 'nvidia-smi';
const QUERY_ARGS = ['--query-gpu=index', '--format=csv,noheader'];
// A wedged driver can leave nvidia-smi hanging; startup must not wait on it forever.
const NVIDIA_SMI_TIMEOUT_MS = 15_000;

/** Asks nvidia-smi for the host's GPU indexes. Never throws: a host without GPUs is normal. */
export async function discoverGpus(run: RunFile = runFile): Promise<GpuDiscovery> {
  let stdout: string;
  try {
    stdout = await run(NVIDIA_SMI, QUERY_ARGS);
  } catch (err) {
    return { ids: [], source: failureSource(err) };
  }
  return readIndexes(stdout);
}

function readIndexes(stdout: string): GpuDiscovery {
  const lines = stdout.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const odd = lines.find((l) => !isIndex(l));
  if (odd !== undefined) return { ids: [], source: `${NVIDIA_SMI} printed "${odd}" where a GPU index was expected` };
  if (lines.length === 0) return { ids: [], source: `${NVIDIA_SMI} listed no GPUs` };
  return { ids: lines, source: `${NVIDIA_SMI} ${QUERY_ARGS[0]}` };
}

function failureSource(err: unknown): string {
  const e = isRecord(err) ? err : {};
  if (e.code === 'ENOENT') return 'no nvidia-smi on this host';
  if (e.killed === true) return `${NVIDIA_SMI} did not answer within ${NVIDIA_SMI_TIMEOUT_MS / 1000} s`;
  // nvidia-smi reports some failures ("No devices were found") on stdout, not stderr.
  const said = firstLine(e.stderr) ?? firstLine(e.stdout) ?? firstLine(e.message) ?? String(err);
  const status = typeof e.code === 'number' ? ` (exit ${e.code})` : '';
  return `${NVIDIA_SMI} failed${status}: ${said}`;
}

function firstLine(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  return v.split('\n').map((l) => l.trim()).find((l) => l !== '') ?? null;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function runFile(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: NVIDIA_SMI_TIMEOUT_MS, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stdout, stderr }));
      else resolve(stdout);
    });
  });
}
