// Unit tests of the Docker runtime's scope (which containers, network and labels belong to one
// store) and of the start-up errors for a network the daemon will not make.

import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dockerScope, networkName, networkRefusal } from './docker-runtime.js';

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

describe('networkRefusal', () => {
  const SOCKET = 'unix:///var/run/docker.sock';
  it("names the cause and the fixes when the daemon's pools are used up", () => {
    const said = networkRefusal('could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network', 'infergate-abc', null, SOCKET);
    expect(said).toMatch(/^the Docker daemon at unix:\/\/\/var\/run\/docker.sock has no address pool left for this service's network infergate-abc \(could not find/);
    for (const fix of ['docker network prune', '--docker-subnet', 'default-address-pools']) expect(said).toContain(fix);
  });

  it('names the subnet when it overlaps, and leaves other refusals as they came', () => {
    expect(networkRefusal('Pool overlaps with other one on this address space', 'infergate-abc', '10.1.0.0/24', SOCKET)).toMatch(/^--docker-subnet 10\.1\.0\.0\/24 overlaps a network the Docker daemon at unix:\/\/\/var\/run\/docker.sock already has/);
    expect(networkRefusal('Pool overlaps with other one on this address space', 'infergate-abc', null, SOCKET)).toBeNull();
    expect(networkRefusal('network with name infergate-abc already exists', 'infergate-abc', null, SOCKET)).toBeNull();
  });
});
