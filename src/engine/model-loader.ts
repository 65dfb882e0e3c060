// Owns the simulated model load and the model cache shared by replicas. A model's files live
// in <cache-dir>/<model name with "/" replaced by "__">/; the cache is warm for a model when
// its COMPLETE marker exists. A cold load "downloads" (waits the full load time), writes a
// small weights file and then the marker, each through a temporary file and a rename, so two
// replicas loading the same model at once both succeed and nobody sees a half-written entry.

import type { Logger } from 'pino';
import { randomBytes } from 'node:crypto';
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const COMPLETE_MARKER = 'COMPLETE';
export const WEIGHTS_FILE = 'weights.simulated.json';

export type CacheState = 'warm' | 'cold' | 'none';

export interface LoadResult {
  cache: CacheState;
  /** The model's cache directory; null without a cache dir. */
  dir: string | null;
  /** Wall-clock load time. */
  ms: number;
}

export interface LoadOptions {
  model: string;
  cacheDir: string | null;
  /** Cold load time, and the multiplier for a warm one. */
  fullMs: number;
  warmRatio: number;
  signal?: AbortSignal;
}

/** The model's directory in the cache; callers validate the name (options.MODEL_NAME_RE). */
export function modelCacheDir(cacheDir: string, model: string): string {
  const leaf = model.replaceAll('/', '__');
  if (leaf === '' || leaf === '.' || leaf === '..' || leaf.includes('\0') || leaf.includes('\\')) {
    throw new Error(`model name "${model}" cannot name a cache directory`);
  }
  return path.join(cacheDir, leaf);
}

export async function isCached(dir: string): Promise<boolean> {
  try {
    return (await stat(path.join(dir, COMPLETE_MARKER))).isFile();
  } catch {
    return false;
  }
}

/** Writes the weights file, then the marker; both atomically (temp file + rename). */
export async function writeCacheEntry(dir: string, model: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const weights = JSON.stringify({
    simulated: true,
    note: 'infergate reference engine: placeholder weights of a simulated model, no real parameters',
    model,
    written_at: new Date().toISOString(),
  });
  await atomicWrite(path.join(dir, WEIGHTS_FILE), weights + '\n');
  await atomicWrite(path.join(dir, COMPLETE_MARKER), `${model}\n`);
}

async function atomicWrite(file: string, content: string): Promise<void> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temp, content, { mode: 0o644 });
  await rename(temp, file);
}

/**
 * Waits the load time — fullMs cold, fullMs × warmRatio warm — and fills the cache on a cold
 * load. Rejects with an AbortError if the signal fires first (shutdown during load).
 */
export async function loadModel(opts: LoadOptions): Promise<LoadResult> {
  const started = performance.now();
  const dir = opts.cacheDir === null ? null : modelCacheDir(opts.cacheDir, opts.model);
  const warm = dir !== null && (await isCached(dir));
  const waitMs = warm ? opts.fullMs * opts.warmRatio : opts.fullMs;
  await sleep(waitMs, undefined, opts.signal ? { signal: opts.signal } : undefined);
  if (dir !== null && !warm) await writeCacheEntry(dir, opts.model);
  return { cache: dir === null ? 'none' : warm ? 'warm' : 'cold', dir, ms: Math.round(performance.now() - started) };
}

/** Where a replica's model stands: the engines' readiness follows it. */
export type ModelStatus = { state: 'loading' } | { state: 'ready' } | { state: 'failed'; why: string };

/**
 * Loads the served model as an engine does at start, logging how (warm or cold cache, or
 * none) and how long it took; the resulting status, or null when the load was aborted.
 */
export async function loadServedModel(
  o: { model: string; cacheDir: string | null; startupMs: number; warmLoadRatio: number },
  log: Logger,
  signal: AbortSignal,
): Promise<ModelStatus | null> {
  log.info({ model: o.model, cache_dir: o.cacheDir }, `loading model ${o.model}`);
  try {
    const result = await loadModel({ model: o.model, cacheDir: o.cacheDir, fullMs: o.startupMs, warmRatio: o.warmLoadRatio, signal });
    const fields = { model: o.model, cache: result.cache === 'none' ? undefined : result.cache, dir: result.dir ?? undefined, load_ms: result.ms };
    if (result.cache === 'warm') log.info(fields, `model cache warm: loaded ${o.model} from ${result.dir} in ${result.ms} ms`);
    else if (result.cache === 'cold') log.info(fields, `model cache cold: downloaded ${o.model} into ${result.dir} in ${result.ms} ms`);
    else log.info(fields, `model loaded in ${result.ms} ms (no model cache)`);
    return { state: 'ready' };
  } catch (err) {
    if (signal.aborted) return null;
    log.error({ err, model: o.model }, `could not load model ${o.model}: ${(err as Error).message}`);
    return { state: 'failed', why: (err as Error).message };
  }
}
