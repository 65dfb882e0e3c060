import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateEcKeyPair, issueServerCertificate, loadOrCreateCa, newSerial } from './ca.js';
import { loadOrIssueGatewayCertificate } from './server-certs.js';

let dir: string;

/** The first octet of a certificate's keyUsage bits (RFC 5280 §4.2.1.3: bit 0 digitalSignature is 0x80, bit 2 keyEncipherment 0x20). */
function keyUsageBits(certPem: string): number {
  const der = new X509Certificate(certPem).raw.toString('binary');
  const tbs = (forge.asn1.fromDer(der).value as forge.asn1.Asn1[])[0]!;
  const extensions = (tbs.value as forge.asn1.Asn1[]).find((n) => n.tagClass === forge.asn1.Class.CONTEXT_SPECIFIC && n.type === 3)!;
  for (const ext of (extensions.value as forge.asn1.Asn1[])[0]!.value as forge.asn1.Asn1[]) {
    const fields = ext.value as forge.asn1.Asn1[];
    if (forge.asn1.derToOid(fields[0]!.value as string) !== '2.5.29.15') continue;
    const bits = forge.asn1.fromDer(fields[fields.length - 1]!.value as string).value as string;
    return bits.charCodeAt(1); // after the unused-bits octet
  }
  throw new Error('no keyUsage');
}
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-pki-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('platform CA', () => {
  it('is created once with a 0600 key and loaded afterwards', async () => {
    const ca = await loadOrCreateCa(dir);
    expect((await stat(path.join(dir, 'ca.key'))).mode & 0o777).toBe(0o600);
    const again = await loadOrCreateCa(dir);
    expect(again.certPem).toBe(ca.certPem);
    const x = new X509Certificate(ca.certPem);
    expect(x.ca).toBe(true);
    expect(x.checkIssued(x)).toBe(true);
  });

  it('issues server certificates that chain to it and name the hosts', async () => {
    const ca = await loadOrCreateCa(dir);
    const issued = issueServerCertificate(ca, ['*.endpoints.test', 'endpoints.test']);
    const x = new X509Certificate(issued.certPem);
    expect(x.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
    expect(x.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(x.checkHost('llama.endpoints.test')).toBe('*.endpoints.test'); // the matching name
    expect(x.checkHost('llama.other.test')).toBeUndefined();
    expect(x.ca).toBe(false);
  });

  it('issues server certificates for ECDSA P-256 keys: signed by the RSA CA, keyUsage without keyEncipherment, served over TLS 1.2 and 1.3', async () => {
    const ca = await loadOrCreateCa(dir);
    const caCert = new X509Certificate(ca.certPem);
    const issued = issueServerCertificate(ca, ['chat.endpoints.test'], { keys: await generateEcKeyPair() });
    const x = new X509Certificate(issued.certPem);
    expect(x.publicKey.asymmetricKeyType).toBe('ec');
    expect(x.checkPrivateKey(createPrivateKey(issued.keyPem))).toBe(true);
    expect(x.checkIssued(caCert) && x.verify(caCert.publicKey)).toBe(true);
    expect(x.subjectAltName).toBe('DNS:chat.endpoints.test');
    // keyUsage, read from the DER: digitalSignature (bit 0) alone; RSA certificates keep keyEncipherment (bit 2).
    expect(keyUsageBits(issued.certPem)).toBe(0x80);
    expect(keyUsageBits(issueServerCertificate(ca, ['rsa.endpoints.test']).certPem)).toBe(0xa0);
    const server = tls.createServer({ cert: issued.certPem, key: issued.keyPem }, (socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      for (const version of ['TLSv1.2', 'TLSv1.3'] as const) {
        const { port } = server.address() as { port: number };
        const cipher = await new Promise<string>((resolve, reject) => {
          const socket = tls.connect({ host: '127.0.0.1', port, servername: 'chat.endpoints.test', ca: ca.certPem, minVersion: version, maxVersion: version }, () => {
            resolve(socket.getCipher().name);
            socket.destroy();
          });
          socket.on('error', reject);
        });
        if (version === 'TLSv1.2') expect(cipher).toMatch(/ECDSA/);
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('keeps the gateway certificate and issues a new one for another domain', async () => {
    const ca = await loadOrCreateCa(dir);
    const a = await loadOrIssueGatewayCertificate(ca, dir, 'endpoints.test');
    const b = await loadOrIssueGatewayCertificate(ca, dir, 'endpoints.test');
    expect(b.certPem).toBe(a.certPem);
    expect((await stat(path.join(dir, 'gateway', 'endpoints.test.key'))).mode & 0o777).toBe(0o600);
    const c = await loadOrIssueGatewayCertificate(ca, dir, 'other.test');
    expect(new X509Certificate(c.certPem).checkHost('x.other.test')).toBe('*.other.test');
    expect(await readFile(path.join(dir, 'gateway', 'endpoints.test.crt'), 'utf8')).toBe(a.certPem);
  });
});

describe('serial numbers', () => {
  it('are 16 octets, positive and minimally encoded (never a leading zero octet)', () => {
    for (let i = 0; i < 2000; i++) {
      const serial = newSerial();
      expect(serial).toMatch(/^[4-7][0-9a-f]{31}$/);
    }
  });
});
