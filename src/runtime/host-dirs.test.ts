// Unit tests of reading the mount table: which mount is at a path, whether it is a directory
// bound onto itself (what the service mounts, and finds again after a crash), and the order
// mounts below a directory are unmounted in. And tightenDir on a real temp directory.

import { mkdtemp, rm, stat, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSelfBind, mountsBelow, parseMountInfo, tightenDir, topMountAt } from './host-dirs.js';

// Taken from a real /proc/self/mountinfo: a self-bind of the model cache, a second one stacked
// on it, an operator's disk mounted at the replicas directory, and a path with a space.
const TABLE = parseMountInfo(
  [
    '26 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
    '41 26 254:0 /var/lib/docker /var/lib/docker rw,relatime shared:1 - ext4 /dev/vda rw',
    '42 26 254:0 /srv/ig/data/model-cache /srv/ig/data/model-cache rw,nosuid,nodev,relatime - ext4 /dev/vda rw',
    '43 42 254:0 /srv/ig/data/model-cache /srv/ig/data/model-cache rw,relatime - ext4 /dev/vda rw',
    '44 26 8:17 / /srv/ig/data/replicas rw,nosuid,nodev,noatime - xfs /dev/sdb1 rw',
    '45 26 254:0 /srv/ig/data/other /srv/ig/data/model-cache/3 rw,relatime - ext4 /dev/vda rw',
    '46 26 254:0 /tmp/with\\040space /tmp/with\\040space rw,relatime - ext4 /dev/vda rw',
    '',
  ].join('\n'),
);

describe('the mount table', () => {
  it('reads mount points and options, escapes included', () => {
    expect(TABLE).toHaveLength(7);
    expect(TABLE.find((e) => e.id === 46)?.mountPoint).toBe('/tmp/with space');
    expect(TABLE.find((e) => e.id === 42)?.options).toEqual(['rw', 'nosuid', 'nodev', 'relatime']);
  });

  it('the top mount at a path is the last one stacked there', () => {
    expect(topMountAt(TABLE, '/srv/ig/data/model-cache')?.id).toBe(43);
    expect(topMountAt(TABLE, '/srv/ig/data/replicas')?.id).toBe(44);
    expect(topMountAt(TABLE, '/srv/ig/data')).toBeNull();
  });

  it('tells a directory bound onto itself from a disk or a bind of another directory', () => {
    const byId = (id: number) => TABLE.find((e) => e.id === id)!;
    expect(isSelfBind(TABLE, byId(42))).toBe(true);
    expect(isSelfBind(TABLE, byId(43))).toBe(true);
    expect(isSelfBind(TABLE, byId(41))).toBe(true);
    expect(isSelfBind(TABLE, byId(44))).toBe(false);
    expect(isSelfBind(TABLE, byId(45))).toBe(false);
  });

  it('lists what is mounted at or below a directory, deepest and last mounted first', () => {
    expect(mountsBelow(TABLE, '/srv/ig/data').map((e) => e.id)).toEqual([45, 44, 43, 42]);
    expect(mountsBelow(TABLE, '/srv/ig/dat')).toEqual([]);
  });
});

describe('tightenDir', () => {
  it('makes a looser directory 0700 and says so; a closed one or a missing one is left alone', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-tighten-'));
    try {
      await chmod(dir, 0o755);
      expect(tightenDir(dir, 'data directory')).toBe(`infergate: the data directory ${dir} was mode 0755: made 0700, so no other user of this host can enter it`);
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
      expect(tightenDir(dir, 'data directory')).toBeNull();
      expect(tightenDir(path.join(dir, 'missing'), 'data directory')).toBeNull();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
