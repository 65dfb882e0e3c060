// Owns the lines `infergate describe` prints about traffic and autoscaling: the split (or that
// every request goes to the newest revision), the rollout mode, the signal the autoscaler
// scales on with its target, the last scaling decision from the events (whose message says
// which signal drove it), and a revision's share in the Revisions list. Each is null from a
// server that does not say (before traffic management), so the line is left out.

import { age } from './age.js';
import { describeTarget } from '../domain/autoscaling-signal.js';
import type { Deployment } from './deployments.js';
import type { DeploymentEvent } from './events-text.js';

/** `revision 3 90 %, revision 4 (latest) 10 % tag canary at https://canary-chat.endpoints.localhost`. */
export function trafficLine(d: Pick<Deployment, 'traffic' | 'traffic_is_default' | 'revision'>): string | null {
  if (!d.traffic) return null;
  if (d.traffic_is_default) return `every request to the newest revision (${d.revision}); no split`;
  return d.traffic
    .map((t) => `revision ${t.revision}${t.latest ? ' (latest)' : ''} ${t.percent} %${t.tag !== null ? ` tag ${t.tag}${t.url !== null ? ` at ${t.url}` : ''}` : ''}`)
    .join(', ');
}

export function rolloutLine(d: Pick<Deployment, 'rollout_mode'>): string | null {
  if (d.rollout_mode === undefined) return null;
  return d.rollout_mode === 'manual'
    ? 'manual: a spec change (or a rollback) makes a revision at 0 % until traffic gives it a share'
    : 'automatic: a spec change rolls out to its new revision';
}

/** The signal and its target, e.g. `queue_depth 5 waiting requests per replica, 1 to 4 replicas`. */
export function autoscalingLine(d: Deployment): string | null {
  const metric = d.autoscaling_metric;
  if (metric === undefined) return null;
  // A disaggregated deployment shows its pools (worker_pools) instead of replica bounds.
  if (typeof d.min_replicas !== 'number' || typeof d.max_replicas !== 'number') return 'none: the pools have fixed sizes';
  const concurrencyTarget = d.family === 'general' ? d.max_concurrency : d.concurrency;
  const target = metric === 'concurrency' ? (typeof concurrencyTarget === 'number' ? concurrencyTarget : null) : (d.autoscaling_target ?? null);
  const bounds = d.min_replicas === d.max_replicas ? `fixed at ${d.max_replicas} replicas` : `${d.min_replicas} to ${d.max_replicas} replicas`;
  return `${describeTarget(metric, target)}, ${bounds}`;
}

/** The newest scaling decision among the events, with how long ago it was; null when there is none. */
export function lastScaleLine(events: readonly DeploymentEvent[] | null, now: number = Date.now()): string | null {
  const last = [...(events ?? [])].reverse().find((e) => e.reason.startsWith('Scaled'));
  if (!last) return null;
  return `${last.reason} ${age(last.time, now)} ago: ${last.message}`;
}

/** `  90 % canary` after a revision in describe's list; empty for a revision without a share or tag. */
export function revisionShareText(r: { percent?: number; tags?: string[] }): string {
  const tags = r.tags ?? [];
  if ((r.percent ?? 0) === 0 && tags.length === 0) return '';
  return `  ${r.percent ?? 0} %${tags.length > 0 ? ` (tag ${tags.join(', ')})` : ''}`;
}
