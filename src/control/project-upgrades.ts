// Owns the start-up upgrade of an installation made before projects existed, run by the
// control API before it answers: the `default` project is created when missing; every
// deployment, vault token, registry credential, certificate and usage record without a
// project is written into `default`; a service account of the old `member` role becomes a
// developer of `default`, and an admin says it has no project. Nothing else changes: unique
// keys of default-project records are the bare names they always were, so no record is
// re-keyed and no endpoint address moves. Idempotent, and safe with two processes upgrading
// one store at once: the project is claimed by its unique name, and every record is changed
// by compare-and-set only while it still lacks a project.

import { isoNow, type Clock } from '../core/clock.js';
import { DEFAULT_PROJECT } from '../domain/access.js';
import type { Kind, RecordMap, ServiceAccountRecord } from '../domain/records.js';
import { ConflictError, modify, NotFoundError, type Store } from '../store/store.js';

/** The unique index of project names: a project is created with its name claimed here. */
export const PROJECT_NAME_INDEX = 'project-name';

/** What the upgrade logs through: pino's or fastify's logger. */
export interface UpgradeLogger {
  info(obj: object, msg?: string): void;
}

/** The kinds whose records name their project, every one of them older than projects possibly without it. */
const OWNED_KINDS = ['deployment', 'token', 'registry_credential', 'certificate', 'usage'] as const satisfies readonly Kind[];
type OwnedKind = (typeof OWNED_KINDS)[number];

export interface ProjectUpgradeResult {
  /** This process created the `default` project record (false: it was there, or another process made it). */
  createdDefault: boolean;
  /** Records this process wrote `project: 'default'` into, by kind. */
  moved: Record<OwnedKind, number>;
  /** Service accounts this process changed: members made developers of `default`, admins given `project: null`. */
  accounts: number;
}

/** Creates the `default` project unless it exists; true when this call created it. */
export async function ensureDefaultProject(store: Store, clock: Clock): Promise<boolean> {
  if (await store.lookup(PROJECT_NAME_INDEX, DEFAULT_PROJECT)) return false;
  const now = isoNow(clock);
  try {
    await store.create('project', (id) => ({ id, name: DEFAULT_PROJECT, gpu_quota: null, members: [], created_at: now, updated_at: now }), {
      unique: [{ index: PROJECT_NAME_INDEX, key: DEFAULT_PROJECT }],
    });
    return true;
  } catch (err) {
    // Another process starting at the same time made it first.
    if (err instanceof ConflictError) return false;
    throw err;
  }
}

/** The account as it reads after the upgrade, or undefined when it needs no change. */
export function upgradedAccount(a: ServiceAccountRecord): ServiceAccountRecord | undefined {
  if (a.role === 'admin') return a.project === undefined ? { ...a, project: null } : undefined;
  if (a.role === 'member') return { ...a, role: 'developer', project: a.project ?? DEFAULT_PROJECT };
  return a.project === undefined || a.project === null ? { ...a, project: DEFAULT_PROJECT } : undefined;
}

/** Applies `change` to one record by compare-and-set; false when it needed none or is gone. */
async function upgradeOne<K extends Kind>(store: Store, kind: K, id: number, change: (current: RecordMap[K]) => RecordMap[K] | undefined): Promise<boolean> {
  let written = false;
  try {
    await modify(store, kind, id, (current) => {
      // Called again on a version conflict: only the attempt that writes counts.
      const next = change(current);
      written = next !== undefined;
      return next;
    });
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  return written;
}

/** Brings a store written before projects into the `default` project; a store already upgraded is left as it is. */
export async function upgradeToProjects(store: Store, clock: Clock, logger?: UpgradeLogger): Promise<ProjectUpgradeResult> {
  const createdDefault = await ensureDefaultProject(store, clock);
  const moved = Object.fromEntries(OWNED_KINDS.map((k) => [k, 0])) as Record<OwnedKind, number>;
  for (const kind of OWNED_KINDS) {
    for (const { value } of await store.list(kind)) {
      if (value.project !== undefined) continue;
      const changed = await upgradeOne(store, kind, value.id, (current) => (current.project === undefined ? { ...current, project: DEFAULT_PROJECT } : undefined));
      if (changed) moved[kind]++;
    }
  }
  let accounts = 0;
  for (const { value } of await store.list('service_account')) {
    if (upgradedAccount(value) === undefined) continue;
    if (await upgradeOne(store, 'service_account', value.id, upgradedAccount)) accounts++;
  }
  const total = Object.values(moved).reduce((a, b) => a + b, 0);
  if (createdDefault) logger?.info({ project: DEFAULT_PROJECT }, 'created the default project');
  if (total > 0 || accounts > 0) {
    logger?.info({ records: moved, service_accounts: accounts }, `moved ${total} records from before projects into the default project and upgraded ${accounts} service accounts (member → developer of default); their names, keys and endpoint addresses are unchanged`);
  }
  return { createdDefault, moved, accounts };
}
