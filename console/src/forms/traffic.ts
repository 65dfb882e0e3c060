// Owns traffic between revisions as the console handles it, as pure functions: the rows of
// Settings' Traffic section (a revision or "latest", a percent, an optional tag) read from the
// deployment and turned back into the `traffic` body, checked with the platform's own rules
// (domain/traffic.ts); the lists the revision history's actions send (Send 10 %, Promote,
// Roll back); and what a new list will do, in words, for the confirmations and the statement
// Settings shows before saving. The default list (everything to the newest revision) is never
// sent as a list: a form left at it sends nothing, or null to clear a stored one.

// Imports carry .js so the unit tests (NodeNext) can import this module too.
import { classifyPatch, savedMessage, type PatchPlan } from '../../../src/domain/patch-effect.js';
import { parseTraffic, resolveTraffic, splitOf, type RevisionShare, type RolloutMode, type TrafficTarget } from '../../../src/domain/traffic.js';
import type { Deployment, TrafficEntry } from '../api/types.js';

/** Problems keyed by API field (components/form's shape). */
type Problems = Record<string, string>;

/** One entry as typed: `target` is "latest" or a revision number as text; percent and tag as typed. */
export interface TrafficRow {
  target: string;
  percent: string;
  tag: string;
}

export const LATEST = 'latest';

/** An entry as the API takes it. */
export type TrafficWire = { revision: number; percent: number; tag?: string } | { latest: true; percent: number; tag?: string };

export const DEFAULT_ROWS: readonly TrafficRow[] = Object.freeze([Object.freeze({ target: LATEST, percent: '100', tag: '' })]);

export const rolloutModeOf = (d: Pick<Deployment, 'rollout_mode'>): RolloutMode => d.rollout_mode ?? 'automatic';

/** What each rollout mode does, in one sentence (the choice's hint in Settings). */
export const ROLLOUT_MODE_TEXT: Readonly<Record<RolloutMode, string>> = {
  automatic: 'A spec change makes a new revision that takes over the share of the "latest" entry (everything, without a list) once its replicas are ready.',
  manual: 'A spec change makes a new revision at 0 %: it gets traffic only when you give it a share here or from the revision history.',
};

/** The API's view entry as the stored shape the domain rules read. */
const asTarget = (e: Pick<TrafficEntry, 'revision' | 'latest' | 'percent' | 'tag'>): TrafficTarget => ({
  revision: e.latest ? null : e.revision,
  latest: e.latest,
  percent: e.percent,
  tag: e.tag,
});

const wireAsTarget = (w: TrafficWire): TrafficTarget => ({
  revision: 'latest' in w ? null : w.revision,
  latest: 'latest' in w,
  percent: w.percent,
  tag: w.tag ?? null,
});

/** The deployment's list as the domain reads it; null: the default (everything to the newest). */
export function storedTargets(d: Pick<Deployment, 'traffic' | 'traffic_is_default'>): TrafficTarget[] | null {
  if (!d.traffic || d.traffic_is_default === true) return null;
  return d.traffic.map(asTarget);
}

/** Each revision traffic names, with its share and tags, as the platform resolves it. */
export function sharesOf(d: Pick<Deployment, 'traffic' | 'traffic_is_default' | 'revision'>): RevisionShare[] {
  return resolveTraffic({ traffic: storedTargets(d), revision: d.revision });
}

/** The revisions running side by side, or null when one revision takes everything. */
export function splitNow(d: Pick<Deployment, 'traffic' | 'traffic_is_default' | 'revision'>): RevisionShare[] | null {
  return splitOf({ traffic: storedTargets(d), revision: d.revision });
}

const toWire = (t: TrafficTarget): TrafficWire => {
  const tag = t.tag !== null && t.tag !== '' ? { tag: t.tag } : {};
  return t.latest || t.revision === null ? { latest: true, percent: t.percent, ...tag } : { revision: t.revision, percent: t.percent, ...tag };
};

/** A list that means the default (one "latest" entry at 100 % without a tag) is no list at all. */
function normalized(list: readonly TrafficWire[]): TrafficWire[] | undefined {
  const only = list.length === 1 ? list[0] : undefined;
  if (only && 'latest' in only && only.percent === 100 && only.tag === undefined) return undefined;
  return [...list];
}

/** The stored list as the body would carry it; undefined when it is the default. */
export function storedTrafficBody(d: Pick<Deployment, 'traffic' | 'traffic_is_default'>): TrafficWire[] | undefined {
  const stored = storedTargets(d);
  return stored === null ? undefined : normalized(stored.map(toWire));
}

export function rowsFrom(d: Pick<Deployment, 'traffic' | 'traffic_is_default'>): TrafficRow[] {
  const stored = storedTargets(d);
  if (stored === null) return DEFAULT_ROWS.map((r) => ({ ...r }));
  return stored.map((t) => ({ target: t.latest || t.revision === null ? LATEST : String(t.revision), percent: String(t.percent), tag: t.tag ?? '' }));
}

/** The percents typed that read as numbers, summed (the live sum beside the rows). */
export function sumOf(rows: readonly TrafficRow[]): number {
  return rows.reduce((s, r) => s + (/^\s*\d+\s*$/.test(r.percent) ? Number(r.percent) : 0), 0);
}

/**
 * The rows as the `traffic` body, checked with the API's own shape rules: `body` is undefined
 * for the default list (nothing to send), else the list; problems are keyed like the API's
 * (`traffic`, `traffic[1].percent`).
 */
export function trafficBody(rows: readonly TrafficRow[]): { body: TrafficWire[] | undefined; problems: Problems } {
  const raw = rows.map((r) => {
    const percentText = r.percent.trim();
    const percent: unknown = /^\d+$/.test(percentText) ? Number(percentText) : percentText === '' ? undefined : percentText;
    const tag = r.tag.trim();
    return { ...(r.target === LATEST ? { latest: true } : { revision: Number(r.target) }), percent, ...(tag === '' ? {} : { tag }) };
  });
  const parsed = parseTraffic(raw);
  const problems: Problems = {};
  for (const p of parsed.problems) if (!problems[p.field]) problems[p.field] = p.message;
  if (parsed.value === null) return { body: undefined, problems };
  return { body: normalized(parsed.value.map(toWire)), problems };
}

/** Whole percents summing to `total`, in proportion to `weights` (largest remainder; ties to the first). */
export function apportion(weights: readonly number[], total: number): number[] {
  const sum = weights.reduce((s, w) => s + w, 0);
  if (weights.length === 0) return [];
  if (sum === 0) return weights.map((_, i) => (i === 0 ? total : 0));
  const exact = weights.map((w) => (w * total) / sum);
  const out = exact.map(Math.floor);
  let left = total - out.reduce((s, v) => s + v, 0);
  const order = exact.map((e, i) => ({ i, rest: e - Math.floor(e) })).sort((a, b) => b.rest - a.rest || a.i - b.i);
  for (const { i } of order) {
    if (left <= 0) break;
    out[i]! += 1;
    left -= 1;
  }
  return out;
}

/** A revision's first tag in the current list, kept when an action rewrites its entry. */
const tagOf = (shares: readonly RevisionShare[], revision: number): { tag?: string } => {
  const tag = shares.find((s) => s.revision === revision)?.tags[0];
  return tag === undefined ? {} : { tag };
};

/** The newest revision is named as `latest`, so later spec changes keep following it. */
const entryFor = (d: Pick<Deployment, 'revision'>, revision: number, percent: number, shares: readonly RevisionShare[]): TrafficWire =>
  revision === d.revision ? { latest: true, percent, ...tagOf(shares, revision) } : { revision, percent, ...tagOf(shares, revision) };

type TrafficDeployment = Pick<Deployment, 'traffic' | 'traffic_is_default' | 'revision' | 'serving_revision'>;

/**
 * "Send N %" to `revision`: it gets `percent`, the revisions that have a share now keep theirs
 * in proportion over the rest; tag-only entries stay.
 */
export function canaryList(d: TrafficDeployment, revision: number, percent = 10): TrafficWire[] {
  const shares = sharesOf(d);
  const others = shares.filter((s) => s.revision !== revision);
  const sharing = others.filter((s) => s.percent > 0);
  const rest = apportion(sharing.map((s) => s.percent), 100 - percent);
  const out: TrafficWire[] = sharing.map((s, i) => ({ revision: s.revision, percent: rest[i]!, ...tagOf(shares, s.revision) }));
  for (const s of others) if (s.percent === 0 && s.tags.length > 0) out.push({ revision: s.revision, percent: 0, tag: s.tags[0]! });
  out.push({ revision, percent, ...tagOf(shares, revision) });
  // The newest named by number would stop following later revisions: name it as latest.
  return out.map((w) => ('revision' in w && w.revision === d.revision ? { latest: true as const, percent: w.percent, ...(w.tag ? { tag: w.tag } : {}) } : w));
}

/** "Promote": everything to `revision` (its tag kept); every other revision stops. */
export function promoteList(d: TrafficDeployment, revision: number): TrafficWire[] {
  return [entryFor(d, revision, 100, sharesOf(d))];
}

/**
 * The revision "Roll back" sends everything to while traffic splits: the serving revision
 * before the split when it is in it (and not its newest), else the oldest revision of the split
 * with a share; null without a split between at least two revisions with a share.
 */
export function rollbackTarget(d: TrafficDeployment): number | null {
  const split = splitNow(d)?.filter((s) => s.percent > 0) ?? [];
  if (split.length < 2) return null;
  const numbers = split.map((s) => s.revision);
  const newest = Math.max(...numbers);
  const serving = d.serving_revision ?? null;
  if (serving !== null && serving !== newest && numbers.includes(serving)) return serving;
  return Math.min(...numbers);
}

export function rollbackList(d: TrafficDeployment, target: number): TrafficWire[] {
  return [entryFor(d, target, 100, sharesOf(d))];
}

const revisionWord = (n: number) => `revision ${n}`;

const listWords = (items: readonly string[]): string =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)!}`;

/** "90 % to revision 3 and 10 % to revision 4 (tag canary)". */
export function splitWords(shares: readonly RevisionShare[]): string {
  const parts = shares.map((s) => {
    const tags = s.tags.length > 0 ? ` (tag${s.tags.length === 1 ? '' : 's'} ${s.tags.join(', ')})` : '';
    return s.percent > 0 ? `${s.percent} % to ${revisionWord(s.revision)}${tags}` : `${revisionWord(s.revision)} for its tag host only${tags}`;
  });
  return listWords(parts);
}

/**
 * What sending `next` (null: the default list) will do to a deployment: the new split, the
 * revisions that start their own replicas, those that drain and stop.
 */
export function trafficChangeWords(d: TrafficDeployment & Pick<Deployment, 'revision_replicas'>, next: readonly TrafficWire[] | null, revisionAfter = d.revision): string {
  const after = resolveTraffic({ traffic: next === null ? null : next.map(wireAsTarget), revision: revisionAfter });
  const running = new Set((d.revision_replicas ?? []).map((r) => r.revision));
  for (const s of sharesOf(d)) running.add(s.revision);
  const afterNumbers = new Set(after.map((s) => s.revision));
  const starting = after.filter((s) => !running.has(s.revision)).map((s) => s.revision);
  const stopping = [...running].filter((r) => !afterNumbers.has(r)).sort((a, b) => a - b);
  const sentences = [`Sends ${splitWords(after)}.`];
  if (starting.length > 0) {
    sentences.push(
      `${listWords(starting.map(revisionWord)).replace(/^r/, 'R')} start${starting.length === 1 ? 's' : ''} ${starting.length === 1 ? 'its' : 'their'} own replicas and take${starting.length === 1 ? 's' : ''} ${starting.length === 1 ? 'its' : 'their'} share once one is ready; until then the others serve it.`,
    );
  }
  if (stopping.length > 0) {
    sentences.push(`${listWords(stopping.map(revisionWord)).replace(/^r/, 'R')} get${stopping.length === 1 ? 's' : ''} no more traffic: ${stopping.length === 1 ? 'its' : 'their'} replicas drain and stop within a minute.`);
  }
  sentences.push('No new revision; the gateways apply it within seconds.');
  return sentences.join(' ');
}

/**
 * The statement Settings shows for a save that makes a new revision, when traffic or the
 * rollout mode make it something other than a plain rolling update; null when it is one.
 */
export function newRevisionWords(
  d: TrafficDeployment,
  mode: RolloutMode,
  next: readonly TrafficWire[] | null,
  trafficInPatch: boolean,
): string | null {
  const revision = d.revision + 1;
  const list = next === null ? null : next.map(wireAsTarget);
  const shares = resolveTraffic({ traffic: list, revision });
  const share = shares.find((s) => s.revision === revision);
  if (trafficInPatch) {
    return share && share.percent > 0
      ? `Revision ${revision} starts and, once ready, takes ${share.percent} % of the traffic (${splitWords(shares)}).`
      : `Revision ${revision} starts at 0 %: the traffic saved with it sends ${splitWords(shares)}.`;
  }
  if (mode === 'manual') {
    // The API pins every "latest" entry to the revision it named before the change.
    const kept = splitWords(resolveTraffic({ traffic: list, revision: d.revision }));
    return `Manual rollout: revision ${revision} is made at 0 % and traffic stays as it is (${kept}); give it a share under Traffic or from the revision history.`;
  }
  if (list === null) return null;
  if (!share || share.percent === 0) return `Revision ${revision} gets no traffic: the list names fixed revisions only. Give it a share under Traffic.`;
  if (shares.length <= 1) return null;
  return `The "latest" share (${share.percent} %) moves to revision ${revision} once it is ready; the other revisions keep theirs.`;
}

const TRAFFIC_FIELDS = ['traffic', 'rollout_mode'];

/**
 * The statement before saving, when the save touches traffic or the rollout mode or makes a
 * revision that traffic does not send everything to; else the platform's forecast as it is.
 * `nextTraffic`: the list the form holds (null: the default), undefined when its rows need
 * fixing first.
 */
export function settingsStatement(
  plan: PatchPlan,
  d: TrafficDeployment & Pick<Deployment, 'revision_replicas'>,
  mode: RolloutMode,
  nextTraffic: readonly TrafficWire[] | null | undefined,
): string {
  if (plan.effect === 'none') return plan.statement;
  const trafficChanged = Object.hasOwn(plan.patch, 'traffic');
  const modeChanged = Object.hasOwn(plan.patch, 'rollout_mode');
  const rest = Object.fromEntries(Object.entries(plan.patch).filter(([k]) => !TRAFFIC_FIELDS.includes(k)));
  const restPlan = classifyPatch(rest, d.revision);
  const modeWords = modeChanged ? `Rollout mode becomes ${mode}: ${ROLLOUT_MODE_TEXT[mode]}` : '';
  if (plan.effect === 'revision') {
    const words = nextTraffic === undefined ? null : newRevisionWords(d, mode, nextTraffic, trafficChanged);
    if (words === null && !modeChanged) return plan.statement;
    const scale = restPlan.scaleFields.length > 0 ? ` Replica settings (${restPlan.scaleFields.join(', ')}) change with it.` : '';
    const atOnce = restPlan.atOnceFields.length > 0 ? ` Endpoint credentials and limits (${restPlan.atOnceFields.join(', ')}) take effect at once.` : '';
    const rollout = words ?? 'New replicas start and replace the current ones once ready (a rolling update).';
    return [`Creates revision ${d.revision + 1}: ${restPlan.revisionFields.join(', ')} changed. ${rollout}${scale}${atOnce}`, modeWords].filter(Boolean).join(' ');
  }
  const sentences: string[] = [];
  if (trafficChanged) sentences.push(nextTraffic === undefined ? 'Traffic: fix the rows below before saving.' : trafficChangeWords(d, nextTraffic));
  if (modeWords) sentences.push(`${modeWords}${trafficChanged ? '' : ' No new revision.'}`);
  if (restPlan.effect !== 'none') sentences.unshift(restPlan.statement);
  return sentences.join(' ');
}

/** The line after saving: a revision made at 0 % says so; the rest is the platform's. */
export function savedWords(before: Pick<Deployment, 'revision'>, after: Pick<Deployment, 'revision' | 'revisions'>, plan: PatchPlan): string {
  if (after.revision > before.revision) {
    const made = after.revisions.find((r) => r.revision === after.revision);
    if (made && made.percent === 0) return `Saved: revision ${after.revision} is made at 0 %; give it a share under Traffic or from the revision history`;
  }
  return savedMessage(before, after, plan);
}
