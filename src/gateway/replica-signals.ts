// Owns what the replicas of prefix-aware deployments say about themselves: once a second the
// gateway reads each one's Prometheus /metrics (vLLM's names, which the reference engine and
// vLLM-compatible servers expose) for its running and waiting sequences, its KV cache usage
// and its cache size. A replica that exposes none of them, or does not answer within the
// timeout, simply has no signals: the policy then works from the gateway's own counts.
// Scrapes are plain HTTP on the replica's own address, one at a time per replica, so a slow
// replica never accumulates them.

import { request } from 'undici';
import type { ReplicaSignals, SignalView } from '../balancer/prefix-aware.js';
import type { ReplicaRef } from '../balancer/selector.js';

export interface ScrapeOptions {
  intervalMs: number;
  timeoutMs: number;
  /** Signals older than this are not trusted. */
  freshMs: number;
}

export const DEFAULT_SCRAPE: ScrapeOptions = { intervalMs: 1000, timeoutMs: 500, freshMs: 3000 };

/** What a scrape found: the signals, and the KV cache size in tokens when the replica says. */
export interface ScrapedMetrics {
  signals: ReplicaSignals;
  cacheTokens: number | null;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * vLLM's gauges out of a Prometheus text exposition, summed over label sets (one per model).
 * `vllm:gpu_cache_usage_perc` is the older name of `vllm:kv_cache_usage_perc`.
 */
export function parseVllmMetrics(text: string): ScrapedMetrics | null {
  let running: number | null = null;
  let waiting: number | null = null;
  let kvUsage: number | null = null;
  let cacheTokens: number | null = null;
  const add = (a: number | null, v: number) => (a ?? 0) + v;
  for (const line of text.split('\n')) {
    if (!line.startsWith('vllm:')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    switch (m[1]) {
      case 'vllm:num_requests_running':
        running = add(running, value);
        break;
      case 'vllm:num_requests_waiting':
        waiting = add(waiting, value);
        break;
      case 'vllm:kv_cache_usage_perc':
      case 'vllm:gpu_cache_usage_perc':
        kvUsage = Math.max(kvUsage ?? 0, value);
        break;
      case 'vllm:cache_config_info': {
        const labels = new Map<string, string>();
        for (const l of (m[2] ?? '').matchAll(LABEL)) labels.set(l[1]!, l[2]!);
        const blocks = Number(labels.get('num_gpu_blocks'));
        const size = Number(labels.get('block_size'));
        if (Number.isFinite(blocks) && Number.isFinite(size) && blocks > 0 && size > 0) cacheTokens = blocks * size;
        break;
      }
    }
  }
  if (running === null && waiting === null && kvUsage === null) return null;
  return { signals: { running, waiting, kvUsage }, cacheTokens };
}

interface Entry {
  at: number;
  signals: ReplicaSignals;
}

export class ReplicaSignalScraper implements SignalView {
  private readonly latest = new Map<number, Entry>();
  private readonly busy = new Set<number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    /** The replicas to watch now (those of prefix-aware deployments). */
    private readonly replicas: () => Iterable<ReplicaRef>,
    /** A replica told its cache size (tokens). */
    private readonly onCacheSize: (replicaId: number, tokens: number) => void,
    private readonly opts: ScrapeOptions = DEFAULT_SCRAPE,
    private readonly now: () => number = () => performance.now(),
  ) {}

  signals(replicaId: number): ReplicaSignals | null {
    const e = this.latest.get(replicaId);
    if (!e || this.now() - e.at > this.opts.freshMs) return null;
    return e.signals;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.scrapeAll(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One round: every watched replica that is not still answering the last one. */
  async scrapeAll(): Promise<void> {
    const watched = new Set<number>();
    const rounds: Promise<void>[] = [];
    for (const r of this.replicas()) {
      watched.add(r.id);
      if (!this.busy.has(r.id)) rounds.push(this.scrape(r));
    }
    for (const id of this.latest.keys()) if (!watched.has(id)) this.latest.delete(id);
    await Promise.all(rounds);
  }

  private async scrape(r: ReplicaRef): Promise<void> {
    this.busy.add(r.id);
    try {
      const res = await request(`http://${r.address}/metrics`, { signal: AbortSignal.timeout(this.opts.timeoutMs) });
      if (res.statusCode !== 200) {
        await res.body.dump();
        return;
      }
      const found = parseVllmMetrics(await res.body.text());
      if (found === null) return;
      this.latest.set(r.id, { at: this.now(), signals: found.signals });
      if (found.cacheTokens !== null) this.onCacheSize(r.id, found.cacheTokens);
    } catch {
      // Unreachable or slow: its signals age out and the policy uses its own counts.
    } finally {
      this.busy.delete(r.id);
    }
  }
}
