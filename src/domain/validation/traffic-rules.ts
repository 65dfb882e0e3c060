// Owns the request rules of traffic management: `traffic` (the shape through
// domain/traffic.ts parseTraffic; the revisions it names and its tag hosts against the
// deployment it will apply to) and `rollout_mode`, and what a spec change does to the list in
// manual mode (every `latest` entry pinned to the revision serving before it, so the new one
// starts at 0 %). Neither field is part of a revision: both apply at once.

import type { FieldProblem } from '../../core/errors.js';
import type { DeploymentRecord, RevisionRecord } from '../records.js';
import {
  checkTrafficRevisions,
  parseTraffic,
  pinLatest,
  ROLLOUT_MODES,
  tagLabel,
  tagLabelsOf,
  type RolloutMode,
  type TrafficTarget,
} from '../traffic.js';
import type { Req } from './shape.js';
import type { ValidationContext } from './types.js';

/** The list a request gives: null (clear, or not given), or undefined after a problem. */
export function checkTraffic(req: Req): TrafficTarget[] | null | undefined {
  if (req.isBad('traffic')) return undefined;
  if (!req.given('traffic')) return null;
  const { value, problems } = parseTraffic(req.any('traffic'));
  for (const p of problems) req.add(p.field, p.message);
  return problems.length > 0 ? undefined : value;
}

export function checkRolloutMode(req: Req): RolloutMode | undefined {
  if (req.isBad('rollout_mode')) return undefined;
  const mode = req.str('rollout_mode') ?? 'automatic';
  if ((ROLLOUT_MODES as readonly string[]).includes(mode)) return mode as RolloutMode;
  req.add(
    'rollout_mode',
    `rollout_mode must be "automatic" (a spec change rolls out to the new revision) or "manual" (the new revision starts at 0 % until traffic gives it a share), not "${mode}"`,
  );
  return undefined;
}

/** The revisions a deployment has once the request is applied: a spec change adds revision N+1, pending. */
export type RevisionsAfter = Pick<DeploymentRecord, 'name' | 'revision'> & {
  revisions: readonly Pick<RevisionRecord, 'revision' | 'status' | 'failure_reason'>[];
};

/** A new deployment (create, clone): revision 1 only. */
export function firstRevision(name: string): RevisionsAfter {
  return { name, revision: 1, revisions: [{ revision: 1, status: 'pending', failure_reason: null }] };
}

/** The deployment as a spec change leaves it: revision N+1, pending, is the newest. */
export function withNextRevision(d: Pick<DeploymentRecord, 'name' | 'revisions'>): RevisionsAfter {
  const next = Math.max(0, ...d.revisions.map((r) => r.revision)) + 1;
  return { name: d.name, revision: next, revisions: [...d.revisions, { revision: next, status: 'pending', failure_reason: null }] };
}

/**
 * The rules of a list against the deployment it applies to: every revision it names exists
 * and has not failed; no tag host `<tag>-<name>` is another deployment's name or another
 * deployment's tag host.
 */
export function trafficProblems(list: readonly TrafficTarget[] | null, d: RevisionsAfter, ctx: ValidationContext): FieldProblem[] {
  if (list === null) return [];
  const problems = checkTrafficRevisions(list, d, ctx.takenNames).map((p) => ({ ...p, code: 'invalid_field' as const }));
  const others = ctx.otherDeployments ?? [];
  list.forEach((t, i) => {
    if (t.tag === null) return;
    const label = tagLabel(t.tag, d.name);
    if (ctx.takenNames.has(label)) return; // checkTrafficRevisions said so
    const owner = others.find((o) => tagLabelsOf(o).includes(label));
    if (owner) {
      problems.push({
        field: `traffic[${i}].tag`,
        code: 'invalid_field',
        message: `tag "${t.tag}" would give ${d.name} the host ${label}.<domain>, which a tag of deployment ${owner.name} already uses; choose another tag`,
      });
    }
  });
  return problems;
}

/**
 * The revision a manual rollout keeps serving: the newest before the change, unless it failed
 * and an older one serves in its place (its `latest` share went there already).
 */
function previousRevision(d: Pick<DeploymentRecord, 'revision' | 'revisions' | 'serving_revision'>): number {
  const newest = d.revisions.find((r) => r.revision === d.revision);
  if (newest?.status === 'failed' && d.serving_revision !== undefined && d.serving_revision !== null) return d.serving_revision;
  return d.revision;
}

/**
 * The list after a spec change (or a rollback) in manual mode: every `latest` entry pinned to
 * the previous revision, so the new revision starts at 0 %; a deployment without a list gets
 * everything on the previous revision.
 */
export function pinnedForManualRollout(d: Pick<DeploymentRecord, 'traffic' | 'revision' | 'revisions' | 'serving_revision'>): TrafficTarget[] {
  const previous = previousRevision(d);
  if (d.traffic === undefined || d.traffic === null) return [{ revision: previous, latest: false, percent: 100, tag: null }];
  return pinLatest(d.traffic, previous);
}
