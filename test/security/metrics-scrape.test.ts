// The gateway's scrape of a replica's /metrics (prefix-aware routing) against a replica that
// answers 64 MiB of metrics: a real HTTP server on loopback streams it with backpressure and
// counts what it managed to write. The scraper must read about 1 MiB and close the connection
// (the server never finishes), still take the gauges of the first MiB and not the line the
// limit cuts through, keep no more than that in memory during or after the scrape, and warn
// once for the replica however many scrapes meet it.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import v8 from 'node:v8';
import vm from 'node:vm';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_METRICS_BYTES, ReplicaSignalScraper } from '../../src/gateway/replica-signals.js';

const MiB = 1024 * 1024;
const BODY_BYTES = 64 * MiB;

/** The gauges near the start: these must be found. */
const HEAD_LINES = 'vllm:num_requests_waiting{model_name="a"} 7\nvllm:num_requests_running{model_name="a"} 2\n';
/** Starts just before the limit so that the limit cuts it after its value's first digit. */
const STRADDLING_PREFIX = 'vllm:num_requests_waiting{model_name="b"} 1';
const STRADDLING_LINE = `${STRADDLING_PREFIX}000000\n`;

/** `length` bytes of comment lines (a parser skips them), each ending in a newline. */
function filler(length: number): string {
  let out = '';
  while (out.length < length) {
    const left = length - out.length;
    const line = left > 120 ? 100 : left;
    out += `#${'x'.repeat(line - 2)}\n`;
  }
  return out;
}

/**
 * The first MiB as the limit sees it: the gauges, comment lines, and a sample of another model
 * whose value the limit cuts (`… 1` of `… 1000000`): read as a number it would add 1 to `waiting`.
 */
function firstPart(maxBytes: number): Buffer {
  const before = HEAD_LINES + filler(maxBytes - HEAD_LINES.length - STRADDLING_PREFIX.length);
  const text = before + STRADDLING_LINE;
  expect(Buffer.byteLength(before + STRADDLING_PREFIX)).toBe(maxBytes);
  return Buffer.from(text);
}

interface Served {
  /** Bytes handed to the socket when the response ended or was closed. */
  written: number;
  /** Whether the whole body went out. */
  finished: boolean;
}

/** Gives V8's collector to the test, to compare what stays reachable before and after. */
function collector(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

/** A pino logger at warn level, and the lines it wrote. */
function capturedLog(): { log: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'warn' }, sink), lines };
}

function memory(): { arrayBuffers: number; heapUsed: number } {
  const m = process.memoryUsage();
  return { arrayBuffers: m.arrayBuffers, heapUsed: m.heapUsed };
}

describe('scraping a replica whose /metrics is huge', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  /** A replica that streams BODY_BYTES of metrics to every scrape, as fast as it is read. */
  async function hugeReplica(): Promise<{ address: string; served: Served[] }> {
    const head = firstPart(MAX_METRICS_BYTES);
    const pad = Buffer.from(filler(64 * 1024));
    const served: Served[] = [];
    const server = http.createServer((_req, res) => {
      const record: Served = { written: 0, finished: false };
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      const pump = (): void => {
        while (!res.destroyed && record.written < BODY_BYTES) {
          const chunk = record.written === 0 ? head : pad.subarray(0, Math.min(pad.length, BODY_BYTES - record.written));
          record.written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!res.destroyed) res.end();
      };
      res.on('finish', () => {
        record.finished = true;
      });
      res.on('close', () => served.push(record));
      pump();
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { address: `127.0.0.1:${(server.address() as AddressInfo).port}`, served };
  }

  it('reads about the limit, closes the connection, parses the first MiB, and keeps no big buffer', async () => {
    const gc = collector();
    const { address, served } = await hugeReplica();
    const { log, lines: warnings } = capturedLog();
    const scraper = new ReplicaSignalScraper(
      () => [{ id: 1, address }],
      () => undefined,
      // A timeout long enough to read all 64 MiB on loopback: only the byte limit may stop it.
      { intervalMs: 1000, timeoutMs: 20_000, freshMs: 60_000 },
      () => performance.now(),
      log,
    );

    gc();
    const before = memory();
    // The peak during the scrape, sampled while the body arrives (each chunk is an event-loop turn).
    let peakArrayBuffers = before.arrayBuffers;
    const sampler = setInterval(() => {
      peakArrayBuffers = Math.max(peakArrayBuffers, process.memoryUsage().arrayBuffers);
    }, 1);
    try {
      await scraper.scrapeAll();
    } finally {
      clearInterval(sampler);
    }

    expect(scraper.signals(1)).toEqual({ running: 2, waiting: 7, kvUsage: null });
    // The server learns of the closed connection when its next write fails or the FIN arrives.
    await expect.poll(() => served.length).toBe(1);
    const [first] = served;
    expect(first!.finished).toBe(false);
    // The limit plus what the loopback socket buffers (a few MiB) held: nowhere near 64 MiB.
    expect(first!.written).toBeLessThan(24 * MiB);
    expect(peakArrayBuffers - before.arrayBuffers).toBeLessThan(16 * MiB);

    gc();
    const after = memory();
    expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(8 * MiB);
    expect(after.heapUsed - before.heapUsed).toBeLessThan(16 * MiB);

    // Later scrapes meet the same answer; the replica is named once.
    await scraper.scrapeAll();
    await scraper.scrapeAll();
    await expect.poll(() => served.length).toBe(3);
    expect(served.every((s) => !s.finished)).toBe(true);
    expect(scraper.signals(1)).toEqual({ running: 2, waiting: 7, kvUsage: null });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, replicaId: 1, address, maxBytes: MAX_METRICS_BYTES });
  });

  it('reads an answer within the limit whole, with no warning', async () => {
    const body = `${HEAD_LINES}${filler(MAX_METRICS_BYTES - HEAD_LINES.length - 64)}vllm:kv_cache_usage_perc{model_name="a"} 0.5`;
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_METRICS_BYTES);
    const server = http.createServer((_req, res) => res.end(body));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { log, lines: warned } = capturedLog();
    const scraper = new ReplicaSignalScraper(
      () => [{ id: 1, address }],
      () => undefined,
      { intervalMs: 1000, timeoutMs: 5_000, freshMs: 60_000 },
      () => performance.now(),
      log,
    );
    await scraper.scrapeAll();
    // The last line has no newline and was not cut: it counts.
    expect(scraper.signals(1)).toEqual({ running: 2, waiting: 7, kvUsage: 0.5 });
    expect(warned).toEqual([]);
  });
});
