// Registry credentials and registry hosts against the real dockerd of this machine, as the
// attacks of issue M20 were made: `infergate serve --runtime docker` with fake registries on
// loopback (test/helpers/fake-registry.ts: each logs every connection and Authorization header
// and answers 401 with a Basic challenge). A member who names the vault's credential with an
// image on another host, or clones or PATCHes a deployment with credentials onto another host,
// gets a 400, and that host hears nothing; with the credentials set to null the daemon pulls
// from the (listed) host without any Authorization. A host --registries does not list is a 400
// and no connection; an image naming the service's own metrics port is a 400 and the metrics
// listener accepts no connection. The image puller refuses a refused host on its own too, with
// no request reaching it. Skipped loudly without a daemon, failed under CI=true.

import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dockerClient } from '../../src/runtime/docker/client.js';
import { LABEL } from '../../src/runtime/docker/container-spec.js';
import { ImagePuller, PullError } from '../../src/runtime/docker/image-puller.js';
import { HostRegistryGate } from '../../src/net/registry-gate.js';
import { apiCall } from '../helpers/admin-api.js';
import { dockerGate, removeContainersWithLabel } from '../helpers/docker.js';
import { startFakeRegistry, type FakeRegistry } from '../helpers/fake-registry.js';
import { platformDirs, startPlatform, type Platform, type PlatformDirs } from '../helpers/platform.js';
import { removeTempDir } from '../helpers/temp-dirs.js';

const available = await dockerGate();
const docker: Dockerode = dockerClient();

const CORP = { username: 'corpbot', password: 'corp-vault-password-0123' };
const BOB = { username: 'bob', password: 'bobs-own-password-4567' };

let root: string;
let dirs: PlatformDirs;
let platform: Platform;
let scope = '';
let memberKey: string;
/** Listed in --registries: the vault credential's host. */
let corpRegistry: FakeRegistry;
/** Listed in --registries: the attacker's hosts (a clone's, a PATCH's), which must never see a credential of another. */
let attacker: FakeRegistry;
let attacker2: FakeRegistry;
/** Not listed: the daemon must never even connect. */
let unlisted: FakeRegistry;

const asMember = (method: string, route: string, body?: unknown) => apiCall(platform.apiUrl, memberKey, method, route, body);

function general(name: string, image: string, o: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, cluster_id: 1, hardware_instance_id: 1, image, tag: 'v1', container_port: 8000, command: [], min_replicas: 1, max_replicas: 1, endpoint_bearer_token: `tok-${name}-0123456789`, ...o };
}

/** The metrics listener's accepted-connection count, read over a connection of its own (counted too). */
async function metricsConnections(): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: dirs.ports.metrics, path: '/metrics', agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
  const m = /^infergate_connections_accepted_total\{listener="metrics"\} (\d+)$/m.exec(text);
  if (!m) throw new Error('no infergate_connections_accepted_total{listener="metrics"} in the scrape');
  return Number(m[1]);
}

describe.skipIf(!available)('registry credentials and registry hosts, with the real daemon', () => {
  beforeAll(async () => {
    [corpRegistry, attacker, attacker2, unlisted] = await Promise.all([startFakeRegistry(), startFakeRegistry(), startFakeRegistry(), startFakeRegistry()]);
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-registry-hosts-'));
    dirs = await platformDirs(root, 'registries');
    // The metrics listener is listed too: this service's own listeners are refused even so.
    const registries = [corpRegistry.host, attacker.host, attacker2.host, `127.0.0.1:${dirs.ports.metrics}`].join(',');
    platform = await startPlatform(dirs, ['--runtime', 'docker', '--registries', registries, '--stop-grace', '1']);
    scope = /network infergate-([0-9a-f]+)/.exec(platform.serve.output())?.[1] ?? '';
    expect(platform.serve.output()).toContain(`infergate: the daemon pulls from ${registries.split(',').join(', ')} (--registries)`);
    const member = await platform.call('POST', '/service-accounts', { name: 'mallory', role: 'member' });
    expect(member.status).toBe(201);
    memberKey = member.body.key;
  }, 120_000);

  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') process.stderr.write(`--- infergate serve output ---\n${platform?.serve.output() ?? ''}\n`);
  });

  afterAll(async () => {
    platform?.serve.kill('SIGKILL');
    await platform?.serve.exited;
    if (scope) {
      await removeContainersWithLabel(docker, LABEL.scope, scope);
      await docker.getNetwork(`infergate-${scope}`).remove().catch(() => {});
    }
    await Promise.all([corpRegistry, attacker, attacker2, unlisted].map((r) => r?.stop()));
    if (root) await removeTempDir(root);
  }, 60_000);

  let vaultDeployment: number;

  it("a member naming the vault's credential with an image on another host is refused, and that host hears nothing; on its own host it is sent", async () => {
    const stored = await platform.call('POST', '/vault/registry-credentials', { name: 'corp', ...CORP, registry: corpRegistry.host });
    expect(stored.status).toBe(201);
    const credential = stored.body.id as number;
    // The attack of the issue: the vault's Basic auth sent to a registry of the member's choosing.
    const stolen = await asMember('POST', '/deployments/general', general('steal', `${attacker.host}/corp/engine`, { registry_credential_id: credential }));
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toMatchObject({ field: 'registry_credential_id', message: expect.stringMatching(new RegExp(`is for the registry ${corpRegistry.host}, and image ${attacker.host}/corp/engine is pulled from ${attacker.host}`)) });
    // On the host it is bound to, the daemon sends it: the fake registry would show a leak.
    const ok = await asMember('POST', '/deployments/general', general('corp-engine', `${corpRegistry.host}/corp/engine`, { registry_credential_id: credential }));
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    vaultDeployment = ok.body.id;
    await expect.poll(() => corpRegistry.credentialsSent(), { timeout: 60_000 }).toContain(`${CORP.username}:${CORP.password}`);
    // Asserted after the daemon's pull from the credential's own host has arrived.
    expect(attacker.connections()).toBe(0);
    expect(unlisted.connections()).toBe(0);
  }, 90_000);

  it('a clone or PATCH onto another host is refused while it would carry the credentials; with null the daemon pulls there without any', async () => {
    const source = await asMember('POST', '/deployments/general', general('bobs', `${corpRegistry.host}/bob/engine`, { registry_username: BOB.username, registry_password: BOB.password }));
    expect(source.status).toBe(201);
    const id = source.body.id as number;
    await expect.poll(() => corpRegistry.credentialsSent(), { timeout: 60_000 }).toContain(`${BOB.username}:${BOB.password}`);

    // The clone of the issue: a new image on another host, the source's password carried along.
    const carried = await asMember('POST', `/deployments/general/${id}/clone`, { name: 'bobs-clone', endpoint_bearer_token: 'tok-bobs-clone-0123456789', image: `${attacker.host}/bob/cloned` });
    expect(carried.status).toBe(400);
    expect(carried.body.error.details.map((p: { field: string }) => p.field)).toEqual(['registry_username', 'registry_password']);
    expect(carried.body.error.message).toMatch(new RegExp(`credentials of ${corpRegistry.host} \\(registry_username and registry_password\\) are not sent to ${attacker.host}`));
    const patched = await asMember('PATCH', `/deployments/general/${id}`, { image: `${attacker2.host}/bob/patched` });
    expect(patched.status).toBe(400);
    expect(patched.body.error.details.map((p: { field: string }) => p.field)).toEqual(['registry_username', 'registry_password']);
    const vaultMoved = await asMember('PATCH', `/deployments/general/${vaultDeployment}`, { image: `${attacker.host}/corp/engine` });
    expect(vaultMoved.status).toBe(400);
    expect(vaultMoved.body.error.field).toBe('registry_credential_id');
    expect(attacker.connections()).toBe(0);
    expect(attacker2.connections()).toBe(0);

    // Unlisted: a 400 naming image, credentials or not.
    const toUnlisted = await asMember('POST', `/deployments/general/${id}/clone`, {
      name: 'bobs-unlisted',
      endpoint_bearer_token: 'tok-bobs-unlisted-0123456789',
      image: `${unlisted.host}/bob/cloned`,
      registry_username: null,
      registry_password: null,
    });
    expect(toUnlisted.status).toBe(400);
    expect(toUnlisted.body.error).toMatchObject({ field: 'image', message: expect.stringMatching(new RegExp(`registry ${unlisted.host} is not one this service pulls from \\(--registries: `)) });

    // Listed, credentials set to null: the daemon goes there, and sends none.
    const cloned = await asMember('POST', `/deployments/general/${id}/clone`, {
      name: 'bobs-clone',
      endpoint_bearer_token: 'tok-bobs-clone-0123456789',
      image: `${attacker.host}/bob/cloned`,
      registry_username: null,
      registry_password: null,
    });
    expect(cloned.status, JSON.stringify(cloned.body)).toBe(201);
    expect(cloned.body).toMatchObject({ registry_username: null, has_registry_password: false });
    // The daemon asks the registry (its /v2/ check) and, with nothing to answer the challenge with, stops there.
    await expect.poll(() => attacker.requests().length, { timeout: 60_000 }).toBeGreaterThan(0);
    const moved = await asMember('PATCH', `/deployments/general/${id}`, { image: `${attacker2.host}/bob/patched`, registry_username: null, registry_password: null });
    expect(moved.status).toBe(200);
    await expect.poll(() => attacker2.requests().length, { timeout: 60_000 }).toBeGreaterThan(0);
    for (const host of [attacker, attacker2]) {
      expect(host.requests().filter((r) => r.authorization !== null)).toEqual([]);
      expect(host.credentialsSent()).toEqual([]);
    }
    // Checked after the daemon's pulls from the listed hosts above.
    expect(unlisted.connections()).toBe(0);
  }, 150_000);

  it("an image naming the service's own metrics port is refused, even though --registries lists it, and the listener accepts no connection", async () => {
    const before = await metricsConnections();
    for (const image of [`127.0.0.1:${dirs.ports.metrics}/metrics`, `localhost:${dirs.ports.metrics}/sd/replicas`, `[::1]:${dirs.ports.metrics}/x`]) {
      const refused = await asMember('POST', '/deployments/general', general('blind', image));
      expect(refused.status, image).toBe(400);
      expect(refused.body.error).toMatchObject({ field: 'image', message: expect.stringMatching(new RegExp(`own listener \\(port ${dirs.ports.metrics} on this host\\)`)) });
    }
    // Only the next scrape's own connection is new.
    expect(await metricsConnections()).toBe(before + 1);
    // The count sees any connection, not only scrapes: one opened and closed here is counted.
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(dirs.ports.metrics, '127.0.0.1', () => socket.end());
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    await expect.poll(() => metricsConnections(), { timeout: 5000 }).toBe(before + 4);
  }, 60_000);

  it('the image puller refuses a refused host on its own (whatever wrote the record): the daemon is never told of it', async () => {
    const gate = new HostRegistryGate({ listed: [attacker.host] });
    const puller = new ImagePuller(docker, { initialMs: 1000, maxMs: 1000 }, Date.now, gate);
    const refused = puller.ensure(`${unlisted.host}/corp/engine:v1`, CORP, () => {});
    await expect(refused).rejects.toBeInstanceOf(PullError);
    await expect(refused).rejects.toMatchObject({ failure: { kind: 'refused_registry', reason: expect.stringMatching(/is not pulled: registry 127\.0\.0\.1:\d+ is not one this service pulls from \(--registries: 127\.0\.0\.1:\d+\)/) } });
    // The same puller does ask the daemon for a listed host, and the daemon does connect.
    const before = attacker.requests().length;
    await expect(puller.ensure(`${attacker.host}/corp/probe:v1`, null, () => {})).rejects.toMatchObject({ failure: { kind: 'refused_credentials' } });
    expect(attacker.requests().length).toBeGreaterThan(before);
    expect(unlisted.connections()).toBe(0);
  }, 60_000);
});
