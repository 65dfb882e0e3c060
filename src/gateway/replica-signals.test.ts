import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseVllmMetrics, ReplicaSignalScraper } from './replica-signals.js';
import { DEFAULTS } from '../config/defaults.js';

const exposition = [
  '# HELP vllm:num_requests_running Number of requests in model execution batches.',
  '# TYPE vllm:num_requests_running gauge',
  'vllm:num_requests_running{model_name="a"} 3',
  'vllm:num_requests_running{model_name="b"} 2',
  'vllm:num_requests_waiting{model_name="a"} 4.0',
  'vllm:kv_cache_usage_perc{model_name="a"} 0.75',
  'vllm:cache_config_info{block_size="16",enable_prefix_caching="True",num_gpu_blocks="4096"} 1.0',
  'vllm:prefix_cache_hits_total{model_name="a"} 1234',
  'process_cpu_seconds_total 12',
].join('\n');

describe('parseVllmMetrics', () => {
  it('sums the running and waiting gauges over models and reads the KV usage and cache size', () => {
    expect(parseVllmMetrics(exposition)).toEqual({ signals: { running: 5, waiting: 4, kvUsage: 0.75 }, cacheTokens: 65_536 });
  });

  it('takes the older name of the KV usage gauge', () => {
    expect(parseVllmMetrics('vllm:gpu_cache_usage_perc 0.5\n')?.signals).toEqual({ running: null, waiting: null, kvUsage: 0.5 });
  });

  it('finds nothing in a replica that exposes no vLLM metrics', () => {
    expect(parseVllmMetrics('# TYPE http_requests_total counter\nhttp_requests_total 9\n')).toBeNull();
    expect(parseVllmMetrics('')).toBeNull();
  });
});

describe('ReplicaSignalScraper', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  async function replica(handler: http.RequestListener): Promise<string> {
    const server = http.createServer(handler);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return `127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('reads each replica, reports cache sizes, and lets signals age out', async () => {
    const good = await replica((req, res) => res.end(req.url === '/metrics' ? exposition : 'no'));
    const silent = await replica((_req, res) => res.end('not prometheus'));
    let now = 0;
    const sizes: Array<[number, number]> = [];
    const scraper = new ReplicaSignalScraper(
      () => [
        { id: 1, address: good },
        { id: 2, address: silent },
        { id: 3, address: '127.0.0.1:1' }, // nothing listens: no signals, no error
      ],
      (id, tokens) => sizes.push([id, tokens]),
      { intervalMs: 1000, timeoutMs: 500, freshMs: 3000 },
      () => now,
    );
    await scraper.scrapeAll();
    expect(scraper.signals(1)).toEqual({ running: 5, waiting: 4, kvUsage: 0.75 });
    expect(scraper.signals(2)).toBeNull();
    expect(scraper.signals(3)).toBeNull();
    expect(sizes).toEqual([[1, 65_536]]);
    now = 3001;
    expect(scraper.signals(1)).toBeNull();
  });

  it('reads the metrics port and path the spec names instead of /metrics on the serving address', async () => {
    const serving = await replica((_req, res) => res.end('an h2c port has no /metrics'));
    const metricsPort = await replica((req, res) => res.end(req.url === '/stats/prom' ? exposition : 'no'));
    const scraper = new ReplicaSignalScraper(() => [{ id: 1, address: serving, metrics: `http://${metricsPort}/stats/prom` }], () => undefined, DEFAULTS.gateway.scrape);
    await scraper.scrapeAll();
    expect(scraper.signals(1)).toEqual({ running: 5, waiting: 4, kvUsage: 0.75 });
  });

  it('forgets a replica that is no longer watched', async () => {
    const good = await replica((_req, res) => res.end(exposition));
    let watched = [{ id: 1, address: good }];
    const scraper = new ReplicaSignalScraper(() => watched, () => undefined, DEFAULTS.gateway.scrape);
    await scraper.scrapeAll();
    expect(scraper.signals(1)).not.toBeNull();
    watched = [];
    await scraper.scrapeAll();
    expect(scraper.signals(1)).toBeNull();
  });

  it('gives up on a replica that does not answer within the timeout', async () => {
    const slow = await replica(() => undefined); // never answers
    const scraper = new ReplicaSignalScraper(() => [{ id: 1, address: slow }], () => undefined, { intervalMs: 1000, timeoutMs: 100, freshMs: 3000 });
    const started = performance.now();
    await scraper.scrapeAll();
    expect(performance.now() - started).toBeLessThan(5000);
    expect(scraper.signals(1)).toBeNull();
  });
});
