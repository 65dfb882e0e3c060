// Owns `infergate apply` and `diff`: a file (YAML or JSON; one deployment, a list, or several
// YAML documents) where each deployment is the API's create body plus `family`, matched to
// the deployments that exist by name. What is missing is created, what differs is PATCHed
// with only the fields that differ — saying beforehand whether that scales in place, takes
// effect at once or makes a revision (the same forecast as the console's) — and what matches
// is left alone. Only the fields the file names are compared: a field left out keeps its
// value. Secrets (tokens, passwords) cannot be read back, nor any part of them: an endpoint
// token, a registry password or model-hub token, like a secret environment variable, is sent
// when the deployment does not have one yet. A secret the file gives that is not sent is named
// in a warning (apply --replace-secrets sends them all), so a changed token or password is
// never dropped silently. Registry credentials are the vault's
// (registry_credential_id) or the deployment's own pair, never both: a file that switches to
// one side clears the other unless it names it. flow_control is compared by what the gateway
// applies (keys left out and null mean the defaults), not by how the file spells it; traffic by
// its entries as stored (the API's view adds the resolved revision of `latest` and tag hosts).

import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { classifyPatch, sameValue, type Body, type PatchPlan } from '../domain/patch-effect.js';
import { isAlwaysSecret } from '../domain/secret-env.js';
import { effectiveFlowControl } from '../domain/validation/limits-rules.js';
import type { ApiClient } from './api.js';
import { FAMILIES, findDeployment, listDeployments, routeOf, type Deployment, type Family } from './deployments.js';
import { ApiRefusal, UsageError } from './errors.js';

/** Write-only fields: the API never returns them, so they cannot be compared. */
const WRITE_ONLY = new Set(['endpoint_bearer_token', 'registry_password', 'model_hub_token']);

/** Write-only fields whose presence the API does show, and where: these can be compared as set or not. */
const SHOWN_AS_SET: Record<string, string> = { registry_password: 'has_registry_password', model_hub_token: 'has_model_hub_token' };

/** Whether the deployment holds a write-only secret, where the API says so. */
const holds = (current: Deployment, key: string): boolean | undefined => (SHOWN_AS_SET[key] ? current[SHOWN_AS_SET[key]] === true : undefined);

/** What patchFor knows beyond the file and the deployment. */
export interface SecretContext {
  /** Send every secret the file gives, even one the deployment has (apply --replace-secrets). */
  replaceSecrets?: boolean;
}

export interface Desired {
  family: Family;
  name: string;
  body: Body;
}

/**
 * A step of an apply. An update also lists `withheld`: the secrets the file gives that are
 * not sent (the deployment has them and they cannot be read back to compare), for a warning.
 */
export type Step =
  | { kind: 'create'; desired: Desired }
  | { kind: 'patch'; desired: Desired; current: Deployment; plan: PatchPlan; withheld: string[] }
  | { kind: 'unchanged'; desired: Desired; current: Deployment; withheld: string[] };

/** Reads a file (or standard input for `-`) into the deployments it describes. */
export function readDesired(file: string, read: (f: string) => string = (f) => readFileSync(f === '-' ? 0 : f, 'utf8')): Desired[] {
  let text: string;
  try {
    text = read(file);
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const items: unknown[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new UsageError(`${file}: ${doc.errors[0]!.message.split('\n')[0]}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (Array.isArray(value)) items.push(...(value as unknown[]));
    else if (typeof value === 'object' && Array.isArray((value as { items?: unknown }).items)) items.push(...(value as { items: unknown[] }).items);
    else items.push(value);
  }
  if (items.length === 0) throw new UsageError(`${file} describes no deployment`);
  const names = new Set<string>();
  return items.map((item, i) => {
    const where = `${file}: deployment ${i + 1}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new UsageError(`${where} is not an object`);
    const { family, ...body } = item as Body;
    if (typeof family !== 'string' || !(FAMILIES as readonly string[]).includes(family)) {
      throw new UsageError(`${where}: family must be general or orchestrated, not ${JSON.stringify(family ?? null)}`);
    }
    if (typeof body.name !== 'string' || body.name === '') throw new UsageError(`${where}: name is required`);
    if (names.has(body.name)) throw new UsageError(`${file}: ${body.name} is described twice`);
    names.add(body.name);
    return { family: family as Family, name: body.name, body };
  });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The file's environment as the API stores it: plain `env` without the names that are always
 * secret, and the secret variables (`secret_env`, plus those names from env), which can only
 * be compared by whether they are set.
 */
function splitEnvironment(body: Body): { env: unknown; secret: Record<string, unknown> } {
  const secret: Record<string, unknown> = isRecord(body.secret_env) ? { ...body.secret_env } : {};
  if (!isRecord(body.env)) return { env: body.env, secret };
  const env: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(body.env)) {
    if (!isAlwaysSecret(name)) env[name] = value;
    else if (!Object.hasOwn(secret, name)) secret[name] = value;
  }
  return { env, secret };
}

/**
 * Whether the deployment has an endpoint token: endpoint_token_id names the vault token it is
 * bound to, null when it has none (undefined when the API did not say, then nothing is sent).
 */
function holdsToken(current: Deployment): boolean | undefined {
  const id = current.endpoint_token_id;
  return id === undefined ? undefined : id !== null;
}

/**
 * Whether a write-only field of the file is sent: always with replaceSecrets (a value; null
 * only removes one the deployment has); else, like a secret variable, set when the deployment
 * has none and removed by null when it has one.
 */
function sendsSecret(key: string, raw: unknown, current: Deployment, context: SecretContext): boolean {
  const held = key === 'endpoint_bearer_token' ? holdsToken(current) : holds(current, key);
  if (held === undefined) return false;
  if (raw === null || raw === undefined) return held;
  return !held || context.replaceSecrets === true;
}

/**
 * The fields of the file that differ from the deployment as the API shows it. Secret variables,
 * the endpoint token, the registry password and the model-hub token cannot be read back: one
 * the deployment does not have is set, one it has is left alone (context.replaceSecrets sends
 * it anyway), null removes one it has.
 */
export function patchFor(desired: Desired, current: Deployment, context: SecretContext = {}): Body {
  const patch: Body = {};
  const { env, secret } = splitEnvironment(desired.body);
  for (const [key, raw] of Object.entries(desired.body)) {
    if (key === 'name' || key === 'secret_env') continue;
    if (WRITE_ONLY.has(key)) {
      if (sendsSecret(key, raw, current, context)) patch[key] = raw;
      continue;
    }
    const value = key === 'env' ? env : raw;
    if (key === 'traffic') {
      const wanted = storedTraffic(value);
      if (wanted === undefined || current.traffic === undefined || !sameValue(storedTraffic(currentTraffic(current)), wanted)) patch[key] = value;
      continue;
    }
    if (key === 'flow_control') {
      const wanted = effectiveFlowControl(value);
      if (wanted === undefined || !sameValue(effectiveFlowControl(current.flow_control), wanted)) patch[key] = value;
      continue;
    }
    if (!sameValue(current[key] ?? null, value ?? null)) patch[key] = value;
  }
  const set = new Set(current.secret_env ?? []);
  const changes = Object.entries(secret).filter(([name, value]) => (value === null ? set.has(name) : !set.has(name) || context.replaceSecrets === true));
  if (changes.length > 0) patch.secret_env = Object.fromEntries(changes);
  switchRegistry(desired.body, current, patch);
  return patch;
}

/** The deployment's own list as a file would write it; null when it has none (traffic_is_default). */
function currentTraffic(current: Deployment): unknown {
  if (current.traffic_is_default === true || current.traffic === undefined) return null;
  return current.traffic.map((t) => (t.latest ? { latest: true, percent: t.percent, tag: t.tag } : { revision: t.revision, percent: t.percent, tag: t.tag }));
}

/**
 * A traffic list as the API stores it — each entry {revision | latest, percent, tag} — for
 * comparing; null for none; undefined when it is malformed (then it is sent, and the API says why).
 */
function storedTraffic(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (!Array.isArray(value)) return undefined;
  const out: unknown[] = [];
  for (const entry of value) {
    if (!isRecord(entry) || !Object.keys(entry).every((k) => ['revision', 'latest', 'percent', 'tag'].includes(k))) return undefined;
    const latest = entry.latest === true;
    out.push({ revision: latest ? null : (entry.revision ?? null), latest, percent: entry.percent ?? null, tag: entry.tag ?? null });
  }
  return out;
}

/**
 * The secrets the file gives a value for that the patch does not carry: the deployment has
 * them and their values cannot be read back, so a changed one would be lost without a word.
 */
export function withheldSecrets(desired: Desired, patch: Body): string[] {
  const withheld: string[] = [];
  const { secret } = splitEnvironment(desired.body);
  for (const key of WRITE_ONLY) {
    const raw = desired.body[key];
    if (typeof raw !== 'string' || key in patch) continue;
    withheld.push(key);
  }
  const sent = isRecord(patch.secret_env) ? patch.secret_env : {};
  for (const [name, value] of Object.entries(secret)) if (value !== null && !(name in sent)) withheld.push(`secret_env.${name}`);
  return withheld;
}

/**
 * The API takes the vault's registry credentials (registry_credential_id) or the deployment's
 * own (registry_username and registry_password), not both. A file that moves to one side
 * clears what the deployment has of the other, unless the file names it (then the API says
 * which field is wrong).
 */
function switchRegistry(body: Body, current: Deployment, patch: Body): void {
  if (typeof patch.registry_credential_id === 'number') {
    if (!('registry_username' in body) && (current.registry_username ?? null) !== null) patch.registry_username = null;
    if (!('registry_password' in body) && holds(current, 'registry_password') === true) patch.registry_password = null;
  }
  const ownSent = ['registry_username', 'registry_password'].some((k) => typeof patch[k] === 'string' && patch[k] !== '');
  if (ownSent && !('registry_credential_id' in body) && (current.registry_credential_id ?? null) !== null) patch.registry_credential_id = null;
}

/** Up to this many deployments in a file are looked up by name; more, and every page of both lists is read once. */
const LOOKUPS_MAX = 20;

export async function planApply(api: ApiClient, desired: readonly Desired[], options: { replaceSecrets?: boolean } = {}): Promise<Step[]> {
  const existing =
    desired.length > LOOKUPS_MAX
      ? await listDeployments(api)
      : (await Promise.all(desired.map((d) => findDeployment(api, d.name)))).filter((d): d is Deployment => d !== null);
  return Promise.all(
    desired.map(async (d): Promise<Step> => {
      const current = existing.find((e) => e.name === d.name);
      if (!current) return { kind: 'create', desired: d };
      if (current.family !== d.family) throw new UsageError(`${d.name} exists as a ${current.family} deployment, not ${d.family}; delete it first or rename`);
      const patch = patchFor(d, current, { replaceSecrets: options.replaceSecrets });
      const withheld = withheldSecrets(d, patch);
      if (Object.keys(patch).length === 0) return { kind: 'unchanged', desired: d, current, withheld };
      return { kind: 'patch', desired: d, current, plan: classifyPatch(patch, current.revision), withheld };
    }),
  );
}

/**
 * One warning line for each update that leaves secrets of the file unsent, naming them and
 * what to do; none when every secret the file gives is sent (or known to match).
 */
export function withheldWarnings(steps: readonly Step[], file: string): string[] {
  return steps.flatMap((step) => {
    if (step.kind === 'create' || step.withheld.length === 0) return [];
    const name = step.desired.name;
    const fields = step.withheld;
    const one = fields.length === 1;
    const listed = one ? fields[0]! : `${fields.slice(0, -1).join(', ')} and ${fields.at(-1)!}`;
    return [
      `warning: ${name}: ${listed} in ${file === '-' ? 'standard input' : file} ${one ? 'is' : 'are'} not sent: ${name} has ${one ? 'one' : 'them'} already, ` +
        `and secrets cannot be read back to compare; if ${one ? 'it' : 'they'} changed, apply --replace-secrets sends the file's values`,
    ];
  });
}

/** One line per step, as `apply --dry-run` and `diff` print it. */
export function describeStep(step: Step): string {
  const label = `${step.desired.family}/${step.desired.name}`;
  if (step.kind === 'create') return `${label}: will be created`;
  if (step.kind === 'unchanged') return `${label}: unchanged`;
  return `${label}: ${step.plan.statement}`;
}

/** The field-by-field difference, for `diff`; secrets by name, never their values nor any part of them. */
export function describeChanges(step: Step): string[] {
  if (step.kind !== 'patch') return [];
  return Object.entries(step.plan.patch).map(([key, value]) => {
    if (WRITE_ONLY.has(key)) {
      const held = key === 'endpoint_bearer_token' ? holdsToken(step.current) : holds(step.current, key);
      return `  ${key}: ${held ? 'set' : 'not set'} → ${value === null ? 'removed' : 'set'} (value not shown)`;
    }
    if (key !== 'secret_env' || !isRecord(value)) return `  ${key}: ${JSON.stringify(step.current[key] ?? null)} → ${JSON.stringify(value)}`;
    const names = (removed: boolean) => Object.keys(value).filter((n) => (value[n] === null) === removed);
    const parts = [names(false).length > 0 ? `set ${names(false).join(', ')}` : '', names(true).length > 0 ? `remove ${names(true).join(', ')}` : ''];
    return `  secret_env: ${parts.filter(Boolean).join('; ')} (values not shown)`;
  });
}

/** Performs a step; returns the line saying what happened, and the deployment after it. */
export async function performStep(api: ApiClient, step: Step): Promise<{ line: string; deployment: Deployment }> {
  const label = `${step.desired.family}/${step.desired.name}`;
  if (step.kind === 'unchanged') return { line: `${label} unchanged`, deployment: step.current };
  if (step.kind === 'create') {
    const created = await api.call<Deployment>('POST', `/deployments/${step.desired.family}`, step.desired.body);
    return { line: `${label} created (revision ${created.revision})`, deployment: created };
  }
  const after = await api.call<Deployment>('PATCH', routeOf(step.current), step.plan.patch);
  const what =
    after.revision > step.current.revision
      ? `revision ${after.revision} rolling out (${step.plan.revisionFields.join(', ')} changed)`
      : step.plan.effect === 'scale'
        ? `scaled in place, no new revision (${step.plan.scaleFields.join(', ')})`
        : `changed at once, no revision (${step.plan.atOnceFields.join(', ')})`;
  return { line: `${label} ${what}`, deployment: after };
}
