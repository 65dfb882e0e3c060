// Owns client certificates for mTLS (spec, Authentication 3: "Make it a private endpoint?"
// generates a client certificate): an ECDSA P-256 key by default (an RSA-2048 one on request,
// made on the thread pool) and an X.509 certificate for clientAuth only, signed by the
// platform CA. The gateway accepts a client
// certificate when its chain verifies to the platform CA and its SHA-256 fingerprint is the
// one bound to the deployment; both sides compare fingerprints in one normal form.

import { createHash, X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import { DEFAULT_CLIENT_KEY_TYPE } from '../domain/client-certificates.js';
import { generateKeyPairOf, newSerial, signCertificate, withPublicKeyOf, type CertificateAuthority, type KeyType } from './ca.js';

export interface IssuedClientCertificate {
  keyType: KeyType;
  certPem: string;
  keyPem: string;
  serial: string;
  /** Lowercase hex SHA-256 of the certificate's DER, no separators. */
  fingerprintSha256: string;
  notAfter: Date;
}

const DAY_MS = 86_400_000;


/** "AB:CD:…" (node's fingerprint256) or "abcd…" → "abcd…". */
export function normalizeFingerprint(fingerprint: string): string {
  return fingerprint.replaceAll(':', '').toLowerCase();
}

export async function issueClientCertificate(
  ca: CertificateAuthority,
  commonName: string,
  opts: { days?: number; now?: Date; keyType?: KeyType } = {},
): Promise<IssuedClientCertificate> {
  const now = opts.now ?? new Date();
  const keyType = opts.keyType ?? DEFAULT_CLIENT_KEY_TYPE;
  const keys = await generateKeyPairOf(keyType);
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const cert = forge.pki.createCertificate();
  withPublicKeyOf(cert, keys.publicKeyPem, caCert.publicKey);
  cert.serialNumber = newSerial();
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + (opts.days ?? 365) * DAY_MS);
  cert.setSubject([
    { name: 'commonName', value: commonName },
    { name: 'organizationName', value: 'infergate client' },
  ]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    // A client's key only signs (TLS CertificateVerify); keyEncipherment stays for RSA keys as before.
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: keyType === 'rsa-2048', critical: true },
    { name: 'extKeyUsage', clientAuth: true },
  ]);
  signCertificate(cert, ca.keyPem);
  const certPem = forge.pki.certificateToPem(cert);
  const der = new X509Certificate(certPem).raw;
  return {
    keyType,
    certPem,
    keyPem: keys.privateKeyPem,
    serial: cert.serialNumber,
    fingerprintSha256: createHash('sha256').update(der).digest('hex'),
    notAfter: cert.validity.notAfter,
  };
}
