// Test helper: two projects on a control API made by startControl — team-a with an owner, a
// developer and a viewer (service-account keys), team-b with an owner — and the resources of
// team-a its developer made: a vault token, a deployment of each family (the general one with
// a secret variable), a private deployment with its issued certificate, a certificate, a
// registry credential and a service account. Calls as any of them, optionally choosing the
// project with X-Infergate-Project.

import { expect } from 'vitest';
import { apiCall, type ApiResponse } from './admin-api.js';
import { ADMIN_KEY, generalBody, type TestControl } from './control.js';

export const A = 'team-a';
export const B = 'team-b';
export const TOKEN_A = 'team-a-endpoint-token-0123456789';
export const SECRET_A = 'alice-secret-value-0123456789';
export const REGISTRY_PASSWORD_A = 'team-a-registry-password-0123';

export type CallerName = 'admin' | 'ownerA' | 'developerA' | 'viewerA' | 'ownerB';

export interface TwoProjects {
  keys: Record<CallerName, string>;
  /** team-a's records, by what they are. */
  a: {
    deployment: number;
    orchestrated: number;
    privateDeployment: number;
    token: number;
    tokenValue: string;
    certificate: number;
    registryCredential: number;
    serviceAccount: number;
  };
  /** The project a caller acts in (its home project; the admin's: default). */
  call(who: CallerName, method: string, path: string, body?: unknown, project?: string): Promise<ApiResponse>;
}

/** One call with a key and, when given, X-Infergate-Project. */
export function callAs(url: string, key: string, method: string, path: string, body?: unknown, project?: string): Promise<ApiResponse> {
  return apiCall(url, key, method, path, body, project);
}

const ok = (res: ApiResponse, status: number) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

export async function setUpTwoProjects(api: TestControl): Promise<TwoProjects> {
  const admin = (method: string, path: string, body?: unknown) => callAs(api.url, ADMIN_KEY, method, path, body);
  ok(await admin('POST', '/projects', { name: A }), 201);
  ok(await admin('POST', '/projects', { name: B }), 201);
  const account = async (name: string, role: string, project: string) => ok(await admin('POST', '/service-accounts', { name, role, project }), 201).key as string;
  const keys: Record<CallerName, string> = {
    admin: ADMIN_KEY,
    ownerA: await account('alice-owner', 'owner', A),
    developerA: await account('alice', 'developer', A),
    viewerA: await account('alice-viewer', 'viewer', A),
    ownerB: await account('bob', 'owner', B),
  };
  const call = (who: CallerName, method: string, path: string, body?: unknown, project?: string) => callAs(api.url, keys[who], method, path, body, project);
  const dev = (method: string, path: string, body?: unknown) => call('developerA', method, path, body);

  const token = ok(await dev('POST', '/vault/tokens', { name: 'a-vault' }), 201);
  const deployment = ok(await dev('POST', '/deployments/general', { ...generalBody('chat', TOKEN_A), secret_env: { ALICE_SECRET: SECRET_A } }), 201);
  const orchestrated = ok(
    await dev('POST', '/deployments/orchestrated', { name: 'orch', cluster_id: 1, model: 'org/model', hardware_instance_id: 1, min_replicas: 1, max_replicas: 1, endpoint_token_id: token.id }),
    201,
  );
  const privateDeployment = ok(await dev('POST', '/deployments/general', { ...generalBody('private', 'unused-0123456789abcdef'), endpoint_bearer_token: undefined, private_endpoint: true }), 201);
  const certificate = ok(await dev('POST', '/certificates', { name: 'a-client', deployment_id: deployment.id }), 201);
  const credential = ok(await dev('POST', '/vault/registry-credentials', { name: 'a-registry', username: 'team-a', password: REGISTRY_PASSWORD_A, registry: 'registry.team-a.example' }), 201);
  const robot = ok(await call('ownerA', 'POST', '/service-accounts', { name: 'a-robot', role: 'viewer' }), 201);
  return {
    keys,
    call,
    a: {
      deployment: deployment.id,
      orchestrated: orchestrated.id,
      privateDeployment: privateDeployment.id,
      token: token.id,
      tokenValue: token.token,
      certificate: certificate.id,
      registryCredential: credential.id,
      serviceAccount: robot.id,
    },
  };
}
