// Owns the simulated model load and the model cache shared by replicas. A model's files live
// in <cache-dir>/<model name with "/" replaced by "__">/; the cache is warm for a model when
// its COMPLETE marker exists. A cold load "downloads" (waits the full load time), writes a
// small weights file and then the marker, each through a temporary file and a rename, so two
// replicas loading the same model at once both succeed and nobody sees a half-written entry.

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
