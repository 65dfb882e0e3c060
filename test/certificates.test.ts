// The certificate routes of the control API: issuing a client certificate, the .pem a
// client uses, revocation, keys sealed at rest, private endpoints getting their own
// bound certificate on create, clone and edit, and key types (ECDSA P-256 by default, RSA-2048
// on request; the .pem presented by curl, Python's ssl and Node).

import { spawn } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateEcKeyPair, issueServerCertificate } from '../src/pki/ca.js';
import { modify } from '../src/store/store.js';
import { disaggregatedBody, generalBody, startControl, testCa, type TestControl } from './helpers/control.js';
import { downloadPem } from './helpers/tls-clients.js';

let api: TestControl;
let caPem: string;

beforeAll(async () => {
  api = await startControl();
  caPem = (await testCa()).certPem;
});
afterAll(async () => api?.close());

// One instance each: this file creates many deployments, and the catalog's hardware 1 has 16.
const general = (name: string, token: string) => ({ ...generalBody(name, token), max_replicas: 1 });
const privateGeneral = (name: string) => ({ ...general(name, 'unused'), endpoint_bearer_token: undefined, private_endpoint: true });

describe('certificates API', () => {
  let id: number;

  it('issues a certificate and shows no key material', async () => {
    const res = await api.call('POST', '/certificates', { name: 'ci-client' });
    expect(res.status).toBe(201);
    id = res.body.id;
    expect(res.body).toMatchObject({ name: 'ci-client', deployment_id: null, revoked: false, revoked_at: null, pem_path: `/certificates/${id}/pem` });
    expect(res.body.fingerprint_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(res.body)).not.toMatch(/PRIVATE KEY|sealed/);
    expect((await api.call('GET', `/certificates/${id}`)).body).toEqual(res.body);
    expect((await api.call('GET', '/certificates')).body.items.map((c: { id: number }) => c.id)).toContain(id);
  });

  it('serves the certificate and its key in one .pem that chains to the platform CA', async () => {
    const res = await fetch(`${api.url}/certificates/${id}/pem`, { headers: { authorization: 'Bearer igk_test-admin-key-0123456789abcdef' } });
    expect(res.headers.get('content-type')).toBe('application/x-pem-file');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="ci-client.pem"');
    const pem = await res.text();
    expect(pem.match(/-----BEGIN CERTIFICATE-----/g)).toHaveLength(1);
    expect(pem.match(/-----BEGIN PRIVATE KEY-----/g)).toHaveLength(1);
    const cert = new X509Certificate(pem);
    expect(cert.checkPrivateKey(createPrivateKey(pem))).toBe(true);
    expect(cert.verify(new X509Certificate(caPem).publicKey)).toBe(true);
    expect(cert.keyUsage).toContain('1.3.6.1.5.5.7.3.2'); // clientAuth
    expect(cert.keyUsage).not.toContain('1.3.6.1.5.5.7.3.1'); // not serverAuth
    expect(cert.fingerprint256.replaceAll(':', '').toLowerCase()).toBe((await api.call('GET', `/certificates/${id}`)).body.fingerprint_sha256);
  });

  it('keeps the private key sealed in the store', async () => {
    const stored = (await api.store.get('certificate', id))!.value;
    expect(stored.sealed_key).toMatch(/^v1\./);
    expect(stored.sealed_key).not.toContain('PRIVATE KEY');
    const pem = await downloadPem(api, id);
    const keyBody = pem.split('-----BEGIN PRIVATE KEY-----')[1]!.split('-----END')[0]!.replace(/\s/g, '');
    expect(JSON.stringify(await api.store.list('certificate'))).not.toContain(keyBody.slice(0, 64));
  });

  it.each([
    ['no platform credential', 'POST', '/certificates', { name: 'x1' }, null, 401],
    ['a duplicate name', 'POST', '/certificates', { name: 'ci-client' }, undefined, 409],
    ['an unknown deployment', 'POST', '/certificates', { name: 'x2', deployment_id: 999 }, undefined, 400],
    ['a bad name', 'POST', '/certificates', { name: '-bad name' }, undefined, 400],
    ['an unknown field', 'POST', '/certificates', { name: 'x3', key: 'mine' }, undefined, 400],
    ['revoking an unknown certificate', 'POST', '/certificates/999/revoke', undefined, undefined, 404],
    ['an unknown certificate', 'GET', '/certificates/999', undefined, undefined, 404],
    ['the pem of an unknown certificate', 'GET', '/certificates/999/pem', undefined, undefined, 404],
  ])('refuses %s', async (_what, method, path, body, key, status) => {
    expect((await api.call(method, path, body, key)).status).toBe(status);
  });

  it('describes the certificate routes in the OpenAPI document', async () => {
    const doc = (await api.call('GET', '/openapi.json', undefined, null)).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/certificates', '/certificates/{id}', '/certificates/{id}/pem', '/certificates/{id}/revoke']));
    expect(Object.keys(doc.paths['/certificates'])).toEqual(expect.arrayContaining(['get', 'post']));
  });

  it('names the field at fault when refusing a duplicate name or an unknown deployment', async () => {
    const duplicate = await api.call('POST', '/certificates', { name: 'ci-client' });
    expect(duplicate.body.error).toMatchObject({ code: 'conflict', field: 'name' });
    const unknown = await api.call('POST', '/certificates', { name: 'ci-orphan', deployment_id: 999 });
    expect(unknown.body.error).toMatchObject({ field: 'deployment_id' });
    expect((await api.call('GET', '/certificates')).body.items.map((c: { name: string }) => c.name)).not.toContain('ci-orphan');
  });

  it('records the deployment a certificate is issued for', async () => {
    const d = (await api.call('POST', '/deployments/general', general('ci-for', 'tok_ci_for_0123456789abcdef'))).body;
    const res = await api.call('POST', '/certificates', { name: 'ci-for-extra', deployment_id: d.id });
    expect(res.status).toBe(201);
    expect(res.body.deployment_id).toBe(d.id);
  });

  it('revokes once; the .pem of a revoked certificate is refused', async () => {
    const revoked = await api.call('POST', `/certificates/${id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ revoked: true, revoked_at: expect.any(String) });
    const again = await api.call('POST', `/certificates/${id}/revoke`);
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/already revoked/);
    const pem = await fetch(`${api.url}/certificates/${id}/pem`, { headers: { authorization: 'Bearer igk_test-admin-key-0123456789abcdef' } });
    expect(pem.status).toBe(409);
    expect(((await pem.json()) as { error: { message: string } }).error.message).toMatch(/revoked/);
  });

  it('refuses to bind a revoked certificate to a deployment', async () => {
    const res = await api.call('POST', '/deployments/general', { ...general('ci-revoked', 'unused'), endpoint_bearer_token: undefined, client_certificate_id: id });
    expect(res.status).toBe(400);
    expect(res.body.error.field).toBe('client_certificate_id');
  });
});

describe('private endpoints', () => {
  it('issues a bound certificate when a general deployment is created with private_endpoint', async () => {
    const res = await api.call('POST', '/deployments/general', privateGeneral('ci-private'));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ private_endpoint: true, endpoint_token_id: null, client_certificate_id: expect.any(Number) });
    const cert = (await api.call('GET', `/certificates/${res.body.client_certificate_id}`)).body;
    expect(cert).toMatchObject({ name: 'ci-private-client', deployment_id: res.body.id, deployments: [res.body.id] });
    expect(new X509Certificate(await downloadPem(api, cert.id)).subject).toContain('CN=ci-private-client');
  });

  it('does the same for an orchestrated deployment', async () => {
    const body = { ...disaggregatedBody('ci-orch', 'unused'), endpoint_bearer_token: undefined, private_endpoint: true };
    const res = await api.call('POST', '/deployments/orchestrated', body);
    expect(res.status).toBe(201);
    const cert = (await api.call('GET', `/certificates/${res.body.client_certificate_id}`)).body;
    expect(cert).toMatchObject({ name: 'ci-orch-client', deployment_id: res.body.id });
    expect((await api.call('GET', `/deployments/orchestrated/${res.body.id}`)).body.client_certificate_id).toBe(cert.id);
    const pem = await downloadPem(api, cert.id);
    expect(new X509Certificate(pem).checkPrivateKey(createPrivateKey(pem))).toBe(true);
  });

  it('binds an existing certificate by id without issuing another', async () => {
    const cert = (await api.call('POST', '/certificates', { name: 'ci-shared' })).body;
    const before = (await api.call('GET', '/certificates')).body.items.length;
    const res = await api.call('POST', '/deployments/general', { ...general('ci-bound', 'unused'), endpoint_bearer_token: undefined, client_certificate_id: cert.id });
    expect(res.status).toBe(201);
    expect(res.body.client_certificate_id).toBe(cert.id);
    expect((await api.call('GET', '/certificates')).body.items.length).toBe(before);
    expect((await api.call('GET', `/certificates/${cert.id}`)).body.deployment_id).toBe(res.body.id);
  });

  it('gives a clone of a private endpoint its own certificate', async () => {
    const source = (await api.call('POST', '/deployments/general', privateGeneral('ci-src'))).body;
    const clone = await api.call('POST', `/deployments/general/${source.id}/clone`, { name: 'ci-copy' });
    expect(clone.status).toBe(201);
    expect(clone.body.client_certificate_id).not.toBe(source.client_certificate_id);
    expect((await api.call('GET', `/certificates/${clone.body.client_certificate_id}`)).body).toMatchObject({ name: 'ci-copy-client', deployment_id: clone.body.id });
  });

  it('gives a clone its own certificate even when the source’s was revoked', async () => {
    const source = (await api.call('POST', '/deployments/general', privateGeneral('ci-rsrc'))).body;
    expect((await api.call('POST', `/certificates/${source.client_certificate_id}/revoke`)).status).toBe(200);
    const clone = await api.call('POST', `/deployments/general/${source.id}/clone`, { name: 'ci-rcopy' });
    expect(clone.status).toBe(201);
    expect((await api.call('GET', `/certificates/${clone.body.client_certificate_id}`)).body).toMatchObject({ revoked: false, deployment_id: clone.body.id });
  });

  it('does not let a token-protected clone of a private endpoint keep the source’s certificate', async () => {
    const source = (await api.call('POST', '/deployments/general', privateGeneral('ci-tsrc'))).body;
    const clone = await api.call('POST', `/deployments/general/${source.id}/clone`, {
      name: 'ci-tcopy',
      private_endpoint: false,
      endpoint_bearer_token: 'tok_ci_tcopy_0123456789abcdef',
    });
    expect(clone.status).toBe(201);
    expect(clone.body).toMatchObject({ private_endpoint: false, client_certificate_id: null });
  });

  it('keeps a certificate named in a clone request', async () => {
    const source = (await api.call('POST', '/deployments/general', privateGeneral('ci-nsrc'))).body;
    const shared = (await api.call('POST', '/certificates', { name: 'ci-named' })).body;
    const clone = await api.call('POST', `/deployments/general/${source.id}/clone`, { name: 'ci-ncopy', client_certificate_id: shared.id });
    expect(clone.status).toBe(201);
    expect(clone.body.client_certificate_id).toBe(shared.id);
  });

  it('issues one when an edit turns private_endpoint on', async () => {
    const d = (await api.call('POST', '/deployments/general', general('ci-later', 'tok_ci_later_0123456789abcdef'))).body;
    expect(d.client_certificate_id).toBeNull();
    const patched = await api.call('PATCH', `/deployments/general/${d.id}`, { private_endpoint: true });
    expect(patched.status).toBe(200);
    expect(patched.body.client_certificate_id).toEqual(expect.any(Number));
    expect(patched.body.endpoint_token_id).toBe(d.endpoint_token_id); // the token still works too
    expect((await api.call('GET', `/certificates/${patched.body.client_certificate_id}`)).body).toMatchObject({ name: 'ci-later-client', deployment_id: d.id });
  });

  it('issues nothing when an edit turning private_endpoint on is refused by quota', async () => {
    const d = (await api.call('POST', '/deployments/general', general('ci-quota', 'tok_ci_quota_0123456789abcdef'))).body;
    const before = (await api.call('GET', '/certificates')).body.items.length;
    const refused = await api.call('PATCH', `/deployments/general/${d.id}`, { private_endpoint: true, max_replicas: 100, max_concurrency: 4 });
    expect(refused.status).toBe(422);
    expect((await api.call('GET', '/certificates')).body.items.length).toBe(before);
    expect((await api.call('GET', `/deployments/general/${d.id}`)).body.client_certificate_id).toBeNull();
  });

  it('records the deployment on an unbound certificate an edit binds, and leaves a bound one alone', async () => {
    const d = (await api.call('POST', '/deployments/general', general('ci-bind', 'tok_ci_bind_0123456789abcdef'))).body;
    const loose = (await api.call('POST', '/certificates', { name: 'ci-loose' })).body;
    expect((await api.call('PATCH', `/deployments/general/${d.id}`, { client_certificate_id: loose.id })).status).toBe(200);
    expect((await api.call('GET', `/certificates/${loose.id}`)).body).toMatchObject({ deployment_id: d.id, deployments: [d.id] });

    const other = (await api.call('POST', '/deployments/general', general('ci-bind2', 'tok_ci_bind2_0123456789abcdef'))).body;
    expect((await api.call('PATCH', `/deployments/general/${other.id}`, { client_certificate_id: loose.id })).status).toBe(200);
    expect((await api.call('GET', `/certificates/${loose.id}`)).body).toMatchObject({ deployment_id: d.id, deployments: [d.id, other.id] });
  });

  it('issues nothing when a private create is refused by validation or quota', async () => {
    const before = (await api.call('GET', '/certificates')).body.items.length;
    const invalid = await api.call('POST', '/deployments/general', { ...privateGeneral('ci-invalid'), container_port: 0 });
    expect(invalid.status).toBe(400);
    const overQuota = await api.call('POST', '/deployments/general', { ...privateGeneral('ci-big'), max_replicas: 100, max_concurrency: 4 });
    expect(overQuota.status).toBe(422);
    const orchestrated = await api.call('POST', '/deployments/orchestrated', {
      ...disaggregatedBody('ci-obig', 'unused'),
      endpoint_bearer_token: undefined,
      private_endpoint: true,
      worker_pools: { prefill: { hardware_instance_id: 3, replicas: 2 }, decode: { hardware_instance_id: 3, replicas: 2 } },
    });
    expect(orchestrated.status).toBe(422);
    expect((await api.call('GET', '/certificates')).body.items.length).toBe(before);
  });

  it('issues nothing when the create is refused, and names a new certificate when the old name is taken', async () => {
    const before = (await api.call('GET', '/certificates')).body.items.length;
    const refused = await api.call('POST', '/deployments/general', { ...privateGeneral('ci-private'), min_replicas: 1 });
    expect(refused.status).toBe(409); // name taken
    expect((await api.call('GET', '/certificates')).body.items.length).toBe(before);
    const first = (await api.call('GET', '/deployments/general')).body.items.find((x: { name: string }) => x.name === 'ci-private');
    expect((await api.call('DELETE', `/deployments/general/${first.id}`)).status).toBe(202);
    const again = await api.call('POST', '/deployments/general', privateGeneral('ci-private'));
    expect(again.status).toBe(201);
    expect((await api.call('GET', `/certificates/${again.body.client_certificate_id}`)).body.name).toBe('ci-private-client-2');
  });
});

describe('key types', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-key-types-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  /**
   * A server that asks for a client certificate the way the gateway does (requested, not
   * required, the platform CA as trust anchor), with an ECDSA P-256 certificate of its own as a
   * per-endpoint certificate now has: it answers with what it saw of the client.
   */
  async function mtlsServer(): Promise<{ port: number; close(): Promise<void> }> {
    const ca = await testCa();
    const own = issueServerCertificate(ca, ['ep.endpoints.test'], { keys: await generateEcKeyPair() });
    const server = https.createServer({ cert: own.certPem, key: own.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: false }, (req, res) => {
      const socket = req.socket as import('node:tls').TLSSocket;
      res.end(JSON.stringify({ authorized: socket.authorized, cn: socket.getPeerCertificate().subject?.CN ?? null, cipher: socket.getCipher().name }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { port: (server.address() as { port: number }).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }

  const run = (command: string, args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(command, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
      child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });

  it('are ECDSA P-256 by default and RSA-2048 when asked; a record from before reads rsa-2048', async () => {
    const ec = await api.call('POST', '/certificates', { name: 'kt-ec' });
    expect(ec.body.key_type).toBe('ecdsa-p256');
    expect(new X509Certificate(await downloadPem(api, ec.body.id)).publicKey.asymmetricKeyType).toBe('ec');
    const rsa = await api.call('POST', '/certificates', { name: 'kt-rsa', key_type: 'rsa-2048' });
    expect(rsa.body.key_type).toBe('rsa-2048');
    expect(new X509Certificate(await downloadPem(api, rsa.body.id)).publicKey.asymmetricKeyType).toBe('rsa');
    expect((await api.call('POST', '/certificates', { name: 'kt-dsa', key_type: 'dsa' })).body.error.field).toBe('key_type');
    await modify(api.store, 'certificate', rsa.body.id, (c) => {
      const { key_type: _dropped, ...older } = c;
      return older;
    });
    expect((await api.call('GET', `/certificates/${rsa.body.id}`)).body.key_type).toBe('rsa-2048');
    const privateOne = await api.call('POST', '/deployments/general', { ...general('kt-private', 'unused'), endpoint_bearer_token: undefined, private_endpoint: true, cluster_id: 2 });
    expect(privateOne.status, JSON.stringify(privateOne.body)).toBe(201);
    expect((await api.call('GET', `/certificates/${privateOne.body.client_certificate_id}`)).body.key_type).toBe('ecdsa-p256');
  });

  it('an ECDSA .pem is presented by curl, Python’s ssl and Node to a server with an ECDSA certificate', async () => {
    const made = await api.call('POST', '/certificates', { name: 'kt-clients' });
    await writeFile(path.join(dir, 'client.pem'), await downloadPem(api, made.body.id), { mode: 0o600 });
    await writeFile(path.join(dir, 'ca.crt'), caPem);
    const server = await mtlsServer();
    const url = `https://ep.endpoints.test:${server.port}/`;
    try {
      const curl = await run('curl', ['-sS', '--cert', 'client.pem', '--cacert', 'ca.crt', '--resolve', `ep.endpoints.test:${server.port}:127.0.0.1`, url]);
      expect(curl.code, curl.stderr).toBe(0);
      expect(JSON.parse(curl.stdout)).toMatchObject({ authorized: true, cn: 'kt-clients' });

      const python = [
        'import http.client, ssl, socket, sys',
        "ctx = ssl.create_default_context(cafile='ca.crt')",
        "ctx.load_cert_chain('client.pem')",
        'class C(http.client.HTTPSConnection):',
        '    def connect(self):',
        `        sock = socket.create_connection(('127.0.0.1', ${server.port}))`,
        "        self.sock = ctx.wrap_socket(sock, server_hostname='ep.endpoints.test')",
        `c = C('ep.endpoints.test', ${server.port}, context=ctx)`,
        "c.request('GET', '/')",
        'sys.stdout.write(c.getresponse().read().decode())',
      ].join('\n');
      const py = await run('python3', ['-c', python]);
      expect(py.code, py.stderr).toBe(0);
      expect(JSON.parse(py.stdout)).toMatchObject({ authorized: true, cn: 'kt-clients' });

      const pem = await readFile(path.join(dir, 'client.pem'), 'utf8');
      const node = await new Promise<string>((resolve, reject) => {
        const req = https.request({ host: '127.0.0.1', port: server.port, servername: 'ep.endpoints.test', path: '/', ca: caPem, cert: pem, key: pem, agent: false }, (res) => {
          let body = '';
          res.on('data', (b: Buffer) => (body += b.toString()));
          res.on('end', () => resolve(body));
        });
        req.on('error', reject);
        req.end();
      });
      expect(JSON.parse(node)).toMatchObject({ authorized: true, cn: 'kt-clients', cipher: expect.stringMatching(/^TLS_|ECDSA/) });
    } finally {
      await server.close();
    }
  });
});
