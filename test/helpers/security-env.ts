// Test helper for the security suites (test/security/): one in-process gateway + control API
// (startGatewayEnv) with deployments protected every way an endpoint can be — token only,
// client certificate only, both — each routed to a replica of its own that records every
// request it receives. Shared assertions: the shape of every 401, and "no replica saw it".

import { X509Certificate } from 'node:crypto';
import { expect } from 'vitest';
import { normalizeFingerprint } from '../../src/pki/client-certs.js';
import { generalBody } from './control.js';
import { hostOf, startGatewayEnv, tokenFor, waitFor, type GatewayEnv } from './gateway-env.js';
import { startRecordingGrpcUpstream, startRecordingUpstream, type RecordedRequest, type RecordingUpstream } from './recording-upstream.js';
import { downloadPem } from './tls-clients.js';

export type Protection = 'token' | 'certificate' | 'both';

export interface ProtectedDeployment {
  name: string;
  id: number;
  host: string;
  /** The bound bearer token, or null (certificate only). */
  token: string | null;
  /** The bound client certificate and its key in one PEM, or null (token only). */
  pem: string | null;
  certificateId: number | null;
  upstream: RecordingUpstream;
}

export interface SecurityEnv {
  env: GatewayEnv;
  port: number;
  ca: string;
  deployments: Record<string, ProtectedDeployment>;
  /**
   * Creates a deployment with its own recording replica and waits until it is routed. A
   * certificate-protected one gets a certificate issued (private_endpoint), or binds
   * `certificate` (a record already in the store, with the PEM its client presents).
   */
  add(name: string, protection: Protection, opts?: { grpc?: boolean; certificate?: { id: number; pem: string } }): Promise<ProtectedDeployment>;
  /**
   * Stores a certificate record for a PEM made outside the control API (another CA, an
   * expired one…), so a deployment can bind its fingerprint; returns the record's id.
   */
  storeCertificate(name: string, certPem: string): Promise<number>;
  /** Every request any replica of this environment has received, in no particular order. */
  allSeen(): RecordedRequest[];
  /** A mark to pass to `seenSince`. */
  mark(): Map<string, number>;
  /** Per replica, what it received after `mark`. */
  seenSince(mark: Map<string, number>): Record<string, RecordedRequest[]>;
  close(): Promise<void>;
}

export async function startSecurityEnv(): Promise<SecurityEnv> {
  const env = await startGatewayEnv();
  const deployments: Record<string, ProtectedDeployment> = {};
  const add: SecurityEnv['add'] = async (name, protection, opts = {}) => {
    const token = protection === 'certificate' ? null : tokenFor(name);
    // One instance each: hardware profile 1 has 16, and a suite creates a dozen deployments.
    const body: Record<string, unknown> = { ...generalBody(name, token ?? 'unused-token'), max_replicas: 1, endpoint_bearer_token: token ?? undefined };
    if (protection !== 'token') {
      if (opts.certificate) body.client_certificate_id = opts.certificate.id;
      else body.private_endpoint = true;
    }
    if (opts.grpc) body.protocol = 'grpc';
    const res = await env.api.call('POST', '/deployments/general', body);
    if (res.status !== 201) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    const certificateId = (res.body.client_certificate_id as number | null) ?? null;
    const pem = certificateId === null ? null : (opts.certificate?.pem ?? (await downloadPem(env.api, certificateId)));
    const upstream = opts.grpc ? await startRecordingGrpcUpstream(name) : await startRecordingUpstream(name);
    await env.addReplica(res.body.id, upstream.address);
    await waitFor(() => env.gateway.table.lookup(hostOf(name)) !== undefined, 2000, `route for ${name}`);
    await env.waitForReplicas(name, 1);
    const d: ProtectedDeployment = { name, id: res.body.id, host: hostOf(name), token, pem, certificateId, upstream };
    deployments[name] = d;
    return d;
  };
  const storeCertificate: SecurityEnv['storeCertificate'] = async (name, certPem) => {
    const x509 = new X509Certificate(certPem);
    const created = await env.api.store.create('certificate', (id) => ({
      id,
      name,
      deployment_id: null,
      serial: x509.serialNumber.toLowerCase(),
      fingerprint_sha256: normalizeFingerprint(x509.fingerprint256),
      certificate_pem: certPem,
      sealed_key: 'v1.not.a.real.key', // never unsealed: the test holds the key
      not_after: new Date(x509.validTo).toISOString(),
      revoked_at: null,
      created_at: new Date().toISOString(),
    }));
    return created.value.id;
  };
  const all = () => Object.values(deployments);
  return {
    env,
    port: env.port,
    ca: env.ca.certPem,
    deployments,
    add,
    storeCertificate,
    allSeen: () => all().flatMap((d) => d.upstream.seen),
    mark: () => new Map(all().map((d) => [d.name, d.upstream.seen.length])),
    seenSince: (mark) => Object.fromEntries(all().map((d) => [d.name, d.upstream.seen.slice(mark.get(d.name) ?? 0)])),
    close: async () => {
      await env.close();
      for (const d of all()) await d.upstream.close();
    },
  };
}

/** Asserts that no replica received anything since `mark`. */
export function expectNothingReached(sec: SecurityEnv, mark: Map<string, number>): void {
  const reached = Object.entries(sec.seenSince(mark)).filter(([, seen]) => seen.length > 0);
  expect(reached.map(([name, seen]) => `${name}: ${seen.map((s) => `${s.kind} ${s.method} ${s.path}`).join(', ')}`)).toEqual([]);
}

/**
 * Asserts that exactly `count` requests reached the replica of `name` since `mark` (none any
 * other replica), none of them carrying an Authorization header; returns them.
 */
export function expectOnlyReached(sec: SecurityEnv, mark: Map<string, number>, name: string, count = 1): RecordedRequest[] {
  const since = sec.seenSince(mark);
  const elsewhere = Object.entries(since).filter(([n, seen]) => n !== name && seen.length > 0);
  expect(elsewhere.map(([n, seen]) => `${n}: ${seen.map((s) => `${s.method} ${s.path}`).join(', ')}`)).toEqual([]);
  const mine = since[name] ?? [];
  expect(mine.map((s) => `${s.kind} ${s.method} ${s.path}`)).toHaveLength(count);
  for (const s of mine) {
    expect(s.kind).not.toBe('upgrade');
    expect(s.kind).not.toBe('connect');
    expect(s.headers.authorization).toBeUndefined();
    expect(s.headers['proxy-authorization']).toBeUndefined();
  }
  return mine;
}

export interface AnyResponse {
  status: number;
  /** Header name (lowercase) → value(s). */
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * The one refusal shape (docs/request-lifecycle.md): 401, `WWW-Authenticate: Bearer realm=…`,
 * a JSON body `{"error":{"code":"unauthenticated","message":…}}`, and none of the presented
 * secrets echoed anywhere in the head or the body.
 */
export function expectUnauthenticated(res: AnyResponse, presented: ReadonlyArray<string | null | undefined> = []): void {
  expect(res.status).toBe(401);
  expect(first(res.headers['www-authenticate'])).toMatch(/^Bearer realm="[^"]+"/);
  expect(first(res.headers['content-type'])).toMatch(/^application\/json/);
  const parsed = JSON.parse(res.body) as { error?: { code?: unknown; message?: unknown } };
  expect(parsed).toEqual({ error: { code: 'unauthenticated', message: expect.any(String) } });
  const everything = JSON.stringify(res.headers) + res.body;
  for (const secret of presented) if (secret) expect(everything).not.toContain(secret);
}
