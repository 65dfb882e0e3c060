// The v2 inference protocol through the gateway against the replica itself: unary ModelInfer
// calls/s and p99 with the same grpc-js client, direct (h2c) and through the gateway (TLS,
// bearer token in metadata); then tokens/s streamed through ModelStreamInfer both ways. One
// `infergate serve` (built) runs a general gRPC deployment of the reference engine's v2 flavor
// with zero simulated latency, so the figures are the protocol path, not the simulator.
//   npm run bench:grpc [-- --duration 8 --concurrency 32 --stream-tokens 2000]
// Target (M6): gateway calls/s ≥ 0.35 × direct. Writes bench/results/grpc-v2.json.

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { bearer, inferRequest, v2ClientPlain, v2ClientTls, type V2Client } from '../test/helpers/v2-client.js';
import { sleep, stopAll } from './lib/processes.js';
import { startService } from './lib/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { duration: { type: 'string', default: '8' }, concurrency: { type: 'string', default: '32' }, 'stream-tokens': { type: 'string', default: '2000' } } });
const seconds = Number(values.duration);
const concurrency = Number(values.concurrency);
const streamTokens = Number(values['stream-tokens']);
const TOKEN = 'bench-grpc-token-0123456789';
const MODEL = 'bench-v2';

interface UnaryResult {
  calls: number;
  failed: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function unaryLoad(client: V2Client, md: grpc.Metadata, ms: number): Promise<UnaryResult> {
  const latencies: number[] = [];
  let failed = 0;
  const until = Date.now() + ms;
  const request = inferRequest(MODEL, 'hi', 1);
  const one = () =>
    new Promise<void>((resolve) => {
      const t = performance.now();
      (client.ModelInfer as (r: unknown, m: grpc.Metadata, cb: (e: grpc.ServiceError | null) => void) => void).call(client, request, md, (err) => {
        if (err) failed++;
        else latencies.push(performance.now() - t);
        resolve();
      });
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < until) await one();
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const r2 = (n: number) => Math.round(n * 100) / 100;
  return { calls: latencies.length, failed, callsPerSecond: Math.round(latencies.length / elapsed), p50Ms: r2(percentile(latencies, 50)), p99Ms: r2(percentile(latencies, 99)) };
}

async function streamRate(client: V2Client, md: grpc.Metadata): Promise<{ tokens: number; tokensPerSecond: number }> {
  const started = performance.now();
  let tokens = 0;
  await new Promise<void>((resolve, reject) => {
    const call = (client.ModelStreamInfer as (m: grpc.Metadata) => grpc.ClientDuplexStream<unknown, { infer_response: { parameters: Record<string, { bool_param?: boolean }> } | null; error_message: string }>).call(client, md);
    call.on('data', (msg) => {
      if (msg.error_message) return reject(new Error(msg.error_message));
      tokens++;
      if (msg.infer_response?.parameters.triton_final_response?.bool_param) call.end();
    });
    call.on('end', resolve);
    call.on('error', reject);
    const request = inferRequest(MODEL, 'stream', streamTokens);
    call.write({ ...request, parameters: { ...request.parameters, ignore_eos: { bool_param: true } } });
  });
  return { tokens, tokensPerSecond: Math.round(tokens / ((performance.now() - started) / 1000)) };
}

async function main(): Promise<void> {
  const serve = await startService('grpc', ['--log-level', 'warn']);
  const ports = serve.ports;
  await serve.createGeneral({
    name: 'v2bench',
    image: 'infergate/reference-engine',
    tag: 'v2',
    container_port: 8001,
    protocol: 'grpc',
    enable_logging: false,
    command: ['--startup-ms', '100', '--ttft-ms', '0', '--itl-ms', '0', '--max-running', '4096', '--model', MODEL],
    endpoint_bearer_token: TOKEN,
  });
  let replicaAddress = '';
  for (let i = 0; i < 300 && replicaAddress === ''; i++) {
    const groups = (await (await fetch(`http://127.0.0.1:${ports.metrics}/sd/replicas`)).json()) as { targets: string[] }[];
    replicaAddress = groups[0]?.targets[0] ?? '';
    if (replicaAddress === '') await sleep(100);
  }
  if (replicaAddress === '') throw new Error('the replica never became ready');
  const ca = await serve.caPem();
  const direct = v2ClientPlain(replicaAddress);
  const gateway = v2ClientTls(ports.gateway, 'v2bench.endpoints.localhost', ca);
  const none = new grpc.Metadata();
  const auth = bearer(TOKEN);

  // Warm both paths (connections, JIT), then measure in interleaved rounds.
  await unaryLoad(direct, none, 1500);
  await unaryLoad(gateway, auth, 1500);
  const rounds: { direct: UnaryResult; gateway: UnaryResult }[] = [];
  for (let i = 0; i < 2; i++) {
    rounds.push({ direct: await unaryLoad(direct, none, (seconds * 1000) / 2), gateway: await unaryLoad(gateway, auth, (seconds * 1000) / 2) });
  }
  const sum = (k: 'direct' | 'gateway') => {
    const calls = rounds.reduce((n, r) => n + r[k].calls, 0);
    return { calls, failed: rounds.reduce((n, r) => n + r[k].failed, 0), callsPerSecond: Math.round(rounds.reduce((n, r) => n + r[k].callsPerSecond, 0) / rounds.length), p99Ms: Math.max(...rounds.map((r) => r[k].p99Ms)), p50Ms: rounds[0]![k].p50Ms };
  };
  const streamDirect = await streamRate(direct, none);
  const streamGateway = await streamRate(gateway, auth);
  const unaryDirect = sum('direct');
  const unaryGateway = sum('gateway');
  const ratio = Math.round((unaryGateway.callsPerSecond / unaryDirect.callsPerSecond) * 100) / 100;
  const summary = {
    concurrency,
    seconds,
    unary: { direct: unaryDirect, gateway: unaryGateway, ratio, target: 0.35, verdict: ratio >= 0.35 ? 'PASS' : 'MISS' },
    stream: { tokens: streamTokens, direct: streamDirect, gateway: streamGateway, ratio: Math.round((streamGateway.tokensPerSecond / streamDirect.tokensPerSecond) * 100) / 100 },
  };
  direct.close();
  gateway.close();
  const out = path.join(root, 'bench', 'results');
  await mkdir(out, { recursive: true });
  await writeFile(path.join(out, 'grpc-v2.json'), JSON.stringify(summary, null, 2) + '\n');
  console.log(JSON.stringify(summary, null, 2));
}

main()
  .catch((err: Error) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
