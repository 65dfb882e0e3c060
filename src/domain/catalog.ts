// Owns the catalog of clusters and their hardware profiles (GPUs per instance, instance
// count, optionally CPUs and memory per instance, whether the orchestration operator is
// enabled): the embedded default (docs/operations.md), parsing of a `--catalog FILE`
// replacement, and lookups. Pure: no I/O.

export interface HardwareProfile {
  id: number;
  name: string;
  gpus_per_instance: number;
  instances: number;
  /** vCPUs of one instance; absent: the runtime sizes containers per GPU. */
  cpus?: number;
  /** Memory of one instance in GiB; absent: the runtime sizes containers per GPU. */
  memory_gib?: number;
}

export interface Cluster {
  id: number;
  name: string;
  orchestration_enabled: boolean;
  hardware: HardwareProfile[];
}

export interface Catalog {
  clusters: Cluster[];
}

const simHardware = (): HardwareProfile[] => [
  { id: 1, name: 'sim-gpu-1x', gpus_per_instance: 1, instances: 16 },
  { id: 2, name: 'sim-gpu-2x', gpus_per_instance: 2, instances: 8 },
  { id: 3, name: 'sim-gpu-8x', gpus_per_instance: 8, instances: 2 },
];

/** Pinned: tests and examples rely on these ids and numbers. Frozen. */
export const DEFAULT_CATALOG: Catalog = deepFreeze({
  clusters: [
    { id: 1, name: 'local-sim', orchestration_enabled: true, hardware: simHardware() },
    { id: 2, name: 'local-sim-basic', orchestration_enabled: false, hardware: simHardware() },
  ],
});

export function findCluster(catalog: Catalog, id: number): Cluster | undefined {
  return catalog.clusters.find((c) => c.id === id);
}

export function findHardware(cluster: Cluster, id: number): HardwareProfile | undefined {
  return cluster.hardware.find((h) => h.id === id);
}

/** `cluster 1 "local-sim"`: how messages name a cluster. */
export function describeCluster(cluster: Cluster): string {
  return `cluster ${cluster.id} "${cluster.name}"`;
}

/**
 * Reads a catalog file's parsed JSON: `{"clusters": [{id, name, orchestration_enabled,
 * hardware: [{id, name, gpus_per_instance, instances, cpus?, memory_gib?}]}]}`. Throws one
 * Error that lists every problem with its JSON path.
 */
export function parseCatalog(json: unknown): Catalog {
  const problems: string[] = [];
  const catalog = readCatalog(json, problems);
  if (problems.length > 0 || catalog === null) {
    throw new Error(`invalid catalog: ${problems.join('; ')}`);
  }
  return deepFreeze(catalog);
}

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function readCatalog(json: unknown, problems: string[]): Catalog | null {
  if (!isObject(json)) {
    problems.push('the file must hold a JSON object {"clusters": [...]}');
    return null;
  }
  unknownKeys(json, ['clusters'], '', problems);
  const list = json.clusters;
  if (!Array.isArray(list) || list.length === 0) {
    problems.push('clusters must be a non-empty array');
    return null;
  }
  const clusters = list.map((c, i) => readCluster(c, `clusters[${i}]`, problems));
  duplicateIds(clusters, 'clusters', problems);
  return { clusters: clusters.filter((c): c is Cluster => c !== null) };
}

function readCluster(v: unknown, at: string, problems: string[]): Cluster | null {
  if (!isObject(v)) {
    problems.push(`${at} must be an object`);
    return null;
  }
  unknownKeys(v, ['id', 'name', 'orchestration_enabled', 'hardware'], at, problems);
  const id = positiveInt(v.id, `${at}.id`, problems);
  const name = nonEmptyString(v.name, `${at}.name`, problems);
  if (typeof v.orchestration_enabled !== 'boolean') problems.push(`${at}.orchestration_enabled must be true or false`);
  if (!Array.isArray(v.hardware) || v.hardware.length === 0) {
    problems.push(`${at}.hardware must be a non-empty array of hardware profiles`);
    return null;
  }
  const hardware = v.hardware.map((h, i) => readHardware(h, `${at}.hardware[${i}]`, problems));
  duplicateIds(hardware, `${at}.hardware`, problems);
  if (id === null || name === null || typeof v.orchestration_enabled !== 'boolean') return null;
  const profiles = hardware.filter((h): h is HardwareProfile => h !== null);
  return { id, name, orchestration_enabled: v.orchestration_enabled, hardware: profiles };
}

function readHardware(v: unknown, at: string, problems: string[]): HardwareProfile | null {
  if (!isObject(v)) {
    problems.push(`${at} must be an object`);
    return null;
  }
  unknownKeys(v, ['id', 'name', 'gpus_per_instance', 'instances', 'cpus', 'memory_gib'], at, problems);
  const id = positiveInt(v.id, `${at}.id`, problems);
  const name = nonEmptyString(v.name, `${at}.name`, problems);
  const gpus = nonNegativeInt(v.gpus_per_instance, `${at}.gpus_per_instance`, problems);
  const instances = nonNegativeInt(v.instances, `${at}.instances`, problems);
  const cpus = optionalPositive(v, 'cpus', at, problems);
  const memory = optionalPositive(v, 'memory_gib', at, problems);
  if (id === null || name === null || gpus === null || instances === null || cpus === null || memory === null) return null;
  return { id, name, gpus_per_instance: gpus, instances, ...sizeFields(cpus, memory) };
}

// Absent fields stay absent (not undefined) so a parsed file equals its JSON.
function sizeFields(cpus: number | undefined, memory: number | undefined): Pick<HardwareProfile, 'cpus' | 'memory_gib'> {
  return { ...(cpus !== undefined && { cpus }), ...(memory !== undefined && { memory_gib: memory }) };
}

function unknownKeys(v: Obj, known: string[], at: string, problems: string[]): void {
  for (const key of Object.keys(v)) {
    if (!known.includes(key)) problems.push(`${at ? `${at}.` : ''}${key} is not a catalog field (known: ${known.join(', ')})`);
  }
}

function duplicateIds(items: ({ id: number } | null)[], at: string, problems: string[]): void {
  const seen = new Set<number>();
  for (const item of items) {
    if (item === null) continue;
    if (seen.has(item.id)) problems.push(`${at}: id ${item.id} appears more than once`);
    seen.add(item.id);
  }
}

function positiveInt(v: unknown, at: string, problems: string[]): number | null {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1) return v;
  problems.push(`${at} must be an integer of at least 1`);
  return null;
}

function nonNegativeInt(v: unknown, at: string, problems: string[]): number | null {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  problems.push(`${at} must be an integer of at least 0`);
  return null;
}

/** undefined when the key is absent, null when it is there but not a positive number. */
function optionalPositive(v: Obj, key: string, at: string, problems: string[]): number | undefined | null {
  if (!Object.hasOwn(v, key)) return undefined;
  const value = v[key];
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value;
  problems.push(`${at}.${key} must be a number greater than 0`);
  return null;
}

function nonEmptyString(v: unknown, at: string, problems: string[]): string | null {
  if (typeof v === 'string' && v.trim() !== '') return v;
  problems.push(`${at} must be a non-empty string`);
  return null;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
