// Gateway authentication and certificates: every way to be refused (no credential, a wrong
// token, another deployment's token or certificate, a certificate revoked through the API
// while the gateway runs, a certificate from another CA), 404 for unknown hosts, the
// Authorization header never reaching a replica, a certificate per endpoint host by SNI, and
// several client certificates per deployment (each issued for it, each revocable alone).

import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateCa } from '../src/pki/ca.js';
import { issueClientCertificate } from '../src/pki/client-certs.js';
import { startChatUpstream, type ChatUpstream } from './helpers/chat-upstream.js';
import { DOMAIN, hostOf, startGatewayEnv, tokenFor, waitFor, type GatewayEnv } from './helpers/gateway-env.js';
import { httpsRequest } from './helpers/https-client.js';
import { generalBody } from './helpers/spec-fixtures.js';
import { downloadPem } from './helpers/tls-clients.js';

let env: GatewayEnv;
let upstream: ChatUpstream;
const pems: Record<string, string> = {};
const certIds: Record<string, number> = {};

async function deployPrivate(name: string): Promise<number> {
  const res = await env.api.call('POST', '/deployments/general', { ...generalBody(name, 'x'), endpoint_bearer_token: undefined, private_endpoint: true });
  expect(res.status).toBe(201);
  certIds[name] = res.body.client_certificate_id;
  pems[name] = await downloadPem(env.api, res.body.client_certificate_id);
  return res.body.id;
}

beforeAll(async () => {
  env = await startGatewayEnv();
  upstream = await startChatUpstream({ name: 'auth-upstream' });
  const ids = [await env.deploy('au-a'), await env.deploy('au-b'), await deployPrivate('au-c'), await deployPrivate('au-d')];
  for (const id of ids) await env.addReplica(id, upstream.address);
  for (const name of ['au-a', 'au-b', 'au-c', 'au-d']) await env.waitForReplicas(name, 1);
});

afterAll(async () => {
  await env?.close();
  await upstream?.close();
});

const call = (name: string, o: { token?: string; pem?: string; host?: string } = {}) =>
  httpsRequest({
    port: env.port,
    host: o.host ?? hostOf(name),
    ca: env.ca.certPem,
    path: '/v1/models',
    headers: o.token ? { authorization: `Bearer ${o.token}` } : {},
    cert: o.pem,
    key: o.pem,
  });

describe('gateway authentication', () => {
  it('forwards with the right token and drops the Authorization header', async () => {
    const res = await call('au-a', { token: tokenFor('au-a') });
    expect(res.status).toBe(200);
    expect(upstream.seen.at(-1)?.headers.authorization).toBeUndefined();
    expect(upstream.seen.at(-1)?.headers['x-forwarded-host']).toBe(hostOf('au-a'));
  });

  it('forwards with the bound client certificate and no token', async () => {
    expect((await call('au-c', { pem: pems['au-c'] })).status).toBe(200);
  });

  it.each([
    ['no credential', 'au-a', {}, /requires Authorization: Bearer/],
    ['a wrong token', 'au-a', { token: 'tok_wrong_0123456789abcdef0123' }, /not valid/],
    ["another deployment's token", 'au-a', { token: tokenFor('au-b') }, /not valid/],
    ['no credential on a certificate-only endpoint', 'au-c', {}, /its client certificate/],
  ])('answers 401 for %s', async (_what, name, creds, message) => {
    const res = await call(name, creds as { token?: string });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="/);
    expect(JSON.parse(res.body).error).toMatchObject({ code: 'unauthenticated', message: expect.stringMatching(message) });
  });

  it("answers 401 for another deployment's certificate", async () => {
    const res = await call('au-c', { pem: pems['au-d'] });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body).error.message).toMatch(/client certificate is not accepted/);
    // A token endpoint does not accept a certificate bound elsewhere either.
    expect((await call('au-a', { pem: pems['au-c'] })).status).toBe(401);
  });

  it('answers 401 for a certificate from another CA, even with the right fingerprint shape', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-other-ca-'));
    try {
      const other = await loadOrCreateCa(dir);
      const foreign = await issueClientCertificate(other, 'intruder');
      const res = await call('au-c', { pem: foreign.certPem + foreign.keyPem });
      expect(res.status).toBe(401);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('accepts either credential when the endpoint has both', async () => {
    // au-a has a token; bind au-c's certificate to it as well.
    const id = (await env.api.call('GET', '/deployments/general')).body.items.find((d: { name: string }) => d.name === 'au-a').id;
    const patched = await env.api.call('PATCH', `/deployments/general/${id}`, { client_certificate_id: certIds['au-c'] });
    expect(patched.status).toBe(200);
    await waitFor(async () => (await call('au-a', { pem: pems['au-c'] })).status === 200, 1000, 'certificate accepted on au-a');
    expect((await call('au-a', { token: tokenFor('au-a') })).status).toBe(200);
    expect((await call('au-a', { pem: pems['au-c'], token: 'dummy-key' })).status).toBe(200);
  });

  it('answers 401 within a second of the certificate being revoked through the API', async () => {
    expect((await call('au-c', { pem: pems['au-c'] })).status).toBe(200);
    const revoked = await env.api.call('POST', `/certificates/${certIds['au-c']}/revoke`);
    expect(revoked.status).toBe(200);
    // The wait's 1 s bound is the assertion: the change must reach the gateway within it.
    await waitFor(async () => (await call('au-c', { pem: pems['au-c'] })).status === 401, 1000, 'revocation');
  });

  it('answers 404 for an unknown host', async () => {
    const res = await call('x', { host: `nobody.${DOMAIN}`, token: tokenFor('au-a') });
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body).error.code).toBe('not_found');
  });
});

describe('several client certificates per deployment', () => {
  it('accepts every unrevoked certificate issued for the deployment, each revoked alone, and none once it stops taking certificates', async () => {
    const id = await deployPrivate('au-e');
    await env.addReplica(id, upstream.address);
    await env.waitForReplicas('au-e', 1);
    const issued = await env.api.call('POST', '/certificates', { name: 'au-e-app2', deployment_id: id, max_priority: 'sheddable' });
    expect(issued.status).toBe(201);
    const second = await downloadPem(env.api, issued.body.id);

    await waitFor(async () => (await call('au-e', { pem: second })).status === 200, 1000, 'second certificate accepted');
    expect((await call('au-e', { pem: pems['au-e'] })).status).toBe(200);
    // Issued for au-e: no other deployment takes it.
    expect((await call('au-d', { pem: second })).status).toBe(401);

    expect((await env.api.call('POST', `/certificates/${issued.body.id}/revoke`)).status).toBe(200);
    await waitFor(async () => (await call('au-e', { pem: second })).status === 401, 1000, 'second certificate revoked');
    expect((await call('au-e', { pem: pems['au-e'] })).status).toBe(200);

    // private_endpoint off (with a token instead): the certificates issued for it stop too.
    const third = await env.api.call('POST', '/certificates', { name: 'au-e-app3', deployment_id: id });
    const thirdPem = await downloadPem(env.api, third.body.id);
    await waitFor(async () => (await call('au-e', { pem: thirdPem })).status === 200, 1000, 'third certificate accepted');
    const off = await env.api.call('PATCH', `/deployments/general/${id}`, { private_endpoint: false, endpoint_bearer_token: 'tok_au_e_0123456789abcdef01' });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    await waitFor(async () => (await call('au-e', { pem: thirdPem })).status === 401, 1000, 'certificates off');
    expect((await call('au-e', { pem: pems['au-e'] })).status).toBe(401);
    expect((await call('au-e', { token: 'tok_au_e_0123456789abcdef01' })).status).toBe(200);
  });
});

describe('gateway certificates', () => {
  const peerCertificate = (servername: string) =>
    new Promise<X509Certificate>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: env.port, servername, ca: env.ca.certPem }, () => {
        const der = socket.getPeerX509Certificate();
        socket.end();
        if (der) resolve(der);
        else reject(new Error('no certificate'));
      });
      socket.on('error', reject);
    });

  it('presents a certificate issued for exactly the endpoint host, chosen by SNI, once a handshake has named it', async () => {
    // The first handshake naming the host starts its issuance (and may get *.<domain>).
    await peerCertificate(hostOf('au-b'));
    await env.gateway.hostCertificates?.settled();
    const cert = await peerCertificate(hostOf('au-b'));
    expect(cert.subjectAltName).toBe(`DNS:${hostOf('au-b')}`);
    expect(cert.checkIssued(new X509Certificate(env.ca.certPem))).toBe(true);
    expect(cert.publicKey.asymmetricKeyType).toBe('ec');
  });

  it('presents the *.<domain> certificate for other names', async () => {
    const cert = await peerCertificate(`nobody.${DOMAIN}`);
    expect(cert.subjectAltName).toContain(`DNS:*.${DOMAIN}`);
  });

  it('issues a certificate for a new deployment without a restart', async () => {
    await env.deploy('au-new');
    await waitFor(async () => (await peerCertificate(hostOf('au-new'))).subjectAltName === `DNS:${hostOf('au-new')}`, 5000, 'per-host certificate');
  });
});
