// Owns how a deployment's events are kept, as a pure function both stores apply (the Redis
// store's script mirrors it): a new event identical (type, reason, message) to one of the
// last few is folded into it — its count grows, its time moves to now and it becomes the
// newest — else appended; the oldest go beyond the cap.

import type { DeploymentEvent, NewDeploymentEvent } from '../domain/records.js';

/** Events kept per deployment: the newest; older ones are dropped. */
export const EVENTS_PER_DEPLOYMENT = 100;
/**
 * How far back a repeat is folded: far enough for two replicas crashing in turn (their
 * messages differ), near enough that a fold never hides what happened in between for long.
 */
export const EVENT_FOLD_WINDOW = 10;

/** A reason is one CamelCase word, as Kubernetes writes them. */
export const EVENT_REASON = /^[A-Z][A-Za-z0-9]{0,63}$/;

export function sameEvent(a: Pick<DeploymentEvent, 'type' | 'reason' | 'message'>, b: Pick<DeploymentEvent, 'type' | 'reason' | 'message'>): boolean {
  return a.type === b.type && a.reason === b.reason && a.message === b.message;
}

/** `events` (oldest first) with `e` added: folded into a recent identical one, or appended, then capped. */
export function addEvent(events: readonly DeploymentEvent[], e: NewDeploymentEvent, cap = EVENTS_PER_DEPLOYMENT, window = EVENT_FOLD_WINDOW): DeploymentEvent[] {
  const from = Math.max(0, events.length - window);
  for (let i = events.length - 1; i >= from; i--) {
    const earlier = events[i]!;
    if (!sameEvent(earlier, e)) continue;
    const folded: DeploymentEvent = { ...earlier, time: e.time, count: earlier.count + 1 };
    return [...events.slice(0, i), ...events.slice(i + 1), folded];
  }
  const added: DeploymentEvent = { time: e.time, first_time: e.time, type: e.type, reason: e.reason, message: e.message, count: 1 };
  return [...events, added].slice(-cap);
}
