// Owns the events of traffic between revisions as pure functions: a change of the split
// (`TrafficShifted`: which revision now takes what share, the others' shares, the revisions
// that left and drain, the tags that reach one revision), told once per change, and a
// revision that left the split having stopped its last replica (`RevisionDrained`).

import type { RevisionShare } from '../domain/traffic.js';
import type { EventNote } from '../store/event-writer.js';

const same = (a: RevisionShare, b: RevisionShare | undefined): boolean => b !== undefined && a.percent === b.percent && a.tags.join() === b.tags.join();

/**
 * The event of a change from `before` (the shares the controller last ran) to `after` (this
 * pass's; one entry when traffic names one revision). A change between two single revisions
 * is a rolling update, told by its own events; so is no change at all: none then.
 */
export function trafficEvents(before: readonly RevisionShare[], after: readonly RevisionShare[]): EventNote[] {
  if (before.length <= 1 && after.length <= 1) return [];
  const previous = new Map(before.map((s) => [s.revision, s]));
  const changed = after.filter((s) => !same(s, previous.get(s.revision)));
  const left = before.filter((s) => !after.some((a) => a.revision === s.revision));
  if (changed.length === 0 && left.length === 0) return [];
  // The subject: a revision whose share moved (the newest), else one whose tags did.
  const moved = changed.filter((s) => s.percent !== previous.get(s.revision)?.percent);
  const pool = moved.length > 0 ? moved : changed.length > 0 ? changed : after;
  const subject = pool.reduce((a, b) => (b.revision > a.revision ? b : a));
  const others = [
    ...after.filter((s) => s.revision !== subject.revision).map((s) => `revision ${s.revision}: ${s.percent} %`),
    ...left.map((s) => `revision ${s.revision}: 0 %, its replicas drain`),
  ];
  const tags = after
    .flatMap((s) => s.tags.filter((t) => !(previous.get(s.revision)?.tags ?? []).includes(t)).map((t) => `tag ${t} reaches revision ${s.revision}`))
    .join('; ');
  const message = `revision ${subject.revision} now takes ${subject.percent} % of requests${others.length > 0 ? ` (${others.join('; ')})` : ''}${tags !== '' ? `; ${tags}` : ''}`;
  return [{ type: 'normal', reason: 'TrafficShifted', message }];
}

/** A revision that left the split has stopped its last replica. */
export function drainedEvent(revision: number): EventNote {
  return { type: 'normal', reason: 'RevisionDrained', message: `revision ${revision} takes no traffic and its last replica stopped` };
}
