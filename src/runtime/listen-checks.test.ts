// The listen checks of replicas on the host's network share their reads: replicas asking in the
// same turn are checked with one read of the process table, and each round of the periodic
// check reads it once for all of them, however many there are; each hears what its own
// processes listen on (here: this test process, listening on loopback and on every address).

import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListenChecks, type ListenTarget } from './listen-checks.js';
import type { ListeningAddress } from './listening-sockets.js';
import { ProcessTable } from './process-tree.js';

const servers: net.Server[] = [];
let wide = 0;
beforeAll(async () => {
  wide = await new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '0.0.0.0', () => resolve((server.address() as net.AddressInfo).port));
    servers.push(server);
  });
});
afterAll(() => {
  for (const s of servers) s.close();
});

/** A replica whose processes are this one; it keeps what each check found. */
function target(): ListenTarget & { heard: ListeningAddress[][] } {
  const heard: ListeningAddress[][] = [];
  return { heard, pids: () => [process.pid], found: (addresses) => heard.push(addresses) };
}

describe('ListenChecks', () => {
  it('checks replicas asking in the same turn with one read of the process table, then every round with one for all', async () => {
    const checks = new ListenChecks(100);
    const targets = Array.from({ length: 20 }, target);
    const before = ProcessTable.reads;
    for (const t of targets) checks.add(t);
    try {
      await expect.poll(() => targets.every((t) => t.heard.length >= 1)).toBe(true);
      expect(ProcessTable.reads - before).toBe(1);
      expect(targets[0]!.heard[0]).toContainEqual({ address: '0.0.0.0', port: wide });

      const atRound = ProcessTable.reads;
      const heard = targets[0]!.heard.length;
      await expect.poll(() => targets.every((t) => t.heard.length >= heard + 2), { timeout: 5000 }).toBe(true);
      const rounds = targets[0]!.heard.length - heard;
      // One read per round whatever the number of replicas (a round may have begun as we looked).
      expect(ProcessTable.reads - atRound).toBeLessThanOrEqual(rounds + 1);
    } finally {
      for (const t of targets) checks.remove(t);
    }
  });

  it('stops checking a replica once removed, and runs no round without one', async () => {
    const checks = new ListenChecks(20);
    const t = target();
    checks.add(t);
    await expect.poll(() => t.heard.length).toBeGreaterThanOrEqual(2);
    checks.remove(t);
    const heard = t.heard.length;
    const other = target();
    checks.add(other); // a round after the removal: `t` is not in it
    await expect.poll(() => other.heard.length).toBeGreaterThanOrEqual(3);
    expect(t.heard.length).toBe(heard);
    checks.remove(other);
  });
});
