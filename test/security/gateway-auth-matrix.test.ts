// Security suite: the gateway's authentication matrix, tested from outside over real TLS on
// loopback, as an attacker's review of M7 tried it — kept so that no request is ever served
// without a valid credential. Owns: every way of presenting (or faking) a credential to a
// token-only, a certificate-only and a token+certificate endpoint, over HTTP/1.1, HTTP/2 and
// gRPC; SNI / Host / :authority disagreements; authentication per request on kept-alive
// connections and HTTP/2 sessions (revocation and token deletion on an open connection); and
// the shape of every 401. Each case asserts what the client saw AND what the replicas
// received: nothing, or exactly the authorized request without its Authorization header.
// Framing attacks (smuggling, upgrades, CONNECT, Expect) are in gateway-smuggling.test.ts.

import * as grpc from '@grpc/grpc-js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import forge from 'node-forge';
import { generateRsaKeyPair, issueServerCertificate, loadOrCreateCa, signCertificate } from '../../src/pki/ca.js';
import { issueClientCertificate } from '../../src/pki/client-certs.js';
import { ADMIN_KEY } from '../helpers/control.js';
import { httpsRequest } from '../helpers/https-client.js';
import { DOMAIN, waitFor } from '../helpers/gateway-env.js';
import { h2Connect, h2Request, RawConnection, type H2Result, type RawResponse } from '../helpers/raw-tls.js';
import { grpcFrame } from '../helpers/recording-upstream.js';
import {
  expectNothingReached,
  expectOnlyReached,
  expectUnauthenticated,
  startSecurityEnv,
  type AnyResponse,
  type ProtectedDeployment,
  type SecurityEnv,
} from '../helpers/security-env.js';
import { downloadPem } from '../helpers/tls-clients.js';

const DAY_MS = 86_400_000;
/**
 * Known limitation (Node's TLS over OpenSSL, reported with M7's matrix): a client certificate
 * whose issuer name is exactly the platform CA's but whose signature does not verify leaves a
 * stale RSA error in OpenSSL's queue, which Node reports on the connection's next read
 * (ERR_SSL_INVALID_PADDING): the HTTP/1.1 connection is destroyed and the HTTP/2 session dies,
 * so the answer to a request with a valid bearer token never reaches the client on such a
 * connection. It fails closed (only the authorized request is forwarded, without its
 * Authorization header) and only a client that forges the CA's name on purpose meets it: each installation's
 * CA now has a name of its own, so another installation's certificate is just "issuer unknown".
 */
const FORGED_NAME_LIMITATION = 'connection cut when a certificate forged under the CA name fails its signature check';
const WRONG_TOKEN = 'tok_wrong_0123456789abcdef0123';
const DUMMY_KEY = 'sk-dummy-api-key-for-sdk';

let sec: SecurityEnv;
let foreignDir: string;
/** Per deployment name: a certificate for its name from another installation's CA. */
const lookalike: Record<string, string> = {};
/** A client certificate from a CA forged under the platform CA's exact name. */
let forgedNamePem: string;
/** An expired certificate from the platform CA (bound to `expired`). */
let expiredPem: string;
/** A self-signed client certificate (its own issuer, unknown to the gateway). */
let selfSignedPem: string;
let memberKey: string;
let deletedToken: string;

const d = (name: string): ProtectedDeployment => {
  const found = sec.deployments[name];
  if (!found) throw new Error(`no deployment ${name}`);
  return found;
};

async function routeSettles(name: string, check: (r: { tokenHash: string | null; clientCertificates: ReadonlyMap<string, unknown> }) => boolean): Promise<void> {
  await waitFor(() => {
    const route = sec.env.gateway.table.lookup(d(name).host);
    return route !== undefined && check(route);
  }, 2000, `route of ${name} updated`);
}

beforeAll(async () => {
  sec = await startSecurityEnv();
  await sec.add('tok', 'token');
  await sec.add('crt', 'certificate');
  await sec.add('both', 'both');
  await sec.add('oth', 'both');
  await sec.add('rev', 'certificate');
  await sec.add('del', 'token');
  await sec.add('rpc', 'both', { grpc: true });

  // Another installation's CA: its client certificates carry the same subject as the real
  // ones (CN <name>-client) under another CA name.
  foreignDir = await mkdtemp(path.join(os.tmpdir(), 'infergate-foreign-ca-'));
  const foreignCa = await loadOrCreateCa(foreignDir);
  for (const name of ['tok', 'crt', 'both', 'rpc']) {
    const c = await issueClientCertificate(foreignCa, `${name}-client`);
    lookalike[name] = c.certPem + c.keyPem;
  }
  const forgedName = await issueClientCertificate(await caForgedUnderNameOf(sec.env.ca.certPem), 'tok-client');
  forgedNamePem = forgedName.certPem + forgedName.keyPem;
  selfSignedPem = await selfSigned('self-signed-client');
  // Fingerprints bound on purpose to certificates that must still fail: the chain or the
  // validity is what refuses them, not an unknown fingerprint.
  const forged = await issueClientCertificate(foreignCa, 'forged-client');
  await sec.add('forged', 'certificate', { certificate: { id: await sec.storeCertificate('forged-client', forged.certPem), pem: forged.certPem + forged.keyPem } });
  const expired = await issueClientCertificate(sec.env.ca, 'expired-client', { now: new Date(Date.now() - 30 * DAY_MS), days: 1 });
  expiredPem = expired.certPem + expired.keyPem;
  await sec.add('expired', 'certificate', { certificate: { id: await sec.storeCertificate('expired-client', expired.certPem), pem: expiredPem } });
  // A platform-CA certificate made for servers (extKeyUsage serverAuth), not for clients.
  const server = issueServerCertificate(sec.env.ca, [`srvcert.${DOMAIN}`]);
  await sec.add('srvcert', 'certificate', { certificate: { id: await sec.storeCertificate('srvcert-server', server.certPem), pem: server.certPem + server.keyPem } });

  const revoked = await sec.env.api.call('POST', `/certificates/${d('rev').certificateId}/revoke`);
  expect(revoked.status).toBe(200);
  await routeSettles('rev', (r) => r.clientCertificates.size === 0);
  const del = await sec.env.api.call('GET', `/deployments/general/${d('del').id}`);
  expect((await sec.env.api.call('DELETE', `/vault/tokens/${del.body.endpoint_token_id}`)).status).toBe(204);
  deletedToken = d('del').token!;
  await routeSettles('del', (r) => r.tokenHash === null);

  const member = await sec.env.api.call('POST', '/service-accounts', { name: 'm7-matrix-member', role: 'member' });
  expect(member.status).toBe(201);
  memberKey = member.body.key;
}, 60_000);

afterAll(async () => {
  await sec?.close();
  if (foreignDir) await rm(foreignDir, { recursive: true, force: true });
});

/** A CA with its own key under exactly the subject of `realCaPem`. */
async function caForgedUnderNameOf(realCaPem: string): Promise<{ certPem: string; keyPem: string }> {
  const real = forge.pki.certificateFromPem(realCaPem);
  const keys = await generateRsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKeyPem);
  cert.serialNumber = '4f02';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + DAY_MS);
  cert.setSubject(real.subject.attributes);
  cert.setIssuer(real.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, critical: true },
  ]);
  signCertificate(cert, keys.privateKeyPem);
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKeyPem };
}

/** A self-signed certificate (key generated natively, signed natively). */
async function selfSigned(cn: string): Promise<string> {
  const keys = await generateRsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKeyPem);
  cert.serialNumber = '4f01';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + DAY_MS);
  cert.setSubject([{ name: 'commonName', value: cn }]);
  cert.setIssuer([{ name: 'commonName', value: cn }]);
  cert.setExtensions([{ name: 'extKeyUsage', clientAuth: true }]);
  signCertificate(cert, keys.privateKeyPem);
  return forge.pki.certificateToPem(cert) + keys.privateKeyPem;
}

// ─── clients ────────────────────────────────────────────────────────────────────────────────

interface Presented {
  headers?: Record<string, string>;
  pem?: string | null;
  path?: string;
}

interface Aimed extends Presented {
  /** The Host header / :authority (default: the deployment's host). */
  host: string;
  /** SNI: a name, or null for none (default: the host). */
  servername?: string | null;
}

/** One HTTP/1.1 request on a fresh TLS connection (no agent), SNI and Host set separately. */
function h1(port: number, ca: string, a: Aimed): Promise<AnyResponse> {
  const servername = a.servername === undefined ? a.host : a.servername;
  return httpsRequest({
    port,
    ca,
    host: a.host,
    servername,
    // The certificate's name is checked only where the gateway has a certificate for the SNI name.
    checkIdentity: servername !== null && servername.endsWith(DOMAIN),
    cert: a.pem ?? undefined,
    key: a.pem ?? undefined,
    path: a.path ?? '/v1/models',
    headers: a.headers,
  });
}

/**
 * One HTTP/2 request on a fresh session (ALPN h2). A stream reset or a session that died
 * answers status 0 with the reason as the body, so assertions show it.
 */
async function h2(port: number, ca: string, a: Aimed): Promise<AnyResponse> {
  const servername = a.servername === undefined ? a.host : a.servername;
  const session = await h2Connect({ port, ca, servername, checkName: servername?.endsWith(DOMAIN), cert: a.pem ?? undefined, key: a.pem ?? undefined });
  try {
    return asAny(await h2Request(session, { ':method': 'GET', ':path': a.path ?? '/v1/models', ':authority': a.host, ...a.headers }));
  } finally {
    session.close();
  }
}

function asAny(r: H2Result): AnyResponse {
  if (r.error !== null) return { status: 0, headers: {}, body: `(no response: ${r.error})` };
  return { status: r.status, headers: r.headers as AnyResponse['headers'], body: r.body };
}

const rawAsAny = (r: RawResponse): AnyResponse => ({ status: r.status, headers: r.headers, body: r.body });

const PROTOCOLS = { 'HTTP/1.1': h1, 'HTTP/2': h2 } as const;

/** Asserts a 200 served by `name`'s replica alone, without Authorization; returns its record. */
function expectServedBy(res: AnyResponse, mark: Map<string, number>, name: string) {
  expect(res.status).toBe(200);
  expect(JSON.parse(res.body)).toMatchObject({ upstream: name });
  return expectOnlyReached(sec, mark, name, 1)[0]!;
}

// ─── the credential matrix ────────────────────────────────────────────────────────────────

interface CredentialCase {
  what: string;
  /** The case uses the target's own token or certificate: only targets that bind one. */
  needs?: 'token' | 'certificate';
  /** What to present to deployment `t`. */
  present(t: ProtectedDeployment): Presented;
  /** Served by t's replica (true), or 401 with nothing reaching any replica (false). */
  passes: boolean;
  /** A known limitation makes this case fail today: it runs as it.fails until it is lifted. */
  knownBug?: string;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
/** A case built on the target's own token (see `needs`). */
const withToken = (f: (token: string, t: ProtectedDeployment) => Presented) => (t: ProtectedDeployment) => f(t.token!, t);
/** A case built on the target's own certificate (see `needs`). */
const withCert = (f: (pem: string, t: ProtectedDeployment) => Presented) => (t: ProtectedDeployment) => f(t.pem!, t);
const auth = (value: string): Record<string, string> => ({ authorization: value });

const CASES: CredentialCase[] = [
  // Served: a valid credential, presented as the docs describe.
  { what: 'its own token', needs: 'token', passes: true, present: withToken((tok) => ({ headers: auth(`Bearer ${tok}`) })) },
  // RFC 9110 §11.1: the scheme is case-insensitive and followed by 1*SP; only the token decides.
  { what: 'its own token as `bearer  <token>` (scheme case, two spaces)', needs: 'token', passes: true, present: withToken((tok) => ({ headers: auth(`bearer  ${tok}`) })) },
  { what: 'its own certificate', needs: 'certificate', passes: true, present: withCert((pem) => ({ pem })) },
  { what: 'its own certificate with a dummy API key (spec: certificate clients may send one)', needs: 'certificate', passes: true, present: withCert((pem) => ({ pem, headers: auth(`Bearer ${DUMMY_KEY}`) })) },
  { what: "its own certificate with another deployment's token (the certificate is checked first)", needs: 'certificate', passes: true, present: withCert((pem) => ({ pem, headers: auth(`Bearer ${d('oth').token}`) })) },
  { what: "its own token with another deployment's certificate (passes by the token)", needs: 'token', passes: true, present: withToken((tok) => ({ pem: d('oth').pem, headers: auth(`Bearer ${tok}`) })) },
  { what: 'its own token with an expired platform certificate (passes by the token)', needs: 'token', passes: true, present: withToken((tok) => ({ pem: expiredPem, headers: auth(`Bearer ${tok}`) })) },
  { what: 'its own token with a self-signed certificate (passes by the token)', needs: 'token', passes: true, present: withToken((tok) => ({ pem: selfSignedPem, headers: auth(`Bearer ${tok}`) })) },
  {
    what: "its own token with another installation's certificate for its name (passes by the token)",
    needs: 'token',
    passes: true,
    present: withToken((tok, t) => ({ pem: lookalike[t.name] ?? lookalike.tok, headers: auth(`Bearer ${tok}`) })),
  },
  {
    what: "its own token with a certificate from a CA forged under the platform CA's exact name (passes by the token)",
    needs: 'token',
    passes: true,
    present: withToken((tok) => ({ pem: forgedNamePem, headers: auth(`Bearer ${tok}`) })),
    knownBug: FORGED_NAME_LIMITATION,
  },

  // Refused: nothing, or a malformed Authorization header around the right token.
  { what: 'no credential at all', passes: false, present: () => ({}) },
  { what: '`Bearer` without a value', passes: false, present: () => ({ headers: auth('Bearer') }) },
  { what: '`Bearer` followed by spaces only', passes: false, present: () => ({ headers: auth('Bearer    ') }) },
  { what: 'Basic with the token as the password', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Basic ${b64(`user:${tok}`)}`) })) },
  { what: 'Basic with the token as the user', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Basic ${b64(`${tok}:`)}`) })) },
  { what: 'the token with no scheme', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(tok) })) },
  { what: 'the token under another scheme (`Token <token>`)', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Token ${tok}`) })) },
  { what: 'the token glued to the scheme (`Bearer<token>`)', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Bearer${tok}`) })) },
  { what: 'the token followed by junk after a space', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Bearer ${tok} junk`) })) },
  { what: 'the token with one character appended', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Bearer ${tok}x`) })) },
  { what: 'the token missing its last character', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Bearer ${tok.slice(0, -1)}`) })) },
  { what: 'the token in double quotes', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Bearer "${tok}"`) })) },
  { what: 'the token with a trailing comma', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Bearer ${tok},`) })) },
  { what: 'the token twice in one header, comma-separated', needs: 'token', passes: false, present: withToken((tok) => ({ headers: auth(`Bearer ${tok}, Bearer ${tok}`) })) },
  // Refused: a real credential, but not this endpoint's.
  { what: 'a wrong token', passes: false, present: () => ({ headers: auth(`Bearer ${WRONG_TOKEN}`) }) },
  { what: "another deployment's token", passes: false, present: () => ({ headers: auth(`Bearer ${d('oth').token}`) }) },
  { what: 'a token deleted from the vault', passes: false, present: () => ({ headers: auth(`Bearer ${deletedToken}`) }) },
  { what: "a member service account's platform key", passes: false, present: () => ({ headers: auth(`Bearer ${memberKey}`) }) },
  { what: 'the admin platform key', passes: false, present: () => ({ headers: auth(`Bearer ${ADMIN_KEY}`) }) },
  // Refused: the right token, in a place the gateway does not read credentials from.
  { what: 'the token in the query string', needs: 'token', passes: false, present: withToken((tok) => ({ path: `/v1/models?access_token=${tok}&token=${tok}&api_key=${tok}&key=${tok}` })) },
  { what: 'the token in cookies', needs: 'token', passes: false, present: withToken((tok) => ({ headers: { cookie: `access_token=${tok}; token=${tok}; authorization=Bearer%20${tok}` } })) },
  { what: 'the token in X-Api-Key and api-key', needs: 'token', passes: false, present: withToken((tok) => ({ headers: { 'x-api-key': tok, 'api-key': tok } })) },
  { what: 'the token in Proxy-Authorization', needs: 'token', passes: false, present: withToken((tok) => ({ headers: { 'proxy-authorization': `Bearer ${tok}` } })) },
  // Refused: certificates that are not this endpoint's bound, valid one.
  { what: "another deployment's certificate", passes: false, present: () => ({ pem: d('oth').pem }) },
  { what: "another deployment's certificate with a wrong token", passes: false, present: () => ({ pem: d('oth').pem, headers: auth(`Bearer ${WRONG_TOKEN}`) }) },
  { what: "another deployment's certificate with a dummy API key", passes: false, present: () => ({ pem: d('oth').pem, headers: auth(`Bearer ${DUMMY_KEY}`) }) },
  { what: "another deployment's certificate with that deployment's token", passes: false, present: () => ({ pem: d('oth').pem, headers: auth(`Bearer ${d('oth').token}`) }) },
  { what: 'a revoked platform certificate', passes: false, present: () => ({ pem: d('rev').pem }) },
  { what: 'an expired platform certificate', passes: false, present: () => ({ pem: expiredPem }) },
  { what: 'a self-signed certificate', passes: false, present: () => ({ pem: selfSignedPem }) },
  { what: "another installation's certificate for its name", passes: false, present: (t) => ({ pem: lookalike[t.name] ?? lookalike.tok }) },
  { what: 'a self-made CA certificate with a dummy API key', passes: false, present: (t) => ({ pem: lookalike[t.name] ?? lookalike.tok, headers: auth(`Bearer ${DUMMY_KEY}`) }) },
];

/** Every secret a case put on the wire: none may come back in a 401. */
function secretsOf(p: Presented): string[] {
  const values = [...Object.values(p.headers ?? {}), p.path ?? ''];
  return values.flatMap((v) => v.split(/[\s,;=&"?]+/)).filter((s) => s.length >= 16 && s !== 'access_token');
}

for (const [protocol, send] of Object.entries(PROTOCOLS)) {
  describe(`credentials over ${protocol}`, () => {
    const TARGETS = [
      ['tok', 'a token-only endpoint', ['token']],
      ['crt', 'a certificate-only endpoint', ['certificate']],
      ['both', 'a token + certificate endpoint', ['token', 'certificate']],
    ] as const;
    for (const [target, label, binds] of TARGETS) {
      describe(label, () => {
        for (const c of CASES.filter((x) => x.needs === undefined || (binds as readonly string[]).includes(x.needs))) {
          const title = c.passes ? `serves ${c.what}, without Authorization at the replica` : `answers 401 to ${c.what}; no replica sees it`;
          (c.knownBug ? it.fails : it)(c.knownBug ? `${title} [known limitation: ${c.knownBug}]` : title, async () => {
            const t = d(target);
            const presented = c.present(t);
            const mark = sec.mark();
            // A known limitation cuts the client's connection after its (authorized) request
            // was forwarded: the next case takes its mark once that request has landed (or
            // after two seconds without it, should the limitation stop forwarding).
            if (c.knownBug) onTestFinished(() => waitFor(() => (sec.seenSince(mark)[t.name]?.length ?? 0) > 0, 2000, 'the forwarded request').then(() => undefined, () => undefined));
            const res = await send(sec.port, sec.ca, { host: t.host, ...presented });
            if (c.passes) {
              const seen = expectServedBy(res, mark, t.name);
              expect(seen.headers.host).toBe(t.host);
              expect(seen.path).toBe(presented.path ?? '/v1/models');
            } else {
              expectUnauthenticated(res, secretsOf(presented));
              expectNothingReached(sec, mark);
            }
          });
        }
      });
    }

    // Each of these deployments binds a credential that must no longer (or never) open it.
    it.each([
      ['its bound certificate after the certificate was revoked', 'rev', () => ({ pem: d('rev').pem })],
      ['its bound token after the token was deleted from the vault', 'del', () => ({ headers: auth(`Bearer ${deletedToken}`) })],
      ['its bound fingerprint presented by a certificate of a self-made CA', 'forged', () => ({ pem: d('forged').pem })],
      ['its bound fingerprint presented by an expired platform certificate', 'expired', () => ({ pem: d('expired').pem })],
      ['its bound fingerprint presented by a platform certificate for servers (serverAuth only)', 'srvcert', () => ({ pem: d('srvcert').pem })],
    ] as Array<[string, string, () => Presented]>)('answers 401 to %s; no replica sees it', async (_what, name, present) => {
      const mark = sec.mark();
      const presented = present();
      const res = await send(sec.port, sec.ca, { host: d(name).host, ...presented });
      expectUnauthenticated(res, secretsOf(presented));
      expectNothingReached(sec, mark);
    });
  });
}

// ─── gRPC ───────────────────────────────────────────────────────────────────────────────────

describe('credentials over gRPC', () => {
  const call = async (p: Presented, host = d('rpc').host) => {
    const session = await h2Connect({ port: sec.port, ca: sec.ca, servername: host, cert: p.pem ?? undefined, key: p.pem ?? undefined });
    try {
      return await h2Request(
        session,
        { ':method': 'POST', ':path': '/test.Echo/Echo', ':authority': host, 'content-type': 'application/grpc', te: 'trailers', ...p.headers },
        grpcFrame('hello'),
      );
    } finally {
      session.close();
    }
  };

  const grpcCases: Array<[string, Presented | (() => Presented), boolean]> = [
    ['its own token in the authorization metadata', () => ({ headers: auth(`Bearer ${d('rpc').token}`) }), true],
    ['its own certificate', () => ({ pem: d('rpc').pem }), true],
    ['its own certificate with a dummy API key', () => ({ pem: d('rpc').pem, headers: auth(`Bearer ${DUMMY_KEY}`) }), true],
    ['no credential', {}, false],
    ['`Bearer` without a value', { headers: auth('Bearer') }, false],
    ['Basic with the token as the password', () => ({ headers: auth(`Basic ${b64(`u:${d('rpc').token}`)}`) }), false],
    ['the token with trailing junk', () => ({ headers: auth(`Bearer ${d('rpc').token} junk`) }), false],
    ['a wrong token', { headers: auth(`Bearer ${WRONG_TOKEN}`) }, false],
    ["another deployment's token", () => ({ headers: auth(`Bearer ${d('oth').token}`) }), false],
    ['a token deleted from the vault', () => ({ headers: auth(`Bearer ${deletedToken}`) }), false],
    ["a member service account's platform key", () => ({ headers: auth(`Bearer ${memberKey}`) }), false],
    ['the token in other metadata keys', () => ({ headers: { 'x-api-key': d('rpc').token!, cookie: `token=${d('rpc').token}` } }), false],
    ["another deployment's certificate", () => ({ pem: d('oth').pem }), false],
    ["another deployment's certificate with a wrong token", () => ({ pem: d('oth').pem, headers: auth(`Bearer ${WRONG_TOKEN}`) }), false],
    ['a revoked certificate', () => ({ pem: d('rev').pem }), false],
    ['an expired platform certificate', () => ({ pem: expiredPem }), false],
    ["another installation's certificate for its name", () => ({ pem: lookalike.rpc }), false],
    ['a certificate from a CA forged under the platform CA name', () => ({ pem: forgedNamePem }), false],
  ];

  it.each(grpcCases)('%s → served: %s', async (_what, p, passes) => {
    const presented = typeof p === 'function' ? p() : p;
    const mark = sec.mark();
    const res = await call(presented);
    expect(res.error).toBeNull();
    expect(res.status).toBe(200);
    if (passes) {
      expect(res.trailers?.['grpc-status']).toBe('0');
      expect(res.trailers?.['x-served-by']).toBe('rpc');
      const seen = expectOnlyReached(sec, mark, 'rpc', 1)[0]!;
      expect(seen.path).toBe('/test.Echo/Echo');
    } else {
      // Trailers-Only: one HEADERS frame with the status, no message, no trailers.
      expect(res.headers['content-type']).toBe('application/grpc');
      expect(res.headers['grpc-status']).toBe('16');
      expect(res.body).toBe('');
      expect(res.trailers).toBeNull();
      const message = decodeURIComponent(String(res.headers['grpc-message'] ?? ''));
      for (const secret of secretsOf(presented)) expect(message + JSON.stringify(res.headers)).not.toContain(secret);
      expectNothingReached(sec, mark);
    }
  });

  it('a grpc-js client gets UNAUTHENTICATED (16) without a token and OK with it; only the authorized call reaches the replica', async () => {
    const passthrough = { requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b };
    const Client = grpc.makeGenericClientConstructor({ Echo: { path: '/test.Echo/Echo', requestStream: false, responseStream: false, ...passthrough } }, 'test.Echo');
    const client = new Client(`127.0.0.1:${sec.port}`, grpc.credentials.createSsl(Buffer.from(sec.ca)), {
      'grpc.ssl_target_name_override': d('rpc').host,
      'grpc.default_authority': d('rpc').host,
    });
    type Unary = (req: Buffer, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: Buffer) => void) => void;
    const unary = (md: grpc.Metadata) =>
      new Promise<{ err: grpc.ServiceError | null; res?: Buffer }>((resolve) => (client.Echo as unknown as Unary).call(client, Buffer.from('x'), md, (err, res) => resolve({ err, res })));
    try {
      const mark = sec.mark();
      const refused = await unary(new grpc.Metadata());
      expect(refused.err?.code).toBe(grpc.status.UNAUTHENTICATED);
      const wrong = new grpc.Metadata();
      wrong.set('authorization', `Bearer ${d('oth').token}`);
      expect((await unary(wrong)).err?.code).toBe(grpc.status.UNAUTHENTICATED);
      expectNothingReached(sec, mark);
      const right = new grpc.Metadata();
      right.set('authorization', `Bearer ${d('rpc').token}`);
      const ok = await unary(right);
      expect(ok.err).toBeNull();
      expect(ok.res?.toString()).toBe('rpc:ok');
      expectOnlyReached(sec, mark, 'rpc', 1);
    } finally {
      client.close();
    }
  });

  it("a gRPC call carrying the gRPC deployment's token but aimed at another endpoint's host: UNAUTHENTICATED, nothing forwarded", async () => {
    const mark = sec.mark();
    const res = await call({ headers: auth(`Bearer ${d('rpc').token}`) }, d('both').host);
    expect(res.headers['grpc-status']).toBe('16');
    expectNothingReached(sec, mark);
  });
});

// ─── SNI / Host / :authority ──────────────────────────────────────────────────────────────

describe('SNI and Host disagreeing', () => {
  // A = tok (token only), B = both (token + certificate), C = crt (certificate only).
  for (const [protocol, send] of Object.entries(PROTOCOLS)) {
    describe(protocol, () => {
      it("SNI of A with Host B and A's token: 401, authenticated against B; no replica sees it", async () => {
        const mark = sec.mark();
        const res = await send(sec.port, sec.ca, { servername: d('tok').host, host: d('both').host, headers: auth(`Bearer ${d('tok').token}`) });
        expectUnauthenticated(res, [d('tok').token]);
        expect(res.headers['www-authenticate']).toContain(`realm="${d('both').host}"`);
        expectNothingReached(sec, mark);
      });

      it("SNI of A with Host B and B's token: served by B's replica, never A's", async () => {
        const mark = sec.mark();
        const res = await send(sec.port, sec.ca, { servername: d('tok').host, host: d('both').host, headers: auth(`Bearer ${d('both').token}`) });
        expect(expectServedBy(res, mark, 'both').headers.host).toBe(d('both').host);
      });

      it("SNI of C with C's certificate and Host B (which binds another certificate): 401", async () => {
        const mark = sec.mark();
        expectUnauthenticated(await send(sec.port, sec.ca, { servername: d('crt').host, host: d('both').host, pem: d('crt').pem }));
        expectNothingReached(sec, mark);
      });

      it("SNI of C with C's certificate and Host A (token only): 401", async () => {
        const mark = sec.mark();
        expectUnauthenticated(await send(sec.port, sec.ca, { servername: d('crt').host, host: d('tok').host, pem: d('crt').pem }));
        expectNothingReached(sec, mark);
      });

      it("SNI of B with B's certificate and Host C: 401, while Host B on the same terms is served", async () => {
        const mark = sec.mark();
        expectUnauthenticated(await send(sec.port, sec.ca, { servername: d('both').host, host: d('crt').host, pem: d('both').pem }));
        expectNothingReached(sec, mark);
        expectServedBy(await send(sec.port, sec.ca, { servername: d('both').host, host: d('both').host, pem: d('both').pem }), mark, 'both');
      });

      it.each([
        ['no SNI', null],
        ['the SNI of an unknown name', 'evil.example'],
        ['the SNI of an unknown endpoint', `nobody.${DOMAIN}`],
      ] as Array<[string, string | null]>)('%s: 401 without a credential, Host decides with one', async (_what, servername) => {
        // The harness really sends what the case says: the gateway sees this SNI (false: none).
        const names = new Set<string | false | null | undefined>();
        const onSecure = (socket: tls.TLSSocket) => names.add((socket as tls.TLSSocket & { servername?: string | false | null }).servername);
        sec.env.gateway.server.on('secureConnection', onSecure);
        onTestFinished(() => void sec.env.gateway.server.off('secureConnection', onSecure));
        let mark = sec.mark();
        expectUnauthenticated(await send(sec.port, sec.ca, { servername, host: d('tok').host }));
        expectUnauthenticated(await send(sec.port, sec.ca, { servername, host: d('tok').host, headers: auth(`Bearer ${d('both').token}`) }));
        expectNothingReached(sec, mark);
        expectServedBy(await send(sec.port, sec.ca, { servername, host: d('tok').host, headers: auth(`Bearer ${d('tok').token}`) }), mark, 'tok');
        mark = sec.mark();
        expectServedBy(await send(sec.port, sec.ca, { servername, host: d('crt').host, pem: d('crt').pem }), mark, 'crt');
        mark = sec.mark();
        expectUnauthenticated(await send(sec.port, sec.ca, { servername, host: d('crt').host, pem: d('both').pem }));
        expectNothingReached(sec, mark);
        expect([...names]).toEqual([servername ?? false]);
      });

      it.each([
        ['with the port', (h: string) => `${h}:443`],
        ['with another port', (h: string) => `${h}:8443`],
        ['in upper case', (h: string) => h.toUpperCase()],
        ['in mixed case with the port', (h: string) => `${h[0]!.toUpperCase()}${h.slice(1)}:443`],
      ] as Array<[string, (h: string) => string]>)('Host %s routes to the same endpoint and is authenticated against it', async (_what, shape) => {
        const mark = sec.mark();
        expectUnauthenticated(await send(sec.port, sec.ca, { servername: d('tok').host, host: shape(d('tok').host) }));
        expectUnauthenticated(await send(sec.port, sec.ca, { servername: d('tok').host, host: shape(d('tok').host), headers: auth(`Bearer ${d('both').token}`) }));
        expectNothingReached(sec, mark);
        const seen = expectServedBy(await send(sec.port, sec.ca, { servername: d('tok').host, host: shape(d('tok').host), headers: auth(`Bearer ${d('tok').token}`) }), mark, 'tok');
        expect(seen.headers.host).toBe(d('tok').host);
      });

      it.each([
        ['with a trailing dot', (h: string) => `${h}.`],
        ['as a comma-separated list B, A', (h: string) => `${d('both').host}, ${h}`],
        ['with a path', (h: string) => `${h}/x`],
        ['as an unknown endpoint', () => `nobody.${DOMAIN}`],
      ] as Array<[string, (h: string) => string]>)('Host %s is no endpoint: 404 even with a valid token, nothing reaches a replica', async (_what, shape) => {
        const mark = sec.mark();
        const res = await send(sec.port, sec.ca, { servername: d('tok').host, host: shape(d('tok').host), headers: auth(`Bearer ${d('tok').token}`) });
        // 404 today (HTTP/2 resets a stream whose :authority holds ',' or '/': status 0); a
        // stricter gateway may say 400. Never served, never 5xx.
        expect([0, 400, 404]).toContain(res.status);
        expect(res.body).not.toContain(d('tok').token);
        expectNothingReached(sec, mark);
      });
    });
  }

  it("HTTP/1.1 Host that looks like userinfo (A:443@B): B's token is refused and B's replica sees nothing", async () => {
    const mark = sec.mark();
    const host = `${d('tok').host}:443@${d('both').host}`;
    const res = await h1(sec.port, sec.ca, { servername: d('both').host, host, headers: auth(`Bearer ${d('both').token}`) });
    expect([400, 401, 404]).toContain(res.status);
    if (res.status === 401) expectUnauthenticated(res, [d('both').token]);
    expectNothingReached(sec, mark);
  });

  it("HTTP/2 :authority and host disagreeing: authentication and routing follow the same name", async () => {
    const session = await h2Connect({ port: sec.port, ca: sec.ca, servername: d('tok').host });
    try {
      const A = d('tok');
      const B = d('both');
      let mark = sec.mark();
      // :authority A, host B, A's token: judged as B → 401.
      const r1 = await h2Request(session, { ':path': '/v1/models', ':authority': A.host, host: B.host, ...auth(`Bearer ${A.token}`) });
      expect(r1.error).toBeNull();
      if (r1.status !== 400) expectUnauthenticated(asAny(r1), [A.token]);
      // :authority B, host A, B's token: judged as A → 401.
      const r2 = await h2Request(session, { ':path': '/v1/models', ':authority': B.host, host: A.host, ...auth(`Bearer ${B.token}`) });
      expect(r2.error).toBeNull();
      if (r2.status !== 400) expectUnauthenticated(asAny(r2), [B.token]);
      expectNothingReached(sec, mark);
      // Whichever name a credential is accepted for is the replica that gets the request.
      for (const [authority, host, owner] of [
        [A.host, B.host, B],
        [B.host, A.host, A],
      ] as const) {
        mark = sec.mark();
        const r = await h2Request(session, { ':path': '/v1/models', ':authority': authority, host, ...auth(`Bearer ${owner.token}`) });
        expect(r.error).toBeNull();
        if (r.status === 400) expectNothingReached(sec, mark);
        else expect(expectServedBy(asAny(r), mark, owner.name).headers.host).toBe(owner.host);
      }
    } finally {
      session.close();
    }
  });

  it('HTTP/2 with an empty :authority and no host is refused before any replica', async () => {
    const session = await h2Connect({ port: sec.port, ca: sec.ca, servername: d('tok').host });
    try {
      const mark = sec.mark();
      const r = await h2Request(session, { ':path': '/v1/models', ':authority': '', ...auth(`Bearer ${d('tok').token}`) });
      expect(r.status === 0 || r.status === 400 || r.status === 404).toBe(true);
      expectNothingReached(sec, mark);
    } finally {
      session.close();
    }
  });

  describe('HTTP/1.1 request shapes (raw)', () => {
    const open = (servername: string | null = d('tok').host, pem?: string) =>
      RawConnection.open({ port: sec.port, ca: sec.ca, servername, cert: pem, key: pem });
    const exchange = async (payload: string, count = 1, servername?: string | null) => {
      const conn = await open(servername);
      conn.write(payload);
      await conn.waitFor(count, 2000);
      conn.close();
      return conn;
    };

    it('a missing Host in HTTP/1.1 is 400, in HTTP/1.0 404 (and HTTP/0.9 is refused); nothing reaches a replica', async () => {
      const mark = sec.mark();
      const tok = d('tok').token;
      const v11 = await exchange(`GET /v1/models HTTP/1.1\r\nAuthorization: Bearer ${tok}\r\n\r\n`);
      expect(v11.responses.map((r) => r.status)).toEqual([400]);
      const v10 = await exchange(`GET /v1/models HTTP/1.0\r\nAuthorization: Bearer ${tok}\r\n\r\n`);
      expect(v10.responses.map((r) => r.status)).toEqual([404]);
      const v09 = await exchange(`GET /v1/models\r\n\r\n`);
      expect(v09.responses.every((r) => r.status === 400 || r.status === 404)).toBe(true);
      expectNothingReached(sec, mark);
    });

    // RFC 9112 §3.2: a request with more than one Host line is answered 400; the gateway
    // refuses a second Authorization line too, rather than pick one of two credentials.
    it.each([
      ["two Host headers (A then B) with B's token", () => `Host: ${d('tok').host}\r\nHost: ${d('both').host}\r\nAuthorization: Bearer ${d('both').token}\r\n`],
      ["two Host headers (A then B) with A's token", () => `Host: ${d('tok').host}\r\nHost: ${d('both').host}\r\nAuthorization: Bearer ${d('tok').token}\r\n`],
      ['two Authorization headers, a wrong one first', () => `Host: ${d('tok').host}\r\nAuthorization: Bearer ${WRONG_TOKEN}\r\nAuthorization: Bearer ${d('tok').token}\r\n`],
      ['two Authorization headers, the right one first', () => `Host: ${d('tok').host}\r\nAuthorization: Bearer ${d('tok').token}\r\nAuthorization: Bearer ${WRONG_TOKEN}\r\n`],
    ])('%s: 400 in the error shape, nothing reaches a replica', async (_what, headers) => {
      const mark = sec.mark();
      const conn = await exchange(`GET /v1/models HTTP/1.1\r\n${headers()}\r\n`);
      const res = conn.responses[0]!;
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'invalid_request' } });
      expect(res.body).not.toContain(d('tok').token!);
      expectNothingReached(sec, mark);
    });

    // RFC 9112 §3.2.2: an absolute-form target's host wins over Host; one that disagrees with
    // the Host the request is routed and authenticated by is refused, not resolved.
    it("an absolute-form target for B with Host A: 400 with or without a token, nothing reaches a replica", async () => {
      const mark = sec.mark();
      for (const auth of [`Authorization: Bearer ${d('both').token}\r\n`, `Authorization: Bearer ${d('tok').token}\r\n`, '']) {
        const conn = await exchange(`GET https://${d('both').host}/v1/models HTTP/1.1\r\nHost: ${d('tok').host}\r\n${auth}\r\n`);
        expect(conn.responses[0]!.status).toBe(400);
      }
      expectNothingReached(sec, mark);
    });

    it('an absolute-form target for its own Host is served, and reaches the replica in origin form', async () => {
      const mark = sec.mark();
      const conn = await exchange(`GET https://${d('tok').host}/v1/models?x=1 HTTP/1.1\r\nHost: ${d('tok').host}\r\nAuthorization: Bearer ${d('tok').token}\r\n\r\n`);
      const seen = expectServedBy(rawAsAny(conn.responses[0]!), mark, 'tok');
      expect(seen.path).toBe('/v1/models?x=1');
    });

    it('an Authorization header folded onto a continuation line (obs-fold) is 400; nothing reaches a replica', async () => {
      const mark = sec.mark();
      const conn = await exchange(`GET /v1/models HTTP/1.1\r\nHost: ${d('tok').host}\r\nAuthorization: Bearer\r\n ${d('tok').token}\r\n\r\n`);
      expect(conn.responses.map((r) => r.status)).toEqual([400]);
      expectNothingReached(sec, mark);
    });
  });
});

// ─── per request, not per connection ─────────────────────────────────────────────────────

describe('authentication is per request on a kept-alive connection', () => {
  const get = (host: string, extra = '') => `GET /v1/models HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;

  it('HTTP/1.1 keep-alive: an authorized request, then none, then a wrong one, then authorized again → 200, 401, 401, 200', async () => {
    const A = d('tok');
    const conn = await RawConnection.open({ port: sec.port, ca: sec.ca, servername: A.host });
    try {
      const mark = sec.mark();
      const steps = [`Authorization: Bearer ${A.token}\r\n`, '', `Authorization: Bearer ${d('oth').token}\r\n`, `Authorization: Bearer ${A.token}\r\n`];
      for (const [i, extra] of steps.entries()) {
        conn.write(get(A.host, extra));
        await conn.waitFor(i + 1);
      }
      expect(conn.closed).toBe(false);
      expect(conn.responses.map((r) => r.status)).toEqual([200, 401, 401, 200]);
      for (const r of conn.responses.filter((x) => x.status === 401)) expectUnauthenticated(rawAsAny(r), [d('oth').token]);
      expectOnlyReached(sec, mark, 'tok', 2);
    } finally {
      conn.close();
    }
  });

  it('HTTP/1.1 pipelined in one write: authorized, unauthenticated, other host with the same token → 200, 401, 401', async () => {
    const A = d('tok');
    const conn = await RawConnection.open({ port: sec.port, ca: sec.ca, servername: A.host });
    try {
      const mark = sec.mark();
      conn.write(get(A.host, `Authorization: Bearer ${A.token}\r\n`) + get(A.host) + get(d('both').host, `Authorization: Bearer ${A.token}\r\n`));
      await conn.waitFor(3);
      expect(conn.responses.map((r) => r.status)).toEqual([200, 401, 401]);
      expectOnlyReached(sec, mark, 'tok', 1);
    } finally {
      conn.close();
    }
  });

  it("HTTP/1.1 on a connection authenticated by C's certificate: a request for another host is 401, C's are served", async () => {
    const C = d('crt');
    const conn = await RawConnection.open({ port: sec.port, ca: sec.ca, servername: C.host, cert: C.pem!, key: C.pem! });
    try {
      const mark = sec.mark();
      for (const host of [C.host, d('tok').host, d('both').host, C.host]) {
        conn.write(get(host));
        await conn.waitFor(conn.responses.length + 1);
      }
      expect(conn.responses.map((r) => r.status)).toEqual([200, 401, 401, 200]);
      expectOnlyReached(sec, mark, 'crt', 2);
    } finally {
      conn.close();
    }
  });

  it('HTTP/2: on one session, streams without or with a wrong credential are 401 next to authorized ones, in any order', async () => {
    const A = d('tok');
    const session = await h2Connect({ port: sec.port, ca: sec.ca, servername: A.host });
    try {
      const mark = sec.mark();
      const first = await h2Request(session, { ':path': '/v1/models', ...auth(`Bearer ${A.token}`) });
      expect(first.status).toBe(200);
      const second = await h2Request(session, { ':path': '/v1/models' });
      expectUnauthenticated(asAny(second));
      // Concurrent streams: each judged on its own.
      const mixed = await Promise.all([
        h2Request(session, { ':path': '/v1/models', ...auth(`Bearer ${d('oth').token}`) }),
        h2Request(session, { ':path': '/v1/models', ...auth(`Bearer ${A.token}`) }),
        h2Request(session, { ':path': '/v1/models', ':authority': d('both').host, ...auth(`Bearer ${A.token}`) }),
        h2Request(session, { ':path': '/v1/models' }),
      ]);
      expect(mixed.map((r) => r.status)).toEqual([401, 200, 401, 401]);
      expectOnlyReached(sec, mark, 'tok', 2);
    } finally {
      session.close();
    }
  });

  it("HTTP/2: a session opened with C's certificate does not authorize streams for other hosts", async () => {
    const C = d('crt');
    const session = await h2Connect({ port: sec.port, ca: sec.ca, servername: C.host, cert: C.pem!, key: C.pem! });
    try {
      const mark = sec.mark();
      const results = [];
      for (const host of [C.host, d('both').host, d('tok').host, d('rpc').host, C.host]) {
        results.push(await h2Request(session, { ':path': '/v1/models', ':authority': host }));
      }
      expect(results.map((r) => r.status)).toEqual([200, 401, 401, 401, 200]);
      expectOnlyReached(sec, mark, 'crt', 2);
    } finally {
      session.close();
    }
  });

  // Revocation and deletion reach the routing table within a rebuild; an open connection's
  // next request is judged against the new table (the certificate's fingerprint is cached per
  // connection, never the decision).
  describe('credentials withdrawn while a connection is open', () => {
    let live: ProtectedDeployment;
    beforeAll(async () => {
      live = await sec.add('live', 'certificate');
    });

    /** Issues a fresh certificate, binds it to `live`, and waits until the gateway accepts it. */
    async function bindFreshCertificate(name: string): Promise<{ id: number; pem: string }> {
      const created = await sec.env.api.call('POST', '/certificates', { name });
      expect(created.status).toBe(201);
      expect((await sec.env.api.call('PATCH', `/deployments/general/${live.id}`, { client_certificate_id: created.body.id })).status).toBe(200);
      const fingerprint = created.body.fingerprint_sha256 as string;
      await waitFor(() => sec.env.gateway.table.lookup(live.host)?.clientCertificates.has(fingerprint) === true, 2000, 'new certificate bound');
      return { id: created.body.id, pem: await downloadPem(sec.env.api, created.body.id) };
    }

    /** Sends requests on the open connection until one is 401; returns the ms it took. */
    async function untilRefused(send: () => Promise<number>): Promise<number> {
      const start = Date.now();
      for (;;) {
        const status = await send();
        if (status === 401) return Date.now() - start;
        expect(status).toBe(200);
        if (Date.now() - start > 1000) throw new Error('still served more than 1 s after the credential was withdrawn');
        await new Promise((r) => setTimeout(r, 10));
      }
    }

    it('HTTP/1.1: a certificate revoked mid-connection is refused on that connection within a second', async () => {
      const cert = await bindFreshCertificate('live-h1');
      const conn = await RawConnection.open({ port: sec.port, ca: sec.ca, servername: live.host, cert: cert.pem, key: cert.pem });
      try {
        const send = async () => {
          conn.write(get(live.host));
          const n = conn.responses.length + 1;
          await conn.waitFor(n);
          expect(conn.responses).toHaveLength(n);
          return conn.responses[n - 1]!.status;
        };
        expect(await send()).toBe(200);
        expect((await sec.env.api.call('POST', `/certificates/${cert.id}/revoke`)).status).toBe(200);
        expect(await untilRefused(send)).toBeLessThan(1000);
        const mark = sec.mark();
        expect(await send()).toBe(401);
        expectUnauthenticated(rawAsAny(conn.responses.at(-1)!));
        expectNothingReached(sec, mark);
        expect(conn.closed).toBe(false);
      } finally {
        conn.close();
      }
    });

    it('HTTP/2: a certificate revoked mid-session is refused on that session within a second', async () => {
      const cert = await bindFreshCertificate('live-h2');
      const session = await h2Connect({ port: sec.port, ca: sec.ca, servername: live.host, cert: cert.pem, key: cert.pem });
      try {
        const send = async () => (await h2Request(session, { ':path': '/v1/models' })).status;
        expect(await send()).toBe(200);
        expect((await sec.env.api.call('POST', `/certificates/${cert.id}/revoke`)).status).toBe(200);
        expect(await untilRefused(send)).toBeLessThan(1000);
        const mark = sec.mark();
        expectUnauthenticated(asAny(await h2Request(session, { ':path': '/v1/models' })));
        expectNothingReached(sec, mark);
      } finally {
        session.close();
      }
    });

    it('HTTP/1.1 and HTTP/2: a token deleted from the vault is refused on open connections within a second', async () => {
      const dt = await sec.add('livetok', 'token');
      const conn = await RawConnection.open({ port: sec.port, ca: sec.ca, servername: dt.host });
      const session = await h2Connect({ port: sec.port, ca: sec.ca, servername: dt.host });
      try {
        const sendH1 = async () => {
          conn.write(get(dt.host, `Authorization: Bearer ${dt.token}\r\n`));
          const n = conn.responses.length + 1;
          await conn.waitFor(n);
          return conn.responses[n - 1]!.status;
        };
        const sendH2 = async () => (await h2Request(session, { ':path': '/v1/models', ...auth(`Bearer ${dt.token}`) })).status;
        expect([await sendH1(), await sendH2()]).toEqual([200, 200]);
        const tokenId = (await sec.env.api.call('GET', `/deployments/general/${dt.id}`)).body.endpoint_token_id;
        expect((await sec.env.api.call('DELETE', `/vault/tokens/${tokenId}`)).status).toBe(204);
        expect(await untilRefused(sendH1)).toBeLessThan(1000);
        expect(await untilRefused(sendH2)).toBeLessThan(1000);
        const mark = sec.mark();
        expect([await sendH1(), await sendH2()]).toEqual([401, 401]);
        expectNothingReached(sec, mark);
      } finally {
        conn.close();
        session.close();
      }
    });
  });
});

// ─── the 401 itself ───────────────────────────────────────────────────────────────────────

describe('the 401 response', () => {
  it.each(Object.entries(PROTOCOLS))(
    '%s: carries WWW-Authenticate Bearer with the routed host as realm, error="invalid_token" when a token was presented, the JSON error shape, and no echo of what was presented',
    async (_protocol, send) => {
      const A = d('tok');
      const secretCookie = 'cookie-secret-value-0123456789';
      const none = await send(sec.port, sec.ca, { host: A.host, headers: { cookie: `session=${secretCookie}` } });
      expectUnauthenticated(none, [secretCookie]);
      expect(none.headers['www-authenticate']).toBe(`Bearer realm="${A.host}"`);
      expect(JSON.parse(none.body).error.message).toMatch(/requires Authorization: Bearer <token>/);

      const wrong = await send(sec.port, sec.ca, { host: A.host, headers: auth(`Bearer ${WRONG_TOKEN}`) });
      expectUnauthenticated(wrong, [WRONG_TOKEN]);
      expect(wrong.headers['www-authenticate']).toBe(`Bearer realm="${A.host}", error="invalid_token"`);

      // Another deployment's real token: not echoed, and the message does not say whose it is.
      const foreign = await send(sec.port, sec.ca, { host: A.host, headers: auth(`Bearer ${d('oth').token}`) });
      expectUnauthenticated(foreign, [d('oth').token]);
      expect(foreign.body).not.toContain('oth');

      const cert = await send(sec.port, sec.ca, { host: d('crt').host, pem: d('oth').pem });
      expectUnauthenticated(cert);
      expect(cert.headers['www-authenticate']).toBe(`Bearer realm="${d('crt').host}"`);
      expect(JSON.parse(cert.body).error.message).toMatch(/client certificate is not accepted/);
      expect(cert.body).not.toMatch(/[0-9a-f]{64}/); // no fingerprint either
    },
  );

  it('counts each refusal in infergate_auth_failures_total by reason', async () => {
    const before = await sec.env.registry.getSingleMetricAsString('infergate_auth_failures_total');
    await h1(sec.port, sec.ca, { host: d('tok').host, headers: auth(`Bearer ${WRONG_TOKEN}`) });
    const after = await sec.env.registry.getSingleMetricAsString('infergate_auth_failures_total');
    const count = (text: string) => Number(/infergate_auth_failures_total\{[^}]*deployment="tok"[^}]*reason="invalid_token"[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
    expect(count(after)).toBe(count(before) + 1);
  });
});
