// What the control process costs while a few replicas run and nothing else happens: the
// built `infergate serve` (local runtime) with N general deployments of the reference engine
// at one replica each, all ready, then CPU time of the serve process over a quiet window
// (utime + stime from /proc, as a percentage of one core) and, with --strace, over a second
// window the files it opened under /proc and the connections it made (strace -f; slower, so
// not in the CPU window).
//   npx tsx bench/runtime-idle.ts [--replicas 5 --seconds 20 --pods off --strace]
// `--pods off` runs replicas on the host's network, where the runtime checks what each one
// listens on (a /proc read of the processes' sockets).

import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cpuMicros, sleep, stopAll } from './lib/processes.js';
import { startService } from './lib/service.js';

const { values } = parseArgs({
  options: {
    replicas: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '20' },
    pods: { type: 'string', default: 'auto' },
    strace: { type: 'boolean', default: false },
  },
});
const replicas = Number(values.replicas);
const seconds = Number(values.seconds);

async function main(): Promise<void> {
  const args = values.pods === 'off' ? ['--replica-network', 'host'] : [];
  const serve = await startService('runtime-idle', args);
  const ids: number[] = [];
  for (let i = 0; i < replicas; i++) {
    ids.push(
      await serve.createGeneral({
        name: `idle${i}`,
        image: 'infergate/reference-engine',
        tag: 'openai',
        container_port: 8000,
        health_check_path: '/health',
        command: ['--startup-ms', '0'],
        min_replicas: 1,
        max_replicas: 1,
        endpoint_bearer_token: 'bench-runtime-idle-token-0123456789',
      }),
    );
  }
  const ready = async () => {
    let n = 0;
    for (const id of ids) n += (await serve.deployment<{ components: { Replica: { ready: number } } }>(id)).components.Replica.ready;
    return n;
  };
  for (let i = 0; i < 600 && (await ready()) < replicas; i++) await sleep(200);
  if ((await ready()) < replicas) throw new Error(`only ${await ready()} of ${replicas} replicas got ready`);
  await sleep(3000); // the creates' own work settles
  const before = cpuMicros(serve.proc.pid);
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const used = cpuMicros(serve.proc.pid) - before;
  const wall = (performance.now() - t0) * 1000;
  const result: Record<string, unknown> = { replicas, seconds, pods: values.pods, serve_cpu_percent_of_a_core: Math.round((used / wall) * 1000) / 10, serve_cpu_ms: Math.round(used / 1000) };
  if (values.strace) Object.assign(result, await syscalls(serve.proc.pid, seconds));
  console.log(JSON.stringify(result));
}

/** Files under /proc the process (and its threads) opened, and connections it made, over `seconds`. */
async function syscalls(pid: number, seconds: number): Promise<Record<string, number>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runtime-idle-strace-'));
  const out = path.join(dir, 'trace');
  const tracer = spawn('strace', ['-f', '-qq', '-e', 'trace=openat,connect', '-o', out, '-p', String(pid)], { stdio: 'ignore' });
  await sleep(seconds * 1000);
  tracer.kill('SIGINT');
  await new Promise((done) => tracer.once('exit', done));
  const lines = (await readFile(out, 'utf8')).split('\n');
  await rm(dir, { recursive: true, force: true });
  return {
    proc_opens: lines.filter((l) => l.includes('openat(') && l.includes('"/proc/')).length,
    connects: lines.filter((l) => l.includes('connect(')).length,
  };
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => void stopAll());
