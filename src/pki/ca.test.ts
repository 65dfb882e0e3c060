import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueServerCertificate, loadOrCreateCa, newSerial } from './ca.js';
import { loadOrIssueGatewayCertificate } from './server-certs.js';

let dir: string;
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
