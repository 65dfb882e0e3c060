// Owns which client certificates a deployment accepts, a rule the gateway (routing table) and
// the control API (a certificate's `deployments`) must agree on: its bound certificate and
// every certificate issued for it (deployment_id), so each client application can hold its
// own — but only while the deployment takes client certificates at all (one is bound:
// private_endpoint, or client_certificate_id). Turning private_endpoint off therefore stops
// them all; revocation, which the caller checks, stops one. Pure.

import type { CertificateRecord, DeploymentRecord, KeyType } from './records.js';

export { KEY_TYPES, type KeyType } from './records.js';

/**
 * Client certificates get ECDSA P-256 unless a request asks for RSA-2048 (a client that
 * cannot use an EC key); a certificate stored without a key type is from before EC keys, and
 * so RSA-2048.
 */
export const DEFAULT_CLIENT_KEY_TYPE: KeyType = 'ecdsa-p256';

/** A stored certificate's key type (records from before EC keys carry none: RSA-2048). */
export const keyTypeOfRecord = (c: Pick<CertificateRecord, 'key_type'>): KeyType => c.key_type ?? 'rsa-2048';

export function acceptsCertificate(
  d: Pick<DeploymentRecord, 'id'> & { auth: Pick<DeploymentRecord['auth'], 'client_certificate_id'> },
  c: Pick<CertificateRecord, 'id' | 'deployment_id'>,
): boolean {
  const bound = d.auth.client_certificate_id;
  if (bound === null) return false;
  return c.id === bound || c.deployment_id === d.id;
}
