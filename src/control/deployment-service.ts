// Owns the deployment operations behind the control API: create, read, edit, pause,
// resume, roll back, clone and delete, as changes of desired state in the store. It keeps
// the spec's revision rule (a spec edit makes a revision, a replica-count change does not;
// traffic and the rollout mode apply at once, and a manual rollout's new revision — a spec
// edit or a rollback — starts at 0 %), checks quota and hardware on every change that can grow
// a footprint (a traffic split counts each of its revisions), and the host-command
// rule (who may make a spec that runs its command on this host) on every change that writes
// a spec. Every operation acts within one project: a deployment of another project is answered
// as one that does not exist, names are unique per project, references (tokens, certificates,
// registry credentials) resolve only within it, and the project's GPU quota is checked beside
// the cluster's. It never starts processes: the controller acts on what it writes.

import { isoNow, type Clock } from '../core/clock.js';
import { notFound, PlatformError } from '../core/errors.js';
import { sha256Hex, type Sealer } from '../core/secrets.js';
import type { Catalog } from '../domain/catalog.js';
import { containerCapabilitiesOf, containerCapabilitiesRefusal } from '../domain/container-capabilities.js';
import { hostCommandRefusal, runsHostCommand, type HostCommandPolicy } from '../domain/host-commands.js';
import { projectOf } from '../domain/access.js';
import { isAlwaysSecret } from '../domain/secret-env.js';
import type { ImageMap } from '../domain/image-map.js';
import type { RegistryGate } from '../domain/ports.js';
import { pulledFromRegistry, registryHostOf, registryRefusal } from '../domain/registry-hosts.js';
import { checkCapacityAgainst, projectQuotaProblem, type Holdings, type Placement } from '../domain/quota.js';
import type {
  DeploymentRecord,
  DeploymentSpec,
  Family,
  ProjectRecord,
  RevisionRecord,
  SealedSecrets,
} from '../domain/records.js';
import { rolloutModeOf } from '../domain/traffic.js';
import {
  pinnedForManualRollout,
  validateClone,
  validateCreate,
  validatePatch,
  type DeploymentDraft,
  type ValidationContext,
} from '../domain/validate.js';
import { ConflictError, modify, type Store } from '../store/store.js';
import { CERTIFICATE_NAME_INDEX, type CertificateService } from './certificate-service.js';
import type { RecordIndex } from './record-index.js';
import { uniqueKey, type CallerRole } from './caller.js';
import { PROJECT_NAME_INDEX } from './project-upgrades.js';

export const NAME_INDEX = 'deployment-name';
export const TOKEN_HASH_INDEX = 'token-hash';
/** The store's unique index of project names (the project kind), made where records are upgraded to projects. */
export { PROJECT_NAME_INDEX };

/** Who acts and where: the project of the request and the caller's role in it. */
export interface Acting {
  project: string;
  role: CallerRole;
}

export interface DeploymentServiceDeps {
  store: Store;
  catalog: Catalog;
  images: ImageMap;
  gpuQuota: number;
  sealer: Sealer;
  clock: Clock;
  /** Issues the client certificate of a private endpoint. */
  certificates: CertificateService;
  /** Who may write a spec that runs its command on this host. */
  hostCommands: HostCommandPolicy;
  /** Which registry hosts the container daemon may pull from; absent: the default rule with no lookups. */
  registries?: RegistryGate;
  /** Names, credentials and quota holdings of every record, kept from the change feed. */
  index: RecordIndex;
}

/** The default rule (any host but loopback, link-local and unspecified) for an app built without a gate. */
const DEFAULT_GATE: RegistryGate = {
  refusal: (host) => Promise.resolve(registryRefusal(host, [], { resolved: [], own: { addresses: new Set(), ports: new Set() } })),
};

export class DeploymentService {
  constructor(private readonly deps: DeploymentServiceDeps) {}

  /** The project's deployments of a family. */
  async list(family: Family, project: string): Promise<DeploymentRecord[]> {
    const all = await this.deps.store.list('deployment');
    return all.map((d) => d.value).filter((d) => d.family === family && projectOf(d) === project);
  }

  /** The project's deployment of this family named `name`, if any (the store's name index: no list). */
  async findByName(family: Family, name: string, project: string): Promise<DeploymentRecord | undefined> {
    const hit = await this.deps.store.lookup(NAME_INDEX, uniqueKey(project, name));
    if (hit?.kind !== 'deployment') return undefined;
    const found = await this.deps.store.get('deployment', hit.id);
    const d = found?.value;
    return d?.family === family && d.name === name && projectOf(d) === project ? d : undefined;
  }

  /** The deployment, if it is the project's; another project's is answered as one that does not exist. */
  async get(family: Family, id: number, project: string): Promise<DeploymentRecord> {
    const found = await this.deps.store.get('deployment', id);
    if (!found || found.value.family !== family || projectOf(found.value) !== project) throw notFound(`${family} deployment`, id);
    return found.value;
  }

  /** `as`: the request's project (the deployment's) and the caller's role, for the host-command rule. */
  async create(family: Family, body: unknown, as: Acting): Promise<DeploymentRecord> {
    const ctx = await this.context(as.project);
    const draft = unwrap(validateCreate(family, body, ctx));
    this.assertHostCommandAllowed(draft.spec, as.role);
    await this.assertRegistryAllowed(draft.spec, null);
    return this.insert(draft, ctx, 'create', {}, as.project);
  }

  /** A copy within the source's project (the request's: another project's source does not exist here). */
  async clone(family: Family, sourceId: number, body: unknown, as: Acting): Promise<DeploymentRecord> {
    const source = await this.get(family, sourceId, as.project);
    const ctx = await this.context(as.project);
    const draft = unwrap(validateClone(source, body, ctx));
    // The clone's spec is written anew by this caller, even when it is the source's unchanged.
    this.assertHostCommandAllowed(draft.spec, as.role);
    await this.assertRegistryAllowed(draft.spec, null);
    return this.insert(draft, ctx, 'clone', source.spec.secrets, as.project);
  }

  /**
   * Only a spec change is held to the host-command rule: scaling, endpoint credentials,
   * pause, resume, rollback and delete of a deployment an admin made stay open to members.
   */
  async patch(family: Family, id: number, body: unknown, as: Acting): Promise<DeploymentRecord> {
    const { project, role } = as;
    const before = await this.get(family, id, project);
    const ctx = await this.context(project, id);
    const { store, clock } = this.deps;
    // Fail fast before a new token value is registered in the vault.
    const first = unwrap(validatePatch(before, body, ctx));
    if (first.specChanged) this.assertHostCommandAllowed(first.draft.spec, role);
    // The body's image is the same on every retry below: checked once, before anything is written.
    if (first.specChanged) await this.assertRegistryAllowed(first.draft.spec, before.spec);
    // ...and before a certificate is issued: a refusal (rules or quota) issues nothing.
    if (needsCertificate(first.draft)) this.assertCapacity(first.draft, ctx);
    const newTokenId = first.draft.auth.token_value
      ? await this.ensureToken(first.draft.auth.token_value, `${before.name}-endpoint`, project)
      : null;
    // Turning private_endpoint on without naming a certificate issues one, before the write.
    const issued = needsCertificate(first.draft) ? await this.issueCertificate(before.name, id, project) : null;
    let updated: DeploymentRecord;
    try {
      // Validated again inside the compare-and-set loop so a concurrent edit is never lost.
      updated = (
        await modify(store, 'deployment', id, (current) => {
          const { draft, specChanged, scalingChanged, authChanged, limitsChanged, trafficChanged, rolloutModeChanged } = unwrap(validatePatch(current, body, ctx));
          if (!specChanged && !scalingChanged && !authChanged && !limitsChanged && !trafficChanged && !rolloutModeChanged) return undefined;
          if (specChanged) this.assertHostCommandAllowed(draft.spec, role);
          const now = isoNow(clock);
          // Traffic and the rollout mode are desired state outside revisions: applied at once.
          const next: DeploymentRecord = {
            ...current,
            scaling: draft.scaling,
            limits: draft.limits,
            auth: {
              ...pickAuth(draft),
              token_id: newTokenId ?? draft.auth.token_id,
              // A certificate bound by a concurrent edit wins over the one issued here.
              client_certificate_id: draft.auth.client_certificate_id ?? (needsCertificate(draft) ? (issued?.id ?? null) : null),
            },
            traffic: draft.traffic,
            rollout_mode: draft.rollout_mode,
            updated_at: now,
          };
          const sealed = () => ({ ...draft.spec, secrets: this.sealSecrets(draft, current.spec.secrets) }) as DeploymentSpec;
          const after = specChanged ? withNewRevision(next, sealed(), 'update', null, now) : next;
          // The record as it will be, revisions and traffic included: a split runs each of its revisions.
          this.assertCapacity(after, ctx);
          return after;
        })
      ).value;
    } catch (err) {
      if (issued) await this.deps.certificates.discard(issued.id);
      throw err;
    }
    const boundId = updated.auth.client_certificate_id;
    const previousId = before.auth.client_certificate_id;
    if (issued && boundId !== issued.id) await this.deps.certificates.discard(issued.id);
    if (boundId !== null && boundId !== previousId) await this.deps.certificates.bind(boundId, id);
    // private_endpoint: false (or another certificate): the old one no longer names this deployment.
    if (previousId !== null && boundId !== previousId) await this.deps.certificates.unbind(previousId, id);
    return updated;
  }

  async pause(family: Family, id: number, project: string): Promise<DeploymentRecord> {
    await this.get(family, id, project);
    return (
      await modify(this.deps.store, 'deployment', id, (d) => {
        if (d.paused) throw new PlatformError('conflict', `deployment ${d.name} is already paused; POST .../resume to resume it`);
        // Spec: pausing an in-progress orchestrated rollout is unsupported.
        if (d.family === 'orchestrated' && d.rollout?.state === 'in_progress') {
          const from = d.rollout.from_revision === null ? '' : ` from revision ${d.rollout.from_revision}`;
          throw new PlatformError(
            'conflict',
            `deployment ${d.name} cannot be paused while its rollout to revision ${d.rollout.revision}${from} is in progress; wait for it to finish (or fail), then pause`,
          );
        }
        return { ...d, paused: true, status: 'paused', updated_at: isoNow(this.deps.clock) };
      })
    ).value;
  }

  async resume(family: Family, id: number, project: string): Promise<DeploymentRecord> {
    await this.get(family, id, project);
    return (
      await modify(this.deps.store, 'deployment', id, (d) => {
        if (!d.paused) throw new PlatformError('conflict', `deployment ${d.name} is not paused`);
        return { ...d, paused: false, status: 'pending', updated_at: isoNow(this.deps.clock) };
      })
    ).value;
  }

  /** Makes revision `target`'s spec current again, as a new revision that records its source. */
  async rollback(family: Family, id: number, target: number, project: string): Promise<DeploymentRecord> {
    await this.get(family, id, project);
    const ctx = await this.context(project, id);
    return (
      await modify(this.deps.store, 'deployment', id, (d) => {
        const source = d.revisions.find((r) => r.revision === target);
        if (!source) {
          throw new PlatformError('not_found', `deployment ${d.name} has no revision ${target}; GET .../revisions lists them`, {
            field: 'revision',
          });
        }
        if (target === d.revision) {
          throw new PlatformError('conflict', `revision ${target} is already the current revision of ${d.name}`, { field: 'revision' });
        }
        const now = isoNow(this.deps.clock);
        // Manual mode: the rollback's revision starts at 0 %, like any new revision, until traffic moves.
        const traffic = rolloutModeOf(d) === 'manual' ? pinnedForManualRollout(d) : (d.traffic ?? null);
        const after = withNewRevision({ ...d, traffic }, source.spec, 'rollback', target, now);
        this.assertCapacity(after, ctx);
        return after;
      })
    ).value;
  }

  /** Removes the desired state; the controller drains and stops what was running for it. */
  async delete(family: Family, id: number, project: string): Promise<DeploymentRecord> {
    const found = await this.get(family, id, project);
    await this.deps.store.delete('deployment', id);
    return found;
  }

  /**
   * Records written before secret variables existed may hold an always-secret name (the vendor
   * container's REGISTRY_API_KEY) in plain env, in the current spec and in revisions: each is
   * moved to the sealed set, so no such value stays readable at rest. The variable, its value
   * and every revision's meaning are unchanged (the controller merges both sets), so nothing
   * restarts. Idempotent; run when the control API starts. The number of deployments sealed.
   */
  async sealLegacySecretEnv(): Promise<number> {
    let sealed = 0;
    for (const { value: d } of await this.deps.store.list('deployment')) {
      if (![d.spec, ...d.revisions.map((r) => r.spec)].some(hasLegacySecretEnv)) continue;
      await modify(this.deps.store, 'deployment', d.id, (current) => this.withLegacySecretEnvSealed(current));
      sealed++;
    }
    return sealed;
  }

  private withLegacySecretEnvSealed(d: DeploymentRecord): DeploymentRecord | undefined {
    if (![d.spec, ...d.revisions.map((r) => r.spec)].some(hasLegacySecretEnv)) return undefined;
    // One sealing per distinct spec: the current spec stays the very spec of its revision.
    const done = new Map<string, DeploymentSpec>();
    const upgrade = (spec: DeploymentSpec): DeploymentSpec => {
      const key = JSON.stringify(spec);
      const known = done.get(key);
      if (known) return known;
      const env: Record<string, string> = {};
      const secrets: Record<string, string> = { ...spec.secrets.env };
      for (const [name, value] of Object.entries(spec.env)) {
        if (!isAlwaysSecret(name)) env[name] = value;
        // A sealed value of the same name is the one the replica got (it wins the merge).
        else secrets[name] ??= this.deps.sealer.seal(value);
      }
      const next = { ...spec, env, secrets: { ...spec.secrets, ...(Object.keys(secrets).length > 0 ? { env: secrets } : {}) } } as DeploymentSpec;
      done.set(key, next);
      return next;
    };
    return { ...d, spec: upgrade(d.spec), revisions: d.revisions.map((r) => ({ ...r, spec: upgrade(r.spec) })) };
  }

  /**
   * What validation needs to know about everything else in the store, from the record index:
   * nothing here reads every record, and the quota arrives summed. Names, tokens, certificates
   * and registry credentials are the project's (another project's are as good as absent);
   * values are screened against every credential of every project. `held`: what every other
   * deployment holds; `projectHeld`: what the project's other deployments hold, and its quota.
   */
  async context(project: string, excludeId?: number): Promise<ValidationContext & Capacity> {
    const index = await this.deps.index.current();
    const others = index.deployments(project).filter((d) => d.id !== excludeId);
    return {
      catalog: this.deps.catalog,
      hashToken: sha256Hex,
      liveTokenHashes: index.tokenHashes(),
      tokenIds: index.tokenIds(project),
      platformKeyHashes: index.platformKeyHashes(),
      certificateIds: index.liveCertificateIds(project),
      registryCredentials: index.registryCredentials(project),
      takenNames: new Set(others.map((d) => d.name)),
      otherDeployments: others,
      images: this.deps.images,
      imagesRunThemselves: this.deps.hostCommands.containers === true,
      held: index.holdings(excludeId),
      project,
      projectHeld: index.holdings(excludeId, project),
      projectQuota: (await this.projectRecord(project))?.gpu_quota ?? null,
    };
  }

  /** The project's record (its GPU quota); undefined before the start-up migration made `default`. */
  async projectRecord(project: string): Promise<ProjectRecord | undefined> {
    const hit = await this.deps.store.lookup(PROJECT_NAME_INDEX, project);
    if (hit?.kind !== 'project') return undefined;
    return (await this.deps.store.get('project', hit.id))?.value;
  }

  private async insert(
    draft: DeploymentDraft,
    ctx: Capacity & { takenNames: ReadonlySet<string> },
    reason: 'create' | 'clone',
    inherited: SealedSecrets,
    project: string,
  ): Promise<DeploymentRecord> {
    const { store, clock } = this.deps;
    this.assertCapacity(draft, ctx);
    if (ctx.takenNames.has(draft.name)) throw nameConflict(draft.name);
    const tokenId = draft.auth.token_value
      ? await this.ensureToken(draft.auth.token_value, `${draft.name}-endpoint`, project)
      : draft.auth.token_id;
    // Issued after every check that can refuse the create, so a refusal issues nothing.
    const certificate = needsCertificate(draft) ? await this.issueCertificate(draft.name, null, project) : null;
    const certificateId = certificate?.id ?? draft.auth.client_certificate_id;
    const now = isoNow(clock);
    const spec = { ...draft.spec, secrets: this.sealSecrets(draft, inherited) } as DeploymentSpec;
    const revision: RevisionRecord = { revision: 1, created_at: now, reason, source_revision: null, status: 'pending', spec };
    let created: DeploymentRecord;
    try {
      created = (
        await store.create(
          'deployment',
          (id) => ({
            id,
            project,
            family: draft.family,
            name: draft.name,
            cluster_id: draft.cluster_id,
            spec,
            scaling: draft.scaling,
            limits: draft.limits,
            auth: { ...pickAuth(draft), token_id: tokenId, client_certificate_id: certificateId },
            traffic: draft.traffic,
            rollout_mode: draft.rollout_mode,
            revision: 1,
            revisions: [revision],
            paused: false,
            status: 'pending',
            created_at: now,
            updated_at: now,
          }),
          { unique: [{ index: NAME_INDEX, key: uniqueKey(project, draft.name) }] },
        )
      ).value;
    } catch (err) {
      // Lost a name race (or the store failed): the certificate issued for it goes too.
      if (certificate) await this.deps.certificates.discard(certificate.id);
      if (err instanceof ConflictError) throw nameConflict(draft.name);
      throw err;
    }
    // After the insert, outside the cleanup above: the deployment now refers to the certificate.
    if (certificateId !== null) await this.deps.certificates.bind(certificateId, created.id);
    return created;
  }

  /** A client certificate for a private endpoint, named after the deployment, in its project. */
  private async issueCertificate(deploymentName: string, deploymentId: number | null, project: string) {
    for (let n = 1; ; n++) {
      const name = n === 1 ? `${deploymentName}-client` : `${deploymentName}-client-${n}`;
      // Names of deleted deployments' certificates stay taken: take the next free suffix.
      if (await this.deps.store.lookup(CERTIFICATE_NAME_INDEX, uniqueKey(project, name))) continue;
      try {
        return await this.deps.certificates.create({ name, deployment_id: deploymentId }, project);
      } catch (err) {
        if (!(err instanceof PlatformError && err.code === 'conflict')) throw err;
      }
    }
  }

  /**
   * Binds a token value: the project's vault token with that value, or a new vault entry of the
   * project. A value that is another project's token is refused: binding it would hand this
   * deployment a credential that project manages (its cap, its deletion).
   */
  private async ensureToken(value: string, name: string, project: string): Promise<number> {
    const { store, clock } = this.deps;
    const hash = sha256Hex(value);
    for (;;) {
      const existing = await store.lookup(TOKEN_HASH_INDEX, hash);
      if (existing) {
        const token = await store.get('token', existing.id);
        if (token && projectOf(token.value) !== project) {
          throw new PlatformError('invalid_field', 'endpoint_bearer_token cannot take this value; choose another (POST /vault/tokens makes one)', { field: 'endpoint_bearer_token' });
        }
        if (token) return existing.id;
        continue; // deleted since the lookup: make it anew
      }
      try {
        const created = await store.create(
          'token',
          (id) => ({ id, project, name, hash, created_at: isoNow(clock) }),
          { unique: [{ index: TOKEN_HASH_INDEX, key: hash }] },
        );
        return created.value.id;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err; // lost a race: the winner's id is found next
      }
    }
  }

  /**
   * 400 naming `image` when the container daemon may not pull from the image's registry host
   * (--registries; loopback, link-local and this service's own listeners by default), so the
   * daemon is never sent there. Only where images run in containers, and only for an image
   * that is pulled (infergate's own engine and Frontend are not) and that changes.
   */
  private async assertRegistryAllowed(spec: DeploymentSpec, before: DeploymentSpec | null): Promise<void> {
    if (spec.family !== 'general' || this.deps.hostCommands.containers !== true) return;
    if (before?.family === 'general' && before.image === spec.image) return;
    if (!pulledFromRegistry(this.deps.images, spec.image, spec.tag)) return;
    const refusal = await (this.deps.registries ?? DEFAULT_GATE).refusal(registryHostOf(spec.image));
    if (refusal) throw new PlatformError('invalid_field', `image ${spec.image} cannot be pulled: ${refusal}`, { field: 'image' });
  }

  /**
   * 403 when this caller may not write this spec: one that runs its command on this host, or
   * one whose containers keep capabilities (both an admin's choice).
   */
  private assertHostCommandAllowed(spec: DeploymentSpec, role: CallerRole): void {
    const capabilities = spec.family === 'general' ? containerCapabilitiesRefusal(role === 'admin', containerCapabilitiesOf(spec)) : null;
    if (capabilities) throw new PlatformError('forbidden', capabilities, { field: 'container_capabilities' });
    if (!runsHostCommand(spec, this.deps.images)) return;
    const refusal = hostCommandRefusal(this.deps.hostCommands, role);
    if (refusal) throw new PlatformError('forbidden', refusal.message);
  }

  /**
   * The cluster's quota and instances against what every other deployment holds, and the
   * project's GPU quota against what its other deployments hold (the candidate's own stored
   * copy excluded from both).
   */
  private assertCapacity(candidate: Placement, capacity: Capacity): void {
    const problems = [
      ...projectQuotaProblem(candidate, capacity.projectHeld, capacity.project, capacity.projectQuota, this.deps.catalog),
      ...checkCapacityAgainst(candidate, capacity.held, this.deps.catalog, this.deps.gpuQuota),
    ];
    if (problems.length > 0) throw PlatformError.fromProblems(problems);
  }

  private sealSecrets(draft: DeploymentDraft, inherited: SealedSecrets): SealedSecrets {
    const { env: inheritedEnv, ...rest } = inherited;
    const out: SealedSecrets = { ...rest };
    for (const key of ['registry_password', 'model_hub_token'] as const) {
      const plain = draft.plainSecrets[key];
      if (plain === null) delete out[key];
      else if (typeof plain === 'string') out[key] = this.deps.sealer.seal(plain);
    }
    // Name by name: a variable the request does not name keeps its sealed value.
    const env = new Map(Object.entries(inheritedEnv ?? {}));
    for (const [name, plain] of Object.entries(draft.plainSecrets.env ?? {})) {
      if (plain === null) env.delete(name);
      else env.set(name, this.deps.sealer.seal(plain));
    }
    if (env.size > 0) out.env = Object.fromEntries([...env].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    return out;
  }
}

/** What the capacity checks of a change need: the cluster's holdings, and the project's with its quota. */
interface Capacity {
  held: Holdings;
  project: string;
  projectHeld: Holdings;
  projectQuota: number | null;
}

/** An always-secret name kept in plain env by a record from before secret variables. */
function hasLegacySecretEnv(spec: DeploymentSpec): boolean {
  return Object.keys(spec.env).some(isAlwaysSecret);
}

function nameConflict(name: string): PlatformError {
  return new PlatformError('conflict', `name "${name}" is already used by another deployment`, { field: 'name' });
}

function unwrap<T>(result: { ok: true; value: T } | { ok: false; problems: import('../core/errors.js').FieldProblem[] }): T {
  if (!result.ok) throw PlatformError.fromProblems(result.problems);
  return result.value;
}

/** private_endpoint asks for a certificate; one is issued unless the request names one. */
function needsCertificate(draft: Pick<DeploymentDraft, 'auth'>): boolean {
  return draft.auth.private_endpoint && draft.auth.client_certificate_id === null;
}

function pickAuth(draft: DeploymentDraft): { client_certificate_id: number | null; private_endpoint: boolean } {
  return { client_certificate_id: draft.auth.client_certificate_id, private_endpoint: draft.auth.private_endpoint };
}

/**
 * Appends revision N+1 with `spec` and makes it current. The revision serving now keeps its
 * status: the controller retires it once N+1 has replaced its replicas (or it stays ready
 * when N+1 fails).
 */
function withNewRevision(
  d: DeploymentRecord,
  spec: DeploymentSpec,
  reason: RevisionRecord['reason'],
  source: number | null,
  now: string,
): DeploymentRecord {
  const number = Math.max(...d.revisions.map((r) => r.revision)) + 1;
  const revisions = [...d.revisions, { revision: number, created_at: now, reason, source_revision: source, status: 'pending' as const, spec }];
  return { ...d, spec, revision: number, revisions, updated_at: now };
}
