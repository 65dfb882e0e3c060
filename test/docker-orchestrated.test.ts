// Orchestrated deployments under the Docker runtime, against the real dockerd of this machine:
// every component is a container in its deployment's pod — a holder container on the
// service's network (inter-container traffic off), whose network namespace the Frontend and
// workers share — and serves through the gateway: aggregated over HTTP, disaggregated behind a
// gRPC Frontend with the KV transfer from Prefill to Decode. From a terminal in the Frontend,
// another deployment's replica (at its bridge address and its published port), another pod's
// Frontend, the metrics listener (/sd/replicas) and a Redis on loopback refuse or time out,
// while its own workers answer. A rolling update runs two revisions in one pod on distinct
// ports; a killed Frontend makes the deployment not ready until it is back; a lost holder is
// made again with its members; kill -9 and a restart take the pod back; delete leaves no
// container and no holder, nor does a clean stop with --drain-on-stop (without it a stop
// leaves them running: test/docker-restart.test.ts). Skipped loudly without a daemon, failed
// under CI=true.

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dockerClient } from '../src/runtime/docker/client.js';
import { LABEL } from '../src/runtime/docker/container-spec.js';
import { dockerGate, ensureEngineImage, removeContainersWithLabel } from './helpers/docker.js';
import { ENDPOINT_DOMAIN, PLATFORM_ADMIN_KEY, platformDirs, startPlatform, type Platform, type PlatformDirs } from './helpers/platform.js';
import { redisUrlForTests } from './helpers/redis.js';
import { CLI } from './helpers/serve-process.js';
import { bearer, modelInfer, v2ClientTls } from './helpers/v2-client.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const available = await dockerGate();
const docker: Dockerode = dockerClient();

const TOKEN = 'tok-docker-orchestrated-0123456789';
const FAST = ['--startup-ms', '200', '--ttft-ms', '5', '--itl-ms', '1'];
const SERVE_ARGS = ['--runtime', 'docker', '--stop-grace', '2', '--drain-timeout', '5', '--rollout-deadline', '60', '--drain-on-stop'];

let root: string;
let dirs: PlatformDirs;
let platform: Platform;
let scope: string;
let engineImage: string;
const ids: Record<string, number> = {};

type Components = Record<string, { ready: number; desired: number }>;
type View = { status: string; status_reason: string | null; components: Components; serving_revision: number | null; rollout: { state: string } | null };

async function create(family: 'general' | 'orchestrated', body: Record<string, unknown>): Promise<number> {
  const res = await platform.call('POST', `/deployments/${family}`, { cluster_id: 1, endpoint_bearer_token: TOKEN, enable_logging: true, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as number;
}

const orchestrated = async (id: number): Promise<View> => (await platform.call('GET', `/deployments/orchestrated/${id}`)).body as View;
async function waitOrchestrated(id: number, check: (d: View) => boolean, ms: number, what: string): Promise<View> {
  let last: View | undefined;
  await expect.poll(async () => check((last = await orchestrated(id))), { timeout: ms, interval: 100, message: `${what}` }).toBe(true);
  return last!;
}

/** Whether this host connects to host:port (within 2 s). */
function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function containersOf(deploymentId: number): Promise<Dockerode.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${scope}`, `${LABEL.deploymentId}=${deploymentId}`] } });
}

/** The deployment's pod: its holder (inspected) and its members, by component. */
async function podOf(deploymentId: number): Promise<{ holder: Dockerode.ContainerInspectInfo; ip: string; members: Dockerode.ContainerInfo[] }> {
  const all = await containersOf(deploymentId);
  const holders = all.filter((c) => c.Labels[LABEL.pod] !== undefined);
  expect(holders, 'one holder per deployment').toHaveLength(1);
  const holder = await docker.getContainer(holders[0]!.Id).inspect();
  const ip = holder.NetworkSettings.Networks[`infergate-${scope}`]?.IPAddress ?? '';
  expect(ip).not.toBe('');
  return { holder, ip, members: all.filter((c) => c.Labels[LABEL.pod] === undefined) };
}

const member = (pod: { members: Dockerode.ContainerInfo[] }, component: string): Dockerode.ContainerInfo => {
  const found = pod.members.find((c) => c.Labels[LABEL.component] === component && c.State === 'running');
  expect(found, `a running ${component}`).toBeDefined();
  return found!;
};

async function chat(name: string, content = 'hi'): Promise<string> {
  const c = await platform.client(name, TOKEN).chat.completions.create({ model: `org/${name}`, messages: [{ role: 'user', content }], max_tokens: 3 });
  return c.system_fingerprint ?? '';
}

async function logs(id: number, component: string): Promise<string[]> {
  const res = await platform.call('GET', `/deployments/orchestrated/${id}/logs?component=${component}&tail=500`);
  return (res.body.lines as { line: string }[]).map((l) => l.line);
}

/** `infergate <args>` against this platform; resolves with its exit code and output. */
function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(CLI[0] as string, [...CLI.slice(1), ...args], {
    env: { ...process.env, INFERGATE_API: platform.apiUrl, INFERGATE_KEY: PLATFORM_ADMIN_KEY, INFERGATE_CONFIG: path.join(root, 'cli-config.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

/**
 * Run inside a container (the engine image has node, no curl): connects to each target, sends
 * its first bytes, and prints what happened — the first line of an answer, `refused`,
 * `timeout` (2 s) or the error's code — as one JSON object.
 */
const REACH = `
const net = require('net');
const targets = JSON.parse(process.argv[1]);
const one = (t) => new Promise((resolve) => {
  const s = net.connect({ host: t.host, port: t.port });
  let data = '';
  const done = (r) => { s.destroy(); resolve([t.name, r]); };
  s.setTimeout(2000, () => done(data ? 'answered: ' + data.split('\\r\\n')[0] : 'timeout'));
  s.on('connect', () => s.write(t.send));
  s.on('data', (b) => { data += b; if (data.includes('\\r\\n')) done('answered: ' + data.split('\\r\\n')[0]); });
  s.on('error', (e) => done(e.code === 'ECONNREFUSED' ? 'refused' : e.code || e.message));
  s.on('end', () => done(data ? 'answered: ' + data.split('\\r\\n')[0] : 'closed'));
});
Promise.all(targets.map(one)).then((r) => console.log('REACH ' + JSON.stringify(Object.fromEntries(r))));
`;

describe.skipIf(!available)('orchestrated deployments under the Docker runtime', () => {
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-docker-orch-'));
    engineImage = await ensureEngineImage();
    dirs = await platformDirs(root, 'docker-orch');
    platform = await startPlatform(dirs, [...SERVE_ARGS, '--engine-image', engineImage]);
    scope = /network infergate-([0-9a-f]+)/.exec(platform.serve.output())?.[1] ?? '';
    expect(scope).not.toBe('');
    // Side by side from the start: they start in parallel on two cores.
    ids.neighbour = await create('general', {
      name: 'neighbour',
      image: engineImage.split(':')[0],
      tag: engineImage.split(':')[1],
      command: ['/usr/local/bin/node', '/opt/infergate/dist/cli/main.js', 'engine', ...FAST],
      hardware_instance_id: 1,
      container_port: 8000,
      health_check_path: '/health',
      min_replicas: 1,
      max_replicas: 1,
    });
    ids.agg = await create('orchestrated', { name: 'agg', model: 'org/agg', hardware_instance_id: 1, extra_args: FAST });
    ids.disagg = await create('orchestrated', {
      name: 'disagg',
      model: 'org/disagg',
      protocol: 'grpc',
      serving_mode: 'disaggregated',
      worker_pools: { prefill: { hardware_instance_id: 1, replicas: 1 }, decode: { hardware_instance_id: 1, replicas: 1 } },
      extra_args: FAST,
    });
  }, 240_000);

  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') process.stderr.write(`--- infergate serve output ---\n${platform?.serve.output() ?? ''}\n`);
  });

  afterAll(async () => {
    platform?.serve.kill('SIGKILL');
    await platform?.serve.exited;
    if (scope) await removeContainersWithLabel(docker, LABEL.scope, scope);
    if (scope) await docker.getNetwork(`infergate-${scope}`).remove().catch(() => {});
    if (root) await removeTempDir(root);
  }, 60_000);

  it("aggregated: serves chat completions through the gateway from containers that share one holder's network namespace", async () => {
    await waitOrchestrated(ids.agg!, (d) => d.status === 'ready', 120_000, 'agg ready');
    expect(await chat('agg')).toMatch(/^agg-r1-worker-\d+$/);
    const pod = await podOf(ids.agg!);
    expect(pod.holder.HostConfig.NetworkMode).toBe(`infergate-${scope}`);
    expect(pod.holder.HostConfig).toMatchObject({ Privileged: false, CapDrop: expect.arrayContaining(['NET_RAW']), SecurityOpt: ['no-new-privileges:true'] });
    expect(pod.members.map((c) => c.Labels[LABEL.component]).sort()).toEqual(['Frontend', 'Worker']);
    for (const c of pod.members) {
      expect(c.HostConfig.NetworkMode).toBe(`container:${pod.holder.Id}`);
      expect(c.Ports).toEqual([]);
    }
    // What the gateway, the scrapes and the Frontend's workers file use: the holder's address, a port per member.
    const sd = (await (await fetch(`http://127.0.0.1:${dirs.ports.metrics}/sd/replicas`)).json()) as Array<{ targets: string[]; labels: Record<string, string> }>;
    const targets = sd.filter((g) => g.labels.deployment === 'agg').map((g) => g.targets[0]);
    expect(targets).toHaveLength(2);
    expect(targets.every((t) => t?.startsWith(`${pod.ip}:`))).toBe(true);
    expect(new Set(targets).size).toBe(2);
  }, 150_000);

  it('disaggregated behind a gRPC Frontend: ModelInfer through the gateway, and the KV transfer from Prefill to Decode inside the pod', async () => {
    await waitOrchestrated(ids.disagg!, (d) => d.status === 'ready', 120_000, 'disagg ready');
    const client = v2ClientTls(platform.ports.gateway, `disagg.${ENDPOINT_DOMAIN}`, platform.ca);
    try {
      const answer = await modelInfer(client, 'org/disagg', 'hello there', 4, bearer(TOKEN));
      expect(answer.text).not.toBe('');
      expect(answer.replica).toMatch(/^disagg-r1-decode-\d+$/);
    } finally {
      client.close();
    }
    await expect.poll(async () => (await logs(ids.disagg!, 'Decode')).some((l) => /kv transfer: tcp, \d+ blocks/.test(l)), { timeout: 10_000 }).toBe(true);
    const pod = await podOf(ids.disagg!);
    expect(pod.members.map((c) => c.Labels[LABEL.component]).sort()).toEqual(['Decode', 'Frontend', 'Prefill']);
    for (const c of pod.members) expect(c.HostConfig.NetworkMode).toBe(`container:${pod.holder.Id}`);
  }, 150_000);

  it("from a terminal in the Frontend: another deployment's replica and Frontend, the metrics listener and a Redis on loopback refuse or time out; its own worker answers", async () => {
    await expect.poll(async () => (await platform.call('GET', `/deployments/general/${ids.neighbour}`)).body.status, { timeout: 60_000 }).toBe('ready');
    for (const id of [ids.agg!, ids.disagg!]) await waitOrchestrated(id, (d) => d.status === 'ready', 120_000, `${id} ready`);
    const agg = await podOf(ids.agg!);
    const disagg = await podOf(ids.disagg!);
    const [neighbour] = await containersOf(ids.neighbour!);
    const neighbourInfo = await docker.getContainer(neighbour!.Id).inspect();
    const neighbourIp = neighbourInfo.NetworkSettings.Networks[`infergate-${scope}`]?.IPAddress ?? '';
    const published = neighbour!.Ports.find((p) => p.PrivatePort === 8000)?.PublicPort ?? 0;
    const bridgeGateway = neighbourInfo.NetworkSettings.Networks[`infergate-${scope}`]?.Gateway ?? '';
    expect([neighbourIp, bridgeGateway].every((a) => a !== '') && published > 0).toBe(true);
    const workerPort = Number(member(agg, 'Worker').Labels[LABEL.podPort]);
    const otherFrontendPort = Number(member(disagg, 'Frontend').Labels[LABEL.podPort]);
    // The run's Redis (test/global-setup.ts), without a password, on loopback; without one
    // (allowed outside CI) that target is left out, loudly.
    const redisUrl = redisUrlForTests();
    if (redisUrl === undefined) console.warn('SKIPPED (no Redis): the Redis on loopback as a target from the Frontend');
    const redisPort = redisUrl === undefined ? null : Number(new URL(redisUrl).port);
    const http = (p: string) => `GET ${p} HTTP/1.0\r\nHost: x\r\n\r\n`;
    const targets = [
      { name: 'own worker', host: agg.ip, port: workerPort, send: http('/health') },
      { name: 'own worker on loopback', host: '127.0.0.1', port: workerPort, send: http('/health') },
      { name: 'neighbour bridge', host: neighbourIp, port: 8000, send: http('/v1/models') },
      { name: 'neighbour published', host: '127.0.0.1', port: published, send: http('/v1/models') },
      { name: 'neighbour published via the bridge gateway', host: bridgeGateway, port: published, send: http('/v1/models') },
      { name: 'other Frontend', host: disagg.ip, port: otherFrontendPort, send: http('/health') },
      { name: 'metrics sd', host: '127.0.0.1', port: dirs.ports.metrics, send: http('/sd/replicas') },
      { name: 'metrics sd via the bridge gateway', host: bridgeGateway, port: dirs.ports.metrics, send: http('/sd/replicas') },
      { name: 'control API', host: '127.0.0.1', port: dirs.ports.api, send: http('/healthz') },
      ...(redisPort === null ? [] : [{ name: 'redis', host: '127.0.0.1', port: redisPort, send: 'PING\r\n' }]),
    ];
    // The same targets from the host answer: what the pod does not reach is there to reach.
    expect(await fetch(`http://127.0.0.1:${dirs.ports.metrics}/sd/replicas`).then((r) => r.status)).toBe(200);
    expect(await fetch(`http://127.0.0.1:${published}/v1/models`).then((r) => r.status)).toBe(200);
    const fromHost: Array<[string, number]> = [[disagg.ip, otherFrontendPort], [neighbourIp, 8000], ...(redisPort === null ? [] : [['127.0.0.1', redisPort] as [string, number]])];
    for (const [host, port] of fromHost) expect([host, port, await connects(host, port)]).toEqual([host, port, true]);

    const frontend = member(agg, 'Frontend').Labels[LABEL.replica]!;
    const run = await cli(['exec', 'agg', '--replica', frontend, '--', 'node', '-e', REACH, JSON.stringify(targets)]);
    expect(run.code, run.out).toBe(0);
    const seen = JSON.parse(/REACH (.*)/.exec(run.out)?.[1] ?? '{}') as Record<string, string>;
    expect(seen['own worker']).toMatch(/^answered: HTTP\/1\.1 200/);
    expect(seen['own worker on loopback']).toMatch(/^answered: HTTP\/1\.1 200/);
    const unreachable = targets.slice(2).map((t) => t.name);
    for (const name of unreachable) expect([name, seen[name]]).toEqual([name, expect.stringMatching(/^(refused|timeout|EHOSTUNREACH|ENETUNREACH)$/)]);
  }, 120_000);

  it('a rolling update runs both revisions in the one pod on distinct ports, then serves from the new revision', async () => {
    const addresses = new Set<string>();
    let largest = 0;
    let clash = '';
    const patched = await platform.call('PATCH', `/deployments/orchestrated/${ids.agg}`, { extra_args: [...FAST, '--itl-ms', '2'] });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const revision = patched.body.revision as number;
    await expect
      .poll(
        async () => {
          const pod = await podOf(ids.agg!);
          const running = pod.members.filter((c) => c.State === 'running');
          const ports = running.map((c) => c.Labels[LABEL.podPort]);
          if (new Set(ports).size !== ports.length) clash = ports.join(',');
          largest = Math.max(largest, running.length);
          for (const p of ports) addresses.add(`${pod.ip}:${p}`);
          const d = await orchestrated(ids.agg!);
          return d.serving_revision === revision && d.rollout?.state === 'complete' && d.status === 'ready' && running.every((c) => c.Labels[LABEL.revision] === String(revision));
        },
        { timeout: 90_000, interval: 100 },
      )
      .toBe(true);
    expect(clash).toBe('');
    expect(largest).toBeGreaterThanOrEqual(3);
    expect(addresses.size).toBeGreaterThanOrEqual(3);
    expect(await chat('agg')).toMatch(new RegExp(`^agg-r${revision}-worker-\\d+$`));
  }, 120_000);

  it('a killed Frontend container makes the deployment not ready until the runtime has it back', async () => {
    const frontend = member(await podOf(ids.agg!), 'Frontend');
    await docker.getContainer(frontend.Id).kill();
    await waitOrchestrated(ids.agg!, (d) => d.status === 'not_ready', 10_000, 'agg not_ready without its Frontend');
    await waitOrchestrated(ids.agg!, (d) => d.status === 'ready', 60_000, 'agg ready again');
    expect(await chat('agg')).not.toBe('');
  }, 90_000);

  it('a holder killed behind its back is made again, and its members restart in it', async () => {
    const before = await podOf(ids.agg!);
    await docker.getContainer(before.holder.Id).kill();
    await waitOrchestrated(ids.agg!, (d) => d.status === 'not_ready' || d.status === 'pending', 15_000, 'agg not ready without its holder');
    await waitOrchestrated(ids.agg!, (d) => d.status === 'ready', 90_000, 'agg ready again in its holder');
    const after = await podOf(ids.agg!);
    expect(after.holder.State.Running).toBe(true);
    for (const c of after.members.filter((m) => m.State === 'running')) expect(c.HostConfig.NetworkMode).toBe(`container:${after.holder.Id}`);
    expect(await chat('agg')).not.toBe('');
  }, 150_000);

  it('kill -9 and a restart take the pods back: the same holders and members, serving', async () => {
    const running = async (id: number) => (await containersOf(id)).filter((c) => c.State === 'running').map((c) => c.Id).sort();
    const before = { agg: await running(ids.agg!), disagg: await running(ids.disagg!) };
    platform.serve.kill('SIGKILL');
    await platform.serve.exited;
    // Containers, holders included, outlive the control process.
    expect(await running(ids.agg!)).toEqual(before.agg);
    platform = await startPlatform(dirs, [...SERVE_ARGS, '--engine-image', engineImage]);
    await waitOrchestrated(ids.agg!, (d) => d.status === 'ready', 60_000, 'agg ready after a restart');
    await waitOrchestrated(ids.disagg!, (d) => d.status === 'ready', 60_000, 'disagg ready after a restart');
    expect(await chat('agg')).not.toBe('');
    expect({ agg: await running(ids.agg!), disagg: await running(ids.disagg!) }).toEqual(before);
  }, 150_000);

  it('delete leaves no container of the deployment and no holder; a clean stop with --drain-on-stop leaves none of the others', async () => {
    expect((await platform.call('DELETE', `/deployments/orchestrated/${ids.agg}`)).status).toBe(202);
    await expect.poll(async () => (await containersOf(ids.agg!)).length, { timeout: 30_000 }).toBe(0);
    expect((await containersOf(ids.disagg!)).length).toBe(4);
    expect(await platform.stop()).toBe(0);
    expect(await docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${scope}`] } })).toEqual([]);
  }, 60_000);
});
