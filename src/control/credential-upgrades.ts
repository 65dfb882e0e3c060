// Owns the start-up upgrades of credential records written by older versions, run by the
// control API before it answers: a vault registry credential with no `registry` is bound to
// the registry host of the images that use it when they agree on one, and otherwise left
// unbound (not used until an admin binds it), with a warning event on each deployment that
// pulls with it; and the `hint` older records kept (the last four characters of a password,
// token or key) is removed, so no part of a secret stays in the store or reaches an answer.
// Both are idempotent: a record already upgraded is left alone.

import { isoNow, type Clock } from '../core/clock.js';
import type { DeploymentRecord, DeploymentSpec, Kind, RegistryCredentialRecord } from '../domain/records.js';
import { REGISTRY_CREDENTIAL_EVENTS, registryHostOf, unboundCredentialMessage } from '../domain/registry-hosts.js';
import { modify, NotFoundError, type Store } from '../store/store.js';

export interface BindingResult {
  bound: { id: number; name: string; registry: string }[];
  unbound: { id: number; name: string; deployments: number[] }[];
}

/** Every spec a deployment holds (current and revisions): a rollback would pull with any of them. */
const specsOf = (d: DeploymentRecord): DeploymentSpec[] => [d.spec, ...d.revisions.map((r) => r.spec)];

/** The registry hosts of the images pulled with credential `id`, over every deployment's specs. */
function hostsUsing(id: number, deployments: readonly DeploymentRecord[]): Set<string> {
  const hosts = new Set<string>();
  for (const d of deployments) for (const s of specsOf(d)) if (s.family === 'general' && s.registry_credential_id === id) hosts.add(registryHostOf(s.image));
  return hosts;
}

/**
 * Binds each credential without `registry` to the one host its deployments pull from, or
 * marks it unbound (null) when they pull from several or none, and tells each deployment whose
 * current spec names an unbound one why its image is now pulled without it.
 */
export async function bindOlderRegistryCredentials(store: Store, clock: Clock): Promise<BindingResult> {
  const result: BindingResult = { bound: [], unbound: [] };
  const older = (await store.list('registry_credential')).map((c) => c.value).filter((c) => c.registry === undefined);
  if (older.length === 0) return result;
  const deployments = (await store.list('deployment')).map((d) => d.value);
  for (const c of older) {
    const hosts = [...hostsUsing(c.id, deployments)];
    const registry = hosts.length === 1 ? (hosts[0] ?? null) : null;
    const written = await bind(store, c, registry);
    if (!written) continue;
    if (registry !== null) {
      result.bound.push({ id: c.id, name: c.name, registry });
      continue;
    }
    const users = deployments.filter((d) => d.spec.family === 'general' && d.spec.registry_credential_id === c.id).map((d) => d.id);
    result.unbound.push({ id: c.id, name: c.name, deployments: users });
    const why = hosts.length > 1 ? ` (its deployments pull from ${hosts.sort().join(' and ')})` : '';
    for (const id of users) {
      await store.appendEvent(id, { time: isoNow(clock), type: 'warning', reason: REGISTRY_CREDENTIAL_EVENTS.unbound, message: `${unboundCredentialMessage(c)}${why}; the image is pulled without it` });
    }
  }
  return result;
}

/** Sets `registry` on a credential that still has none; false when another process did it first. */
async function bind(store: Store, c: RegistryCredentialRecord, registry: string | null): Promise<boolean> {
  let written = false;
  try {
    await modify(store, 'registry_credential', c.id, (current) => {
      // Called again on a version conflict: only the attempt that writes counts.
      written = current.registry === undefined;
      if (!written) return undefined;
      return { ...current, registry };
    });
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  return written;
}

const HINTED: readonly Kind[] = ['token', 'service_account', 'registry_credential'];

/** Removes the `hint` older token, service-account and registry-credential records kept; how many were changed. */
export async function dropStoredHints(store: Store): Promise<number> {
  let changed = 0;
  for (const kind of HINTED) {
    for (const { value } of await store.list(kind)) {
      if (!Object.hasOwn(value, 'hint')) continue;
      try {
        await modify(store, kind, value.id, (current) => {
          if (!Object.hasOwn(current, 'hint')) return undefined;
          const { hint: _hint, ...rest } = current as typeof current & { hint?: string };
          return rest as typeof current;
        });
        changed++;
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
    }
  }
  return changed;
}
