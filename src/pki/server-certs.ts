// Owns the gateway's server certificate on disk: one certificate for `*.<domain>` (and the
// domain itself) issued by the platform CA, kept in <certs-dir>/gateway/, and issued again
// when it is missing, no longer covers the domain, or expires within 30 days; and the
// operator's own certificate (`--tls-cert`), checked before the gateway uses it.

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { issueServerCertificate, type CertificateAuthority } from './ca.js';

const RENEW_BEFORE_MS = 30 * 86_400_000;

export interface ServerKeyPair {
  certPem: string;
  keyPem: string;
}

export function wildcardNames(domain: string): string[] {
  return [`*.${domain}`, domain];
}

function covers(certPem: string, caPem: string, domain: string, now: Date): boolean {
  const cert = new X509Certificate(certPem);
  if (!cert.checkIssued(new X509Certificate(caPem))) return false;
  if (new Date(cert.validTo).getTime() - now.getTime() < RENEW_BEFORE_MS) return false;
  const names = cert.subjectAltName ?? '';
  return wildcardNames(domain).every((n) => names.includes(`DNS:${n}`));
}

export async function loadOrIssueGatewayCertificate(
  ca: CertificateAuthority,
  certsDir: string,
  domain: string,
  now = new Date(),
): Promise<ServerKeyPair> {
  const dir = path.join(certsDir, 'gateway');
  const certFile = path.join(dir, `${domain}.crt`);
  const keyFile = path.join(dir, `${domain}.key`);
  try {
    const [certPem, keyPem] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
    if (covers(certPem, ca.certPem, domain, now)) return { certPem, keyPem };
  } catch {
    // missing or unreadable: issue a fresh one below
  }
  const issued = issueServerCertificate(ca, wildcardNames(domain), { now });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // Key first, each through a rename, so a crash never leaves a certificate without its key.
  await writeFile(`${keyFile}.tmp`, issued.keyPem, { mode: 0o600 });
  await rename(`${keyFile}.tmp`, keyFile);
  await writeFile(`${certFile}.tmp`, issued.certPem, { mode: 0o644 });
  await rename(`${certFile}.tmp`, certFile);
  return { certPem: issued.certPem, keyPem: issued.keyPem };
}

/**
 * The operator's certificate and key for `*.<domain>` (e.g. from a public CA), read and
 * checked: the key must belong to the certificate and the certificate must cover the
 * endpoints' names. Throws an Error saying which check failed.
 */
export async function readOperatorCertificate(certFile: string, keyFile: string, domain: string): Promise<ServerKeyPair> {
  const [certPem, keyPem] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  const cert = new X509Certificate(certPem);
  if (!cert.checkPrivateKey(createPrivateKey(keyPem))) throw new Error('the key does not belong to the certificate');
  if (!cert.checkHost(`probe.${domain}`)) throw new Error(`it does not cover *.${domain}`);
  return { certPem, keyPem };
}
