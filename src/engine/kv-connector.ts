// Owns the reference engine's KV transfer connector on the wire: the store of KV blocks a
// prefill worker keeps for decode workers, the TCP block server that hands them out, and the
// client a decode worker pulls them with. Role logic (which request does what) is in
// kv-worker.ts; this module knows only engine ids, block ids and bytes.
//
// Wire format (one transfer per TCP connection, then both sides close):
//   request  (decode → prefill): one JSON line  {"engine_id": "...", "block_ids": [3, 4, 5]}\n
//   reply    (prefill → decode): one JSON line  {"ok": true, "blocks": 3, "bytes": 98304}\n
//                                followed by exactly `bytes` raw bytes (the blocks, in order);
//                                or {"ok": false, "error": "..."}\n and nothing more.
// The JSON header is the length prefix: a reader knows how many bytes must follow, so a
// connection that ends early is a short read, not a silent truncation.
//
// The KV cache is simulated, so the store keeps each block's size and id, not its bytes:
// deterministic filler is produced when the block is sent. A benchmark that keeps thousands
// of prefilled prompts waiting costs no memory for them. Blocks leave the store once sent or
// after their time to live (vLLM's prefill side frees un-pulled blocks after a timeout too).

import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';

export interface KvLayout {
  bytesPerToken: number;
  blockTokens: number;
}

/** Blocks and bytes a prompt of `promptTokens` tokens occupies (the last block may be partial). */
export function kvSize(promptTokens: number, layout: KvLayout): { blocks: number; bytes: number } {
  return { blocks: Math.ceil(promptTokens / layout.blockTokens), bytes: promptTokens * layout.bytesPerToken };
}

/** The deterministic filler of one block: a ramp offset by the block id. */
export function blockBytes(blockId: number, bytes: number): Buffer {
  const out = Buffer.allocUnsafe(bytes);
  const start = (blockId * 131) & 0xff;
  for (let i = 0; i < bytes; i++) out[i] = (start + i) & 0xff;
  return out;
}

export interface KeptBlocks {
  engineId: string;
  blockIds: number[];
}

type TakeResult = { ok: true; blocks: Array<{ id: number; bytes: number }> } | { ok: false; error: string };

/** The prefill side's kept blocks, under one engine id per process (as a vLLM engine has). */
export class KvBlockStore {
  readonly engineId: string;
  private nextId = 0;
  private readonly blocks = new Map<number, { bytes: number; expiresAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly layout: KvLayout,
    private readonly ttlMs = 60_000,
    private readonly now: () => number = Date.now,
    engineId: string = randomUUID(),
  ) {
    this.engineId = engineId;
    // Expired blocks are also refused on lookup; the sweep only bounds the map's size.
    this.sweeper = setInterval(() => this.sweep(), Math.min(ttlMs, 5_000));
    this.sweeper.unref();
  }

  get size(): number {
    return this.blocks.size;
  }

  /** Keeps the KV blocks of a prefilled prompt; returns the ids a decode worker asks for. */
  keep(promptTokens: number): KeptBlocks {
    const expiresAt = this.now() + this.ttlMs;
    const blockIds: number[] = [];
    for (let left = promptTokens; left > 0; left -= this.layout.blockTokens) {
      const id = this.nextId++;
      this.blocks.set(id, { bytes: Math.min(left, this.layout.blockTokens) * this.layout.bytesPerToken, expiresAt });
      blockIds.push(id);
    }
    return { engineId: this.engineId, blockIds };
  }

  /** Removes and returns the blocks, or none of them when any is unknown or expired. */
  take(engineId: string, blockIds: readonly number[]): TakeResult {
    if (engineId !== this.engineId) return { ok: false, error: `unknown engine id ${engineId} (this prefill worker is ${this.engineId})` };
    const now = this.now();
    const missing = blockIds.filter((id) => {
      const b = this.blocks.get(id);
      return !b || b.expiresAt <= now;
    });
    if (missing.length > 0) {
      const shown = missing.slice(0, 8).join(', ') + (missing.length > 8 ? `, … (${missing.length} in all)` : '');
      return { ok: false, error: `unknown or expired block ids [${shown}] (already transferred, or kept longer than ${this.ttlMs} ms)` };
    }
    const blocks = blockIds.map((id) => {
      const b = this.blocks.get(id) as { bytes: number };
      this.blocks.delete(id);
      return { id, bytes: b.bytes };
    });
    return { ok: true, blocks };
  }

  sweep(): void {
    const now = this.now();
    for (const [id, b] of this.blocks) if (b.expiresAt <= now) this.blocks.delete(id);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

/** One finished transfer, as both sides log it. */
export interface KvTransferStats {
  transport: 'tcp';
  blocks: number;
  bytes: number;
  ms: number;
  /** The other side: the decode worker's address (server) or the prefill worker's (client). */
  remote: string;
}

export function transferMessage(stats: KvTransferStats): string {
  return `kv transfer: tcp, ${stats.blocks} blocks, ${stats.bytes} bytes in ${stats.ms} ms`;
}

const MAX_LINE_BYTES = 1 << 20;
const SERVER_IDLE_MS = 10_000;

export interface KvServerHooks {
  onTransfer(stats: KvTransferStats & { engineId: string }): void;
  onRefused(remote: string, error: string): void;
}

/** The prefill worker's TCP block server. */
export class KvServer {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  constructor(
    private readonly store: KvBlockStore,
    private readonly hooks: KvServerHooks,
  ) {
    this.server = net.createServer((socket) => this.serve(socket));
  }

  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(new Error(`cannot listen for KV transfers on ${host}:${port}: ${err.message}`));
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        resolve((this.server.address() as net.AddressInfo).port);
      });
    });
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.setNoDelay(true);
    socket.setTimeout(SERVER_IDLE_MS, () => socket.destroy());
    socket.on('error', () => undefined); // a decode worker that goes away is its own problem
    const remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    readLine(socket, MAX_LINE_BYTES).then(
      ({ line }) => this.answer(socket, remote, line),
      (err: Error) => this.refuse(socket, remote, err.message),
    );
  }

  private async answer(socket: net.Socket, remote: string, line: string): Promise<void> {
    const started = performance.now();
    const request = parseRequest(line);
    if (typeof request === 'string') return this.refuse(socket, remote, request);
    const taken = this.store.take(request.engineId, request.blockIds);
    if (!taken.ok) return this.refuse(socket, remote, taken.error);
    const bytes = taken.blocks.reduce((sum, b) => sum + b.bytes, 0);
    socket.write(JSON.stringify({ ok: true, blocks: taken.blocks.length, bytes }) + '\n');
    for (const block of taken.blocks) {
      if (socket.destroyed) return;
      if (!socket.write(blockBytes(block.id, block.bytes))) await Promise.race([once(socket, 'drain'), once(socket, 'close')]);
    }
    if (socket.destroyed) return;
    socket.end(() =>
      this.hooks.onTransfer({ transport: 'tcp', blocks: taken.blocks.length, bytes, ms: Math.round(performance.now() - started), remote, engineId: request.engineId }),
    );
  }

  private refuse(socket: net.Socket, remote: string, error: string): void {
    this.hooks.onRefused(remote, error);
    if (!socket.destroyed) socket.end(JSON.stringify({ ok: false, error }) + '\n');
  }
}

function parseRequest(line: string): { engineId: string; blockIds: number[] } | string {
  let body: unknown;
  try {
    body = JSON.parse(line);
  } catch {
    return 'the request line is not JSON';
  }
  const r = body as { engine_id?: unknown; block_ids?: unknown } | null;
  if (!r || typeof r.engine_id !== 'string') return 'the request needs engine_id (a string)';
  if (!Array.isArray(r.block_ids) || !r.block_ids.every((id) => Number.isInteger(id) && (id as number) >= 0)) {
    return 'the request needs block_ids (an array of non-negative integers)';
  }
  return { engineId: r.engine_id, blockIds: r.block_ids as number[] };
}

/** Reads up to the first newline; `rest` is whatever came after it in the same chunks. */
function readLine(socket: net.Socket, max: number): Promise<{ line: string; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
    };
    const onData = (chunk: Buffer) => {
      const at = chunk.indexOf(0x0a);
      if (at < 0) {
        chunks.push(chunk);
        size += chunk.length;
        if (size > max) {
          cleanup();
          reject(new Error(`the header line is longer than ${max} bytes`));
        }
        return;
      }
      cleanup();
      // No more 'data' listeners: pause so nothing after the line is lost before the caller reads it.
      socket.pause();
      chunks.push(chunk.subarray(0, at));
      resolve({ line: Buffer.concat(chunks).toString('utf8'), rest: chunk.subarray(at + 1) });
    };
    const onEnd = () => {
      cleanup();
      reject(new Error('the connection closed before a complete header line'));
    };
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
  });
}

/** A transfer that did not deliver the blocks; the message names the remote and the cause. */
export class KvTransferError extends Error {
  override name = 'KvTransferError';
}

export interface PullRequest {
  host: string;
  port: number;
  engineId: string;
  blockIds: number[];
  /** The byte count the decode worker expects (its prompt × bytes per token); null: any. */
  expectBytes: number | null;
  /** Connect plus transfer; past it the transfer fails (default 10 s). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The decode worker's side: pulls the blocks and counts them (the simulated bytes are dropped). */
export function pullKvBlocks(req: PullRequest): Promise<KvTransferStats> {
  const remote = `${req.host}:${req.port}`;
  const timeoutMs = req.timeoutMs ?? 10_000;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let settled = false;
    const socket = net.connect({ host: req.host, port: req.port });
    const finish = (err: string | null, stats?: KvTransferStats) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      if (err !== null) reject(new KvTransferError(`KV transfer from prefill worker ${remote} failed: ${err}`));
      else resolve(stats as KvTransferStats);
    };
    const timer = setTimeout(() => finish(`timed out after ${timeoutMs} ms`), timeoutMs);
    const onAbort = () => finish('the request was cancelled');
    if (req.signal?.aborted) return onAbort();
    req.signal?.addEventListener('abort', onAbort, { once: true });
    socket.setNoDelay(true);
    // 'end' (a complete reply) comes before 'close'; a close without it is a cut connection.
    socket.once('close', () => finish('the connection closed unexpectedly'));
    socket.on('error', (err: NodeJS.ErrnoException) => finish(err.code === 'ECONNREFUSED' ? `connection refused (${err.message})` : err.message));
    socket.once('connect', () => {
      socket.write(JSON.stringify({ engine_id: req.engineId, block_ids: req.blockIds }) + '\n');
      readLine(socket, MAX_LINE_BYTES).then(
        ({ line, rest }) => {
          let header: { ok?: unknown; error?: unknown; bytes?: unknown; blocks?: unknown };
          try {
            header = JSON.parse(line) as typeof header;
          } catch {
            return finish('the reply header is not JSON');
          }
          if (header.ok !== true) return finish(typeof header.error === 'string' ? header.error : 'the prefill worker refused the transfer');
          if (typeof header.bytes !== 'number' || typeof header.blocks !== 'number') return finish('the reply header lacks bytes or blocks');
          const announced = header.bytes;
          const blocks = header.blocks;
          if (blocks !== req.blockIds.length) return finish(`asked for ${req.blockIds.length} blocks, the prefill worker announced ${blocks}`);
          if (req.expectBytes !== null && announced !== req.expectBytes) {
            return finish(`expected ${req.expectBytes} bytes for this prompt, the prefill worker announced ${announced} (do both sides use the same --kv-bytes-per-token?)`);
          }
          let received = rest.length;
          socket.on('data', (chunk: Buffer) => {
            received += chunk.length;
            if (received > announced) finish(`received more than the announced ${announced} bytes`);
          });
          socket.once('end', () => {
            if (received < announced) return finish(`short read: ${received} of ${announced} bytes before the connection closed`);
            finish(null, { transport: 'tcp', blocks, bytes: received, ms: Math.round(performance.now() - started), remote });
          });
          socket.resume();
        },
        (err: Error) => finish(err.message),
      );
    });
  });
}
