// Bench: how long one `infergate serve` (the single-process layout, Docker runtime) is
// unavailable across its own restart. A general deployment of the reference engine runs in
// containers; a prober sends one request after another through the gateway (a new TLS
// connection each: a kept one would outlive the stopped gateway), and each round stops the
// service — SIGTERM (replicas keep running: the default) or SIGKILL (a crash), in turns — and
// starts it again at once on the same data dir and ports with `npm start` (or `node
// dist/cli/main.js serve`, --via node). Per round: SIGTERM → exit, the new process's start →
// its banner, and SIGTERM (or SIGKILL) → the first request answered by the new process.
//
// Checks that make a figure valid (the bench fails otherwise): after every round the same
// containers run (ids), none started again (StartedAt, RestartCount) and the replica records'
// restart counts are unchanged; the answer after the restart comes from one of those replicas
// (system_fingerprint); the SIGTERM round's stop line says the replicas keep running. At the end
// a start with --drain-on-stop and a SIGTERM leave no container. Every container and the
// network of the bench's scope are removed at the end, also on errors and Ctrl-C.
//
//   npm run bench:restart                        # 5 rounds of each, npm start, 2 replicas
//   npm run bench:restart -- --rounds 3 --via node --replicas 1

import { mkdtemp, rm } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import type Dockerode from 'dockerode';
import { dockerAnswers, dockerClient } from '../src/runtime/docker/client.js';
import { LABEL } from '../src/runtime/docker/container-spec.js';
import { dockerScope, networkName } from '../src/runtime/docker/docker-runtime.js';
import { removeImage } from '../test/helpers/docker.js';
import { processTree } from './lib/containers.js';
import { freePort, onCleanup, start, stopAll, type Started } from './lib/processes.js';
import { median } from './lib/rounds.js';
import { BENCH_ADMIN_KEY, serviceEnv } from './lib/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    via: { type: 'string', default: 'npm' },
    replicas: { type: 'string', default: '2' },
  },
});
const ROUNDS = Number(flags.rounds);
const REPLICAS = Number(flags.replicas);
const VIA = flags.via === 'node' ? 'node' : 'npm';
const TOKEN = 'bench-restart-token-0123456789';
const NAME = 'restart';
const DOMAIN = 'endpoints.localhost';

interface ContainerState {
  id: string;
  startedAt: string;
  restartCount: number;
}

interface Round {
  kind: 'SIGTERM' | 'SIGKILL';
  stopMs: number;
  startToBannerMs: number;
  toFirstAnswerMs: number;
  answeredByOldDuringStop: number;
  failedProbes: number;
}

async function main(): Promise<void> {
  const docker = dockerClient();
  const answer = await dockerAnswers(docker);
  if (!answer.ok) throw new Error(`bench/restart needs a Docker daemon: ${answer.reason}`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-bench-restart-'));
  const dataDir = path.join(dir, 'data');
  const scope = dockerScope(dataDir, null);
  // The engine image under a tag of the bench's own (the test suites rebuild the shared one under them).
  const engineRef = `infergate/engine:bench-restart-${process.pid}`;
  onCleanup(async () => {
    for (const c of await docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${scope}`] } })) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
    await docker.getNetwork(networkName(scope)).remove().catch(() => undefined);
    await removeImage(docker, engineRef).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });
  const ports = { api: await freePort(), gateway: await freePort(), metrics: await freePort() };
  const env = { ...serviceEnv(dir, ports, BENCH_ADMIN_KEY, 'warn'), INFERGATE_RUNTIME: 'docker', INFERGATE_DOMAIN: DOMAIN };
  const args = ['--engine-image', engineRef, '--gateway-workers', '1', '--stop-grace', '2', '--drain-timeout', '2'];
  const launch = (via: 'npm' | 'node', extra: string[] = []): Promise<Started> =>
    via === 'npm'
      ? start('npm', ['--prefix', root, '--silent', 'start', '--', ...args, ...extra], { env, ready: /state in /, timeoutMs: 60_000 })
      : start(process.execPath, [path.join(root, 'dist/cli/main.js'), 'serve', ...args, ...extra], { env, ready: /state in /, timeoutMs: 60_000 });
  const api = `http://127.0.0.1:${ports.api}`;
  const headers = { authorization: `Bearer ${BENCH_ADMIN_KEY}`, 'content-type': 'application/json' };
  const get = async <T>(p: string): Promise<T> => (await (await fetch(`${api}${p}`, { headers })).json()) as T;

  let serve = await launch('node');
  const created = await fetch(`${api}/deployments/general`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      name: NAME,
      cluster_id: 1,
      hardware_instance_id: 1,
      image: 'infergate/reference-engine',
      tag: 'openai',
      container_port: 8000,
      health_check_path: '/health',
      endpoint_bearer_token: TOKEN,
      command: ['--startup-ms', '0', '--ttft-ms', '1', '--itl-ms', '1'],
      min_replicas: REPLICAS,
      max_replicas: REPLICAS,
    }),
  });
  const id = ((await created.json()) as { id: number }).id;
  if (created.status !== 201) throw new Error(`creating the deployment: ${created.status}`);
  const readyAt = Date.now() + 180_000;
  while ((await get<{ components: { Replica: { ready: number } } }>(`/deployments/general/${id}`)).components.Replica.ready < REPLICAS) {
    if (Date.now() > readyAt) throw new Error(`the deployment was not ready within 180 s (the engine image is built on first use):\n${serve.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }

  const ca = readFileSync(path.join(dir, 'certs', 'ca.crt'), 'utf8');
  const probe = () => chat(ports.gateway, ca);
  const replicas = async () => (await get<{ items: Array<{ name: string; restarts: number; state: string }> }>(`/deployments/general/${id}/replicas`)).items;
  const containers = async (): Promise<ContainerState[]> => {
    const listed = await docker.listContainers({ all: true, filters: { label: [`${LABEL.scope}=${scope}`, `${LABEL.deploymentId}=${id}`] } });
    const inspected = await Promise.all(listed.map((c) => docker.getContainer(c.Id).inspect()));
    return inspected.map((i) => ({ id: i.Id, startedAt: i.State.StartedAt, restartCount: i.RestartCount })).sort((a, b) => a.id.localeCompare(b.id));
  };
  const before = { containers: await containers(), replicas: await replicas() };
  if (before.containers.length !== REPLICAS) throw new Error(`expected ${REPLICAS} containers, found ${before.containers.length}`);
  const names = new Set(before.replicas.map((r) => r.name));
  console.log(`bench: Docker Engine ${answer.version}; ${os.cpus().length} cores; ${REPLICAS} replicas in containers ${before.containers.map((c) => c.id.slice(0, 12)).join(', ')}; restarts via ${VIA === 'npm' ? 'npm start' : 'node dist/cli/main.js serve'}`);

  const rounds: Round[] = [];
  for (let i = 0; i < 2 * ROUNDS; i++) {
    const kind = i % 2 === 0 ? 'SIGTERM' : 'SIGKILL';
    const servePid = servePidOf(serve);
    // The prober runs from before the signal to the first answer of the new process.
    let oldGone = false;
    let answeredByOld = 0;
    let failed = 0;
    let firstAnswer: { at: number; fingerprint: string } | null = null;
    const t0 = performance.now();
    const probing = (async () => {
      while (firstAnswer === null && performance.now() - t0 < 60_000) {
        const r = await probe();
        if (r.status === 200) {
          if (oldGone) firstAnswer = { at: performance.now(), fingerprint: r.fingerprint };
          else answeredByOld++;
        } else {
          failed++;
          await new Promise((res) => setTimeout(res, 5));
        }
      }
    })();
    process.kill(servePid, kind);
    await new Promise<void>((res) => (serve.child.exitCode !== null || serve.child.signalCode !== null ? res() : serve.child.once('exit', () => res())));
    const exited = performance.now();
    oldGone = true;
    const stopOutput = serve.output();
    if (kind === 'SIGTERM' && !new RegExp(`${REPLICAS} replicas? keeps? running`).test(stopOutput)) throw new Error(`the SIGTERM stop did not say its replicas keep running:\n${stopOutput}`);
    const spawned = performance.now();
    serve = await launch(VIA);
    const banner = performance.now();
    await probing;
    if (firstAnswer === null) throw new Error(`no answer within 60 s of ${kind}:\n${serve.output()}`);
    const answered = firstAnswer as { at: number; fingerprint: string };
    if (!names.has(answered.fingerprint)) throw new Error(`answered by ${answered.fingerprint}, not one of the replicas from before (${[...names].join(', ')})`);
    // The controller takes the containers back soon after: they must be the same, none restarted.
    await settledTakeBack(serve);
    const now = { containers: await containers(), replicas: await replicas() };
    if (JSON.stringify(now.containers) !== JSON.stringify(before.containers)) throw new Error(`the containers changed across the ${kind} restart: ${JSON.stringify(before.containers)} → ${JSON.stringify(now.containers)}`);
    const counts = (rs: typeof before.replicas) => JSON.stringify(rs.map((r) => [r.name, r.restarts, r.state]));
    if (counts(now.replicas) !== counts(before.replicas)) throw new Error(`replica records changed across the ${kind} restart: ${counts(before.replicas)} → ${counts(now.replicas)}`);
    const round: Round = { kind, stopMs: exited - t0, startToBannerMs: banner - spawned, toFirstAnswerMs: answered.at - t0, answeredByOldDuringStop: answeredByOld, failedProbes: failed };
    rounds.push(round);
    console.log(`bench: ${kind} round ${Math.floor(i / 2) + 1}: exit after ${round.stopMs.toFixed(0)} ms, new process to banner ${round.startToBannerMs.toFixed(0)} ms, ${kind} → first answer ${round.toFirstAnswerMs.toFixed(0)} ms (${answered.fingerprint}); ${answeredByOld} answered by the old process while it stopped`);
  }

  // --drain-on-stop: a start with it, then SIGTERM, leaves no container.
  process.kill(servePidOf(serve), 'SIGTERM');
  await new Promise<void>((res) => (serve.child.exitCode !== null ? res() : serve.child.once('exit', () => res())));
  serve = await launch('node', ['--drain-on-stop']);
  await settledTakeBack(serve);
  process.kill(servePidOf(serve), 'SIGTERM');
  await new Promise<void>((res) => (serve.child.exitCode !== null ? res() : serve.child.once('exit', () => res())));
  const left = await containers();
  if (left.length !== 0) throw new Error(`--drain-on-stop left ${left.length} containers`);

  const summary = (kind: Round['kind']) => {
    const rs = rounds.filter((r) => r.kind === kind);
    const to = rs.map((r) => r.toFirstAnswerMs);
    return { rounds: rs.length, stopMsMedian: median(rs.map((r) => r.stopMs)), startToBannerMsMedian: median(rs.map((r) => r.startToBannerMs)), toFirstAnswerMsMedian: median(to), toFirstAnswerMsMax: Math.max(...to) };
  };
  const term = summary('SIGTERM');
  const kill = summary('SIGKILL');
  console.log(`\nbench: restart via ${VIA === 'npm' ? 'npm start' : 'node'}, ${REPLICAS} replicas, ${ROUNDS} rounds each (target: SIGTERM → first answer ≤ 2000 ms)`);
  console.log(`  SIGTERM: stop ${term.stopMsMedian.toFixed(0)} ms, start → banner ${term.startToBannerMsMedian.toFixed(0)} ms, SIGTERM → first answer median ${term.toFirstAnswerMsMedian.toFixed(0)} ms, max ${term.toFirstAnswerMsMax.toFixed(0)} ms`);
  console.log(`  SIGKILL: start → banner ${kill.startToBannerMsMedian.toFixed(0)} ms, SIGKILL → first answer median ${kill.toFirstAnswerMsMedian.toFixed(0)} ms, max ${kill.toFirstAnswerMsMax.toFixed(0)} ms`);
  console.log(`  SIGTERM ÷ SIGKILL (median to first answer): ${(term.toFirstAnswerMsMedian / kill.toFirstAnswerMsMedian).toFixed(2)}; --drain-on-stop left no container`);
}

/** The `infergate serve` process itself: under npm it is a descendant (npm → sh → node). */
function servePidOf(s: Started): number {
  for (const pid of processTree(s.pid)) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (cmd.some((a) => a.endsWith('dist/cli/main.js')) && cmd.includes('serve')) return pid;
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no infergate serve process under pid ${s.pid}`);
}

/** Until the new process's controller has taken the replicas back (its metrics say it leads, and the records settle). */
async function settledTakeBack(s: Started): Promise<void> {
  // The take-back is the first thing a leader does; a second is ample on a loaded machine.
  const deadline = Date.now() + 10_000;
  while (!/controller lease|took back/.test(s.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 1000));
}

/** One chat completion on a new TLS connection: its status and the replica that answered. */
function chat(port: number, ca: string): Promise<{ status: number; fingerprint: string }> {
  const body = JSON.stringify({ model: 'sim/model', messages: [{ role: 'user', content: 'up?' }], max_tokens: 2 });
  return new Promise((resolve) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        servername: `${NAME}.${DOMAIN}`,
        path: '/v1/chat/completions',
        method: 'POST',
        ca,
        agent: false,
        timeout: 2000,
        headers: { host: `${NAME}.${DOMAIN}:${port}`, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          let fingerprint = '';
          try {
            fingerprint = (JSON.parse(text) as { system_fingerprint?: string }).system_fingerprint ?? '';
          } catch {
            // not JSON: an error page
          }
          resolve({ status: res.statusCode ?? 0, fingerprint });
        });
        res.on('error', () => resolve({ status: 0, fingerprint: '' }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, fingerprint: '' }));
    req.end(body);
  });
}

main()
  .catch((err: Error) => {
    console.error(`bench/restart failed: ${err.message}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());

export type { Dockerode };
