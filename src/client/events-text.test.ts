// describe's Events section (kubectl's columns, folded repeats as "(xN over …)", none, a
// server without events) and when `wait` gives up at once: failed, failing, a failed
// rollout — but not a failing status or failed rollout left from before the current revision.

import { describe, expect, it } from 'vitest';
import type { Deployment } from './deployments.js';
import { eventLines, type DeploymentEvent } from './events-text.js';
import { failureOf } from './watch.js';

const NOW = Date.parse('2026-03-01T12:10:00.000Z');

describe('eventLines', () => {
  it('prints TYPE, REASON, AGE and MESSAGE in aligned columns, oldest first, repeats as (xN over …)', () => {
    const events: DeploymentEvent[] = [
      { time: '2026-03-01T12:00:00.000Z', first_time: '2026-03-01T12:00:00.000Z', type: 'normal', reason: 'ReplicaStarted', message: 'started replica web-r1-1 of revision 1', count: 1 },
      { time: '2026-03-01T12:09:50.000Z', first_time: '2026-03-01T12:01:00.000Z', type: 'warning', reason: 'ReplicaRestarted', message: 'replica web-r1-1 exited with code 1; restarting it', count: 7 },
    ];
    expect(eventLines(events, NOW)).toEqual([
      'Events:',
      `  TYPE     REASON            AGE${' '.repeat(15)}MESSAGE`,
      `  Normal   ReplicaStarted    10m${' '.repeat(15)}started replica web-r1-1 of revision 1`,
      '  Warning  ReplicaRestarted  10s (x7 over 9m)  replica web-r1-1 exited with code 1; restarting it',
    ]);
  });

  it('says when there are none, and when the server keeps none', () => {
    expect(eventLines([], NOW)).toEqual(['Events:      <none>']);
    expect(eventLines(null, NOW)).toEqual(['Events:      not kept by this server']);
  });
});

describe('failureOf (wait gives up at once)', () => {
  const d = (over: Partial<Deployment>): Deployment => ({
    id: 1,
    family: 'general',
    name: 'web',
    status: 'pending',
    status_reason: null,
    paused: false,
    endpoint_url: 'web.endpoints.localhost',
    revision: 1,
    serving_revision: null,
    rollout: { state: 'in_progress', revision: 1 },
    components: { Replica: { ready: 0, desired: 1 } },
    revisions: [{ revision: 1, status: 'pending', reason: 'create', created_at: '2026-03-01T12:00:00.000Z', failure_reason: null }],
    ...over,
  });
  const CRASH = 'replica web-r1-3 keeps crashing: restarted 2 times without becoming ready, last exited with code 1';

  it.each([
    ['pending: wait on', d({}), null],
    ['failing: the reason, and where to read more', d({ status: 'failing', status_reason: CRASH }), `web is failing: ${CRASH} (infergate logs web)`],
    ['failing of the revision before an edit the controller has not seen yet: wait on', d({ status: 'failing', status_reason: CRASH, revision: 2 }), null],
    ['a failed rollout of the current revision', d({ revision: 2, rollout: { state: 'failed', revision: 2, reason: 'revision 2 did not get 1 ready replica' } }), 'revision 2 of web failed: revision 2 did not get 1 ready replica'],
    ['a failed rollout of an earlier revision: wait on', d({ revision: 3, rollout: { state: 'failed', revision: 2, reason: 'x' } }), null],
  ] as const)('%s', (_name, deployment, expected) => {
    expect(failureOf(deployment)).toBe(expected);
  });
});
