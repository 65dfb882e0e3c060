// Owns what the replicas of HTTP deployments say about themselves: once a second the
// gateway reads each one's Prometheus /metrics (vLLM's names, which the reference engine and
// vLLM-compatible servers expose) for its running and waiting sequences, its KV cache usage
// and its cache size — for prefix-aware routing and flow control, and for the autoscaler's
// queue_depth and kv_cache signals (through the load report), whatever the routing policy. A replica that exposes none of them, or does not answer within the
// timeout, simply has no signals: the policy then works from the gateway's own counts.
// Scrapes are plain HTTP on the replica's own address (or the metrics port its spec names), one at a time per replica, so a slow
// replica never accumulates them, and read at most MAX_METRICS_BYTES of each answer, so a large
// one never holds the gateway's memory.

import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { request } from 'undici';
import type { ReplicaSignals, SignalView } from '../balancer/prefix-aware.js';
import type { ReplicaRef } from '../balancer/selector.js';

/**
 * The most of one /metrics answer the gateway reads. vLLM's exposition is well under a MiB; a
 * replica runs the tenant's code, and reading whatever it sends (only the timeout bounded it)
 * let one answering 400 MiB once a second hold that much of the gateway's memory. Whatever
 * comes after the first MiB is not read at all: the connection is closed.
 */
export const MAX_METRICS_BYTES = 1024 * 1024;

/** How a replica (and its logs) tells the gateway's own scrapes from forwarded client requests. */
export const SCRAPER_USER_AGENT = 'infergate-gateway-scraper';

export interface ScrapeOptions {
  intervalMs: number;
  timeoutMs: number;
  /** Signals older than this are not trusted. */
  freshMs: number;
  /** Default MAX_METRICS_BYTES. */
  maxBytes?: number;
}


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

/** What was read of a body: its text, and whether it was cut at the limit. */
interface CappedText {
  text: string;
  truncated: boolean;
}

/**
 * At most `maxBytes` of `body`, then the body is destroyed, which closes the connection: the
 * rest is never read (draining it would cost the same as reading it). A cut text ends at its
 * last complete line, so a sample cut in the middle of its value (`… 12` of `… 1234`) is not
 * read as a smaller number. The cut is made on bytes: a newline byte is never inside a UTF-8
 * sequence.
 */
async function readCapped(body: Readable, maxBytes: number): Promise<CappedText> {
  const chunks: Buffer[] = [];
  let total = 0;
  let truncated = false;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (total + chunk.length > maxBytes) {
        chunks.push(chunk.subarray(0, maxBytes - total));
        truncated = true;
        break;
      }
      chunks.push(chunk);
      total += chunk.length;
    }
  } finally {
    if (truncated) body.destroy();
  }
  const read = Buffer.concat(chunks);
  if (!truncated) return { text: read.toString('utf8'), truncated };
  const lastLineEnd = read.lastIndexOf(0x0a);
  return { text: lastLineEnd < 0 ? '' : read.toString('utf8', 0, lastLineEnd), truncated };
}

interface Entry {
  at: number;
  signals: ReplicaSignals;
}

export class ReplicaSignalScraper implements SignalView {
  private readonly latest = new Map<number, Entry>();
  private readonly busy = new Set<number>();
  /** Replicas already reported as answering more than the limit: one warning each, not one a second. */
  private readonly oversized = new Set<number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    /** The replicas to watch now (those of prefix-aware deployments). */
    private readonly replicas: () => Iterable<ReplicaRef>,
    /** A replica told its cache size (tokens). */
    private readonly onCacheSize: (replicaId: number, tokens: number) => void,
    private readonly opts: ScrapeOptions,
    private readonly now: () => number = () => performance.now(),
    private readonly log: Pick<Logger, 'warn'> | null = null,
  ) {}

  signals(replicaId: number): ReplicaSignals | null {
    const e = this.latest.get(replicaId);
    if (!e || this.now() - e.at > this.opts.freshMs) return null;
    return e.signals;
  }

  /** The fresh signals of a replica with their age in ms (the load report dates them); null: none fresh. */
  reading(replicaId: number): { signals: ReplicaSignals; ageMs: number } | null {
    const e = this.latest.get(replicaId);
    if (!e) return null;
    const ageMs = this.now() - e.at;
    return ageMs > this.opts.freshMs ? null : { signals: e.signals, ageMs };
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
    for (const id of this.oversized) if (!watched.has(id)) this.oversized.delete(id);
    await Promise.all(rounds);
  }

  private async scrape(r: ReplicaRef): Promise<void> {
    this.busy.add(r.id);
    try {
      const res = await request(r.metrics ?? `http://${r.address}/metrics`, { headers: { 'user-agent': SCRAPER_USER_AGENT }, signal: AbortSignal.timeout(this.opts.timeoutMs) });
      if (res.statusCode !== 200) {
        await res.body.dump();
        return;
      }
      const maxBytes = this.opts.maxBytes ?? MAX_METRICS_BYTES;
      const { text, truncated } = await readCapped(res.body, maxBytes);
      if (truncated && !this.oversized.has(r.id)) {
        this.oversized.add(r.id);
        this.log?.warn(
          { replicaId: r.id, address: r.address, maxBytes },
          'replica /metrics answer is larger than the limit: only its first lines are read for prefix-aware routing',
        );
      }
      const found = parseVllmMetrics(text);
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
