// Test helper: a compiled dist/ that matches src/. Every process a test starts runs
// dist/cli/main.js, as an installed `infergate` does: plain Node starts in half the CPU of
// tsx's loader and esbuild service, which on a 2-core machine is the difference between a
// suite that fits its time and one whose rollouts miss their deadlines. The global setup
// builds it before any file runs (and again before a watch-mode rerun) with the service build
// (scripts/build-service.mjs), only when a source file is newer than dist/cli/main.js, under a
// lock file, so concurrent runs compile once.

import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { readFile, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { waitFor } from './wait.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DIST_MAIN = path.join(ROOT, 'dist/cli/main.js');

const execFileAsync = promisify(execFile);
const LOCK = path.join(os.tmpdir(), 'infergate-dist-build.lock');

function newestSource(dir: string): number {
  let t = 0;
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const s = statSync(p);
    if (s.isDirectory()) t = Math.max(t, newestSource(p));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) t = Math.max(t, s.mtimeMs);
  }
  return t;
}

const fresh = () => existsSync(DIST_MAIN) && statSync(DIST_MAIN).mtimeMs >= newestSource(path.join(ROOT, 'src'));

/** Builds src/ into dist/ (the service build, as `prepare` does before Vite) when dist/ is missing or older. */
export async function ensureDistBuilt(): Promise<void> {
  if (fresh()) return;
  await waitFor(
    async () => {
      try {
        await writeFile(LOCK, String(process.pid), { flag: 'wx' });
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        await breakStaleLock();
        return false;
      }
    },
    5 * 60_000,
    `${LOCK}, held by another build`,
    200,
  );
  try {
    if (fresh()) return;
    // The build `npm run build` runs before Vite: tsc, then typebox bundled into one file.
    await execFileAsync(process.execPath, [path.join(ROOT, 'scripts/build-service.mjs')], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }).catch((err: { stdout?: string; stderr?: string }) => {
      // tsc writes its output on type errors too; those are the typecheck's to report. No output is a failure.
      if (!existsSync(DIST_MAIN)) throw new Error(`the service build produced no dist/cli/main.js:\n${err.stderr ?? ''}${err.stdout ?? String(err)}`);
    });
  } finally {
    await unlink(LOCK).catch(() => undefined);
  }
}

/** Removes a lock whose holder is gone (its pid no longer runs, or it never wrote one a while ago). */
async function breakStaleLock(): Promise<void> {
  const holder = await readFile(LOCK, 'utf8').catch(() => undefined);
  if (holder === undefined) return;
  const pid = Number(holder);
  const stale = holder === '' ? Date.now() - (await stat(LOCK).then((s) => s.mtimeMs, () => Date.now())) > 10_000 : !Number.isInteger(pid) || !running(pid);
  if (stale && (await readFile(LOCK, 'utf8').catch(() => undefined)) === holder) await unlink(LOCK).catch(() => undefined);
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
