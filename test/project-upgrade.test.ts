// An installation made before projects existed starts on this release: a data directory (the
// file store) and a Redis store holding records in the shape the previous release writes —
// a deployment, its vault token, a registry credential, a client certificate, an hour of
// usage, none naming a project; a service account of the old `member` role and an admin. The
// service (`infergate serve`, a child process) moves everything into `default` at start-up:
// each record then names `default`, the member's key still signs in and reads as a developer,
// the admin's key as the admin, each record answers GET, and the deployment's endpoint answers
// at its old host and path addresses with its old token.
//
// Serving through the upgrade, measured two ways:
// - Redis (a shared store, several processes): a running service serves the old records (it
//   stands in for the previous release, which served them the same way: a record without a
//   project is the default project's), requests go to the endpoint without a pause, and a
//   second service of this release joins the store — its start-up is the upgrade, every record
//   rewritten under the traffic. No request may fail.
// - The data directory (one process): the upgraded service is stopped and started again while
//   requests go on. Requests fail only between the stop and the moment the new process's
//   replica is ready — a restart's outage, the upgrade adds none — and every one after it succeeds.

import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Sealer, sha256Hex } from '../src/core/secrets.js';
import { CERTIFICATE_NAME_INDEX } from '../src/control/certificate-service.js';
import { SA_KEY_INDEX, SA_NAME_INDEX } from '../src/control/credentials.js';
import { NAME_INDEX, TOKEN_HASH_INDEX } from '../src/control/deployment-service.js';
import { PROJECT_NAME_INDEX } from '../src/control/project-upgrades.js';
import type { Kind } from '../src/domain/records.js';
import { loadOrCreateCa, type CertificateAuthority } from '../src/pki/ca.js';
import { issueClientCertificate } from '../src/pki/client-certs.js';
import { FileStore } from '../src/store/file-store.js';
import { RedisStore } from '../src/store/redis-store.js';
import type { Store } from '../src/store/store.js';
import { USAGE_INDEX } from '../src/store/usage-ledger.js';
import { apiCall } from './helpers/admin-api.js';
import { seedCerts } from './helpers/certs-template.js';
import { httpsRequest, type HttpsResult } from './helpers/https-client.js';
import { FAST_ENGINE, killLeftoverReplicas } from './helpers/platform.js';
import { removePods, scopeOf } from './helpers/pods.js';
import { freePort } from './helpers/ports.js';
import { describeWithRedis, redisUrlForTests } from './helpers/redis.js';
import { startServe, type ServeProcess } from './helpers/serve-process.js';
import { startOnSharedStore } from './helpers/shared-store.js';
import { generalSpec } from './helpers/spec-fixtures.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const DOMAIN = 'endpoints.test';
const SECRET_FILL = 9;
const SECRET = Buffer.alloc(32, SECRET_FILL);
const NAME = 'legacy';
const TOKEN = 'igt_legacy-endpoint-token-0123456789abcdef';
const KEYS = { member: 'igk_legacy-member-key-0123456789abcdef', admin: 'igk_legacy-admin-key-0123456789abcdef' };
const CREATED = '2026-11-01T10:00:00.000Z';
const OWNED: Kind[] = ['deployment', 'token', 'registry_credential', 'certificate', 'usage'];

interface BeforeIds {
  deployment: number;
  token: number;
  credential: number;
  certificate: number;
}

/** Writes the records of an installation from before projects, as the previous release writes them (its unique keys included). */
async function writeBeforeProjects(store: Store, ca: CertificateAuthority): Promise<BeforeIds> {
  const sealer = new Sealer(SECRET);
  for (const [name, role, key] of [['ci', 'member', KEYS.member], ['ops', 'admin', KEYS.admin]] as const) {
    await store.create('service_account', (id) => ({ id, name, role, key_hash: sha256Hex(key), created_at: CREATED }), {
      unique: [{ index: SA_NAME_INDEX, key: name }, { index: SA_KEY_INDEX, key: sha256Hex(key) }],
    });
  }
  const token = await store.create('token', (id) => ({ id, name: `${NAME}-endpoint`, hash: sha256Hex(TOKEN), max_priority: null, created_at: CREATED }), {
    unique: [{ index: TOKEN_HASH_INDEX, key: sha256Hex(TOKEN) }],
  });
  const credential = await store.create('registry_credential', (id) => ({ id, name: 'ghcr-bot', username: 'bot', sealed_password: sealer.seal('registry-password'), registry: 'ghcr.io', created_at: CREATED }), {
    unique: [{ index: 'registry-credential-name', key: 'ghcr-bot' }],
  });
  const spec = generalSpec({ health_check_path: '/health', command: FAST_ENGINE, enable_logging: false });
  const deployment = await store.create(
    'deployment',
    (id) => ({
      id,
      family: 'general',
      name: NAME,
      cluster_id: 1,
      spec,
      scaling: { min_replicas: 1, max_replicas: 1, target_concurrency: 4, cooldown_period: 300, pools: null },
      auth: { token_id: token.value.id, client_certificate_id: null, private_endpoint: false },
      revision: 1,
      revisions: [{ revision: 1, created_at: CREATED, reason: 'create', source_revision: null, status: 'pending', spec }],
      paused: false,
      status: 'pending',
      created_at: CREATED,
      updated_at: CREATED,
    }),
    { unique: [{ index: NAME_INDEX, key: NAME }] },
  );
  const issued = await issueClientCertificate(ca, `${NAME}-client`, { keyType: 'ecdsa-p256' });
  const certificate = await store.create(
    'certificate',
    (id) => ({
      id,
      name: `${NAME}-client`,
      deployment_id: deployment.value.id,
      serial: issued.serial,
      fingerprint_sha256: issued.fingerprintSha256,
      certificate_pem: issued.certPem,
      sealed_key: sealer.seal(issued.keyPem),
      not_after: issued.notAfter.toISOString(),
      revoked_at: null,
      max_priority: null,
      key_type: issued.keyType,
      created_at: CREATED,
    }),
    { unique: [{ index: CERTIFICATE_NAME_INDEX, key: `${NAME}-client` }] },
  );
  const hour = '2026-11-01T10:00:00.000Z';
  await store.create('usage', (id) => ({ id, deployment_id: deployment.value.id, hour, requests: 7, errors: 0, prompt_tokens: 70, completion_tokens: 21, gpu_seconds: 3600, replica_seconds: { Replica: 3600 }, updated_at: CREATED }), {
    unique: [{ index: USAGE_INDEX, key: `${deployment.value.id}:${hour}` }],
  });
  return { deployment: deployment.value.id, token: token.value.id, credential: credential.value.id, certificate: certificate.value.id };
}

/** Every record names `default`, the member is a developer of it, each admin has no project, and keys are the bare names they were. */
async function expectEverythingInDefault(store: Store): Promise<void> {
  const projects = (await store.list('project')).map((p) => p.value);
  expect(projects.map((p) => [p.name, p.gpu_quota, p.members])).toEqual([['default', null, []]]);
  expect(await store.lookup(PROJECT_NAME_INDEX, 'default')).toEqual({ kind: 'project', id: projects[0]!.id });
  for (const kind of OWNED) {
    const records = (await store.list(kind)).map((r) => r.value as { project?: string });
    expect(records.length, kind).toBeGreaterThan(0);
    expect(records.map((r) => r.project), kind).toEqual(records.map(() => 'default'));
  }
  for (const { value } of await store.list('service_account')) {
    if (value.name === 'ci') expect(value).toMatchObject({ role: 'developer', project: 'default' });
    else expect(value, value.name).toMatchObject({ role: 'admin', project: null });
  }
  expect(await store.lookup(NAME_INDEX, NAME)).toMatchObject({ kind: 'deployment' });
  expect(await store.lookup(SA_KEY_INDEX, sha256Hex(KEYS.member))).toMatchObject({ kind: 'service_account' });
}

/** The API answers as before the upgrade: both keys sign in, the member as a developer, every record answers GET. */
async function expectApiAnswers(apiUrl: string, ids: BeforeIds): Promise<void> {
  const member = await apiCall(apiUrl, KEYS.member, 'GET', '/whoami');
  expect(member.status, JSON.stringify(member.body)).toBe(200);
  expect(member.body).toMatchObject({ name: 'ci', role: 'developer' });
  // The whoami of projects names the project too; the one before it does not.
  if ('project' in member.body) expect(member.body.project).toBe('default');
  const admin = await apiCall(apiUrl, KEYS.admin, 'GET', '/whoami');
  expect(admin.status).toBe(200);
  expect(admin.body).toMatchObject({ name: 'ops', role: 'admin' });
  for (const route of [`/deployments/general/${ids.deployment}`, `/vault/tokens/${ids.token}`, `/vault/registry-credentials/${ids.credential}`, `/certificates/${ids.certificate}`]) {
    for (const key of [KEYS.member, KEYS.admin]) {
      const res = await apiCall(apiUrl, key, 'GET', route);
      expect(res.status, `${route}: ${JSON.stringify(res.body)}`).toBe(200);
    }
  }
  const d = (await apiCall(apiUrl, KEYS.member, 'GET', `/deployments/general/${ids.deployment}`)).body;
  expect(d).toMatchObject({ name: NAME, endpoint_token_id: ids.token });
  expect(d.endpoint_url).toMatch(new RegExp(`^${NAME}\\.${DOMAIN.replace('.', '\\.')}(:\\d+)?$`));
  expect(d.endpoint_path_url).toMatch(new RegExp(`/endpoints/${NAME}$`));
}

/** The endpoint at its old addresses: by host, and by path on localhost. */
const byHost = (port: number, ca: string) => httpsRequest({ port, host: `${NAME}.${DOMAIN}`, ca, path: '/v1/models', headers: { authorization: `Bearer ${TOKEN}` } });
const byPath = (port: number, ca: string) => httpsRequest({ port, host: 'localhost', ca, path: `/endpoints/${NAME}/v1/models`, headers: { authorization: `Bearer ${TOKEN}` } });

interface Outcome {
  at: number;
  ok: boolean;
  what: string;
}

/** Requests at both old addresses, one after another, until stopped; a request unanswered in 5 s counts as failed. */
function steadyTraffic(port: () => number, ca: string) {
  const outcomes: Outcome[] = [];
  let running = true;
  const once = async (send: (port: number, ca: string) => Promise<HttpsResult>) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer within 5 s')), 5000)));
    try {
      const res = await Promise.race([send(port(), ca), timeout]);
      outcomes.push({ at: Date.now(), ok: res.status === 200, what: String(res.status) });
    } catch (err) {
      outcomes.push({ at: Date.now(), ok: false, what: (err as Error).message });
    } finally {
      clearTimeout(timer);
    }
  };
  const done = (async () => {
    while (running) {
      await once(byHost);
      await once(byPath);
    }
  })();
  return {
    outcomes,
    /** Resolves once `n` more requests have succeeded. */
    async successes(n: number, ms = 30_000): Promise<void> {
      const target = outcomes.filter((o) => o.ok).length + n;
      await expect.poll(() => outcomes.filter((o) => o.ok).length, { timeout: ms, interval: 50 }).toBeGreaterThanOrEqual(target);
    },
    async stop(): Promise<void> {
      running = false;
      await done;
    },
  };
}

const waitServing = (port: number, ca: string) =>
  expect.poll(async () => (await byHost(port, ca).catch(() => ({ status: 0 }))).status, { timeout: 60_000, interval: 200 }).toBe(200);

describe('an installation from before projects, in a data directory', () => {
  let root: string | undefined;
  let dataDir = '';
  const running: ServeProcess[] = [];
  afterAll(async () => {
    for (const p of running) p.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    if (dataDir) killLeftoverReplicas(dataDir);
    if (root) await removeTempDir(root);
  });

  it('starts with everything in default, its endpoint serving at its old addresses; a restart loses only its own outage', async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-project-upgrade-'));
    dataDir = path.join(root, 'data');
    const certsDir = path.join(root, 'certs');
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await seedCerts(inject('certsTemplate'), certsDir);
    const ca = await loadOrCreateCa(certsDir);
    const before = new FileStore({ dir: dataDir });
    await before.open();
    const ids = await writeBeforeProjects(before, ca);
    await before.close();

    const ports = { INFERGATE_API_PORT: String(await freePort()), INFERGATE_GATEWAY_PORT: String(await freePort()), INFERGATE_METRICS_PORT: String(await freePort()) };
    const gatewayPort = Number(ports.INFERGATE_GATEWAY_PORT);
    const start = async () => {
      const p = await startServe({ dataDir, certsDir, env: { ...ports, INFERGATE_DOMAIN: DOMAIN, INFERGATE_SECRET_KEY: SECRET.toString('base64') } });
      running.push(p);
      return p;
    };
    const first = await start();
    await expectApiAnswers(first.apiUrl, ids);
    await waitServing(gatewayPort, ca.certPem);
    expect((await byPath(gatewayPort, ca.certPem)).status).toBe(200);
    // The endpoint's own certificate names its old host.
    expect((await httpsRequest({ port: gatewayPort, host: `${NAME}.${DOMAIN}`, ca: ca.certPem, path: '/v1/models' })).status).toBe(401);

    // A restart of the upgraded installation under steady requests at both old addresses.
    const traffic = steadyTraffic(() => gatewayPort, ca.certPem);
    await traffic.successes(10);
    const stoppedAt = Date.now();
    first.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    const second = await start();
    await waitServing(gatewayPort, ca.certPem);
    const servingAgainAt = Date.now();
    await traffic.successes(20);
    await traffic.stop();
    const failed = traffic.outcomes.filter((o) => !o.ok);
    // Only while the one process was down or its new replica not yet ready; none before, none after.
    for (const f of failed) expect(f.at, JSON.stringify(f)).toBeGreaterThanOrEqual(stoppedAt);
    const lastFailure = Math.max(0, ...failed.map((f) => f.at));
    expect(lastFailure).toBeLessThanOrEqual(servingAgainAt);
    expect(traffic.outcomes.filter((o) => o.ok && o.at > servingAgainAt).length).toBeGreaterThanOrEqual(20);
    if (process.env.INFERGATE_TEST_MEASURE) {
      const firstFailure = Math.min(...failed.map((f) => f.at));
      console.log(`data dir: ${traffic.outcomes.length} requests, ${failed.length} failed, from ${firstFailure - stoppedAt} ms to ${lastFailure - stoppedAt} ms after SIGTERM; serving again ${servingAgainAt - stoppedAt} ms after it`);
    }
    await expectApiAnswers(second.apiUrl, ids);

    second.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    const after = new FileStore({ dir: dataDir });
    await after.open();
    try {
      await expectEverythingInDefault(after);
    } finally {
      await after.close();
    }
  }, 120_000);
});

describeWithRedis('an installation from before projects, in Redis', () => {
  const prefix = `infergate-test-${randomUUID()}`;
  const redisUrl = () => redisUrlForTests() as string;
  const running: ServeProcess[] = [];
  let root: string | undefined;
  let client: RedisStore | undefined;
  afterAll(async () => {
    for (const p of running) p.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    await client?.close();
    if (root) {
      removePods(scopeOf(root, redisUrl(), prefix));
      await removeTempDir(root);
    }
    const redis = new Redis(redisUrl());
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('is upgraded by a service joining the store while the endpoint serves, and no request fails', async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-project-upgrade-redis-'));
    const shared = { root, redisUrl: redisUrl(), prefix, adminKey: 'igk_redis-upgrade-admin-0123456789', domain: DOMAIN, secretFill: SECRET_FILL, gatewayWorkers: 1 };
    const start = async (name: string) => {
      const p = await startOnSharedStore(shared, name, ['--controller-lease-ttl', '3']);
      running.push(p);
      return p;
    };
    const gatewayPortOf = (p: ServeProcess) => Number(/gateway \(TLS[^)]*\) listening on [^:]+:(\d+)/.exec(p.output())?.[1]);

    // The running service that serves the old records.
    const serving = await start('serving');
    const ca = await loadOrCreateCa(path.join(root, 'certs'));
    client = new RedisStore({ url: redisUrl(), prefix });
    await client.open();
    // The store as the previous release leaves it: no project record, nothing naming one.
    for (const { value } of await client.list('project')) await client.delete('project', value.id);
    const ids = await writeBeforeProjects(client, ca);
    const port = gatewayPortOf(serving);
    await waitServing(port, ca.certPem);
    // Served as they are: nothing has named a project yet.
    for (const [kind, id] of [['deployment', ids.deployment], ['token', ids.token], ['registry_credential', ids.credential], ['certificate', ids.certificate]] as const) {
      expect((await client.get(kind, id))?.value, kind).not.toHaveProperty('project');
    }
    expect(await client.lookup(PROJECT_NAME_INDEX, 'default')).toBeUndefined();

    const traffic = steadyTraffic(() => port, ca.certPem);
    await traffic.successes(10);
    // This release joins the store: its start-up moves every record into default.
    const upgraded = await start('upgraded');
    await traffic.successes(30);
    await traffic.stop();
    expect(traffic.outcomes.filter((o) => !o.ok)).toEqual([]);
    if (process.env.INFERGATE_TEST_MEASURE) console.log(`redis: ${traffic.outcomes.length} requests through the upgrade, none failed`);

    await expectEverythingInDefault(client);
    await expectApiAnswers(upgraded.apiUrl, ids);
    // The new process's gateway serves the old addresses as well.
    const newPort = gatewayPortOf(upgraded);
    expect((await byHost(newPort, ca.certPem)).status).toBe(200);
    expect((await byPath(newPort, ca.certPem)).status).toBe(200);
  }, 120_000);
});
