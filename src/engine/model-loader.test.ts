// The model cache: cold load fills it atomically, warm load is faster, concurrent cold loads
// of one model both succeed, and names cannot escape the cache directory.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMPLETE_MARKER, WEIGHTS_FILE, isCached, loadModel, modelCacheDir } from './model-loader.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-engine-cache-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('model cache', () => {
  it('maps model names to one directory each, "/" as "__"', () => {
    expect(modelCacheDir('/c', 'meta/llama-3:8b')).toBe(path.join('/c', 'meta__llama-3:8b'));
    expect(() => modelCacheDir('/c', '..')).toThrow();
    expect(() => modelCacheDir('/c', '')).toThrow();
  });

  it('loads cold the first time (writing weights then the marker) and warm after', async () => {
    const cold = await loadModel({ model: 'org/m', cacheDir: dir, fullMs: 200, warmRatio: 0.1 });
    expect(cold.cache).toBe('cold');
    expect(cold.dir).toBe(path.join(dir, 'org__m'));
    expect(cold.ms).toBeGreaterThanOrEqual(190);
    expect((await readdir(cold.dir!)).sort()).toEqual([COMPLETE_MARKER, WEIGHTS_FILE].sort());
    expect(await isCached(cold.dir!)).toBe(true);

    const warm = await loadModel({ model: 'org/m', cacheDir: dir, fullMs: 200, warmRatio: 0.1 });
    expect(warm.cache).toBe('warm');
    expect(warm.ms).toBeLessThan(cold.ms);
  });

  it('survives two cold loads of the same model at once and leaves no temp files', async () => {
    const [a, b] = await Promise.all([
      loadModel({ model: 'm', cacheDir: dir, fullMs: 20, warmRatio: 0 }),
      loadModel({ model: 'm', cacheDir: dir, fullMs: 20, warmRatio: 0 }),
    ]);
    expect(a.cache).toBe('cold');
    expect(b.cache).toBe('cold');
    expect((await readdir(path.join(dir, 'm'))).sort()).toEqual([COMPLETE_MARKER, WEIGHTS_FILE].sort());
  });

  it('loads without a cache and stops when aborted', async () => {
    expect((await loadModel({ model: 'm', cacheDir: null, fullMs: 1, warmRatio: 0 })).cache).toBe('none');
    const abort = new AbortController();
    const pending = loadModel({ model: 'm', cacheDir: dir, fullMs: 10_000, warmRatio: 0, signal: abort.signal });
    abort.abort();
    await expect(pending).rejects.toThrow(/abort/i);
    expect(await isCached(path.join(dir, 'm'))).toBe(false);
  });
});
