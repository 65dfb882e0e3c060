// Unit tests of the Docker runtime's scope: which containers, network and labels belong to one store.

import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dockerScope, networkName } from './docker-runtime.js';

describe('dockerScope', () => {
  it('is one per store: the data directory by its real path, or the Redis URL with its key prefix', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-scope-'));
    try {
      const data = path.join(dir, 'data');
      await mkdir(data);
      const link = path.join(dir, 'link');
      await symlink(data, link);
      // The same directory reached through a symlink is the same store.
      expect(dockerScope(link, null)).toBe(dockerScope(data, null));
      expect(dockerScope(path.join(dir, 'other'), null)).not.toBe(dockerScope(data, null));
      const redis = dockerScope(data, 'redis://127.0.0.1:6379', 'infergate');
      expect(redis).not.toBe(dockerScope(data, null));
      expect(dockerScope('/elsewhere', 'redis://127.0.0.1:6379', 'infergate')).toBe(redis);
      expect(dockerScope(data, 'redis://127.0.0.1:6379', 'team-b')).not.toBe(redis);
      expect(redis).toMatch(/^[0-9a-f]{10}$/);
      expect(networkName(redis)).toBe(`infergate-${redis}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
