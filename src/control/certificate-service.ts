// Owns client certificates as the control API manages them: issuing one (the private key
// sealed before it reaches the store), listing, the .pem a client uses (certificate and
// unsealed key in one file), revocation, binding to deployments, and the cap on the
// X-Priority class of its requests (max_priority). Keys are ECDSA P-256 unless the request asks
// for RSA-2048 (key_type): an EC key takes well under a millisecond, an RSA one about 100 ms of
// key generation on the thread pool. Certificates belong to a project: names are unique per
// project, and another project's certificate (or deployment) is answered as one that does not exist.

import { isoNow, type Clock } from '../core/clock.js';
import { notFound, PlatformError } from '../core/errors.js';
import type { Sealer } from '../core/secrets.js';
import { DEFAULT_CLIENT_KEY_TYPE, type KeyType } from '../domain/client-certificates.js';
import type { Priority } from '../domain/priority.js';
import { projectOf } from '../domain/access.js';
import { uniqueKey } from './caller.js';
import type { CertificateRecord } from '../domain/records.js';
import type { CertificateAuthority } from '../pki/ca.js';
import { issueClientCertificate } from '../pki/client-certs.js';
import { ConflictError, modify, NotFoundError, type Store } from '../store/store.js';

export const CERTIFICATE_NAME_INDEX = 'certificate-name';

export interface CertificateServiceDeps {
  store: Store;
  sealer: Sealer;
  clock: Clock;
  ca: CertificateAuthority;
}

/** What POST /certificates asks for; the name's syntax is checked at the API edge (schemas.ts). */
export interface CertificateCreateSpec {
  name: string;
  /** The deployment the certificate is for; it must exist. */
  deployment_id?: number | null;
  /** The highest X-Priority class its requests get; absent or null: no cap. */
  max_priority?: Priority | null;
  /** The private key's type; absent: ecdsa-p256. */
  key_type?: KeyType;
}

export class CertificateService {
  constructor(private readonly deps: CertificateServiceDeps) {}

  /** Issues a certificate of `project`; the deployment it is for must be the project's. */
  async create(spec: CertificateCreateSpec, project: string): Promise<CertificateRecord> {
    const { store, sealer, clock, ca } = this.deps;
    const { name } = spec;
    const deploymentId = spec.deployment_id ?? null;
    const deployment = deploymentId === null ? undefined : await store.get('deployment', deploymentId);
    if (deploymentId !== null && (!deployment || projectOf(deployment.value) !== project)) {
      throw new PlatformError('invalid_field', `deployment ${deploymentId} does not exist; GET /deployments/general or /deployments/orchestrated lists them`, { field: 'deployment_id' });
    }
    const key = uniqueKey(project, name);
    // Checked before key generation; the unique index below settles races.
    if (await store.lookup(CERTIFICATE_NAME_INDEX, key)) throw nameTaken(name);
    const issued = await issueClientCertificate(ca, name, { keyType: spec.key_type ?? DEFAULT_CLIENT_KEY_TYPE });
    try {
      const created = await store.create(
        'certificate',
        (id) => ({
          id,
          project,
          name,
          deployment_id: deploymentId,
          serial: issued.serial,
          fingerprint_sha256: issued.fingerprintSha256,
          certificate_pem: issued.certPem,
          sealed_key: sealer.seal(issued.keyPem),
          not_after: issued.notAfter.toISOString(),
          revoked_at: null,
          max_priority: spec.max_priority ?? null,
          key_type: issued.keyType,
          created_at: isoNow(clock),
        }),
        { unique: [{ index: CERTIFICATE_NAME_INDEX, key }] },
      );
      return created.value;
    } catch (err) {
      if (err instanceof ConflictError) throw nameTaken(name);
      throw err;
    }
  }

  /** The certificate, if it is the project's; another project's is answered as one that does not exist. */
  async get(id: number, project: string): Promise<CertificateRecord> {
    const found = await this.deps.store.get('certificate', id);
    if (!found || projectOf(found.value) !== project) throw notFound('certificate', id);
    return found.value;
  }

  /** Certificate then private key, PEM: the one file a client passes as its certificate. */
  async pem(id: number, project: string): Promise<{ name: string; pem: string }> {
    const cert = await this.get(id, project);
    if (cert.revoked_at !== null) {
      throw new PlatformError('conflict', `certificate ${cert.name} was revoked at ${cert.revoked_at}; issue a new one with POST /certificates`);
    }
    const certificate = cert.certificate_pem.endsWith('\n') ? cert.certificate_pem : `${cert.certificate_pem}\n`;
    return { name: cert.name, pem: certificate + this.deps.sealer.unseal(cert.sealed_key) };
  }

  /** Revoked for good: gateways refuse it within a second (their tables follow the store). */
  async revoke(id: number, project: string): Promise<CertificateRecord> {
    await this.get(id, project);
    return (
      await modify(this.deps.store, 'certificate', id, (c) => {
        if (c.revoked_at !== null) throw new PlatformError('conflict', `certificate ${c.name} is already revoked (at ${c.revoked_at})`);
        return { ...c, revoked_at: isoNow(this.deps.clock) };
      })
    ).value;
  }

  /** Raises, lowers or removes (null) the certificate's cap; gateways apply it within a second. */
  async setMaxPriority(id: number, maxPriority: Priority | null, project: string): Promise<CertificateRecord> {
    await this.get(id, project);
    return (
      await modify(this.deps.store, 'certificate', id, (c) => {
        if (c.revoked_at !== null) throw new PlatformError('conflict', `certificate ${c.name} was revoked at ${c.revoked_at}; its cap no longer matters`);
        return (c.max_priority ?? null) === maxPriority ? undefined : { ...c, max_priority: maxPriority };
      })
    ).value;
  }

  /** Records the deployment a certificate was issued for, when it has none yet. */
  async bind(id: number, deploymentId: number): Promise<void> {
    await modify(this.deps.store, 'certificate', id, (c) => (c.deployment_id === null ? { ...c, deployment_id: deploymentId } : undefined));
  }

  /**
   * Clears the deployment a certificate names when that deployment no longer accepts it
   * (private_endpoint turned off), so the view does not show a binding that is gone.
   */
  async unbind(id: number, deploymentId: number): Promise<void> {
    try {
      await modify(this.deps.store, 'certificate', id, (c) => (c.deployment_id === deploymentId ? { ...c, deployment_id: null } : undefined));
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err; // deleted meanwhile: nothing left to clear
    }
  }

  /** Removes a certificate issued for a deployment whose creation then failed. */
  async discard(id: number): Promise<void> {
    await this.deps.store.delete('certificate', id).catch(() => undefined);
  }
}

function nameTaken(name: string): PlatformError {
  return new PlatformError('conflict', `a certificate named "${name}" already exists`, { field: 'name' });
}
