// Security: replicas of the local runtime in pods, against a real `infergate serve` running as
// root with bubblewrap and iproute2. Each general replica is a pod of its own and each
// orchestrated deployment one pod for all its components: from a member's terminal in a general
// replica, and in an orchestrated Frontend, another deployment's replica (at its pod address and
// at 127.0.0.1), the metrics listener (/sd/replicas), a Redis on loopback and this host's own
// services refuse or time out, while the replica's own port — and the Frontend's workers — answer.
// Every deployment still serves through the gateway, a disaggregated one included (Decode pulls
// its KV blocks from Prefill inside their pod). On the host, nothing listens at a replica's port:
// only its pod address answers. Pods go when their replicas stop, none is left after a clean
// stop, and a killed service's are swept by its next start.

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectReplicaNetwork } from '../../src/runtime/pods.js';
import { FIREWALL_RULES, missingRules, parseSubnet, type Subnet } from '../../src/runtime/pod-network.js';
import { detectSandbox } from '../../src/runtime/sandbox-probe.js';
import { listeningAddresses, parseListening, socketInodes } from '../../src/runtime/listening-sockets.js';
import { serviceScope } from '../../src/runtime/service-scope.js';
import { engineBody, FAST_ENGINE, killLeftoverReplicas, PLATFORM_ADMIN_KEY, platformDirs, replicaProcesses, startPlatform, type Platform, type PlatformDirs } from '../helpers/platform.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { openTerminal, runInTerminal } from '../helpers/terminal.js';
import { waitFor } from '../helpers/wait.js';
import { removeTempDir } from '../helpers/temp-dirs.js';
import { tryConnect } from '../helpers/reach.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TOKEN = 'tok-pods-0123456789';
const SUBNET = parseSubnet('10.213.0.0/16') as Subnet;

// Pods need root, the sandbox, ip and nsenter: skipped loudly elsewhere, except under CI=true.
const probeDir = path.join(os.tmpdir(), `infergate-pods-check-${process.pid}`);
const sandboxHere = detectSandbox(
  { sandbox: 'auto', sandboxUser: { uid: 65534, gid: 65534 }, sandboxBinds: [], dataDir: path.join(probeDir, 'data'), certsDir: path.join(probeDir, 'certs'), adminKeyFile: null },
  [process.execPath, path.join(ROOT, 'src/cli/main.ts')],
);
const networkHere = detectReplicaNetwork({ replicaNetwork: 'auto', replicaSubnet: SUBNET }, sandboxHere.host);
const runPods = networkHere.pods !== null || process.env.CI === 'true';
if (!runPods) console.warn(`\n*** replica network tests SKIPPED (pods need root, bubblewrap, ip and nsenter): ${networkHere.lines.join(' ')} ***\n`);
/** With iptables the pods' links cannot open connections to this host; without, the start-up line says so and that check is left out. */
const firewall = (networkHere.pods?.firewall.length ?? 0) > 0;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- API bodies are read loosely here
type Json = any;
type Target = { targets: string[]; labels: Record<string, string> };

/** The namespaces of a service's pods, by name. */
const podsOf = (dataDir: string) => {
  const prefix = `infergate-${serviceScope(dataDir, null)}-`;
  return existsSync('/var/run/netns') ? readdirSync('/var/run/netns').filter((n) => n.startsWith(prefix)) : [];
};

/** The pod a replica's address belongs to (the /30 block its address lies in). */
function podOfAddress(dataDir: string, address: string): string {
  const [a, b, c, d] = address.split('.').map(Number) as [number, number, number, number];
  const n = ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
  return `infergate-${serviceScope(dataDir, null)}-${(n - SUBNET.base) >>> 2}`;
}

/** The link's host side: the first address of the pod's /30. */
const hostSideOf = (podAddress: string) => podAddress.replace(/\.(\d+)$/, (_, d: string) => `.${Number(d) - 1}`);


/** A Node one-liner for the terminal: one TCP connect per `host:port` argument, each reported as `REACH <target> <open|code|timeout>`. */
const REACH = [
  'const net = require("net"); const targets = process.argv.slice(1); let left = targets.length;',
  'for (const t of targets) { const i = t.lastIndexOf(":"); const s = net.connect({ host: t.slice(0, i), port: Number(t.slice(i + 1)) }); let said = false;',
  'const say = (r) => { if (said) return; said = true; s.destroy(); console.log("REACH " + t + " " + r); if (--left === 0) console.log("REACHED"); };',
  's.setTimeout(2500, () => say("timeout")); s.on("connect", () => say("open")); s.on("error", (e) => say(e.code)); }',
].join(' ');

/** What the replica's own shell gets connecting to each target. */
async function reachFromTerminal(p: Platform, family: string, id: number, replica: string, targets: string[]): Promise<Record<string, string>> {
  const opened = await openTerminal(p.apiUrl, PLATFORM_ADMIN_KEY, id, family, replica);
  if (!('ws' in opened)) throw new Error(`terminal refused: ${opened.status} ${opened.body}`);
  try {
    const out = await runInTerminal(opened.ws, `${process.execPath} -e '${REACH}' ${targets.join(' ')}`, /REACHED/, 20_000);
    return Object.fromEntries([...out.matchAll(/^REACH (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  } finally {
    opened.ws.close();
  }
}

const NOT_OPEN = ['ECONNREFUSED', 'ENETUNREACH', 'EHOSTUNREACH', 'timeout'];

/** A test address laid on a pod's loopback (TEST-NET-1), to know that namespace again. */
const MARK = '192.0.2.77/32';
const marked = (namespace: string) => (spawnSync('ip', ['-n', namespace, '-4', 'addr', 'show', 'dev', 'lo'], { encoding: 'utf8' }).stdout ?? '').includes(MARK.split('/')[0]!);

describe.skipIf(!runPods)('replicas in pods (local runtime)', () => {
  let root: string;
  let dirs: PlatformDirs;
  let platform: Platform;
  let redis: RedisServer;
  let hostService: net.Server;
  let hostServicePort: number;
  const ids: Record<string, number> = {};
  let targets: Target[] = [];
  const target = (replicaPrefix: string) => {
    const t = targets.find((g) => g.labels.replica!.startsWith(replicaPrefix));
    if (t === undefined) throw new Error(`no /sd/replicas target for ${replicaPrefix}: ${JSON.stringify(targets)}`);
    return { address: t.targets[0]!, host: t.targets[0]!.split(':')[0]!, port: Number(t.targets[0]!.split(':')[1]), replica: t.labels.replica! };
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-pods-'));
    redis = await startRedisServer({ port: await freePort(), dir: root });
    // A service of this host on every address: only the firewall keeps a pod's link from it.
    hostService = net.createServer((s) => s.end());
    await new Promise<void>((resolve) => hostService.listen(0, '0.0.0.0', resolve));
    hostServicePort = (hostService.address() as net.AddressInfo).port;
    // The rules a first start adds, taken away: this service must add them again (they are the host's, the same for every service).
    for (const { program } of networkHere.pods?.firewall ?? []) {
      for (const rule of FIREWALL_RULES) while (spawnSync(program, ['-w', '-D', ...rule], { stdio: 'ignore' }).status === 0);
    }
    dirs = await platformDirs(root, 'pods');
    platform = await startPlatform(dirs);
    expect(platform.serve.output()).toContain('infergate: replicas run in pods');

    const create = async (family: string, body: Record<string, unknown>) => {
      const res = await platform.call('POST', `/deployments/${family}`, body);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      ids[body.name as string] = res.body.id as number;
    };
    await create('general', engineBody('pod-a', TOKEN));
    await create('general', engineBody('pod-b', TOKEN));
    const orchestrated = { cluster_id: 1, endpoint_bearer_token: TOKEN, extra_args: FAST_ENGINE };
    await create('orchestrated', { ...orchestrated, name: 'pod-agg', model: 'org/pod-agg', hardware_instance_id: 1 });
    await create('orchestrated', {
      ...orchestrated,
      name: 'pod-disagg',
      model: 'org/pod-disagg',
      serving_mode: 'disaggregated',
      worker_pools: { prefill: { hardware_instance_id: 1, replicas: 1 }, decode: { hardware_instance_id: 1, replicas: 1 } },
      enable_logging: true,
    });
    for (const [name, id] of Object.entries(ids)) {
      const family = name === 'pod-a' || name === 'pod-b' ? 'general' : 'orchestrated';
      await waitFor(async () => (await platform.call('GET', `/deployments/${family}/${id}`)).body.status === 'ready', 60_000, `${name} ready`, 100);
    }
    // Engine A, B; the aggregated Frontend and Worker; the disaggregated Frontend, Prefill and Decode.
    await waitFor(
      async () => (targets = (await (await fetch(`http://127.0.0.1:${platform.ports.metrics}/sd/replicas`)).json()) as Target[]).length === 7,
      10_000,
      'seven replica targets in /sd/replicas',
      100,
    );
  }, 120_000);

  afterAll(async () => {
    if (platform !== undefined) {
      platform.serve.kill('SIGTERM');
      await platform.serve.exited;
      killLeftoverReplicas(dirs.dataDir); // nothing, unless a test failed between a kill and the next start
    }
    await redis?.stop();
    await new Promise((resolve) => hostService?.close(resolve));
    if (root) await removeTempDir(root);
  });

  it('gives each general replica a pod of its own and each orchestrated deployment one pod for all its components', () => {
    const pods = (prefix: string) => new Set(targets.filter((t) => t.labels.replica!.startsWith(prefix)).map((t) => podOfAddress(dirs.dataDir, t.targets[0]!.split(':')[0]!)));
    expect(pods('pod-a-').size).toBe(1);
    expect(pods('pod-agg-').size).toBe(1);
    expect(pods('pod-disagg-').size).toBe(1);
    const all = [...pods('pod-a-'), ...pods('pod-b-'), ...pods('pod-agg-'), ...pods('pod-disagg-')];
    expect(new Set(all).size).toBe(4);
    expect(podsOf(dirs.dataDir).sort()).toEqual([...all].sort());
    for (const t of targets) expect(t.targets[0]).toMatch(/^10\.213\.\d+\.\d+:\d+$/);
  });

  it.skipIf(!firewall)('adds the iptables rules that keep pods off the host when the host lacks them, for IPv4 and IPv6', () => {
    for (const { save } of networkHere.pods!.firewall) {
      const saved = spawnSync(save, ['-t', 'filter'], { encoding: 'utf8' });
      expect(missingRules(saved.stdout), save).toEqual([]);
    }
  });

  it('serves every deployment through the gateway, prefill/decode included (the KV transfer inside their pod)', async () => {
    for (const [name, model] of [
      ['pod-a', 'sim/model'],
      ['pod-b', 'sim/model'],
      ['pod-agg', 'org/pod-agg'],
      ['pod-disagg', 'org/pod-disagg'],
    ] as const) {
      const answer = await platform.client(name, TOKEN).chat.completions.create({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 4 });
      expect(answer.choices[0]?.message.content, name).toBeTruthy();
    }
    const prefill = target('pod-disagg-r1-prefill-');
    const decodeLogs = async () =>
      ((await platform.call('GET', `/deployments/orchestrated/${ids['pod-disagg']}/logs?component=Decode&tail=500`)).body.lines as { line: string }[]).map((l) => l.line);
    await expect.poll(async () => (await decodeLogs()).some((l) => l.includes('kv transfer: tcp')), { timeout: 5000 }).toBe(true);
    // The workers file the Frontend reads names its workers at the pod's own address.
    expect(prefill.host).toBe(target('pod-disagg-r1-frontend-').host);
  });

  it("keeps a general replica's terminal from other deployments' replicas, the metrics listener, a Redis on loopback and the host", async () => {
    const a = target('pod-a-');
    const b = target('pod-b-');
    const worker = target('pod-agg-r1-worker-');
    const redisPort = Number(new URL(redis.url).port);
    const own = [`127.0.0.1:${b.port}`, b.address];
    const refused = [
      a.address,
      `127.0.0.1:${a.port}`,
      worker.address,
      `127.0.0.1:${platform.ports.metrics}`,
      `127.0.0.1:${redisPort}`,
      `127.0.0.1:${platform.ports.api}`,
      ...(firewall ? [`${hostSideOf(b.host)}:${hostServicePort}`, `${hostSideOf(b.host)}:${platform.ports.gateway}`] : []),
    ];
    // Each of them is there and answers from the host: what the replica meets is its pod.
    for (const t of [a.address, worker.address, `127.0.0.1:${platform.ports.metrics}`, `127.0.0.1:${redisPort}`, `127.0.0.1:${hostServicePort}`]) {
      const [h, p] = [t.slice(0, t.lastIndexOf(':')), Number(t.slice(t.lastIndexOf(':') + 1))];
      expect(await tryConnect(h, p), `${t} from the host`).toBe('open');
    }
    const seen = await reachFromTerminal(platform, 'general', ids['pod-b']!, b.replica, [...own, ...refused]);
    for (const t of own) expect(seen[t], `${t}: its own port, from its terminal`).toBe('open');
    for (const t of refused) expect(NOT_OPEN, `${t} from pod-b's terminal: ${seen[t]}`).toContain(seen[t]);
  });

  it("lets an orchestrated Frontend's terminal reach its own workers, and nothing of another deployment, the metrics listener or a Redis", async () => {
    const frontend = target('pod-agg-r1-frontend-');
    const worker = target('pod-agg-r1-worker-');
    const redisPort = Number(new URL(redis.url).port);
    const own = [worker.address, `127.0.0.1:${worker.port}`, `127.0.0.1:${frontend.port}`];
    const refused = [
      target('pod-a-').address,
      `127.0.0.1:${target('pod-a-').port}`,
      target('pod-disagg-r1-prefill-').address,
      `127.0.0.1:${target('pod-disagg-r1-prefill-').port}`,
      `127.0.0.1:${platform.ports.metrics}`,
      `127.0.0.1:${redisPort}`,
      ...(firewall ? [`${hostSideOf(frontend.host)}:${hostServicePort}`] : []),
    ];
    const seen = await reachFromTerminal(platform, 'orchestrated', ids['pod-agg']!, frontend.replica, [...own, ...refused]);
    for (const t of own) expect(seen[t], `${t}: its own pod, from the Frontend's terminal`).toBe('open');
    for (const t of refused) expect(NOT_OPEN, `${t} from pod-agg's Frontend: ${seen[t]}`).toContain(seen[t]);
  });

  it("answers on the host at each replica's pod address only: nothing listens at their ports on the host's loopback or other addresses", async () => {
    const external = Object.values(os.networkInterfaces())
      .flat()
      .filter((i): i is os.NetworkInterfaceInfo => i !== undefined && !i.internal && i.family === 'IPv4' && !i.address.startsWith('10.213.'))
      .map((i) => i.address);
    const byReplica = new Map<string, number[]>();
    for (const p of replicaProcesses(dirs.dataDir)) byReplica.set(p.replica, [...(byReplica.get(p.replica) ?? []), p.pid]);
    expect(byReplica.size).toBe(7);
    for (const [replica, pids] of byReplica) {
      const podAddress = targets.find((t) => t.labels.replica === replica)!.targets[0]!.split(':')[0]!;
      const listening = listeningAddresses(pids);
      expect(listening.length, `${replica} listens on something in its pod`).toBeGreaterThan(0);
      for (const { port } of listening) {
        expect(await tryConnect(podAddress, port), `${replica} at ${podAddress}:${port}`).toBe('open');
        for (const host of ['127.0.0.1', ...external]) {
          const reached = await tryConnect(host, port);
          // Another process of this host (a test's server on port 0) may hold the same number: what
          // must not be there is a socket of the replica's, which is what an open port is checked for.
          if (reached === 'open') expect(hostListenerOf(port, pids), `${replica}'s port ${port} at ${host}: a socket of the replica's listens on the host`).toBe(false);
          else expect(reached, `${replica}'s port ${port} at ${host}`).toBe('ECONNREFUSED');
        }
      }
    }
  });

  it("removes a pod when its last replica stops, and every pod of the service on a clean stop", async () => {
    const a = target('pod-a-');
    const pod = podOfAddress(dirs.dataDir, a.host);
    expect(podsOf(dirs.dataDir)).toContain(pod);
    expect((await platform.call('DELETE', `/deployments/general/${ids['pod-a']}`)).status).toBe(202);
    await expect.poll(() => podsOf(dirs.dataDir).includes(pod), { timeout: 30_000, message: `${pod} removed with pod-a` }).toBe(false);
    expect(podsOf(dirs.dataDir)).toHaveLength(3);

    platform.serve.kill('SIGTERM');
    expect((await platform.serve.exited).code).toBe(0);
    expect(podsOf(dirs.dataDir)).toEqual([]);
  });

  it("sweeps a killed service's pods at its next start", async () => {
    // A short controller lease, so the start after the kill takes over soon.
    platform = await startPlatform(dirs, ['--controller-lease-ttl', '3']);
    // The store brings its deployments back, each in a new pod.
    await expect.poll(() => podsOf(dirs.dataDir).length, { timeout: 60_000 }).toBe(3);
    await platform.waitFor(ids['pod-b']!, (d) => d.status === 'ready', 60_000, 'pod-b ready again');
    // The killed run's pods, marked (an address on their loopback) so a new pod that reuses a name is told apart.
    const left = podsOf(dirs.dataDir);
    expect(left).toHaveLength(3);
    for (const n of left) expect(spawnSync('ip', ['-n', n, 'addr', 'add', MARK, 'dev', 'lo']).status).toBe(0);
    platform.serve.kill('SIGKILL');
    await platform.serve.exited;
    // bubblewrap dies with the service; the namespaces stay, with nothing in them.
    await expect.poll(() => replicaProcesses(dirs.dataDir).length, { timeout: 10_000 }).toBe(0);
    expect(podsOf(dirs.dataDir).sort()).toEqual(left.sort());

    platform = await startPlatform(dirs, ['--controller-lease-ttl', '3']);
    await expect.poll(() => platform.serve.output().includes('removed network namespaces of pods left by an earlier run'), { timeout: 60_000 }).toBe(true);
    // Only the new run's pods remain: none of the killed run's.
    await expect.poll(() => podsOf(dirs.dataDir).filter((n) => !marked(n)).length, { timeout: 60_000 }).toBe(3);
    expect(podsOf(dirs.dataDir).filter(marked)).toEqual([]);
    await platform.waitFor(ids['pod-b']!, (d) => d.status === 'ready', 60_000, 'pod-b ready after the restart');
    expect(await platform.client('pod-b', TOKEN).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })).toBeTruthy();
  }, 120_000);
});

/** Whether a socket listening on `port` in this (the host's) network namespace belongs to one of `pids`. */
function hostListenerOf(port: number, pids: readonly number[]): boolean {
  const inodes = new Set<string>();
  for (const [file, family] of [['/proc/self/net/tcp', 4], ['/proc/self/net/tcp6', 6]] as const) {
    for (const [inode, address] of parseListening(readFileSync(file, 'utf8'), family)) if (address.port === port) inodes.add(inode);
  }
  return pids.some((pid) => socketInodes(pid).some((inode) => inodes.has(inode)));
}
