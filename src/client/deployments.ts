// Owns finding deployments by name for the client: the API addresses them by family and id,
// people by name, so every command that takes NAME asks both families' lists for that name
// (`?name=`, one item at most). And reading the API's paged lists: every page of a list
// (`listAll`, the chunk size per request, following `continue` as kubectl's --chunk-size does),
// or one page of deployments across both families (`deploymentPage`, for ls --limit/--continue).
// A server from before paging ignores limit, continue and name and answers a whole list: the
// client then finds the name in it, and a list ends at its first answer.

import type { DeploymentView, FAMILIES as VIEW_FAMILIES, ListPage, RevisionReplicasView, RevisionSummaryView, RolloutView, TrafficTargetView } from '../domain/api-views.js';
import { PRIORITIES } from '../domain/priority.js';
import type { ApiClient } from './api.js';
import { ApiRefusal, UsageError } from './errors.js';

export type Family = (typeof VIEW_FAMILIES)[number];
export const FAMILIES: readonly Family[] = ['general', 'orchestrated'];

/** Fields every server this client may talk to sends; the others came later, so the client reads them as optional. */
type Always = 'id' | 'family' | 'name' | 'status' | 'status_reason' | 'paused' | 'endpoint_url' | 'revision' | 'serving_revision' | 'components';
/** A rollout as the client reads it: its state, with what an older server may leave out optional. */
export type RolloutRead = Pick<RolloutView, 'state'> & Partial<RolloutView>;
/** A revision as the client reads it: share and tags came with traffic, after the rest. */
export type RevisionRead = Omit<RevisionSummaryView, 'percent' | 'tags' | 'source_revision'> & Partial<Pick<RevisionSummaryView, 'percent' | 'tags' | 'source_revision'>>;
/**
 * A deployment as the API renders it: the server's view type (domain/api-views.ts), with the
 * fields newer than the client's oldest server optional, and the rest passing through.
 */
export type Deployment = Pick<DeploymentView, Always> &
  Partial<Omit<DeploymentView, Always | 'rollout' | 'revisions'>> & {
    rollout: RolloutRead | null;
    revisions: RevisionRead[];
    [field: string]: unknown;
  };
/** One entry of a deployment's traffic as the API shows it: `latest` resolved, the tag host's URL in `url`. */
export type TrafficEntryView = TrafficTargetView;
/** Each revision traffic runs, with its share and its routed component's replicas. */
export type RevisionReplicas = RevisionReplicasView;

/** How many items a request asks for when the client reads a whole list (kubectl's default chunk size). */
export const DEFAULT_CHUNK_SIZE = 500;
/** The most the API answers per page. */
export const CHUNK_SIZE_MAX = 500;

export type { ListPage };

/** `route` with query parameters added (undefined ones left out). */
function withQuery(route: string, params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) query.set(key, String(value));
  const text = query.toString();
  if (text === '') return route;
  return `${route}${route.includes('?') ? '&' : '?'}${text}`;
}

/**
 * Every item of a list route: `chunkSize` items per request (0: one request without a limit),
 * following `continue` until the last page.
 */
export async function listAll<T>(api: ApiClient, route: string, chunkSize: number = DEFAULT_CHUNK_SIZE): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined;
  do {
    const page = await api.get<ListPage<T>>(withQuery(route, { limit: chunkSize > 0 ? chunkSize : undefined, continue: next }));
    items.push(...page.items);
    if (page.continue !== undefined && page.continue === next) throw new ApiRefusal(500, 'error', `the control API answered ${route} with the same page again`, null);
    next = page.continue;
  } while (next !== undefined);
  return items;
}

export interface ListOptions {
  /** Items per request (0: no limit); default DEFAULT_CHUNK_SIZE. */
  chunkSize?: number;
  /** One family only; default both. */
  family?: Family;
}

/** Every deployment (of both families, or one), by name. */
export async function listDeployments(api: ApiClient, options: ListOptions = {}): Promise<Deployment[]> {
  const families = options.family ? [options.family] : FAMILIES;
  const lists = await Promise.all(families.map((f) => listAll<Deployment>(api, `/deployments/${f}`, options.chunkSize)));
  return lists.flat().sort((a, b) => a.name.localeCompare(b.name));
}

export async function findDeployment(api: ApiClient, name: string): Promise<Deployment | null> {
  const found = await Promise.all(FAMILIES.map((f) => listAll<Deployment>(api, withQuery(`/deployments/${f}`, { name }))));
  return found.flat().find((d) => d.name === name) ?? null;
}

/**
 * One page of deployments for `ls --limit N [--continue TOKEN]`: the general family's in id
 * order, then the orchestrated one's (one family with `family`). The token is this client's:
 * `<family>:<the API's continue for it>` (empty: that family from its start).
 */
export async function deploymentPage(api: ApiClient, limit: number, token?: string, family?: Family): Promise<ListPage<Deployment>> {
  const families = family ? [family] : FAMILIES;
  const colon = token?.indexOf(':') ?? -1;
  const startFamily = token === undefined ? families[0] : token.slice(0, colon);
  let index = families.indexOf(startFamily as Family);
  if (token !== undefined && (colon === -1 || index === -1)) {
    throw new UsageError(`--continue ${token} is not a token of ls${family ? ` --family ${family}` : ''}: pass the one the previous page printed`);
  }
  let apiToken = token === undefined || colon === token.length - 1 ? undefined : token.slice(colon + 1);
  const items: Deployment[] = [];
  for (; index < families.length && items.length < limit; index++, apiToken = undefined) {
    const f = families[index]!;
    const page = await api.get<ListPage<Deployment>>(withQuery(`/deployments/${f}`, { limit: limit - items.length, continue: apiToken }));
    items.push(...page.items);
    if (page.continue !== undefined) return { items, continue: `${f}:${page.continue}` };
  }
  return index < families.length ? { items, continue: `${families[index]}:` } : { items };
}

export async function getDeployment(api: ApiClient, name: string): Promise<Deployment> {
  const found = await findDeployment(api, name);
  if (!found) throw new ApiRefusal(404, 'not_found', `no deployment named ${name} (infergate ls lists them)`, null);
  return found;
}

export const routeOf = (d: Pick<Deployment, 'family' | 'id'>): string => `/deployments/${d.family}/${d.id}`;

/** Every deployment's name by its id (ids are unique across both families). */
export async function namesById(api: ApiClient): Promise<Map<number, string>> {
  // Every page of both families: a table names the deployments of each credential.
  return new Map((await listDeployments(api)).map((d) => [d.id, d.name]));
}

/**
 * The deployments a token, certificate or registry credential serves, by name for a table
 * ("chat, embed"); one that is not in the list (deleted meanwhile) by its id; "-" for none.
 */
export function deploymentNames(ids: readonly number[], names: ReadonlyMap<number, string>): string {
  return ids.map((id) => names.get(id) ?? `id ${id}`).join(', ') || '-';
}

/** "2/2" per component, for tables and progress lines. */
export function componentsSummary(d: Pick<Deployment, 'components'>): string {
  const parts = Object.entries(d.components).map(([name, c]) => `${name} ${c.ready}/${c.desired}`);
  return parts.length > 0 ? parts.join(', ') : '-';
}

/**
 * The status reason cut to fit a table cell (`max` characters at most): the middle gives way,
 * between words, so the start (what is happening) and the end (a percentage, "retrying in
 * 5 s") both stay readable; `describe` has it whole.
 */
export function shortReason(reason: string | null | undefined, max = 60): string {
  const text = (reason ?? '').replace(/\s+/g, ' ').trim();
  if (text.length <= max) return text;
  const tailLength = Math.floor((max - 3) / 3);
  const headLength = max - 3 - tailLength;
  let head = text.slice(0, headLength);
  if (text[headLength] !== ' ' && head.lastIndexOf(' ') > headLength / 2) head = head.slice(0, head.lastIndexOf(' '));
  let tail = text.slice(text.length - tailLength);
  const space = tail.indexOf(' ');
  if (text[text.length - tailLength - 1] !== ' ' && space !== -1 && space < tailLength / 2) tail = tail.slice(space + 1);
  return `${head.trimEnd()} … ${tail.trimStart()}`;
}

/** The environment for `describe`: plain variables with their values, secret ones by name only. */
export function environmentLines(d: Pick<Deployment, 'env' | 'secret_env'>): string[] {
  const plain = Object.entries(d.env ?? {}).map(([name, value]) => ({ name, line: `  ${name}=${value}` }));
  const secret = (d.secret_env ?? []).map((name) => ({ name, line: `  ${name} (secret, set)` }));
  const lines = [...plain, ...secret].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((e) => e.line);
  return lines.length > 0 ? lines : ['  none'];
}

/**
 * How a general deployment authenticates to its image registry, for `describe`: credentials
 * from the vault (named when `credentialName` is known), its own username, or none (null).
 */
export function registryLine(d: Pick<Deployment, 'registry_credential_id' | 'registry_username'>, credentialName: string | null): string | null {
  const id = d.registry_credential_id ?? null;
  if (id !== null) return `credential ${credentialName ?? `id ${id}`} (vault)`;
  if (d.registry_username) return `user ${d.registry_username} (set on the deployment)`;
  return null;
}

/**
 * Flow control in one line for `describe`: how many requests may wait past saturation and each
 * class's longest wait, and whether these are the defaults; null from a server without it.
 */
export function flowControlText(d: Pick<Deployment, 'flow_control' | 'flow_control_is_default'>): string | null {
  const fc = d.flow_control;
  if (!fc) return null;
  const source = d.flow_control_is_default ? ' (the defaults)' : '';
  if (fc.max_queue === 0) return `no queue: past saturation a request gets 429 at once${source}`;
  const waits = PRIORITIES.map((p) => `${p} ${fc.max_wait_seconds[p]} s`).join(', ');
  return `up to ${fc.max_queue} requests wait past saturation; longest wait ${waits}${source}`;
}
