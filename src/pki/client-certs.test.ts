// Client certificate issuance: the chain to the platform CA, clientAuth only, the key and
// the fingerprint the gateway compares, and a real TLS handshake against a server that asks
// for a client certificate the way the gateway does.

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateEcKeyPair, issueServerCertificate, loadOrCreateCa, type CertificateAuthority } from './ca.js';
import { issueClientCertificate, normalizeFingerprint, type IssuedClientCertificate } from './client-certs.js';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';

let dirs: string[] = [];
let ca: CertificateAuthority;
let otherCa: CertificateAuthority;

async function newCa(): Promise<CertificateAuthority> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-client-certs-'));
  dirs.push(dir);
  return loadOrCreateCa(dir);
}

beforeAll(async () => {
  [ca, otherCa] = await Promise.all([newCa(), newCa()]);
});
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  dirs = [];
});

/**
 * What a server configured like the gateway (client certificate requested, not required,
 * platform CA as the only client trust anchor) sees of a client presenting `client`.
 */
async function handshake(client: IssuedClientCertificate, serverKey: 'rsa' | 'ec' = 'rsa'): Promise<{ authorized: boolean; fingerprint: string | null }> {
  const server = issueServerCertificate(ca, ['localhost'], serverKey === 'ec' ? { keys: await generateEcKeyPair() } : {});
  const srv = tls.createServer({ cert: server.certPem, key: server.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: false });
  const seen = new Promise<{ authorized: boolean; fingerprint: string | null }>((resolve) => {
    srv.once('secureConnection', (socket: tls.TLSSocket) => {
      const peer = socket.getPeerCertificate();
      resolve({ authorized: socket.authorized, fingerprint: peer?.fingerprint256 ? normalizeFingerprint(peer.fingerprint256) : null });
      socket.end();
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  try {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: ca.certPem, cert: client.certPem, key: client.keyPem });
    socket.on('error', () => undefined); // the server ends the connection once it has looked
    const result = await seen;
    socket.destroy();
    return result;
  } finally {
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  }
}

describe('client certificates', () => {
  it('chain to the platform CA, are for client auth only, and carry a matching key and fingerprint', async () => {
    const issued = await issueClientCertificate(ca, 'llama-client', { days: 30 });
    const cert = new X509Certificate(issued.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.checkIssued(caCert) && cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.keyUsage).toEqual([CLIENT_AUTH]);
    expect(cert.keyUsage).not.toContain(SERVER_AUTH);
    expect(cert.ca).toBe(false);
    expect(cert.subject).toContain('CN=llama-client');
    expect(cert.checkPrivateKey(createPrivateKey(issued.keyPem))).toBe(true);
    expect(issued.fingerprintSha256).toBe(normalizeFingerprint(cert.fingerprint256));
    expect(issued.fingerprintSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(issued.serial).toBe(cert.serialNumber.toLowerCase());
    expect(new Date(cert.validTo).getTime() - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(issued.serial).not.toBe((await issueClientCertificate(ca, 'llama-client')).serial);
  });

  it('are valid for 365 days from `now` by default', async () => {
    const now = new Date('2030-01-01T00:00:00Z');
    const issued = await issueClientCertificate(ca, 'dated-client', { now });
    expect(issued.notAfter.toISOString()).toBe('2031-01-01T00:00:00.000Z');
    expect(new Date(new X509Certificate(issued.certPem).validTo).getTime()).toBe(issued.notAfter.getTime());
  });

  it('are authorized in a real TLS handshake against the platform CA, unlike another CA’s', async () => {
    const ours = await issueClientCertificate(ca, 'tls-client');
    const theirs = await issueClientCertificate(otherCa, 'tls-client');
    expect(await handshake(ours)).toEqual({ authorized: true, fingerprint: ours.fingerprintSha256 });
    expect((await handshake(theirs)).authorized).toBe(false);
  });

  it('carry an ECDSA P-256 key by default, and an RSA-2048 key when asked; both authorize against RSA and EC servers', async () => {
    const ec = await issueClientCertificate(ca, 'ec-client');
    const rsa = await issueClientCertificate(ca, 'rsa-client', { keyType: 'rsa-2048' });
    expect(ec.keyType).toBe('ecdsa-p256');
    expect(rsa.keyType).toBe('rsa-2048');
    const ecKey = new X509Certificate(ec.certPem).publicKey;
    expect(ecKey.asymmetricKeyType).toBe('ec');
    expect(ecKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(createPrivateKey(ec.keyPem).asymmetricKeyType).toBe('ec');
    expect(ec.keyPem).toContain('-----BEGIN PRIVATE KEY-----'); // PKCS#8, as the RSA keys always were
    const rsaKey = new X509Certificate(rsa.certPem).publicKey;
    expect(rsaKey.asymmetricKeyType).toBe('rsa');
    expect(rsaKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    for (const client of [ec, rsa]) {
      for (const server of ['rsa', 'ec'] as const) {
        expect(await handshake(client, server), `${client.keyType} client, ${server} server`).toEqual({ authorized: true, fingerprint: client.fingerprintSha256 });
      }
    }
  });

  it('normalises fingerprints from node and from the store to one form', () => {
    expect(normalizeFingerprint('AB:CD:0F')).toBe('abcd0f');
    expect(normalizeFingerprint('abcd0f')).toBe('abcd0f');
  });
});
