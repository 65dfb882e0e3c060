import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { dockerClient } from './client.js';
import { DockerPods } from './docker-pod.js';

// Seats are taken and given up without the daemon: only join() and leave() talk to it
// (test/docker-orchestrated.test.ts runs them against a real dockerd).
const pods = () =>
  new DockerPods({
    docker: dockerClient(),
    scope: 'abc123',
    network: 'infergate-abc123',
    engineImage: 'infergate/engine:0.1.0',
    prepareEngineImage: () => Promise.resolve(),
    logger: pino({ level: 'silent' }),
  });

describe('ports in a pod', () => {
  it('gives each member of a deployment the lowest free port from 8000, two revisions side by side included', () => {
    const p = pods();
    expect(p.seat(3, 'orch-r1-frontend-1')?.port).toBe(8000);
    expect(p.seat(3, 'orch-r1-worker-2')?.port).toBe(8001);
    expect(p.seat(3, 'orch-r2-frontend-3')?.port).toBe(8002);
    // Another deployment is another pod: its ports start over.
    expect(p.seat(4, 'other-r1-frontend-4')?.port).toBe(8000);
  });

  it('a port given up is given again; a member taken back keeps its own, and a port held by another is refused', () => {
    const p = pods();
    const first = p.seat(3, 'orch-r1-frontend-1')!;
    p.seat(3, 'orch-r1-worker-2');
    first.forget();
    expect(p.seat(3, 'orch-r2-frontend-3')?.port).toBe(8000);
    expect(p.seat(3, 'orch-r1-decode-4', 8007)?.port).toBe(8007);
    expect(p.seat(3, 'orch-r1-prefill-5', 8001)).toBeNull();
    expect(p.seat(3, 'orch-r1-prefill-6')?.port).toBe(8002);
  });

  it('a seat given up cannot make a holder any more', async () => {
    const seat = pods().seat(3, 'orch-r1-frontend-1')!;
    seat.forget();
    await expect(seat.join()).rejects.toThrow(/left its pod/);
    expect(seat.current()).toBeNull();
  });
});
