// Owns the client's traffic commands: `infergate traffic NAME` (the split with each revision's
// share, tags, tag host and replicas, and the gateways' figures per revision side by side),
// `infergate traffic NAME rev3=90 rev4=10 [--tag rev4=canary]` (a PATCH of the whole list) and
// `infergate promote NAME [REV]` (everything to one revision) — parsing their arguments into the
// API's `traffic` list and saying, in words, what a change does to the other revisions.

import { Command, Option } from 'commander';
import type { RevisionFiguresView, RevisionMetricsView } from '../domain/api-views.js';
import { ROLLOUT_MODES, type RolloutMode } from '../domain/traffic.js';
import type { ApiClient, Json } from './api.js';
import type { Kit } from './command-kit.js';
import { getDeployment, routeOf, type Deployment, type RevisionReplicas, type TrafficEntryView } from './deployments.js';
import { ApiRefusal, UsageError } from './errors.js';
import { table, type Column, type Out } from './output.js';

/** A revision as the command line names it: `rev3`, `3`, or `latest` (the newest, whichever it is). */
export type RevisionKey = number | 'latest';

/** One entry of the list the client sends, in the API's shape. */
export interface TrafficEntryRequest {
  revision?: number;
  latest?: true;
  percent: number;
  tag?: string;
}

/** `rev3`, `r3`, `3` → 3; `latest` → 'latest'; anything else null. */
export function parseRevisionKey(raw: string): RevisionKey | null {
  const text = raw.trim().toLowerCase();
  if (text === 'latest') return 'latest';
  const m = /^(?:rev|r)?(\d+)$/.exec(text);
  if (!m) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) && n >= 1 ? n : null;
}

const keyName = (key: RevisionKey): string => (key === 'latest' ? 'latest' : `rev${key}`);
const keyOf = (e: Pick<TrafficEntryView, 'latest' | 'revision'>): RevisionKey => (e.latest ? 'latest' : e.revision);

/**
 * The list `traffic NAME rev3=90 rev4=10 …` sends. Tags the deployment has on an entry the new
 * list still names are kept (shifting weights keeps a canary's host), `--tag rev4=canary` sets
 * or replaces one, `--untag canary` removes one. Percents are not summed here: the API says
 * what is wrong with the list as a whole.
 */
export function parseSplit(args: readonly string[], opts: { tags?: readonly string[]; untag?: readonly string[]; current?: readonly TrafficEntryView[] } = {}): TrafficEntryRequest[] {
  const entries: { key: RevisionKey; percent: number; tag: string | null }[] = [];
  for (const arg of args) {
    const eq = arg.indexOf('=');
    const key = eq === -1 ? null : parseRevisionKey(arg.slice(0, eq));
    if (key === null) throw new UsageError(`"${arg}" is not REVISION=PERCENT: write rev3=90 (or 3=90, latest=10)`);
    const raw = arg.slice(eq + 1).trim().replace(/%$/, '');
    if (!/^\d+$/.test(raw) || Number(raw) > 100) throw new UsageError(`${arg}: the percent must be a whole number from 0 to 100`);
    if (entries.some((e) => e.key === key)) throw new UsageError(`${keyName(key)} is given twice; give each revision once`);
    entries.push({ key, percent: Number(raw), tag: null });
  }
  const untag = new Set(opts.untag ?? []);
  for (const e of entries) {
    const kept = opts.current?.find((c) => keyOf(c) === e.key && c.tag !== null)?.tag ?? null;
    if (kept !== null && !untag.has(kept)) e.tag = kept;
  }
  for (const spec of opts.tags ?? []) {
    const eq = spec.indexOf('=');
    const key = eq === -1 ? null : parseRevisionKey(spec.slice(0, eq));
    const tag = spec.slice(eq + 1).trim();
    if (key === null || tag === '') throw new UsageError(`--tag must be REVISION=TAG, e.g. --tag rev4=canary (not "${spec}")`);
    const entry = entries.find((e) => e.key === key);
    if (!entry) throw new UsageError(`--tag ${spec} names ${keyName(key)}, which the split does not: add ${keyName(key)}=0 to give it a tag host without a share of the requests`);
    // The same tag on another entry moves here: tags are unique in the list.
    for (const other of entries) if (other !== entry && other.tag === tag) other.tag = null;
    entry.tag = tag;
  }
  if (entries.length === 0) throw new UsageError('give the split as REVISION=PERCENT arguments, e.g. rev3=90 rev4=10 (or --reset for everything to the newest revision)');
  return entries.map((e) => ({
    ...(e.key === 'latest' ? { latest: true as const } : { revision: e.key }),
    percent: e.percent,
    ...(e.tag !== null ? { tag: e.tag } : {}),
  }));
}

/** The list `promote NAME [REV]` sends: 100 % to REV (default: latest), keeping REV's tag. */
export function promoteList(target: RevisionKey, current: readonly TrafficEntryView[]): TrafficEntryRequest[] {
  const tag = current.find((c) => keyOf(c) === target && c.tag !== null)?.tag;
  return [{ ...(target === 'latest' ? { latest: true as const } : { revision: target }), percent: 100, ...(tag ? { tag } : {}) }];
}

/**
 * What a change does to each revision that ran before it, in words: the ones left at 0 % drain
 * and stop within a minute; tags that go lose their hosts.
 */
export function changeLines(before: Pick<Deployment, 'traffic' | 'revision_replicas'>, after: Pick<Deployment, 'traffic' | 'revision_replicas' | 'name'>): string[] {
  const lines: string[] = [];
  const running = (d: Pick<Deployment, 'traffic' | 'revision_replicas'>) => d.revision_replicas ?? sharesOf(d.traffic ?? []);
  const now = new Map(running(after).map((r) => [r.revision, r]));
  for (const was of running(before)) {
    const is = now.get(was.revision);
    if (is === undefined) lines.push(`revision ${was.revision} (was ${was.percent} %) now gets no requests: its replicas drain and stop within a minute`);
    else if (is.percent !== was.percent) lines.push(`revision ${was.revision}: ${was.percent} % → ${is.percent} %`);
  }
  const beforeRevisions = new Set(running(before).map((r) => r.revision));
  for (const is of running(after)) if (!beforeRevisions.has(is.revision)) lines.push(`revision ${is.revision}: ${is.percent} %${is.percent === 0 ? ' (reached by its tag only)' : ''}; it starts its own replicas`);
  const tagsAfter = new Set((after.traffic ?? []).map((t) => t.tag).filter((t) => t !== null));
  for (const t of before.traffic ?? []) {
    if (t.tag !== null && !tagsAfter.has(t.tag)) lines.push(`tag ${t.tag} removed: ${t.url ?? `its host ${t.tag}-${after.name}`} no longer answers`);
  }
  return lines;
}

/** Running revisions from the traffic list alone (a server without revision_replicas). */
function sharesOf(traffic: readonly TrafficEntryView[]): RevisionReplicas[] {
  const out: RevisionReplicas[] = [];
  for (const t of traffic) {
    let e = out.find((r) => r.revision === t.revision);
    if (!e) out.push((e = { revision: t.revision, percent: 0, tags: [], ready: -1, desired: -1 }));
    e.percent += t.percent;
    if (t.tag !== null) e.tags.push(t.tag);
  }
  return out.filter((e) => e.percent > 0 || e.tags.length > 0);
}



/** The gateways' figures of one revision over the window (GET …/revision-metrics). */
export type RevisionFigures = RevisionFiguresView;
export type RevisionMetricsAnswer = RevisionMetricsView;

/** The figures, or why there are none (a process without an autoscaler: 409; a server before them: 404). */
export async function readRevisionMetrics(client: ApiClient, d: Pick<Deployment, 'family' | 'id'>, windowSeconds: number): Promise<RevisionMetricsAnswer | { unavailable: string }> {
  try {
    return await client.get<RevisionMetricsAnswer>(`${routeOf(d)}/revision-metrics?window_seconds=${windowSeconds}`);
  } catch (err) {
    if (err instanceof ApiRefusal && err.status === 409) return { unavailable: err.message };
    if (err instanceof ApiRefusal && err.status === 404) return { unavailable: 'this server keeps no per-revision metrics' };
    throw err;
  }
}

interface SplitRow {
  revision: number;
  latest: boolean;
  percent: number;
  tags: string[];
  urls: string[];
  replicas: string;
  figures: RevisionFigures | null;
}

function splitRows(d: Deployment, metrics: RevisionMetricsAnswer | null): SplitRow[] {
  const traffic = d.traffic ?? [];
  const running = d.revision_replicas ?? sharesOf(traffic);
  const rows: SplitRow[] = running.map((r) => ({
    revision: r.revision,
    latest: traffic.some((t) => t.latest && t.revision === r.revision),
    percent: r.percent,
    tags: r.tags,
    urls: traffic.flatMap((t) => (t.revision === r.revision && t.url !== null ? [t.url] : [])),
    replicas: r.ready < 0 ? '-' : `${r.ready}/${r.desired}`,
    figures: metrics?.revisions.find((m) => m.revision === r.revision) ?? null,
  }));
  // A revision that served in the window but takes no traffic now (just moved to 0 %) is shown beside the others.
  for (const m of metrics?.revisions ?? []) {
    if (m.requests > 0 && !rows.some((r) => r.revision === m.revision)) {
      rows.push({ revision: m.revision, latest: false, percent: 0, tags: [], urls: [], replicas: '-', figures: m });
    }
  }
  return rows.sort((a, b) => a.revision - b.revision);
}

const ms = (v: number | null | undefined): string => (v === null || v === undefined ? '-' : `${Math.round(v)} ms`);

/** The split as a table, with the figures per revision when there are some. */
export function splitTable(d: Deployment, metrics: RevisionMetricsAnswer | null, out: Out): string {
  const columns: Column<SplitRow>[] = [
    { header: 'REVISION', value: (r) => `${r.revision}${r.latest ? ' (latest)' : ''}` },
    { header: 'PERCENT', value: (r) => `${r.percent} %` },
    { header: 'TAGS', value: (r) => r.tags.join(', ') || '-' },
    { header: 'URL', value: (r) => r.urls.join(', ') || '-' },
    { header: 'READY', value: (r) => r.replicas },
  ];
  if (metrics !== null) {
    columns.push(
      { header: 'REQUESTS', value: (r) => String(r.figures?.requests ?? 0) },
      {
        header: 'ERRORS',
        value: (r) => {
          const f = r.figures;
          if (!f || f.errors === 0) return '0';
          return `${f.errors} (${((100 * f.errors) / Math.max(1, f.requests)).toFixed(1)} %)`;
        },
      },
      { header: 'TTFT P50', value: (r) => ms(r.figures?.ttft_p50_ms) },
      { header: 'TTFT P99', value: (r) => ms(r.figures?.ttft_p99_ms) },
      { header: 'TOKENS/S', value: (r) => (r.figures ? r.figures.tokens_per_second.toFixed(1) : '0.0') },
    );
  }
  return table(splitRows(d, metrics), columns, out);
}

/** The first lines of `traffic NAME`: where the split comes from and what a spec change does. */
export function splitHeader(d: Deployment): string {
  const running = d.revision_replicas ?? [];
  const source = d.traffic_is_default
    ? 'no split of its own: every request goes to the newest revision'
    : running.length === 1
      ? `every request goes to revision ${running[0]!.revision}`
      : `traffic split between revisions ${running.map((r) => r.revision).join(', ')}`;
  const mode = d.rollout_mode === 'manual' ? 'manual (a spec change starts its revision at 0 %)' : 'automatic (a spec change rolls out to the new revision)';
  return `${d.name}: ${source}; rollout ${mode}\n`;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

function windowSeconds(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 10 || Number(raw) > 300) throw new UsageError(`--window must be a whole number of seconds from 10 to 300, not "${raw}"`);
  return Number(raw);
}

export function addTrafficCommands(program: Command, kit: Kit): void {
  const { out, api, printData } = kit;

  const show = async (cmd: Command, client: ApiClient, d: Deployment, window: number, lead: string[] = []) => {
    const metrics = await readRevisionMetrics(client, d, window);
    const figures = 'unavailable' in metrics ? null : metrics;
    const data = {
      name: d.name,
      rollout_mode: d.rollout_mode ?? 'automatic',
      traffic: d.traffic ?? [],
      traffic_is_default: d.traffic_is_default ?? true,
      revision_replicas: d.revision_replicas ?? [],
      metrics: figures,
    };
    printData(cmd, data, () => {
      for (const line of lead) out.write(`${line}\n`);
      out.write(splitHeader(d));
      out.write(splitTable(d, figures, out));
      if ('unavailable' in metrics) out.write(`Per-revision figures: not available (${metrics.unavailable})\n`);
      else out.write(`Figures over the last ${metrics.window_seconds} s, from the gateways.\n`);
    });
  };

  program
    .command('traffic <name> [split...]')
    .description('the traffic split between revisions (with each revision\'s replicas and figures side by side); with REVISION=PERCENT arguments, set it (the whole list)')
    .option('--tag <rev=tag>', 'give a revision its own host <tag>-<name>.<domain> (repeatable); tags already on a revision the split keeps stay', collect)
    .option('--untag <tag>', 'remove a tag (repeatable)', collect)
    .option('--reset', 'no split of its own: every request to the newest revision (traffic: null)')
    .addOption(new Option('--rollout-mode <mode>', 'automatic: a spec change rolls out; manual: it starts its revision at 0 %').choices([...ROLLOUT_MODES]))
    .addOption(new Option('--window <seconds>', 'the window of the figures, 10 to 300').default(300).argParser(windowSeconds))
    .addHelpText(
      'after',
      '\nREVISION is rev3, 3, or latest (the newest revision, whichever it is). The percents sum to 100; a revision left out gets 0 % and its replicas drain and stop within a minute.',
    )
    .action(async (name: string, split: string[], opts: { tag?: string[]; untag?: string[]; reset?: boolean; rolloutMode?: RolloutMode; window: number }, cmd: Command) => {
      const client = api(cmd);
      const d = await getDeployment(client, name);
      const changes = split.length > 0 || opts.reset === true || opts.rolloutMode !== undefined || (opts.tag ?? []).length > 0 || (opts.untag ?? []).length > 0;
      if (!changes) return show(cmd, client, d, opts.window);
      if (opts.reset && split.length > 0) throw new UsageError('give a split or --reset, not both');
      const body: Json = {};
      if (opts.reset) body.traffic = null;
      else if (split.length > 0 || (opts.tag ?? []).length > 0 || (opts.untag ?? []).length > 0) {
        // Tags alone keep the shares as they are.
        const args = split.length > 0 ? split : (d.traffic ?? []).map((t) => `${t.latest ? 'latest' : `rev${t.revision}`}=${t.percent}`);
        body.traffic = parseSplit(args, { tags: opts.tag, untag: opts.untag, current: d.traffic });
      }
      if (opts.rolloutMode !== undefined) body.rollout_mode = opts.rolloutMode;
      const after = await client.call<Deployment>('PATCH', routeOf(d), body);
      await show(cmd, client, after, opts.window, changeLines(d, after).map((l) => `${name}: ${l}`));
    });

  program
    .command('promote <name> [revision]')
    .description('send every request to one revision (default: the newest, as latest) and let the others drain and stop')
    .action(async (name: string, revision: string | undefined, _opts, cmd: Command) => {
      const target = revision === undefined ? 'latest' : parseRevisionKey(revision);
      if (target === null) throw new UsageError(`"${revision}" is not a revision: give rev4, 4 or latest`);
      const client = api(cmd);
      const d = await getDeployment(client, name);
      const after = await client.call<Deployment>('PATCH', routeOf(d), { traffic: promoteList(target, d.traffic ?? []) });
      const promoted = target === 'latest' ? `revision ${after.revision} (latest)` : `revision ${target}`;
      const lines = [`${name}: ${promoted} now takes 100 % of requests`, ...changeLines(d, after).filter((l) => !l.startsWith(`revision ${target === 'latest' ? after.revision : target}:`)).map((l) => `${name}: ${l}`)];
      if (target !== 'latest') lines.push(`${name}: a spec change now starts its revision at 0 % until traffic moves (this list names no latest entry)`);
      printData(cmd, after, () => out.write(lines.map((l) => `${l}\n`).join('')));
    });
}
