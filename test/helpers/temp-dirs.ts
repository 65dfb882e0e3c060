// Test helper: removes a test's temp directory even when an `infergate serve` inside it was
// killed with SIGKILL (or failed to stop) and left its replica directories mounted nosuid,nodev
// onto themselves (src/runtime/host-dirs.ts): every mount at or below the directory is
// unmounted first (lazily: nothing of the test uses them any more), deepest first, then the tree
// goes. A plain rm would stop at the first mount point with EBUSY and leave the mount behind.

import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { mountsBelow, readMountTable } from '../../src/runtime/host-dirs.js';

/** Unmounts what is mounted at or below `dir`; returns how many mounts it took down. */
export function unmountBelow(dir: string): number {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return 0;
  }
  let count = 0;
  // Stacked mounts show one layer at a time: read again until nothing is left.
  for (let round = 0, found = mountsBelow(readMountTable(), real); found.length > 0; round++, found = mountsBelow(readMountTable(), real)) {
    if (round === 20) throw new Error(`still mounted below ${real} after 20 rounds of umount: ${found.map((m) => m.mountPoint).join(', ')}`);
    for (const m of found) {
      execFileSync('umount', ['--lazy', m.mountPoint], { stdio: 'ignore' });
      count++;
    }
  }
  return count;
}

/** rm -rf for a test's temp directory, with whatever a killed service left mounted in it taken down first. */
export async function removeTempDir(dir: string): Promise<void> {
  unmountBelow(dir);
  await rm(dir, { recursive: true, force: true });
}
