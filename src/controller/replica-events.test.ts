// A replica's events from two successive observations: ready, restarted with how it ended
// (no count or pid in the words, so repeats fold), and its image pull step by step.

import { describe, expect, it } from 'vitest';
import type { ReplicaObservation } from '../runtime/runtime.js';
import { replicaEvents } from './replica-events.js';

const seen = (o: Partial<ReplicaObservation> = {}): ReplicaObservation => ({ phase: 'starting', address: null, metricsTarget: null, pid: null, restarts: 0, detail: null, ...o });
const IMAGE = '127.0.0.1:5000/team/engine:v1';
const pull = (state: 'pulling' | 'pulled' | 'failed', reason: string | null = null) => ({ image: IMAGE, state, reason, permanent: false });

describe('replicaEvents', () => {
  it.each([
    ['nothing new', seen(), seen({ detail: 'loading' }), []],
    ['ready', seen(), seen({ phase: 'ready' }), ['normal ReplicaReady: replica web-r1-1 is ready']],
    ['still ready', seen({ phase: 'ready' }), seen({ phase: 'ready', address: 'x' }), []],
    ['exited with a code', seen(), seen({ restarts: 1, lastExit: { code: 1, signal: null } }), ['warning ReplicaRestarted: replica web-r1-1 exited with code 1; restarting it']],
    ['killed', seen({ phase: 'ready', restarts: 3 }), seen({ restarts: 4, lastExit: { code: null, signal: 'SIGKILL' } }), ['warning ReplicaRestarted: replica web-r1-1 was killed by SIGKILL; restarting it']],
    ['could not start', seen(), seen({ restarts: 1 }), ['warning ReplicaRestarted: replica web-r1-1 could not start; restarting it']],
    ['pulling', seen(), seen({ pull: pull('pulling') }), [`normal ImagePulling: replica web-r1-1 is pulling ${IMAGE}`]],
    ['progress is no news', seen({ pull: pull('pulling') }), seen({ pull: pull('pulling'), detail: `pulling ${IMAGE}: 45%` }), []],
    ['pulled', seen({ pull: pull('pulling') }), seen({ pull: pull('pulled') }), [`normal ImagePulled: replica web-r1-1 pulled ${IMAGE}`]],
    ['pull failed', seen({ pull: pull('pulling') }), seen({ pull: pull('failed', 'tag v1 not found') }), [`warning PullFailed: replica web-r1-1 cannot pull ${IMAGE}: tag v1 not found`]],
  ] as const)('%s', (_name, prev, next, expected) => {
    expect(replicaEvents('web-r1-1', prev, next).map((e) => `${e.type} ${e.reason}: ${e.message}`)).toEqual(expected);
  });

  it('a replica first seen already ready (taken back) is no news', () => {
    expect(replicaEvents('web-r1-1', seen({ phase: 'ready' }), seen({ phase: 'ready' }))).toEqual([]);
  });
});
