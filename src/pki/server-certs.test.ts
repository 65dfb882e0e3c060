// Unit tests of the gateway's platform certificate: it names every endpoint host, the bare
// domain and the path address's hosts (localhost, 127.0.0.1, ::1); one issued before those
// names existed is issued again on start; and the check of a certificate against a path host.

import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueServerCertificate, loadOrCreateCa, type CertificateAuthority } from './ca.js';
import { coversPathHost, gatewayCertificateNames, loadOrIssueGatewayCertificate } from './server-certs.js';

let dir: string;
let ca: CertificateAuthority;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-server-certs-'));
  ca = await loadOrCreateCa(dir);
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('the gateway certificate', () => {
  it('covers every endpoint host, the bare domain, localhost and the loopback addresses', async () => {
    const certsDir = path.join(dir, 'fresh');
    const { certPem } = await loadOrIssueGatewayCertificate(ca, certsDir, 'endpoints.localhost');
    const cert = new X509Certificate(certPem);
    expect(cert.checkHost('chat.endpoints.localhost')).toBe('*.endpoints.localhost');
    expect(cert.checkHost('endpoints.localhost')).toBe('endpoints.localhost');
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBeDefined();
    expect(cert.subjectAltName).toMatch(/IP Address:127\.0\.0\.1/);
    // Nothing beyond them: not another loopback address, not another domain.
    expect(cert.checkIP('127.0.0.2')).toBeUndefined();
    expect(cert.checkHost('chat.other.test')).toBeUndefined();
  });

  it('lists each name once when the domain is localhost itself', () => {
    expect(gatewayCertificateNames('localhost')).toEqual(['*.localhost', 'localhost', '127.0.0.1', '::1']);
  });

  it('is issued again when the one on disk lacks the path address names, and kept once it has them', async () => {
    const certsDir = path.join(dir, 'old');
    // What earlier releases wrote: `*.<domain>` and the domain only.
    const old = issueServerCertificate(ca, ['*.endpoints.test', 'endpoints.test']);
    await mkdir(path.join(certsDir, 'gateway'), { recursive: true });
    await writeFile(path.join(certsDir, 'gateway', 'endpoints.test.crt'), old.certPem);
    await writeFile(path.join(certsDir, 'gateway', 'endpoints.test.key'), old.keyPem);

    const renewed = await loadOrIssueGatewayCertificate(ca, certsDir, 'endpoints.test');
    expect(renewed.certPem).not.toBe(old.certPem);
    expect(coversPathHost(renewed.certPem, 'localhost')).toBe(true);
    expect(coversPathHost(renewed.certPem, '127.0.0.1')).toBe(true);
    const again = await loadOrIssueGatewayCertificate(ca, certsDir, 'endpoints.test');
    expect(again.certPem).toBe(renewed.certPem);
  });

  it('tells whether a certificate (an operator’s, say) covers a path host', () => {
    const wildcardOnly = issueServerCertificate(ca, ['*.example.com']).certPem;
    expect(coversPathHost(wildcardOnly, 'example.com')).toBe(false);
    expect(coversPathHost(wildcardOnly, 'localhost')).toBe(false);
    const withApex = issueServerCertificate(ca, ['*.example.com', 'example.com']).certPem;
    expect(coversPathHost(withApex, 'example.com')).toBe(true);
  });
});
