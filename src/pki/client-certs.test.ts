import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateCa, type CertificateAuthority } from './ca.js';
import { issueClientCertificate, normalizeFingerprint } from './client-certs.js';

let dir: string;
let ca: CertificateAuthority;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-client-certs-'));
  ca = await loadOrCreateCa(dir);
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('client certificates', () => {
  it('chain to the platform CA, are for client auth only, and carry a matching key and fingerprint', async () => {
    const issued = await issueClientCertificate(ca, 'llama-client', { days: 30 });
    const cert = new X509Certificate(issued.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.checkIssued(caCert) && cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(cert.ca).toBe(false);
    expect(cert.subject).toContain('CN=llama-client');
    expect(cert.checkPrivateKey(createPrivateKey(issued.keyPem))).toBe(true);
    expect(issued.fingerprintSha256).toBe(normalizeFingerprint(cert.fingerprint256));
    expect(new Date(cert.validTo).getTime() - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(issued.serial).not.toBe((await issueClientCertificate(ca, 'llama-client')).serial);
  });

  it('normalises fingerprints from node and from the store to one form', () => {
    expect(normalizeFingerprint('AB:CD:0F')).toBe('abcd0f');
    expect(normalizeFingerprint('abcd0f')).toBe('abcd0f');
  });
});
