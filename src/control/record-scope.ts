// Owns the project check of a route's record, made before its body is validated: a route whose
// path names a record by id (`/deployments/general/:id/...`, `/vault/tokens/:id`, ...) answers
// 404 — the very answer of an id that does not exist — when the record is another project's,
// whatever the body. The handlers check again as they read; this check keeps a route added
// later under these paths scoped, and keeps a 400 for a bad body from being the answer to
// another project's id.

import { notFound } from '../core/errors.js';
import { projectOf } from '../domain/access.js';
import type { Kind } from '../domain/records.js';
import type { Store } from '../store/store.js';
import { HiddenByPolicy, type Principal } from './principal.js';
import { MAX_ID } from './schemas.js';

interface Scoped {
  prefix: string;
  kind: Kind;
  /** How the 404 names it, as the route's handler does: `general deployment 5 does not exist`. */
  what: string;
  family?: string;
}

const SCOPED: readonly Scoped[] = [
  { prefix: '/deployments/general/:id', kind: 'deployment', what: 'general deployment', family: 'general' },
  { prefix: '/deployments/orchestrated/:id', kind: 'deployment', what: 'orchestrated deployment', family: 'orchestrated' },
  { prefix: '/vault/tokens/:id', kind: 'token', what: 'token' },
  { prefix: '/vault/registry-credentials/:id', kind: 'registry_credential', what: 'registry credential' },
  { prefix: '/certificates/:id', kind: 'certificate', what: 'certificate' },
  { prefix: '/service-accounts/:id', kind: 'service_account', what: 'service account' },
];

/** Throws the not-found of the route's record when it names one outside the request's project. */
export async function assertRecordInProject(
  store: Store,
  request: { routeOptions: { url?: string }; params: unknown; project: string; principal: Principal | null },
): Promise<void> {
  const url = request.routeOptions.url ?? '';
  const scoped = SCOPED.find((s) => url === s.prefix || url.startsWith(`${s.prefix}/`));
  if (!scoped) return;
  const id = (request.params as { id?: unknown }).id;
  const n = typeof id === 'number' ? id : typeof id === 'string' && /^[1-9][0-9]{0,9}$/.test(id) ? Number(id) : null;
  // An id the params schema refuses (400) is left to it, after this.
  if (n === null || n > MAX_ID) return;
  const found = (await store.get(scoped.kind, n))?.value as { project?: string | null; role?: string; family?: string } | undefined;
  if (found === undefined) throw notFound(scoped.what, n);
  if (scoped.family !== undefined && found.family !== scoped.family) throw notFound(scoped.what, n);
  // The same words as a missing id; the audit log alone tells it was refused by policy.
  // An admin service account belongs to no project: only the admin sees it.
  const visible = scoped.kind === 'service_account' && found.role === 'admin' ? request.principal?.admin === true : projectOf(found) === request.project;
  if (!visible) throw new HiddenByPolicy(notFound(scoped.what, n).message);
}
