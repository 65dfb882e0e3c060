// Owns the gateway's server certificate on disk: one certificate for `*.<domain>`, the domain
// itself and the names of the path address (`localhost`, 127.0.0.1, ::1) issued by the
// platform CA, kept in <certs-dir>/gateway/, and issued again when it is missing, no longer
// covers every one of those names (one issued before the path address existed, or for another
// domain), or expires within 30 days; and the operator's own certificate (`--tls-cert`),
// checked before the gateway uses it.

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import { issueServerCertificate, type CertificateAuthority } from './ca.js';

const RENEW_BEFORE_MS = 30 * 86_400_000;

export interface ServerKeyPair {
  certPem: string;
  keyPem: string;
}

/**
 * The names of the platform's gateway certificate: every endpoint host, the bare domain, and
 * what a client of the path address connects to — `localhost` (sent as SNI) or a loopback IP
 * (no SNI at all), both answered with this certificate.
 */
export function gatewayCertificateNames(domain: string): string[] {
  return [...new Set([`*.${domain}`, domain, 'localhost', '127.0.0.1', '::1'])];
}

function covers(certPem: string, caPem: string, domain: string, now: Date): boolean {
  const cert = new X509Certificate(certPem);
  if (!cert.checkIssued(new X509Certificate(caPem))) return false;
  if (new Date(cert.validTo).getTime() - now.getTime() < RENEW_BEFORE_MS) return false;
  // The wildcard by a name only it matches; the others each by Node's own matching.
  return gatewayCertificateNames(domain).every((n) => {
    if (n.startsWith('*.')) return cert.checkHost(`probe${n.slice(1)}`, { wildcards: true }) !== undefined;
    return isIP(n) !== 0 ? cert.checkIP(n) !== undefined : cert.checkHost(n, { wildcards: false }) !== undefined;
  });
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
  const issued = issueServerCertificate(ca, gatewayCertificateNames(domain), { now });
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
 * endpoints' names. Throws an Error saying which check failed. It is used as it is: the path
 * address works on the names it happens to cover (`coversPathHost`).
 */
export async function readOperatorCertificate(certFile: string, keyFile: string, domain: string): Promise<ServerKeyPair> {
  const [certPem, keyPem] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  const cert = new X509Certificate(certPem);
  if (!cert.checkPrivateKey(createPrivateKey(keyPem))) throw new Error('the key does not belong to the certificate');
  if (!cert.checkHost(`probe.${domain}`)) throw new Error(`it does not cover *.${domain}`);
  return { certPem, keyPem };
}

/** Whether a certificate covers a host name or IP literal (a path address's host). */
export function coversPathHost(certPem: string, host: string): boolean {
  const cert = new X509Certificate(certPem);
  return isIP(host) !== 0 ? cert.checkIP(host) !== undefined : cert.checkHost(host) !== undefined;
}
