// Owns the engine's Prometheus metrics, named and bucketed as vLLM's V1 engine exposes them
// on GET /metrics, so the gateway and autoscaler can be tested against the series they would
// scrape from a real replica. Its own Registry: nothing of the platform's leaks in. Every
// series carries model_name and engine="0". Running/waiting gauges are read from the
// scheduler at scrape time, so they can never drift from the truth.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PrefixCache } from './prefix-cache.js';
import type { FinishReason } from './text.js';

const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const E2E_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
const ENGINE = '0';

export interface MetricsSources {
  flavor: string;
  /** Models that always get a running/waiting series, even at 0 (the served or pulled ones). */
  models(): readonly string[];
  counts(): Map<string, { running: number; waiting: number }>;
  /** The prefix cache, when --enable-prefix-caching is on. */
  prefixCache?: PrefixCache | null;
}

export type EndReason = FinishReason | 'abort';

type Labels = 'model_name' | 'engine';

export class EngineMetrics {
  readonly registry = new Registry();
  private readonly promptTokensTotal: Counter<Labels>;
  private readonly generationTokensTotal: Counter<Labels>;
  private readonly requestSuccess: Counter<Labels | 'finished_reason'>;
  private readonly ttft: Histogram<Labels>;
  private readonly itl: Histogram<Labels>;
  private readonly e2e: Histogram<Labels>;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    const gaugeOf = (pick: (c: { running: number; waiting: number }) => number) =>
      function collect(this: Gauge<Labels>): void {
        this.reset();
        const counts = sources.counts();
        const names = new Set([...sources.models(), ...counts.keys()]);
        for (const model of names) {
          this.set({ model_name: model, engine: ENGINE }, pick(counts.get(model) ?? { running: 0, waiting: 0 }));
        }
      };
    new Gauge({
      name: 'vllm:num_requests_running',
      help: 'Number of requests in model execution batches.',
      labelNames: ['model_name', 'engine'],
      registers,
      collect: gaugeOf((c) => c.running),
    });
    new Gauge({
      name: 'vllm:num_requests_waiting',
      help: 'Number of requests waiting to be processed.',
      labelNames: ['model_name', 'engine'],
      registers,
      collect: gaugeOf((c) => c.waiting),
    });
    const simulated = new Gauge({
      name: 'infergate_engine_simulated',
      help: 'Always 1: this replica is the infergate reference engine, a simulator with no GPU and no real model.',
      labelNames: ['flavor'],
      registers,
    });
    simulated.set({ flavor: sources.flavor }, 1);
    this.prefixSeries(sources, registers);
    this.promptTokensTotal = new Counter({
      name: 'vllm:prompt_tokens_total',
      help: 'Number of prefill tokens processed.',
      labelNames: ['model_name', 'engine'],
      registers,
    });
    this.generationTokensTotal = new Counter({
      name: 'vllm:generation_tokens_total',
      help: 'Number of generation tokens processed.',
      labelNames: ['model_name', 'engine'],
      registers,
    });
    this.requestSuccess = new Counter({
      name: 'vllm:request_success_total',
      help: 'Count of finished requests (one per choice), by finish reason.',
      labelNames: ['model_name', 'engine', 'finished_reason'],
      registers,
    });
    this.ttft = new Histogram({
      name: 'vllm:time_to_first_token_seconds',
      help: 'Histogram of time to first token in seconds.',
      labelNames: ['model_name', 'engine'],
      buckets: TTFT_BUCKETS,
      registers,
    });
    this.itl = new Histogram({
      name: 'vllm:inter_token_latency_seconds',
      help: 'Histogram of inter-token latency in seconds.',
      labelNames: ['model_name', 'engine'],
      buckets: ITL_BUCKETS,
      registers,
    });
    this.e2e = new Histogram({
      name: 'vllm:e2e_request_latency_seconds',
      help: 'Histogram of end to end request latency in seconds.',
      labelNames: ['model_name', 'engine'],
      buckets: E2E_BUCKETS,
      registers,
    });
  }

  /** vLLM's KV cache and prefix cache series; usage 0 and no prefix counters without a cache. */
  private prefixSeries(sources: MetricsSources, registers: Registry[]): void {
    const cache = sources.prefixCache ?? null;
    const model = (): string => sources.models()[0] ?? '';
    new Gauge({
      name: 'vllm:kv_cache_usage_perc',
      help: 'KV-cache usage. 1 means 100 percent usage.',
      labelNames: ['model_name', 'engine'],
      registers,
      collect() {
        this.reset();
        this.set({ model_name: model(), engine: ENGINE }, cache?.usage() ?? 0);
      },
    });
    if (cache === null) return;
    const counterOf = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        labelNames: ['model_name', 'engine'],
        registers,
        collect() {
          this.reset();
          this.inc({ model_name: model(), engine: ENGINE }, read());
        },
      });
    counterOf('vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.', () => cache.stats.queries);
    counterOf('vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.', () => cache.stats.hits);
    const config = new Gauge({
      name: 'vllm:cache_config_info',
      help: 'Information of the LLMEngine CacheConfig.',
      labelNames: ['block_size', 'num_gpu_blocks', 'enable_prefix_caching'],
      registers,
    });
    config.set({ block_size: String(cache.blockSize), num_gpu_blocks: String(cache.capacityBlocks), enable_prefix_caching: 'True' }, 1);
  }

  promptTokens(model: string, n: number): void {
    if (n > 0) this.promptTokensTotal.inc({ model_name: model, engine: ENGINE }, n);
  }

  generationTokens(model: string, n: number): void {
    if (n > 0) this.generationTokensTotal.inc({ model_name: model, engine: ENGINE }, n);
  }

  finished(model: string, reason: EndReason, choices = 1): void {
    this.requestSuccess.inc({ model_name: model, engine: ENGINE, finished_reason: reason }, choices);
  }

  firstToken(model: string, seconds: number): void {
    this.ttft.observe({ model_name: model, engine: ENGINE }, seconds);
  }

  interToken(model: string, seconds: number): void {
    this.itl.observe({ model_name: model, engine: ENGINE }, seconds);
  }

  endToEnd(model: string, seconds: number): void {
    this.e2e.observe({ model_name: model, engine: ENGINE }, seconds);
  }

  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
