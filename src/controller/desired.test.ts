import { describe, expect, it } from 'vitest';
import type { DeploymentRecord } from '../domain/records.js';
import { deploymentRecord } from '../store/store.contract.js';
import { CRASH_LOOP_RESTARTS, crashLooping, deploymentStatus, desiredReplicas, failingReason, splitFigure, splitReplicas, type ReplicaHealth } from './desired.js';
import { orchestratedDesired, orchestratedStatus } from './orchestrated.js';
import { orchestratedSpec } from '../../test/helpers/spec-fixtures.js';

const general = (scaling: Partial<DeploymentRecord['scaling']>, over: Partial<DeploymentRecord> = {}): DeploymentRecord => {
  const d = deploymentRecord(1, 'web');
  return { ...d, scaling: { ...d.scaling, ...scaling }, ...over };
};

describe('desiredReplicas', () => {
  it.each([
    ['min when nothing autoscales', { min_replicas: 2, max_replicas: 4 }, undefined, 2],
    ['the autoscaler within [min, max]', { min_replicas: 1, max_replicas: 4 }, 3, 3],
    ['clamped to max', { min_replicas: 1, max_replicas: 4 }, 9, 4],
    ['clamped to min', { min_replicas: 2, max_replicas: 4 }, 0, 2],
    ['min 0 keeps one replica until the activator exists', { min_replicas: 0, max_replicas: 3 }, undefined, 1],
  ])('%s', (_name, scaling, autoscaled, expected) => {
    expect(desiredReplicas(general(scaling), autoscaled)).toEqual({ Replica: expected });
  });

  it('min 0 may reach zero once an activator brings it back', () => {
    expect(desiredReplicas(general({ min_replicas: 0, max_replicas: 3 }), 0, true)).toEqual({ Replica: 0 });
    expect(desiredReplicas(general({ min_replicas: 0, max_replicas: 3 }), 2, true)).toEqual({ Replica: 2 });
  });

  it('paused: none', () => {
    expect(desiredReplicas(general({ min_replicas: 2, max_replicas: 2 }, { paused: true }))).toEqual({ Replica: 0 });
  });

  it('only signals that see demand at zero let a deployment go there', () => {
    for (const metric of ['concurrency', 'queue_depth'] as const) expect(desiredReplicas(general({ min_replicas: 0, max_replicas: 3, autoscaling_metric: metric }), 0, true)).toEqual({ Replica: 0 });
    for (const metric of ['kv_cache', 'ttft'] as const) expect(desiredReplicas(general({ min_replicas: 0, max_replicas: 3, autoscaling_metric: metric }), 0, true)).toEqual({ Replica: 1 });
  });
});

describe('a revision of a traffic split', () => {
  it.each([
    ["the autoscaler's figure for the revision first", { 3: { Replica: 2 } }, 3, 5, 5],
    ['else the count last written for it', { 3: { Replica: 2 } }, 3, undefined, 2],
    ['else, entering a split, the deployment count of the revision that served alone', null, 3, undefined, 4],
    ['else nothing (the floor)', null, 4, undefined, undefined],
    ['nor the deployment count once a split runs', { 3: { Replica: 2 } }, 4, undefined, undefined],
  ] as const)('figure: %s', (_name, written, revision, autoscaled, expected) => {
    const d = general({}, { revision_desired: written, desired_replicas: { Replica: 4 }, serving_revision: 3 });
    expect(splitFigure(d, revision, 'Replica', autoscaled)).toBe(expected);
  });

  it.each([
    ['its figure within [min, max]', { min_replicas: 1, max_replicas: 4 }, 3, 3],
    ['never zero, even at min 0', { min_replicas: 0, max_replicas: 4 }, 0, 1],
    ['one without a figure at min 0', { min_replicas: 0, max_replicas: 4 }, undefined, 1],
    ['min without a figure', { min_replicas: 2, max_replicas: 4 }, undefined, 2],
    ['clamped to max', { min_replicas: 1, max_replicas: 4 }, 9, 4],
  ] as const)('replicas: %s', (_name, scaling, figure, expected) => {
    expect(splitReplicas(general(scaling), figure)).toBe(expected);
  });

  it('paused: none', () => {
    expect(splitReplicas(general({ min_replicas: 2, max_replicas: 4 }, { paused: true }), 3)).toBe(0);
  });

  it('orchestrated: one Frontend and the Workers of its figure, at least one', () => {
    const d = { ...general({ min_replicas: 0, max_replicas: 4 }), family: 'orchestrated' as const, spec: orchestratedSpec() };
    expect(orchestratedDesired(d, 3, true)).toEqual({ Frontend: 1, Worker: 3 });
    expect(orchestratedDesired(d, undefined, true)).toEqual({ Frontend: 1, Worker: 1 });
    expect(orchestratedDesired(d, 0)).toEqual({ Frontend: 1, Worker: 0 });
  });
});

describe('deploymentStatus', () => {
  it.each([
    ['pending until a replica is ready', 'pending', false, 0, 'pending'],
    ['ready with one ready replica', 'pending', false, 1, 'ready'],
    ['not_ready after losing every ready replica', 'ready', false, 0, 'not_ready'],
    ['paused wins', 'ready', true, 2, 'paused'],
  ] as const)('%s', (_name, status, paused, ready, expected) => {
    expect(deploymentStatus(general({}, { status, paused }), ready)).toBe(expected);
  });

  it('scaled to zero on purpose stays ready', () => {
    expect(deploymentStatus(general({}, { status: 'ready' }), 0, 0)).toBe('ready');
    expect(deploymentStatus(general({}, { status: 'pending' }), 0, 0)).toBe('pending');
  });
});

describe('failing', () => {
  const replica = (over: Partial<ReplicaHealth> = {}): ReplicaHealth => ({ name: 'web-r1-3', ready: false, restartsSinceReady: 0, lastExit: null, pull: null, detail: null, ...over });
  const pull = (state: 'pulling' | 'pulled' | 'failed', permanent = false) => ({ image: '127.0.0.1:5000/team/engine:v9', state, reason: state === 'failed' ? 'tag v9 of 127.0.0.1:5000/team/engine not found' : null, permanent });

  it.each([
    ['a replica still loading', replica(), false],
    ['restarted once', replica({ restartsSinceReady: 1 }), false],
    [`restarted ${CRASH_LOOP_RESTARTS} times without becoming ready`, replica({ restartsSinceReady: CRASH_LOOP_RESTARTS }), true],
    ['ready again, whatever it went through', replica({ ready: true, restartsSinceReady: 5 }), false],
    ['pulling its image', replica({ pull: pull('pulling') }), false],
    ['a pull that failed and may work next time (registry unreachable)', replica({ pull: pull('failed', false) }), false],
    ['a pull that failed for good (no such tag)', replica({ pull: pull('failed', true) }), true],
  ] as const)('crash-looping: %s → %s', (_name, r, expected) => {
    expect(crashLooping(r)).toBe(expected);
  });

  it.each([
    ['no replica ready and one crash-looping', 'pending', false, 0, 1, true, 'failing'],
    ['a ready replica wins over a crash-looping one', 'failing', false, 1, 1, true, 'ready'],
    ['failing after having served: still failing', 'ready', false, 0, 1, true, 'failing'],
    ['paused wins', 'failing', true, 0, 1, true, 'paused'],
    ['scaled to zero on purpose is not failing', 'ready', false, 0, 0, true, 'ready'],
    ['no longer crash-looping, never served: pending again', 'failing', false, 0, 1, false, 'pending'],
  ] as const)('status: %s', (_name, status, paused, ready, desired, failing, expected) => {
    expect(deploymentStatus(general({}, { status, paused }), ready, desired, failing)).toBe(expected);
  });

  it('no longer crash-looping after a revision served: not ready', () => {
    expect(deploymentStatus(general({}, { status: 'failing', serving_revision: 1 }), 0, 1, false)).toBe('not_ready');
  });

  it('orchestrated: failing while a component crash-loops and the deployment does not serve', () => {
    const d = { ...general({}, { status: 'pending' }), family: 'orchestrated' as const, spec: orchestratedSpec({ hardware_instance_id: 1 }) };
    const desired = { Frontend: 1, Worker: 1 };
    expect(orchestratedStatus(d, { Frontend: 1 }, desired, true)).toBe('failing');
    expect(orchestratedStatus(d, { Frontend: 1, Worker: 1 }, desired, true)).toBe('ready');
    expect(orchestratedStatus(d, { Frontend: 1 }, desired, false)).toBe('pending');
  });

  it.each([
    [
      'a crash with its exit code and last log line',
      replica({ restartsSinceReady: 3, lastExit: { code: 1, signal: null } }),
      'Error: unknown flag --bogus',
      'replica web-r1-3 keeps crashing: restarted 3 times without becoming ready, last exited with code 1; last log line: "Error: unknown flag --bogus"',
    ],
    ['killed by a signal, logs off', replica({ restartsSinceReady: 2, lastExit: { code: null, signal: 'SIGKILL' } }), null, 'replica web-r1-3 keeps crashing: restarted 2 times without becoming ready, last was killed by SIGKILL'],
    ['could not start at all', replica({ restartsSinceReady: 2 }), null, 'replica web-r1-3 keeps crashing: restarted 2 times without becoming ready, last could not start'],
    ['a pull that failed for good', replica({ pull: pull('failed', true) }), null, 'replica web-r1-3 cannot pull its image: tag v9 of 127.0.0.1:5000/team/engine not found'],
    [
      'a pull that failed for good, with its retry',
      replica({ pull: pull('failed', true), detail: 'tag v9 of 127.0.0.1:5000/team/engine not found; retrying in 10 s' }),
      null,
      'replica web-r1-3 cannot pull its image: tag v9 of 127.0.0.1:5000/team/engine not found; retrying in 10 s',
    ],
    [
      'a pull that failed for good, retried now',
      replica({ pull: pull('failed', true), detail: 'pulling 127.0.0.1:5000/team/engine:v9: 0%' }),
      null,
      'replica web-r1-3 cannot pull its image: tag v9 of 127.0.0.1:5000/team/engine not found',
    ],
  ] as const)('reason: %s', (_name, r, line, expected) => {
    expect(failingReason(r, line)).toBe(expected);
  });
});
