// The Docker runtime end to end, against the real dockerd of this machine and Debian's
// docker-registry on loopback with htpasswd auth: `infergate serve --runtime docker` pulls a
// private image with the deployment's credentials (or vault credentials bound to that registry;
// the loopback registry is listed in --registries) and runs it as containers that answer
// through the gateway (Bearer and mTLS); wrong credentials and unknown tags become status
// reasons (and a failing status) without a loop of pulls; the entrypoint, a command override and the environment
// reach the container; root inside sees none of the service's files; the vendor-packaged flow
// needs its key twice; `logs -f` and `exec` reach the container; delete leaves no container;
// kill -9 and a restart take the containers back; a rolling update from v1 to v2 under load
// loses no request. Skipped loudly without a daemon, failed under CI=true.

import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dockerClient } from '../src/runtime/docker/client.js';
import { LABEL } from '../src/runtime/docker/container-spec.js';
import { dockerGate, ensureEngineImage, pushImage, removeContainersWithLabel, removeImage, startRegistry, type Registry } from './helpers/docker.js';
import { PLATFORM_ADMIN_KEY, platformDirs, startPlatform, type Platform, type PlatformDirs } from './helpers/platform.js';
import { freePort } from './helpers/ports.js';
import { CLI } from './helpers/serve-process.js';
import { gatewayFetch } from './helpers/tls-clients.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const available = await dockerGate();
const docker: Dockerode = dockerClient();

const TEAM = { username: 'team', password: 'team-registry-secret' };
const VENDOR_KEY = 'nvapi-vendor-key-0123456789';
const VENDOR = { username: '$oauthtoken', password: VENDOR_KEY };
/** Kept in the vault: a deployment names them by id. */
const VAULTED = { username: 'robot', password: 'robot-registry-secret' };
const TOKEN = 'tok-containers-0123456789';
/** The engine image's entrypoint, spelled out: a command replaces the entrypoint. */
const ENGINE_ENTRY = ['/usr/local/bin/node', '/opt/infergate/dist/cli/main.js', 'engine'];
const FAST = ['--startup-ms', '200', '--ttft-ms', '5', '--itl-ms', '1'];

let root: string;
let dirs: PlatformDirs;
let platform: Platform;
let registry: Registry;
let engineImage: string;
/** Images this file made, removed at the end. */
const images: string[] = [];
let scope: string;
/** A port nothing listens on: a registry that is listed but unreachable. */
let closed: number;
/** --registries: the test's registries on loopback are pulled from only when listed; * keeps the local builds (Docker Hub names). */
const serveArgs = () => ['--runtime', 'docker', '--engine-image', engineImage, '--stop-grace', '2', '--drain-timeout', '5', '--registries', `${registry.host},127.0.0.1:${closed},*`];

type Deployment = { id: number; status: string; status_reason: string | null; components: { Replica: { ready: number; desired: number } }; rollout: { state: string } | null; client_certificate_id: number | null };

async function buildDerived(ref: string, dockerfile: string): Promise<void> {
  const { pack } = await import('tar-stream');
  const tar = pack();
  tar.entry({ name: 'Dockerfile' }, dockerfile);
  tar.finalize();
  const output = await docker.buildImage(tar as unknown as NodeJS.ReadableStream, { t: ref, pull: false, rm: true, forcerm: true });
  await new Promise<void>((resolve, reject) => {
    let failure: string | undefined;
    docker.modem.followProgress(
      output,
      (err: Error | null) => (err ? reject(err) : failure ? reject(new Error(failure)) : resolve()),
      (e: { error?: string }) => {
        if (e.error) failure ??= e.error;
      },
    );
  });
  images.push(ref);
}

function general(name: string, o: Record<string, unknown>): Record<string, unknown> {
  return {
    name,
    cluster_id: 1,
    hardware_instance_id: 1,
    container_port: 8000,
    health_check_path: '/health',
    enable_logging: true,
    min_replicas: 1,
    max_replicas: 1,
    endpoint_bearer_token: TOKEN,
    ...o,
  };
}

async function create(body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', '/deployments/general', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

const ready = (n: number) => (d: Deployment) => d.status === 'ready' && d.components.Replica.ready === n;

async function containersOf(deploymentId: number): Promise<Dockerode.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${scope}`, `${LABEL.deploymentId}=${deploymentId}`] } });
}

/**
 * One connection pool per serve process: a pool per request would run into the gateway's
 * per-client connection cap, and one kept across a restart would send on the killed
 * gateway's connections.
 */
let pooled: { platform: Platform; fetch: typeof globalThis.fetch } | undefined;
function gateway(): typeof globalThis.fetch {
  if (pooled?.platform !== platform) pooled = { platform, fetch: gatewayFetch({ ca: platform.ca }) };
  return pooled.fetch;
}

async function chat(name: string, content = 'hi'): Promise<{ status: number; body: { system_fingerprint?: string; model?: string } }> {
  const res = await gateway()(`${platform.endpoint(name)}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim/model', messages: [{ role: 'user', content }], max_tokens: 3 }),
  });
  return { status: res.status, body: (await res.json()) as { system_fingerprint?: string } };
}

/** `infergate <args>` against this platform; resolves with its exit code and output. */
function cli(args: string[], until?: RegExp): Promise<{ code: number | null; out: string }> {
  const child = spawn(CLI[0] as string, [...CLI.slice(1), ...args], {
    env: { ...process.env, INFERGATE_API: platform.apiUrl, INFERGATE_KEY: PLATFORM_ADMIN_KEY, INFERGATE_CONFIG: path.join(root, 'cli-config.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve) => {
    const onData = (b: Buffer) => {
      out += b.toString();
      if (until?.test(out)) child.kill('SIGTERM');
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe.skipIf(!available)('the Docker runtime', () => {
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-docker-'));
    engineImage = await ensureEngineImage();
    registry = await startRegistry({ users: { [TEAM.username]: TEAM.password, [VENDOR.username]: VENDOR.password, [VAULTED.username]: VAULTED.password } });
    // Root inside: the image's user is kept, so this image's containers run as uid 0.
    await buildDerived(`infergate-test/engine-root:${process.pid}`, `FROM ${engineImage}\nUSER 0:0\n`);
    // A vendor-packaged container: its own entrypoint serves one model and needs REGISTRY_API_KEY.
    await buildDerived(`infergate-test/vendor:${process.pid}`, `FROM ${engineImage}\nCMD ["engine", "--flavor", "nim", "--model", "meta/llama-3.1-8b-instruct", "--startup-ms", "200"]\n`);
    for (const tag of ['v1', 'v2']) await pushImage(docker, engineImage, `${registry.host}/team/engine:${tag}`, TEAM);
    await pushImage(docker, `infergate-test/vendor:${process.pid}`, `${registry.host}/nim/meta/llama-3.1-8b-instruct:1.0`, VENDOR);
    // Only the registry has them now: every deployment below really pulls.
    for (const ref of [`${registry.host}/team/engine:v1`, `${registry.host}/team/engine:v2`, `${registry.host}/nim/meta/llama-3.1-8b-instruct:1.0`]) await removeImage(docker, ref);
    dirs = await platformDirs(root, 'docker');
    closed = await freePort();
    platform = await startPlatform(dirs, serveArgs());
    scope = /network infergate-([0-9a-f]+)/.exec(platform.serve.output())?.[1] ?? '';
    expect(scope).not.toBe('');
  }, 240_000);

  // What the service said, when a test failed: its log is the only account of a container's life.
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') process.stderr.write(`--- infergate serve output ---\n${platform?.serve.output() ?? ''}\n`);
  });

  afterAll(async () => {
    platform?.serve.kill('SIGKILL');
    await platform?.serve.exited;
    if (scope) await removeContainersWithLabel(docker, LABEL.scope, scope);
    for (const ref of images) await removeImage(docker, ref);
    if (registry) {
      for (const ref of [`${registry.host}/team/engine:v1`, `${registry.host}/team/engine:v2`, `${registry.host}/nim/meta/llama-3.1-8b-instruct:1.0`]) await removeImage(docker, ref);
      await registry.stop();
    }
    if (scope) await docker.getNetwork(`infergate-${scope}`).remove().catch(() => {});
    if (root) await removeTempDir(root);
  }, 60_000);

  it('says at start-up that it runs containers on Docker Engine, and why', () => {
    expect(platform.serve.output()).toMatch(/runtime docker \(--runtime docker, Docker Engine [\d.]+/);
  });

  it('pulls a private image with its credentials, shows the pull in the status reason, and serves from two containers on one container port', async () => {
    const id = await create(general('private', { image: `${registry.host}/team/engine`, tag: 'v1', command: [...ENGINE_ENTRY, ...FAST], registry_username: TEAM.username, registry_password: TEAM.password, min_replicas: 2, max_replicas: 2 }));
    const reasons = new Set<string>();
    await expect
      .poll(
        async () => {
          const d = (await platform.deployment(id)) as Deployment;
          if (d.status_reason) reasons.add(d.status_reason);
          return ready(2)(d);
        },
        { timeout: 120_000, interval: 50 },
      )
      .toBe(true);
    expect([...reasons].some((r) => r.startsWith(`pulling ${registry.host}/team/engine:v1`))).toBe(true);
    const containers = await containersOf(id);
    expect(containers).toHaveLength(2);
    const published = containers.map((c) => c.Ports.find((p) => p.PrivatePort === 8000));
    expect(published.every((p) => p?.IP === '127.0.0.1')).toBe(true);
    expect(new Set(published.map((p) => p?.PublicPort)).size).toBe(2);
    const seen = new Set<string>();
    await expect
      .poll(async () => {
        const answer = await chat('private');
        expect(answer.status).toBe(200);
        seen.add(answer.body.system_fingerprint ?? '');
        return seen.size;
      }, { timeout: 20_000 })
      .toBe(2);
  }, 180_000);

  it('answers with mTLS too: a private endpoint on the same image, pulled once for this host', async () => {
    const id = await create({ ...general('private-tls', { image: `${registry.host}/team/engine`, tag: 'v1', command: [...ENGINE_ENTRY, ...FAST], registry_username: TEAM.username, registry_password: TEAM.password }), endpoint_bearer_token: undefined, private_endpoint: true });
    const d = (await platform.waitFor(id, ready(1), 60_000, 'private-tls ready')) as Deployment;
    const pemRes = await fetch(`${platform.apiUrl}/certificates/${d.client_certificate_id}/pem`, { headers: { authorization: `Bearer ${PLATFORM_ADMIN_KEY}` } });
    const pem = await pemRes.text();
    const res = await gatewayFetch({ ca: platform.ca, pem })(`${platform.endpoint('private-tls')}/v1/models`);
    expect(res.status).toBe(200);
    const refused = await gateway()(`${platform.endpoint('private-tls')}/v1/models`);
    expect(refused.status).toBe(401);
  }, 90_000);

  it('pulls with registry credentials kept in the vault, bound to the registry and named by the deployment', async () => {
    const stored = await platform.call('POST', '/vault/registry-credentials', { name: 'robot', ...VAULTED, registry: registry.host });
    expect(stored.status).toBe(201);
    const id = await create(general('from-vault', { image: `${registry.host}/team/engine`, tag: 'v1', command: [...ENGINE_ENTRY, ...FAST], registry_credential_id: stored.body.id }));
    await platform.waitFor(id, ready(1), 60_000, 'from-vault ready');
    expect((await chat('from-vault')).status).toBe(200);
    // The same image with vault credentials the registry refuses: the pull is checked per credentials.
    const wrong = await platform.call('POST', '/vault/registry-credentials', { name: 'robot-wrong', username: VAULTED.username, password: 'not-it', registry: registry.host });
    const refused = await create(general('from-vault-wrong', { image: `${registry.host}/team/engine`, tag: 'v1', command: [], registry_credential_id: wrong.body.id }));
    await expect.poll(async () => ((await platform.deployment(refused)) as Deployment).status_reason ?? '', { timeout: 30_000 }).toMatch(/refused the credentials/);
    for (const d of [id, refused]) expect((await platform.call('DELETE', `/deployments/general/${d}`)).status).toBe(202);
  }, 90_000);

  it('wrong credentials, an unknown tag, an unknown image and an unreachable registry become status reasons, retried with a growing backoff instead of a loop', async () => {
    const wrong = await create(general('wrong-creds', { image: `${registry.host}/team/engine`, tag: 'v1', command: [], registry_username: TEAM.username, registry_password: 'not-the-password' }));
    const missing = await create(general('missing-tag', { image: `${registry.host}/team/engine`, tag: 'v9', command: [], registry_username: TEAM.username, registry_password: TEAM.password }));
    const unknownImage = await create(general('missing-image', { image: `${registry.host}/team/no-such-engine`, tag: 'v1', command: [], registry_username: TEAM.username, registry_password: TEAM.password }));
    const unreachable = await create(general('no-registry', { image: `127.0.0.1:${closed}/team/engine`, tag: 'v1', command: [], registry_username: TEAM.username, registry_password: TEAM.password }));
    const reasonOf = async (id: number) => ((await platform.deployment(id)) as Deployment).status_reason ?? '';
    await expect.poll(() => reasonOf(wrong), { timeout: 30_000 }).toMatch(/refused the credentials for .*team\/engine: check registry_username and registry_password; retrying in 5 s/);
    await expect.poll(() => reasonOf(missing), { timeout: 30_000 }).toMatch(/tag v9 of .*team\/engine not found in 127\.0\.0\.1:\d+ \(no such tag, or no such image\); retrying in \d+ s/);
    // The second try comes after the first backoff and doubles it: no loop of pulls.
    await expect.poll(() => reasonOf(wrong), { timeout: 30_000 }).toMatch(/retrying in 10 s/);
    await expect.poll(() => reasonOf(unknownImage), { timeout: 30_000 }).toMatch(/tag v1 of .*team\/no-such-engine not found in 127\.0\.0\.1:\d+ \(no such tag, or no such image\)/);
    await expect.poll(() => reasonOf(unreachable), { timeout: 30_000 }).toMatch(new RegExp(`the registry 127\\.0\\.0\\.1:${closed} is unreachable`));
    // A pull no retry will mend (refused credentials, no such tag or image) is failing, and
    // stays so while it is tried again; an unreachable registry may come back: pending.
    for (const id of [wrong, missing, unknownImage]) expect(((await platform.deployment(id)) as Deployment).status).toBe('failing');
    expect(((await platform.deployment(unreachable)) as Deployment).status).toBe('pending');
    expect(await reasonOf(missing)).toMatch(/^replica missing-tag-r1-\d+ cannot pull its image: tag v9 of /);
    for (const id of [wrong, missing, unknownImage, unreachable]) expect(await containersOf(id)).toEqual([]);
    for (const id of [wrong, missing, unknownImage, unreachable]) expect((await platform.call('DELETE', `/deployments/general/${id}`)).status).toBe(202);
  }, 90_000);

  it("an empty command runs the image's entrypoint, the environment reaches the container, and exec passes the exit status", async () => {
    const id = await create(general('entry', { image: engineImage.split(':')[0], tag: engineImage.split(':')[1], command: [], env: { GREETING: 'hello-from-the-spec' } }));
    await platform.waitFor(id, ready(1), 60_000, 'entry ready');
    // The image's CMD is `engine` with its defaults: the engine's default model.
    const models = await gateway()(`${platform.endpoint('entry')}/v1/models`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await models.text()).toMatch(/"id":"/);
    const env = await cli(['exec', 'entry', '--', 'env']);
    expect(env.out).toMatch(/GREETING=hello-from-the-spec/);
    expect(env.out).not.toMatch(/PLATFORM_ADMIN|INFERGATE_ADMIN_KEY/);
    const id2 = await cli(['exec', 'entry', '--', 'id']);
    expect(id2).toMatchObject({ code: 0 });
    expect(id2.out).toMatch(/uid=65534/);
    expect((await cli(['exec', 'entry', '--', 'sh', '-c', 'exit 7'])).code).toBe(7);
  }, 90_000);

  it('a command overrides the entrypoint, and the model cache is writable by the image\'s user', async () => {
    const id = await create(general('override', { image: engineImage.split(':')[0], tag: engineImage.split(':')[1], command: [...ENGINE_ENTRY, '--model', 'override/model', ...FAST], enable_model_caching: true }));
    await platform.waitFor(id, ready(1), 60_000, 'override ready');
    const models = await gateway()(`${platform.endpoint('override')}/v1/models`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await models.text()).toMatch(/"id":"override\/model"/);
  }, 90_000);

  it("root inside the container sees none of the service's data, certificates or keys", async () => {
    const [repo, tag] = [`infergate-test/engine-root`, String(process.pid)];
    const id = await create(general('rootly', { image: repo, tag, command: [], config_file: { filename: 'app.yaml', mount_path: '/etc/app', content: 'mode: fast\n' } }));
    await platform.waitFor(id, ready(1), 60_000, 'rootly ready');
    expect((await cli(['exec', 'rootly', '--', 'id'])).out).toMatch(/uid=0\(root\)/);
    const probe = await cli(['exec', 'rootly', '--', 'sh', '-c', `cat /etc/app/app.yaml; for p in ${dirs.dataDir} ${dirs.certsDir} ${dirs.certsDir}/ca.key /proc/1/root${dirs.dataDir}; do ls $p >/dev/null 2>&1 && echo "VISIBLE $p"; done; echo done`]);
    expect(probe.out).toMatch(/mode: fast/);
    expect(probe.out).toMatch(/done/);
    expect(probe.out).not.toMatch(/VISIBLE/);
  }, 90_000);

  it('the vendor-packaged flow: the key pulls the image as $oauthtoken and, as REGISTRY_API_KEY, lets the model load', async () => {
    const image = `${registry.host}/nim/meta/llama-3.1-8b-instruct`;
    const withKey = await create(general('vendor', { image, tag: '1.0', command: [], health_check_path: '/v1/health/ready', registry_username: '$oauthtoken', registry_password: VENDOR_KEY, env: { REGISTRY_API_KEY: VENDOR_KEY } }));
    const withoutKey = await create(general('vendor-nokey', { image, tag: '1.0', command: [], health_check_path: '/v1/health/ready', registry_username: '$oauthtoken', registry_password: VENDOR_KEY }));
    await platform.waitFor(withKey, ready(1), 90_000, 'vendor ready');
    // Without the variable the container runs, and the status says why the model is not there.
    const d = (await platform.waitFor(withoutKey, (x: Deployment) => /REGISTRY_API_KEY is not set/.test(x.status_reason ?? ''), 60_000, 'vendor-nokey says why')) as Deployment;
    expect(d.status).toBe('pending');
    expect(d.status_reason).toMatch(/^running, not ready: GET \/v1\/health\/ready answered 503/);
    expect((await containersOf(withoutKey)).map((c) => c.State)).toEqual(['running']);
  }, 150_000);

  it('logs -f follows the container output', async () => {
    const followed = await cli(['logs', '-f', 'entry'], /SIMULATED openai inference server/);
    expect(followed.out).toMatch(/SIMULATED openai inference server/);
  }, 60_000);

  it('delete leaves no container; kill -9 and a restart take the running containers back without duplicates', async () => {
    const gone = await create(general('short-lived', { image: engineImage.split(':')[0], tag: engineImage.split(':')[1], command: [...ENGINE_ENTRY, ...FAST] }));
    await platform.waitFor(gone, ready(1), 60_000, 'short-lived ready');
    expect((await platform.call('DELETE', `/deployments/general/${gone}`)).status).toBe(202);
    await expect.poll(async () => (await containersOf(gone)).length, { timeout: 30_000 }).toBe(0);

    const privateId = ((await platform.call('GET', '/deployments/general')).body.items as Array<{ id: number; name: string }>).find((x) => x.name === 'private')!.id;
    const before = (await containersOf(privateId)).map((c) => c.Id).sort();
    expect(before).toHaveLength(2);
    platform.serve.kill('SIGKILL');
    await platform.serve.exited;
    // Containers outlive the control process.
    expect((await containersOf(privateId)).filter((c) => c.State === 'running')).toHaveLength(2);
    platform = await startPlatform(dirs, serveArgs());
    await platform.waitFor(privateId, ready(2), 60_000, 'private ready after a restart');
    expect((await chat('private')).status).toBe(200);
    expect(platform.serve.output()).not.toMatch(/serve exited/);
    const after = (await containersOf(privateId)).map((c) => c.Id).sort();
    expect(after).toEqual(before);
  }, 150_000);

  it('a rolling update from v1 to v2 under steady load fails no request', async () => {
    const id = ((await platform.call('GET', '/deployments/general')).body.items as Array<{ id: number; name: string }>).find((x) => x.name === 'private')!.id;
    let stop = false;
    const failures: string[] = [];
    let answered = 0;
    const load = (async () => {
      while (!stop) {
        const answers = await Promise.all([1, 2, 3, 4].map(() => chat('private').catch((err: Error) => ({ status: 0, body: { model: err.message } }))));
        for (const a of answers) {
          if (a.status === 200) answered++;
          else failures.push(`${a.status} ${JSON.stringify(a.body)}`);
        }
      }
    })();
    const patched = await platform.call('PATCH', `/deployments/general/${id}`, { tag: 'v2' });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const revision = patched.body.revision as number;
    await platform.waitFor(id, (d: Deployment & { serving_revision: number | null }) => d.serving_revision === revision && d.rollout?.state === 'complete' && ready(2)(d), 150_000, 'rolled out to v2');
    await expect.poll(async () => (await containersOf(id)).every((c) => c.Labels[LABEL.revision] === String(revision)), { timeout: 30_000 }).toBe(true);
    stop = true;
    await load;
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(20);
  }, 240_000);
});
