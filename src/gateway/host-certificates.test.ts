// Per-endpoint certificates: issued on the first handshake that names a host of the routing
// table (not when the host enters it), with an ECDSA P-256 key, for exactly that host; none
// for other names; forgotten when the host leaves. Checked through real TLS handshakes with
// the SNI callback the gateway's listener uses.

import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueServerCertificate, loadOrCreateCa, type CertificateAuthority } from '../pki/ca.js';
import { HostCertificates } from './host-certificates.js';

let dir: string;
let ca: CertificateAuthority;
let server: tls.Server;
let port: number;
let certificates: HostCertificates;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-host-certs-'));
  ca = await loadOrCreateCa(dir);
  certificates = new HostCertificates(ca, ca.certPem, pino({ level: 'silent' }));
  const fallback = issueServerCertificate(ca, ['*.endpoints.test']);
  const defaultContext = tls.createSecureContext({ cert: fallback.certPem, key: fallback.keyPem, ca: ca.certPem });
  server = tls.createServer({
    cert: fallback.certPem,
    key: fallback.keyPem,
    SNICallback: (servername, cb) => cb(null, certificates.contextFor(servername) ?? defaultContext),
  }, (socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

const presented = (servername: string) =>
  new Promise<X509Certificate>((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: ca.certPem }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.destroy();
      if (cert) resolve(cert);
      else reject(new Error('no certificate'));
    });
    socket.on('error', reject);
  });

describe('per-endpoint certificates', () => {
  it('are issued on the first handshake naming a host of the table, not when it enters the table', async () => {
    certificates.sync(new Set(['chat.endpoints.test', 'embed.endpoints.test']));
    await certificates.settled();
    expect(certificates.issued).toBe(0);

    const first = await presented('chat.endpoints.test');
    expect(first.subjectAltName).toBe('DNS:*.endpoints.test');
    await certificates.settled();
    expect(certificates.issued).toBe(1);

    const own = await presented('Chat.Endpoints.Test');
    expect(own.subjectAltName).toBe('DNS:chat.endpoints.test');
    expect(own.publicKey.asymmetricKeyType).toBe('ec');
    expect(own.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(own.checkIssued(new X509Certificate(ca.certPem)) && own.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(own.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
  });

  it('never issues for a name outside the table', async () => {
    const before = certificates.issued;
    expect((await presented('nobody.endpoints.test')).subjectAltName).toBe('DNS:*.endpoints.test');
    await certificates.settled();
    expect(certificates.issued).toBe(before);
  });

  it('forgets the certificate of a host that leaves the table', async () => {
    await presented('embed.endpoints.test');
    await certificates.settled();
    expect(certificates.contextFor('embed.endpoints.test')).toBeDefined();
    certificates.sync(new Set(['chat.endpoints.test']));
    expect(certificates.contextFor('embed.endpoints.test')).toBeUndefined();
    await certificates.settled();
    expect(certificates.contextFor('embed.endpoints.test')).toBeUndefined();
    expect(certificates.contextFor('chat.endpoints.test')).toBeDefined();
  });
});

describe('per-endpoint certificates for hosts the wildcard does not name', () => {
  // `*.endpoints.test` names one label: another project's host (`chat.team-a.…`) and the
  // default project's second spelling (`chat.default.…`) are not under it, so their first
  // handshake waits for their own certificate rather than get one the client refuses.
  let own: HostCertificates;
  let ownServer: tls.Server;
  let ownPort: number;

  beforeAll(async () => {
    own = new HostCertificates(ca, ca.certPem, pino({ level: 'silent' }), (host) => host.endsWith('.endpoints.test') && !host.slice(0, -'.endpoints.test'.length).includes('.'));
    const fallback = issueServerCertificate(ca, ['*.endpoints.test']);
    const defaultContext = tls.createSecureContext({ cert: fallback.certPem, key: fallback.keyPem, ca: ca.certPem });
    ownServer = tls.createServer({
      cert: fallback.certPem,
      key: fallback.keyPem,
      SNICallback: (servername, cb) => {
        const chosen = own.handshakeContext(servername);
        if (chosen instanceof Promise) void chosen.then((c) => cb(null, c ?? defaultContext));
        else cb(null, chosen ?? defaultContext);
      },
    }, (socket) => socket.end());
    await new Promise<void>((resolve) => ownServer.listen(0, '127.0.0.1', resolve));
    ownPort = (ownServer.address() as { port: number }).port;
    own.sync(new Set(['chat.endpoints.test', 'chat.default.endpoints.test', 'chat.team-a.endpoints.test']));
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => ownServer.close(() => resolve()));
  });

  // Verified as a client does: the CA and the name checked.
  const verified = (servername: string) =>
    new Promise<X509Certificate>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: ownPort, servername, ca: ca.certPem, checkServerIdentity: (host, cert) => tls.checkServerIdentity(servername, cert) }, () => {
        const cert = socket.getPeerX509Certificate();
        socket.destroy();
        if (cert) resolve(cert);
        else reject(new Error('no certificate'));
      });
      socket.on('error', reject);
    });

  it('answers the first handshake naming another project\'s host with its own certificate', async () => {
    const first = await verified('chat.team-a.endpoints.test');
    expect(first.subjectAltName).toBe('DNS:chat.team-a.endpoints.test');
    expect(own.issued).toBe(1);
  });

  it('answers the default project\'s second spelling the same way, and a one-label host with the wildcard first', async () => {
    expect((await verified('Chat.Default.Endpoints.Test')).subjectAltName).toBe('DNS:chat.default.endpoints.test');
    expect((await verified('chat.endpoints.test')).subjectAltName).toBe('DNS:*.endpoints.test');
  });

  it('never waits for, nor issues, a name outside the table', async () => {
    // A one-label host's certificate, issued after the wildcard answered its first handshake, lands first.
    await own.settled();
    const before = own.issued;
    await expect(verified('chat.team-b.endpoints.test')).rejects.toThrow(/does not match|altnames/i);
    await own.settled();
    expect(own.issued).toBe(before);
  });
});
