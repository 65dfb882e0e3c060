// Bench helper: the targets of bench/llm-routing.ts, each on fresh reference-engine replicas —
// N engines started directly behind HAProxy (TLS at the front, plain HTTP to the engines, the
// balance algorithm given by the caller), or `infergate serve` with a general deployment of
// the reference engine whose own N replicas it starts and routes to with a routing policy.
// Also which engine flags the built engine knows, so a run can say what it could not set, and
// what each replica's own /metrics answers at the address the gateway scrapes.

import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { issueServerCertificate, type CertificateAuthority } from '../../src/pki/ca.js';
import { freePort, sleep, start, type Started } from './processes.js';
import { BENCH_ADMIN_KEY, startService, type BenchService } from './service.js';
import { ensurePackage } from './targets.js';

/** The flags of the built `infergate engine` (from its --help). */
export function engineFlags(root: string): Set<string> {
  const help = execFileSync(process.execPath, [path.join(root, 'dist/cli/main.js'), 'engine', '--help']).toString();
  return new Set([...help.matchAll(/^\s+--([a-z0-9-]+)/gm)].map((m) => m[1]!));
}

async function healthy(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/health`)
      .then(async (r) => (await r.arrayBuffer(), r.status))
      .catch(() => 0);
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`the engine on port ${port} was not healthy within ${timeoutMs} ms`);
    await sleep(100);
  }
}

export interface EngineSet {
  ports: number[];
  ids: string[];
  procs: Started[];
  stop(): Promise<void>;
}

/** N reference engines on 127.0.0.1, each with its replica id as system_fingerprint. */
export async function startEngines(root: string, count: number, idPrefix: string, args: string[]): Promise<EngineSet> {
  const main = path.join(root, 'dist/cli/main.js');
  const ports: number[] = [];
  const ids: string[] = [];
  const procs: Started[] = [];
  for (let i = 0; i < count; i++) {
    const port = await freePort();
    const id = `${idPrefix}-${i}`;
    procs.push(await start(process.execPath, [main, 'engine', '--flavor', 'openai', '--host', '127.0.0.1', '--port', String(port), '--replica-id', id, ...args], { quietMs: 200 }));
    ports.push(port);
    ids.push(id);
  }
  await Promise.all(ports.map((p) => healthy(p, 20_000)));
  return { ports, ids, procs, stop: async () => void (await Promise.all(procs.map((p) => p.stop()))) };
}

/** What one replica's own /metrics answers, at the address the gateway scrapes. */
export interface ReplicaMetricsProbe {
  replica: string;
  address: string;
  /** HTTP status, or 0 when nothing answered. */
  status: number;
  /** Whether the answer holds vLLM's running-requests gauge, a signal prefix_aware reads. */
  vllmSignals: boolean;
}

export interface InfergateTarget {
  serve: BenchService;
  deploymentId: number;
  /** The control API's base URL and the admin's headers. */
  api: string;
  adminHeaders: Record<string, string>;
  /** The endpoint's host name (SNI and Host). */
  host: string;
  port: number;
  caPem: string;
  /** The deployment's ready replicas' names: each one's system_fingerprint. */
  replicaNames(): Promise<string[]>;
  /** Ready replicas the gateway routes the endpoint to (its own gauge). */
  routedReplicas(): Promise<number>;
  /**
   * The gateway's counters for this deployment, by series and labels: sessions, tokens, the
   * concurrency limits it learnt per replica, and its flow-control queue's waits and refusals.
   */
  gatewayCounters(): Promise<Record<string, number>>;
  /** The process's Prometheus text (gateway, control plane, runtime). */
  metricsText(): Promise<string>;
  /**
   * GET /metrics on each ready replica of the deployment, at the scrape target the service
   * publishes for Prometheus (/sd/replicas): the replica's own address, the one the gateway's
   * prefix_aware scrape reads.
   */
  replicaMetrics(): Promise<ReplicaMetricsProbe[]>;
}

/**
 * `infergate serve` (built, in a temp dir) with one general deployment of the reference
 * engine: `replicas` replicas (min = max), session affinity on, the given routing policy, a
 * bearer token, and any further fields of the create body in `spec`; resolves once every
 * replica is ready.
 */
export async function startInfergate(name: string, policy: 'affinity' | 'prefix_aware', replicas: number, engineArgs: string[], token: string, spec: Record<string, unknown> = {}): Promise<InfergateTarget> {
  const serve = await startService(`llm-${policy}`, []);
  const api = `http://127.0.0.1:${serve.ports.api}`;
  const headers = { authorization: `Bearer ${BENCH_ADMIN_KEY}` };
  const deploymentId = await serve.createGeneral({
    name,
    image: 'infergate/reference-engine',
    tag: 'openai',
    container_port: 8000,
    health_check_path: '/health',
    command: engineArgs,
    enable_logging: false,
    min_replicas: replicas,
    max_replicas: replicas,
    session_affinity: true,
    routing_policy: policy,
    endpoint_bearer_token: token,
    ...spec,
  });
  const deadline = Date.now() + 90_000;
  let endpoint = '';
  for (;;) {
    const d = await serve.deployment<{ status: string; endpoint_url: string; routing_policy?: string; components: { Replica?: { ready: number } } }>(deploymentId);
    endpoint = d.endpoint_url;
    if (d.status === 'ready' && d.components.Replica?.ready === replicas) {
      if (d.routing_policy !== undefined && d.routing_policy !== policy) throw new Error(`the deployment reports routing_policy ${d.routing_policy}, not ${policy}`);
      break;
    }
    if (Date.now() > deadline) throw new Error(`the ${policy} deployment's ${replicas} replicas were not ready within 90 s: ${JSON.stringify(d)}`);
    await sleep(250);
  }
  const host = endpoint.split(':')[0]!;
  const metrics = async () => (await fetch(`http://127.0.0.1:${serve.ports.metrics}/metrics`)).text();
  const target: InfergateTarget = {
    serve,
    deploymentId,
    api,
    adminHeaders: headers,
    host,
    port: serve.ports.gateway,
    caPem: await serve.caPem(),
    replicaNames: async () => {
      const r = (await (await fetch(`${api}/deployments/general/${deploymentId}/replicas`, { headers })).json()) as { items: Array<{ name: string; state: string }> };
      return r.items.filter((x) => x.state === 'ready').map((x) => x.name);
    },
    routedReplicas: async () => {
      const line = (await metrics()).split('\n').find((l) => l.startsWith(`infergate_replicas_ready{`) && l.includes(`deployment="${name}"`));
      return line ? Number(line.split(' ').pop()) : 0;
    },
    gatewayCounters: async () => {
      const out: Record<string, number> = {};
      for (const l of (await metrics()).split('\n')) {
        if (!l.includes(`deployment="${name}"`)) continue;
        if (!/^infergate_(session_routing_total|tokens_total|replica_concurrency_limit|flow_shed_total|flow_wait_seconds_count|flow_wait_seconds_sum)\{/.test(l)) continue;
        const at = l.lastIndexOf(' ');
        out[l.slice(0, at)] = Number(l.slice(at + 1));
      }
      return out;
    },
    metricsText: metrics,
    replicaMetrics: async () => {
      const groups = (await (await fetch(`http://127.0.0.1:${serve.ports.metrics}/sd/replicas`)).json()) as Array<{ targets: string[]; labels: Record<string, string> }>;
      const probes: ReplicaMetricsProbe[] = [];
      for (const g of groups.filter((x) => x.labels.deployment === name)) {
        for (const address of g.targets) {
          const probe = await fetch(`http://${address}${g.labels.__metrics_path__ ?? '/metrics'}`, { signal: AbortSignal.timeout(2000) })
            .then(async (r) => ({ status: r.status, text: await r.text() }))
            .catch(() => ({ status: 0, text: '' }));
          probes.push({ replica: g.labels.replica ?? '?', address, status: probe.status, vllmSignals: probe.status === 200 && /^vllm:num_requests_running\{/m.test(probe.text) });
        }
      }
      return probes;
    },
  };
  // The gateway learns of ready replicas through the store: wait until it routes to all of them.
  for (let i = 0; i < 100 && (await target.routedReplicas()) !== replicas; i++) await sleep(100);
  return target;
}
