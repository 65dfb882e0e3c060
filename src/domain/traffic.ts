// Owns traffic management between a deployment's revisions as pure rules: the stored list
// (`traffic`: revision or latest, percent, tag), its validation, and what it resolves to —
// which revisions run replicas and with what share, and the host of each tag. The control API
// validates with it, the controller runs what it resolves to, the gateway splits by it, and
// the autoscaler scales each revision that takes traffic on its own (docs/traffic.md).
//
// A deployment without a list (absent or null) sends everything to its newest revision: the
// rolling update of earlier milestones, unchanged. Resolution merges entries naming the same
// revision; `latest` names the newest revision (`revision` of the record).

import type { FieldProblem } from '../core/errors.js';
import type { DeploymentRecord, RevisionRecord, RolloutMode, TrafficTarget } from './records.js';
import { DEFAULT_PROJECT } from './access.js';
import { endpointHost } from './endpoint-address.js';

export type { RolloutMode, TrafficTarget };

export const ROLLOUT_MODES: readonly RolloutMode[] = ['automatic', 'manual'];

/** The list of a deployment that has none: everything to the newest revision. */
export const ALL_TO_LATEST: readonly TrafficTarget[] = Object.freeze([Object.freeze({ revision: null, latest: true, percent: 100, tag: null })]);

/** Longest tag: `<tag>-<name>` stays well within a DNS label (63) with names of up to 20. */
export const TAG_MAX = 20;
const TAG_PATTERN = /^[a-z]([a-z0-9-]*[a-z0-9])?$/;
/** Entries at most: a split between more revisions than this is a mistake, not a canary. */
export const TRAFFIC_MAX_ENTRIES = 10;

/** One revision as traffic resolves: its share (0 when it runs for its tags only) and its tags. */
export interface RevisionShare {
  revision: number;
  percent: number;
  tags: string[];
}

/** The stored list, or the default one. */
export function trafficOf(d: Pick<DeploymentRecord, 'traffic'>): readonly TrafficTarget[] {
  return d.traffic ?? ALL_TO_LATEST;
}

export function rolloutModeOf(d: Pick<DeploymentRecord, 'rollout_mode'>): RolloutMode {
  return d.rollout_mode ?? 'automatic';
}

/**
 * The revisions traffic names, merged by number, in list order of first mention: those with a
 * share, and those at 0 % that carry a tag (they run, reached by their tag host only).
 * Revisions at 0 % without a tag are left out: they run nothing.
 */
export function resolveTraffic(d: Pick<DeploymentRecord, 'traffic' | 'revision'>): RevisionShare[] {
  const out: RevisionShare[] = [];
  for (const t of trafficOf(d)) {
    const revision = t.latest ? d.revision : t.revision;
    if (revision === null) continue;
    let entry = out.find((e) => e.revision === revision);
    if (!entry) {
      entry = { revision, percent: 0, tags: [] };
      out.push(entry);
    }
    entry.percent += t.percent;
    if (t.tag !== null) entry.tags.push(t.tag);
  }
  return out.filter((e) => e.percent > 0 || e.tags.length > 0);
}

/**
 * The revisions that run side by side, each autoscaled on its own, when traffic names more
 * than one; null when it names one (or none): that revision runs alone and a change of it is a
 * rolling update, as without a list.
 */
export function splitOf(d: Pick<DeploymentRecord, 'traffic' | 'revision'>): RevisionShare[] | null {
  const shares = resolveTraffic(d);
  return shares.length > 1 ? shares : null;
}

/** The one revision traffic sends everything to when there is no split (the rolling update's target). */
export function soleRevisionOf(d: Pick<DeploymentRecord, 'traffic' | 'revision'>): number {
  const shares = resolveTraffic(d);
  return shares.length === 1 ? shares[0]!.revision : d.revision;
}

/**
 * The count of a component last applied to a deployment without a split, as the controller
 * wrote it: `desired_replicas` — except just after a split ended, while that still holds the
 * split's sum (two revisions' worth) and `revision_desired` the revisions' own counts: then the
 * count of the revision that stays, so promoting a canary starts no replica it does not need.
 */
export function appliedCount(d: Pick<DeploymentRecord, 'revision_desired' | 'desired_replicas' | 'traffic' | 'revision'>, component: string): number | undefined {
  const own = d.revision_desired?.[String(soleRevisionOf(d))]?.[component];
  return own ?? d.desired_replicas?.[component];
}

/** The host of a tag: `<tag>-<name>.<domain>` (another project's: `<tag>-<name>.<project>.<domain>`). */
export function tagHost(tag: string, name: string, domain: string, project: string = DEFAULT_PROJECT): string {
  return endpointHost(tagLabel(tag, name), domain, project);
}

/** The DNS label a tag takes in hostnames (`<tag>-<name>`): no deployment may be named so. */
export function tagLabel(tag: string, name: string): string {
  return `${tag}-${name}`;
}

/** Every tag label in use by a deployment's traffic. */
export function tagLabelsOf(d: Pick<DeploymentRecord, 'traffic' | 'name'>): string[] {
  return trafficOf(d).flatMap((t) => (t.tag === null ? [] : [tagLabel(t.tag, d.name)]));
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const ENTRY_KEYS = ['revision', 'latest', 'percent', 'tag'];

/**
 * The shape rules of a traffic list from a request, without the revisions it names (they are
 * checked against the record by checkTrafficRevisions): a list of 1–10 entries, each naming
 * exactly one of `revision` (a whole number) or `latest: true`, a whole `percent` from 0 to
 * 100, an optional `tag` (a DNS label of up to 20 characters, unique in the list); the
 * percents sum to 100; at most one `latest` entry.
 */
export function parseTraffic(raw: unknown): { value: TrafficTarget[] | null; problems: FieldProblem[] } {
  const problems: FieldProblem[] = [];
  const add = (field: string, message: string) => problems.push({ field, message });
  if (raw === null) return { value: null, problems };
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > TRAFFIC_MAX_ENTRIES) {
    add('traffic', `traffic must be a list of 1 to ${TRAFFIC_MAX_ENTRIES} entries like {"revision": 3, "percent": 90} or {"latest": true, "percent": 10}; null sends everything to the newest revision`);
    return { value: null, problems };
  }
  const out: TrafficTarget[] = [];
  raw.forEach((entry: unknown, i) => {
    const field = `traffic[${i}]`;
    if (!isObject(entry)) return add(field, `${field} must be an object like {"revision": 3, "percent": 90}`);
    for (const key of Object.keys(entry)) if (!ENTRY_KEYS.includes(key)) add(`${field}.${key}`, `unknown field "${key}" in ${field}: an entry has revision or latest, percent and tag`);
    const latest = entry.latest === true;
    if (entry.latest !== undefined && typeof entry.latest !== 'boolean') add(`${field}.latest`, `${field}.latest must be true (or left out)`);
    const hasRevision = entry.revision !== undefined && entry.revision !== null;
    if (latest === hasRevision) add(field, `${field} must name exactly one of "revision" (a number) or "latest": true`);
    if (hasRevision && (typeof entry.revision !== 'number' || !Number.isSafeInteger(entry.revision) || entry.revision < 1)) {
      add(`${field}.revision`, `${field}.revision must be a revision number (1 or more)`);
    }
    const percent = entry.percent;
    if (typeof percent !== 'number' || !Number.isInteger(percent) || percent < 0 || percent > 100) {
      add(`${field}.percent`, `${field}.percent must be a whole number from 0 to 100`);
    }
    const tag = entry.tag ?? null;
    if (tag !== null && (typeof tag !== 'string' || tag.length > TAG_MAX || !TAG_PATTERN.test(tag))) {
      add(`${field}.tag`, `${field}.tag must be ${TAG_MAX} characters at most of lowercase letters, digits and '-', starting with a letter and not ending with '-' (it becomes the host <tag>-<name>.<domain>)`);
    }
    out.push({
      revision: hasRevision && typeof entry.revision === 'number' ? entry.revision : null,
      latest,
      percent: typeof percent === 'number' ? percent : 0,
      tag: typeof tag === 'string' ? tag : null,
    });
  });
  if (problems.length > 0) return { value: null, problems };
  const sum = out.reduce((s, t) => s + t.percent, 0);
  if (sum !== 100) add('traffic', `the percents of traffic must sum to 100, got ${sum}`);
  if (out.filter((t) => t.latest).length > 1) add('traffic', 'traffic may have one "latest" entry at most');
  const tags = out.map((t) => t.tag).filter((t): t is string => t !== null);
  const dup = tags.find((t, i) => tags.indexOf(t) !== i);
  if (dup !== undefined) add('traffic', `tag "${dup}" is used twice in traffic; each tag names one revision`);
  const numbers = out.map((t) => t.revision).filter((r): r is number => r !== null);
  const dupRevision = numbers.find((r, i) => numbers.indexOf(r) !== i);
  if (dupRevision !== undefined) add('traffic', `revision ${dupRevision} is named twice in traffic; give it one entry with the sum of the percents`);
  return problems.length > 0 ? { value: null, problems } : { value: out, problems };
}

/**
 * The revision rules of a list against the deployment it would apply to (after any spec change
 * the same request makes): every revision named exists and has not failed, and no tag host
 * collides with another deployment's name.
 */
export function checkTrafficRevisions(
  list: readonly TrafficTarget[],
  d: Pick<DeploymentRecord, 'name' | 'revision'> & { revisions: readonly Pick<RevisionRecord, 'revision' | 'status' | 'failure_reason'>[] },
  otherNames: ReadonlySet<string>,
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  list.forEach((t, i) => {
    const field = `traffic[${i}]`;
    if (t.revision !== null) {
      const rev = d.revisions.find((r) => r.revision === t.revision);
      if (!rev) problems.push({ field: `${field}.revision`, message: `${d.name} has no revision ${t.revision}; its revisions are 1 to ${d.revision}` });
      else if (rev.status === 'failed') {
        problems.push({ field: `${field}.revision`, message: `revision ${t.revision} of ${d.name} failed${rev.failure_reason ? ` (${rev.failure_reason})` : ''}; it cannot take traffic` });
      }
    }
    if (t.tag !== null && otherNames.has(tagLabel(t.tag, d.name))) {
      problems.push({ field: `${field}.tag`, message: `tag "${t.tag}" would give ${d.name} the host of the deployment named "${tagLabel(t.tag, d.name)}"; choose another tag` });
    }
  });
  return problems;
}

/**
 * The list after a spec change in manual mode: the new revision starts at 0 %, so every
 * `latest` entry is pinned to the revision it named before the change.
 */
export function pinLatest(list: readonly TrafficTarget[], previous: number): TrafficTarget[] {
  const out = list.map((t) => ({ ...t }));
  const latest = out.findIndex((t) => t.latest);
  if (latest === -1) return out;
  const pinned = out[latest]!;
  const same = out.find((t) => t.revision === previous && (t.tag === null || pinned.tag === null));
  if (same === undefined) {
    out[latest] = { ...pinned, latest: false, revision: previous };
    return out;
  }
  // One entry per revision: the pinned share joins the one already naming it.
  same.percent += pinned.percent;
  same.tag ??= pinned.tag;
  return out.filter((_, i) => i !== latest);
}

/**
 * A deployment's tag labels collide with the name of a deployment being created (or renamed
 * by a clone): the name is taken by that host.
 */
export function nameTakenByTag(name: string, others: readonly Pick<DeploymentRecord, 'traffic' | 'name'>[]): string | null {
  for (const o of others) if (tagLabelsOf(o).includes(name)) return o.name;
  return null;
}
