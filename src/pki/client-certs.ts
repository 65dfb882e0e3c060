// Owns client certificates for mTLS (spec, Authentication 3: "Make it a private endpoint?"
// generates a client certificate): an RSA key made on the thread pool and an X.509
// certificate for clientAuth only, signed by the platform CA. The gateway accepts a client
// certificate when its chain verifies to the platform CA and its SHA-256 fingerprint is the
// one bound to the deployment; both sides compare fingerprints in one normal form.

import { createHash, X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import { generateRsaKeyPair, newSerial, signCertificate, type CertificateAuthority } from './ca.js';

export interface IssuedClientCertificate {
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
  opts: { days?: number; now?: Date } = {},
): Promise<IssuedClientCertificate> {
  const now = opts.now ?? new Date();
  const keys = await generateRsaKeyPair();
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKeyPem);
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
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', clientAuth: true },
  ]);
  signCertificate(cert, ca.keyPem);
  const certPem = forge.pki.certificateToPem(cert);
  const der = new X509Certificate(certPem).raw;
  return {
    certPem,
    keyPem: keys.privateKeyPem,
    serial: cert.serialNumber,
    fingerprintSha256: createHash('sha256').update(der).digest('hex'),
    notAfter: cert.validity.notAfter,
  };
}
