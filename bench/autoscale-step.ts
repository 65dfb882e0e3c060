// The autoscaler under a load step, with real processes: `infergate serve` (built), the
// reference engine as replicas, a deployment with min 0 or 1 and max 6 (max_concurrency 2).
// Load: 1 stream at a time, then a step to 12 concurrent streams, then back to 1. Measures
// the time from the step to the scale decision (from the autoscaler's log), to the first
// response from a new replica and to every desired replica ready; the failed requests
// (target: zero); and the replica count over time as a plot-ready CSV.
//   npm run bench:autoscale [-- --min 0 --base 15 --high 40 --tail 120 --cooldown 10 --stable 60 --panic 6]
// Writes bench/results/autoscale-step-min<N>.csv and .json.

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Agent, fetch } from 'undici';
import { sleep, stopAll } from './lib/processes.js';
import { startService } from './lib/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    min: { type: 'string', default: '0' },
    base: { type: 'string', default: '15' },
    high: { type: 'string', default: '40' },
    tail: { type: 'string', default: '120' },
    cooldown: { type: 'string', default: '10' },
    stable: { type: 'string', default: '60' },
    panic: { type: 'string', default: '6' },
    streams: { type: 'string', default: '12' },
  },
});
const min = Number(values.min);
const phases = { base: Number(values.base) * 1000, high: Number(values.high) * 1000, tail: Number(values.tail) * 1000 };
const highStreams = Number(values.streams);
const TOKEN = 'bench-autoscale-token-0123456789';
const NAME = 'step';

interface Sample {
  t: number;
  phase: string;
  streams: number;
  desired: number;
  ready: number;
}

async function main(): Promise<void> {
  const serve = await startService('autoscale', ['--autoscale-stable-window', String(values.stable), '--autoscale-panic-window', String(values.panic), '--scale-to-zero-grace', '5'], 'info');
  const ports = serve.ports;
  const id = await serve.createGeneral({
    name: NAME,
    image: 'infergate/reference-engine',
    tag: 'openai',
    container_port: 8000,
    health_check_path: '/health',
    command: ['--startup-ms', '1000', '--ttft-ms', '30', '--itl-ms', '20'],
    min_replicas: min,
    max_replicas: 6,
    max_concurrency: 2,
    cooldown_period: Number(values.cooldown),
    endpoint_bearer_token: TOKEN,
  });
  const counts = async () => (await serve.deployment<{ components: { Replica: { ready: number; desired: number } } }>(id)).components.Replica;
  // Settle: the first replica comes up; with min 0 the deployment then goes to zero.
  for (let i = 0; i < 600 && (await counts()).ready < 1; i++) await sleep(100);
  if (min === 0) for (let i = 0; i < 1200 && (await counts()).desired !== 0; i++) await sleep(250);

  const ca = await serve.caPem();
  const host = `${NAME}.endpoints.localhost`;
  // The endpoint's own name in the URL (SNI and Host), resolved to loopback.
  const lookup = ((_h: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) =>
    options.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)) as unknown as import('node:net').LookupFunction;
  const dispatcher = new Agent({ connect: { ca, lookup }, connections: 64 });
  const url = `https://${host}:${ports.gateway}/v1/chat/completions`;
  const t0 = Date.now();
  let phase = 'base';
  let target = 1;
  let active = 0;
  let failures = 0;
  let completed = 0;
  const errors = new Map<string, number>();
  const seenBeforeStep = new Set<string>();
  let stepAt = 0;
  let firstNewReplicaAt: number | null = null;

  const oneStream = async () => {
    active++;
    try {
      const res = await fetch(url, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim/model', messages: [{ role: 'user', content: 'load' }], max_tokens: 50, stream: true, ignore_eos: true }),
      });
      if (res.status !== 200) throw new Error(`status ${res.status}: ${(await res.text()).slice(0, 120)}`);
      const body = await res.text();
      if (!body.includes('data: [DONE]')) throw new Error('stream ended without [DONE]');
      const replica = /"system_fingerprint":"([^"]+)"/.exec(body)?.[1] ?? '';
      if (stepAt === 0) seenBeforeStep.add(replica);
      else if (firstNewReplicaAt === null && !seenBeforeStep.has(replica)) firstNewReplicaAt = Date.now();
      completed++;
    } catch (err) {
      failures++;
      const key = (err as Error).message.slice(0, 80);
      errors.set(key, (errors.get(key) ?? 0) + 1);
      await sleep(100); // a failing endpoint is not hammered
    } finally {
      active--;
    }
  };
  let running = true;
  const workers: Promise<void>[] = [];
  const worker = async (index: number) => {
    while (running) {
      if (index >= target) {
        await sleep(50);
        continue;
      }
      await oneStream();
    }
  };
  for (let i = 0; i < highStreams; i++) workers.push(worker(i));

  const samples: Sample[] = [];
  let peak = 0;
  let allReadyAt: number | null = null;
  const sampler = (async () => {
    while (running) {
      const c = await counts().catch(() => ({ ready: -1, desired: -1 }));
      samples.push({ t: (Date.now() - t0) / 1000, phase, streams: active, desired: c.desired, ready: c.ready });
      if (phase === 'high') {
        peak = Math.max(peak, c.desired);
        if (allReadyAt === null && c.ready >= peak && peak > 1) allReadyAt = Date.now();
      }
      await sleep(250);
    }
  })();

  await sleep(phases.base);
  phase = 'high';
  stepAt = Date.now();
  target = highStreams;
  await sleep(phases.high);
  phase = 'tail';
  target = 1;
  const baseline = Math.max(min, 1);
  const tailEnd = Date.now() + phases.tail;
  while (Date.now() < tailEnd) {
    const c = await counts();
    if (c.desired <= baseline && c.ready <= baseline) break;
    await sleep(500);
  }
  const backAt = Date.now();
  running = false;
  await Promise.all([...workers, sampler]);

  // The decision's own timestamp, from the autoscaler's log line.
  const decisions = serve.proc
    .output()
    .split('\n')
    .filter((l) => l.includes('"autoscaler decision"'))
    .map((l) => JSON.parse(l) as { time: number; from: number; to: number; reason: string });
  const firstUp = decisions.find((d) => d.time >= stepAt && d.to > d.from);
  const summary = {
    min,
    max: 6,
    max_concurrency: 2,
    streams: { base: 1, high: highStreams },
    windows_s: { stable: Number(values.stable), panic: Number(values.panic), cooldown: Number(values.cooldown) },
    step_to_decision_ms: firstUp ? firstUp.time - stepAt : null,
    decision: firstUp ? { from: firstUp.from, to: firstUp.to, reason: firstUp.reason } : null,
    step_to_first_new_replica_serving_ms: firstNewReplicaAt !== null ? firstNewReplicaAt - stepAt : null,
    step_to_all_desired_ready_ms: allReadyAt !== null ? allReadyAt - stepAt : null,
    peak_desired: peak,
    back_to_baseline_after_step_down_ms: backAt - (stepAt + phases.high),
    requests_completed: completed,
    requests_failed: failures,
    errors: Object.fromEntries(errors),
    decisions: decisions.map((d) => ({ t: (d.time - t0) / 1000, from: d.from, to: d.to, reason: d.reason })),
  };
  await serve.proc.stop();
  const out = path.join(root, 'bench', 'results');
  await mkdir(out, { recursive: true });
  const csv = ['t_s,phase,client_streams,desired,ready', ...samples.map((s) => `${s.t.toFixed(2)},${s.phase},${s.streams},${s.desired},${s.ready}`)].join('\n') + '\n';
  await writeFile(path.join(out, `autoscale-step-min${min}.csv`), csv);
  await writeFile(path.join(out, `autoscale-step-min${min}.json`), JSON.stringify(summary, null, 2) + '\n');
  const { decisions: _d, ...brief } = summary;
  console.log(JSON.stringify(brief, null, 2));
  console.log(`replica count over time: bench/results/autoscale-step-min${min}.csv`);
}

main()
  .catch((err: Error) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
