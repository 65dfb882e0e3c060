// Owns the CPU, memory and process limits a replica's container gets from the hardware
// instance it runs on, so one replica cannot starve the others on a shared host.
//
// | component                         | vCPUs             | memory              | pids |
// |-----------------------------------|-------------------|---------------------|------|
// | per GPU of the hardware instance  | 8 × GPUs          | 64 GiB × GPUs       | 4096 |
// | catalog entry gives cpus/memory   | `cpus`            | `memory_gib` GiB    | 4096 |
// | CPU-only (no instance, or 0 GPUs) | 2                 | 4 GiB               | 4096 |
//
// vCPUs are then clamped to what the Docker daemon has (see clampCpus).

export interface ContainerLimits {
  /** HostConfig.NanoCpus: billionths of a CPU. */
  nanoCpus: number;
  /** HostConfig.Memory. */
  memoryBytes: number;
  /** HostConfig.PidsLimit. */
  pidsLimit: number;
}

/** The hardware fields the limits depend on (a catalog HardwareProfile fits). */
export interface LimitsInstance {
  gpus_per_instance: number;
  cpus?: number;
  memory_gib?: number;
}

/** The table above, for docs and the runtime's startup message. */
export const CONTAINER_LIMIT_DEFAULTS = Object.freeze({
  perGpu: Object.freeze({ cpus: 8, memoryGib: 64 }),
  cpuOnly: Object.freeze({ cpus: 2, memoryGib: 4 }),
  // Generous for an engine's worker processes and threads, low enough to stop a fork bomb.
  pidsLimit: 4096,
});

const NANO = 1_000_000_000;
const GIB = 1024 ** 3;
// Docker's lower bound for NanoCpus (0.01 CPU).
const MIN_CPUS = 0.01;

/**
 * The limits for a container on `instance`. `hostCpus` is the daemon's CPU count (NCPU from
 * the Engine's /info: on Docker Desktop that is its VM's, not this machine's).
 */
export function containerLimits(instance: LimitsInstance | null, hostCpus: number): ContainerLimits {
  if (!(Number.isFinite(hostCpus) && hostCpus > 0)) throw new RangeError(`host CPU count must be a positive number, got ${hostCpus}`);
  const { cpus, memoryGib } = sizing(instance);
  return {
    nanoCpus: Math.round(clampCpus(cpus, hostCpus) * NANO),
    memoryBytes: Math.round(memoryGib * GIB),
    pidsLimit: CONTAINER_LIMIT_DEFAULTS.pidsLimit,
  };
}

function sizing(instance: LimitsInstance | null): { cpus: number; memoryGib: number } {
  const gpus = instance?.gpus_per_instance ?? 0;
  const base = gpus > 0 ? scaled(gpus) : CONTAINER_LIMIT_DEFAULTS.cpuOnly;
  return { cpus: instance?.cpus ?? base.cpus, memoryGib: instance?.memory_gib ?? base.memoryGib };
}

function scaled(gpus: number): { cpus: number; memoryGib: number } {
  const { cpus, memoryGib } = CONTAINER_LIMIT_DEFAULTS.perGpu;
  return { cpus: cpus * gpus, memoryGib: memoryGib * gpus };
}

// Docker refuses to create a container whose NanoCpus is above the daemon's CPU count (or
// below 0.01 CPU) rather than capping it, so an 8-GPU instance on a small host would never
// start; the cap is the whole host instead.
function clampCpus(cpus: number, hostCpus: number): number {
  return Math.min(Math.max(cpus, MIN_CPUS), hostCpus);
}
