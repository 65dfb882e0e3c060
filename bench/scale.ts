// Benchmark: what a thousand endpoints cost one service. For each store (the embedded file
// store, Redis) and each size N: a built `infergate serve` (local runtime, a catalog and quota
// large enough), N general deployments created one after another at zero (`initial_replicas:
// 0`, min 0), optionally S of them serving (min 1, a paced client calling each), then an idle
// window. It prints create p50/p99 (the last 100 creates, and all), the time of a list page of
// 100 and of the whole list, the CPU of each process over the window (the service, its gateway
// processes, redis-server; replicas apart), the service's memory, and the controller lease
// renewals missed (the service's own log lines about it). Before a figure is printed it checks
// that every create and call succeeded and that exactly S replicas ran (none stray).
//
//   npm run bench:scale                                    # every case, about 10 minutes
//   npm run bench:scale -- --stores file --sizes 10,1000 --serving 0 --idle 20

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Agent, fetch as undiciFetch } from 'undici';
import { cpuMicros, freePort, onCleanup, sleep, start, stopAll, type Started } from './lib/processes.js';
import { childrenOf } from './lib/containers.js';
import { serviceEnv } from './lib/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN = 'bench-scale-admin-key-0123456789abcdef';

const { values } = parseArgs({
  options: {
    stores: { type: 'string', default: 'file,redis' },
    sizes: { type: 'string', default: '10,100,1000' },
    serving: { type: 'string', default: '50' },
    'serving-size': { type: 'string', default: '1000' },
    idle: { type: 'string', default: '20' },
    settle: { type: 'string', default: '5' },
    rate: { type: 'string', default: '20' },
  },
});
const stores = values.stores.split(',').filter(Boolean) as Array<'file' | 'redis'>;
const sizes = values.sizes.split(',').map(Number);
const serving = Number(values.serving);
const servingSize = Number(values['serving-size']);
const idleS = Number(values.idle);
const settleS = Number(values.settle);
const rate = Number(values.rate);

interface Case {
  store: 'file' | 'redis';
  n: number;
  serving: number;
}

interface Row extends Case {
  createP50: number;
  createP99: number;
  createAllP99: number;
  listPageMs: number;
  listAllMs: number;
  cpu: Record<string, number>;
  replicaCpu: number;
  rssMb: number;
  leaseMissed: number;
  calls: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? NaN;
const median = (xs: number[]) => quantile([...xs].sort((a, b) => a - b), 0.5);

/** `/proc/<pid>/cmdline` as one string; '' when gone. */
function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0);
}

/** The service's processes by role: its gateway worker processes apart from replicas. */
function serviceProcesses(servicePid: number): { gateways: number[]; replicas: number[] } {
  const gateways: number[] = [];
  const replicas: number[] = [];
  for (const pid of childrenOf(servicePid)) {
    // Gateway workers are forked through node:cluster: this program with no arguments after it
    // (the worker's slot comes in the environment); replicas run `engine` or a user's command.
    const cmd = cmdline(pid).trim();
    if (cmd.endsWith('dist/cli/main.js')) gateways.push(pid);
    else replicas.push(pid);
  }
  return { gateways, replicas };
}

/** Log lines of the service that say it lost or had to take back its controller lease. */
const LEASE_TROUBLE = /controller lease (had expired|lost|was lost|taken back)|FencedError|lease is no longer held/g;

async function runCase(c: Case): Promise<Row> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `infergate-bench-scale-`));
  const cleanupDir = () => rm(dir, { recursive: true, force: true });
  onCleanup(cleanupDir);
  await writeFile(
    path.join(dir, 'catalog.json'),
    JSON.stringify({ clusters: [{ id: 1, name: 'bench-big', orchestration_enabled: true, hardware: [{ id: 1, name: 'sim-gpu-1x', gpus_per_instance: 1, instances: 4 * c.n + 100 }] }] }),
  );
  let redis: Started | null = null;
  const env: NodeJS.ProcessEnv = {};
  if (c.store === 'redis') {
    const port = await freePort();
    redis = await start('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { ready: /Ready to accept/ });
    env.INFERGATE_REDIS_URL = `redis://127.0.0.1:${port}`;
  }
  const ports = { api: await freePort(), gateway: await freePort(), metrics: await freePort() };
  const service = await start(process.execPath, [path.join(root, 'dist/cli/main.js'), 'serve'], {
    env: {
      ...env,
      ...serviceEnv(dir, ports, ADMIN, 'warn'),
      INFERGATE_RUNTIME: 'local',
      INFERGATE_CATALOG: path.join(dir, 'catalog.json'),
      INFERGATE_GPU_QUOTA: String(4 * c.n + 100),
    },
    ready: /state in /,
    timeoutMs: 30_000,
  });
  const api = `http://127.0.0.1:${ports.api}`;
  const call = async (method: string, p: string, body?: unknown) => {
    // No content-type without a body: the API refuses an empty JSON body.
    const headers = { authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
    const res = await fetch(`${api}${p}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text };
  };

  // A first create compiles the route's validators (on first use): made and deleted before
  // the timed creates, so their p99 is not that one-off.
  const warm = await call('POST', '/deployments/general', { cluster_id: 1, hardware_instance_id: 1, name: 'scale-warm-up', image: 'infergate/reference-engine', container_port: 8000, min_replicas: 0, max_replicas: 1, max_concurrency: 8, initial_replicas: 0, endpoint_bearer_token: 'igt_bench_scale_token_warm_up_abcdefghij' });
  if (warm.status !== 201) throw new Error(`the warm-up create failed: ${warm.status} ${warm.body}`);
  const warmDelete = await call('DELETE', `/deployments/general/${(JSON.parse(warm.body) as { id: number }).id}`);
  if (warmDelete.status >= 300) throw new Error(`the warm-up delete failed: ${warmDelete.status} ${warmDelete.body}`);

  // Creates: the serving ones first (each starts its replica), then the rest at zero.
  const createMs: number[] = [];
  for (let i = 0; i < c.n; i++) {
    const serves = i < c.serving;
    const body = {
      cluster_id: 1,
      hardware_instance_id: 1,
      name: `scale-${i}`,
      image: 'infergate/reference-engine',
      tag: 'openai',
      container_port: 8000,
      health_check_path: '/health',
      min_replicas: serves ? 1 : 0,
      max_replicas: 1,
      max_concurrency: 8,
      ...(serves ? {} : { initial_replicas: 0 }),
      endpoint_bearer_token: `igt_bench_scale_token_${String(i).padStart(5, '0')}_abcdefghij`,
    };
    const t0 = performance.now();
    const res = await call('POST', '/deployments/general', body);
    createMs.push(performance.now() - t0);
    if (res.status !== 201) throw new Error(`create ${i} failed: ${res.status} ${res.body}`);
  }
  const lastCreates = createMs.slice(-100).sort((a, b) => a - b);
  const allCreates = [...createMs].sort((a, b) => a - b);

  interface ListPage {
    items: Array<{ name: string; components: Record<string, { ready: number; desired: number }> }>;
    continue?: string;
  }
  const listAll = async (): Promise<ListPage['items']> => {
    const items: ListPage['items'] = [];
    let token: string | undefined;
    do {
      const res = await call('GET', `/deployments/general?limit=500${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
      if (res.status !== 200) throw new Error(`list failed: ${res.status} ${res.body}`);
      const page = JSON.parse(res.body) as ListPage;
      items.push(...page.items);
      token = page.continue;
    } while (token);
    return items;
  };

  // Wait for the serving replicas, and for nothing else to run.
  const deadline = Date.now() + 300_000;
  for (;;) {
    const items = await listAll();
    if (items.length !== c.n) throw new Error(`the list has ${items.length} deployments, ${c.n} were created`);
    const ready = items.reduce((sum, d) => sum + (d.components.Replica?.ready ?? 0), 0);
    const desired = items.reduce((sum, d) => sum + (d.components.Replica?.desired ?? 0), 0);
    if (ready === c.serving && desired === c.serving) break;
    if (Date.now() > deadline) throw new Error(`not settled in 300 s: ${ready} ready, ${desired} desired, ${c.serving} expected`);
    await sleep(500);
  }

  // List: a page of 100 and the whole list (no limit), each the median of 11.
  const pageTimes: number[] = [];
  const allTimes: number[] = [];
  for (let i = 0; i < 11; i++) {
    let t0 = performance.now();
    const page = await call('GET', '/deployments/general?limit=100');
    pageTimes.push(performance.now() - t0);
    if (page.status !== 200 || (JSON.parse(page.body) as ListPage).items.length !== Math.min(100, c.n)) throw new Error(`a list page is wrong: ${page.status}`);
    t0 = performance.now();
    const all = await call('GET', '/deployments/general');
    allTimes.push(performance.now() - t0);
    if (all.status !== 200 || (JSON.parse(all.body) as ListPage).items.length !== c.n) throw new Error(`the whole list is wrong: ${all.status}`);
  }

  // Serving traffic: a paced client round-robins over the serving endpoints through the gateway.
  const ca = await readFile(path.join(dir, 'certs', 'ca.crt'), 'utf8');
  const dispatcher = new Agent({ connect: { ca, servername: 'localhost' }, connections: 16 });
  let calls = 0;
  let failures = 0;
  let trafficOn = c.serving > 0;
  const traffic = (async () => {
    let i = 0;
    while (trafficOn) {
      const k = i++ % c.serving;
      const t0 = performance.now();
      try {
        const res = await undiciFetch(`https://localhost:${ports.gateway}/endpoints/scale-${k}/v1/chat/completions`, {
          method: 'POST',
          dispatcher,
          headers: { authorization: `Bearer igt_bench_scale_token_${String(k).padStart(5, '0')}_abcdefghij`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
        });
        await res.text();
        if (res.status === 200) calls++;
        else failures++;
      } catch {
        failures++;
      }
      await sleep(Math.max(0, 1000 / rate - (performance.now() - t0)));
    }
  })();

  await sleep(settleS * 1000);
  const { gateways, replicas } = serviceProcesses(service.pid);
  const measured: Record<string, number> = { service: service.pid, ...Object.fromEntries(gateways.map((p, i) => [`gateway-${i + 1}`, p])) };
  if (redis) measured['redis-server'] = redis.pid;
  const before = Object.fromEntries(Object.entries(measured).map(([k, pid]) => [k, cpuMicros(pid)]));
  const replicaBefore = replicas.reduce((s, p) => s + safeCpu(p), 0);
  const w0 = performance.now();
  await sleep(idleS * 1000);
  const wall = (performance.now() - w0) * 1000;
  const cpu = Object.fromEntries(Object.entries(measured).map(([k, pid]) => [k, (cpuMicros(pid) - before[k]!) / wall]));
  const replicaCpu = (replicas.reduce((s, p) => s + safeCpu(p), 0) - replicaBefore) / wall;
  trafficOn = false;
  await traffic;
  await dispatcher.close();
  const rssMb = rssKb(service.pid) / 1024;
  if (failures > 0) throw new Error(`${failures} calls to the serving endpoints failed`);
  if (c.serving > 0 && calls === 0) throw new Error('no call reached a serving endpoint');

  // Nothing stray: the replicas running are exactly the serving ones, still.
  const after = await listAll();
  const readyAfter = after.reduce((sum, d) => sum + (d.components.Replica?.ready ?? 0), 0);
  if (readyAfter !== c.serving) throw new Error(`${readyAfter} replicas ready after the window, ${c.serving} expected`);

  const leaseMissed = (service.output().match(LEASE_TROUBLE) ?? []).length;
  await service.stop();
  await redis?.stop();
  await cleanupDir();
  return {
    ...c,
    createP50: quantile(lastCreates, 0.5),
    createP99: quantile(lastCreates, 0.99),
    createAllP99: quantile(allCreates, 0.99),
    listPageMs: median(pageTimes),
    listAllMs: median(allTimes),
    cpu,
    replicaCpu,
    rssMb,
    leaseMissed,
    calls,
  };
}

function safeCpu(pid: number): number {
  try {
    return cpuMicros(pid);
  } catch {
    return 0;
  }
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

async function main(): Promise<void> {
  const cases: Case[] = [];
  for (const store of stores) {
    for (const n of sizes) cases.push({ store, n, serving: 0 });
    if (serving > 0) cases.push({ store, n: servingSize, serving });
  }
  const rows: Row[] = [];
  console.log(`bench:scale: ${cases.length} cases on ${os.cpus().length} cores, idle window ${idleS} s after ${settleS} s`);
  for (const c of cases) {
    const row = await runCase(c);
    rows.push(row);
    const cpu = Object.entries(row.cpu)
      .map(([k, v]) => `${k} ${pct(v)}`)
      .join(', ');
    console.log(
      `${c.store} N=${c.n} serving=${c.serving}: create p50 ${row.createP50.toFixed(1)} ms p99 ${row.createP99.toFixed(1)} ms (all ${row.createAllP99.toFixed(1)} ms); ` +
        `list page of 100 ${row.listPageMs.toFixed(1)} ms, whole list ${row.listAllMs.toFixed(1)} ms; CPU ${cpu}${c.serving ? `, replicas ${pct(row.replicaCpu)}, ${row.calls} calls` : ''}; ` +
        `RSS ${row.rssMb.toFixed(0)} MB; lease renewals missed ${row.leaseMissed}`,
    );
  }
  console.log('\n| store | N | serving | create p50 | create p99 | list page of 100 | whole list | idle CPU (per process) | service RSS | lease missed |');
  console.log('|---|--:|--:|--:|--:|--:|--:|---|--:|--:|');
  for (const r of rows) {
    const cpu = Object.entries(r.cpu)
      .map(([k, v]) => `${k} ${pct(v)}`)
      .join(', ');
    console.log(
      `| ${r.store} | ${r.n} | ${r.serving} | ${r.createP50.toFixed(1)} ms | ${r.createP99.toFixed(1)} ms | ${r.listPageMs.toFixed(1)} ms | ${r.listAllMs.toFixed(1)} ms | ${cpu} | ${r.rssMb.toFixed(0)} MB | ${r.leaseMissed} |`,
    );
  }
  // Targets, each said against its figure.
  console.log('\nTargets (1,000 at zero): idle CPU ≤ 5 % per process, create p99 ≤ 100 ms, list page ≤ 50 ms, memory ≤ 2× the 10 figure + 1 KB each, no lease lost, create p50 at 10 and 1,000 within 1.5×');
  for (const store of stores) {
    const small = rows.find((r) => r.store === store && r.n === Math.min(...sizes) && r.serving === 0);
    const big = rows.find((r) => r.store === store && r.n === Math.max(...sizes) && r.serving === 0);
    if (!small || !big) continue;
    const maxCpu = Math.max(...Object.values(big.cpu));
    const memLimit = 2 * small.rssMb + (big.n * 1) / 1024;
    const checks: Array<[string, boolean, string]> = [
      ['idle CPU per process ≤ 5 %', maxCpu <= 0.05, pct(maxCpu)],
      ['create p99 ≤ 100 ms', big.createP99 <= 100, `${big.createP99.toFixed(1)} ms`],
      ['list page ≤ 50 ms', big.listPageMs <= 50, `${big.listPageMs.toFixed(1)} ms`],
      [`memory ≤ ${memLimit.toFixed(0)} MB`, big.rssMb <= memLimit, `${big.rssMb.toFixed(0)} MB`],
      ['no lease lost', big.leaseMissed === 0, String(big.leaseMissed)],
      ['create p50 within 1.5×', big.createP50 <= 1.5 * small.createP50, `${(big.createP50 / small.createP50).toFixed(2)}×`],
    ];
    for (const [name, ok, figure] of checks) console.log(`  ${store} N=${big.n}: ${name}: ${figure} ${ok ? 'met' : 'MISSED'}`);
  }
  mkdirSync(path.join(root, 'bench/results'), { recursive: true });
  writeFileSync(path.join(root, 'bench/results/scale.json'), JSON.stringify(rows, null, 2));
}

main()
  .catch((err: Error) => {
    console.error(`bench:scale failed: ${err.message}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
