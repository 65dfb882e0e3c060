// Owns the events of one replica as a pure function of two successive observations of it:
// ready, restarted (how it ended), and its image pull — pulling, pulled, failed. Messages
// name the replica but no count or pid, so a repeat folds into the earlier event (its count
// grows) rather than filling the deployment's events.

import type { EventNote } from '../store/event-writer.js';
import type { ReplicaObservation } from '../runtime/runtime.js';
import { exitText } from './desired.js';

export function replicaEvents(name: string, prev: ReplicaObservation | null, next: ReplicaObservation): EventNote[] {
  const out: EventNote[] = [];
  const before = prev ?? { phase: 'starting', restarts: next.restarts, pull: null };
  const pullBefore = before.pull ?? null;
  const pull = next.pull ?? null;
  if (pull !== null && (pullBefore?.state !== pull.state || pullBefore.image !== pull.image)) {
    if (pull.state === 'pulling') out.push({ type: 'normal', reason: 'ImagePulling', message: `replica ${name} is pulling ${pull.image}` });
    else if (pull.state === 'pulled') out.push({ type: 'normal', reason: 'ImagePulled', message: `replica ${name} pulled ${pull.image}` });
    else out.push({ type: 'warning', reason: 'PullFailed', message: `replica ${name} cannot pull ${pull.image}: ${pull.reason ?? 'the pull failed'}` });
  }
  if (next.restarts > before.restarts) {
    out.push({ type: 'warning', reason: 'ReplicaRestarted', message: `replica ${name} ${exitText(next.lastExit ?? null)}; restarting it` });
  }
  if (next.phase === 'ready' && before.phase !== 'ready') out.push({ type: 'normal', reason: 'ReplicaReady', message: `replica ${name} is ready` });
  return out;
}
