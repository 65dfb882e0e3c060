// Owns the rule that credentials stay in their own fields. Deployment fields are stored and
// shown to every account that can read the deployment (members included) and reach its
// replicas, so a service-account key or an endpoint bearer token pasted into any of them —
// a name, an annotation, a command argument, a config file, a registry user — would be
// handed to all of them. The screen runs right after the shape check and rejects such a
// field before any other rule can quote its value; nothing here ever echoes one.
// Environment values (env and secret_env) have their own, stricter rule in auth-and-env-rules.ts.

import type { Req } from './shape.js';
import type { ValidationContext } from './types.js';

/** Shortest value a credential can be (the endpoint token minimum). */
export const CREDENTIAL_MIN = 8;

/**
 * Generated platform keys (`igk_`) and vault tokens (`igt_`), wherever they sit inside a longer
 * value (core/secrets.ts's prefixes, spelled here so the rules stay free of node:crypto).
 */
const GENERATED_CREDENTIAL = /ig[kt]_[A-Za-z0-9_-]{8,}/g;

/** Fields whose value is a credential by design; each has its own rule. */
const CREDENTIAL_FIELDS = new Set(['endpoint_bearer_token', 'registry_password', 'model_hub_token']);

export type CredentialKind = 'platform_key' | 'endpoint_token';

/**
 * The substrings of a value a credential could be: the whole value, its whitespace/comma/
 * quote-separated words, what follows `=` or `:` in each (`--key=…`, `Bearer:…`), and
 * generated platform keys or vault tokens anywhere in it.
 */
function candidates(value: string): Set<string> {
  const out = new Set<string>();
  const add = (c: string) => {
    if (c.length >= CREDENTIAL_MIN) out.add(c);
  };
  for (const piece of [value, value.trim(), ...value.split(/[\s,;"']+/)]) {
    add(piece);
    add(piece.slice(piece.indexOf('=') + 1));
    add(piece.slice(piece.indexOf(':') + 1));
  }
  for (const match of value.matchAll(GENERATED_CREDENTIAL)) add(match[0]);
  return out;
}

/**
 * Which credential `value` holds, or null: a service-account key, or an endpoint token (a live
 * vault token, or `ownToken`, the request's own endpoint_bearer_token).
 */
export function credentialKind(value: string, ctx: ValidationContext, ownToken?: string): CredentialKind | null {
  if (value.length < CREDENTIAL_MIN) return null;
  const hashes = [...candidates(value)].map((c) => ctx.hashToken(c));
  if (hashes.some((h) => ctx.platformKeyHashes.has(h))) return 'platform_key';
  const own = ownToken !== undefined && ownToken.length >= CREDENTIAL_MIN ? ctx.hashToken(ownToken) : null;
  if (hashes.some((h) => ctx.liveTokenHashes.has(h) || h === own)) return 'endpoint_token';
  return null;
}

function misplaced(field: string, kind: CredentialKind): string {
  if (kind === 'platform_key') {
    return (
      `${field} holds a service-account key, a platform credential for the control API; deployment fields are shown to ` +
      'everyone who can read the deployment and reach its replicas, so none may hold one: remove it (and rotate the key if it has been shared)'
    );
  }
  return (
    `${field} holds an endpoint bearer token; deployment fields are shown to everyone who can read the deployment: ` +
    'give the token in endpoint_bearer_token only'
  );
}

/**
 * The first credential under `value` (strings, object keys and values, array items): its path
 * and kind. Iterative: a body may nest a million levels deep inside a field that allows
 * unknown members (worker_pools), and recursion would overflow the stack.
 */
function findCredential(field: string, value: unknown, ctx: ValidationContext, ownToken: string | undefined): { path: string; kind: CredentialKind } | null {
  const pending: Array<{ path: string; value: unknown }> = [{ path: field, value }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { path, value: v } = next;
    if (typeof v === 'string') {
      const kind = credentialKind(v, ctx, ownToken);
      if (kind) return { path, kind };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) pending.push({ path: `${path}.${i}`, value: v[i] });
    } else if (typeof v === 'object' && v !== null) {
      const entries = Object.entries(v);
      // A key is reported as its map: its path would quote it.
      for (const [key] of entries) {
        const kind = credentialKind(key, ctx, ownToken);
        if (kind) return { path, kind };
      }
      for (const [key, item] of entries.reverse()) pending.push({ path: `${path}.${key}`, value: item });
    }
  }
  return null;
}

/** The environment maps: their names are screened here, their values in auth-and-env-rules.ts. */
const ENV_FIELDS = new Set(['env', 'secret_env']);

/**
 * Rejects every field that holds a credential it is not for. Environment values are left
 * to checkEnvironment (its messages are about replicas), and endpoint_bearer_token to checkToken.
 */
export function screenCredentials(req: Req, ctx: ValidationContext): void {
  const ownToken = typeof req.raw.endpoint_bearer_token === 'string' ? req.raw.endpoint_bearer_token : undefined;
  for (const [field, value] of Object.entries(req.raw)) {
    if (req.isBad(field) || field === 'endpoint_bearer_token') continue;
    if (CREDENTIAL_FIELDS.has(field)) {
      // A registry password or hub token reaches the runtime and the replica: never a platform key.
      if (typeof value === 'string' && credentialKind(value, ctx) === 'platform_key') {
        req.reject(field, `${field} is a service-account key, a platform credential for the control API; it cannot be used as ${field} (it would reach the replica): remove it`);
      }
      continue;
    }
    const found = ENV_FIELDS.has(field) ? findInKeys(field, value, ctx, ownToken) : findCredential(field, value, ctx, ownToken);
    if (found) req.rejectWithin(field, found.path, misplaced(found.path, found.kind));
  }
}

/** An environment map's names only (its values are checkEnvironment's). */
function findInKeys(field: string, value: unknown, ctx: ValidationContext, ownToken: string | undefined): { path: string; kind: CredentialKind } | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  for (const key of Object.keys(value)) {
    const kind = credentialKind(key, ctx, ownToken);
    if (kind) return { path: field, kind };
  }
  return null;
}
