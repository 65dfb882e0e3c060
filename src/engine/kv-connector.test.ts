// KV transfer connector over real loopback TCP: a pull that delivers every byte, blocks that
// leave the store once sent, unknown engine and block ids, a refused connection, a server that
// never answers (timeout), a short read, and the block store's expiry.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { KvBlockStore, KvServer, KvTransferError, kvSize, pullKvBlocks, type KvTransferStats } from './kv-connector.js';

const layout = { bytesPerToken: 64, blockTokens: 16 };
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function prefillServer(store = new KvBlockStore(layout)) {
  const sent: Array<KvTransferStats & { engineId: string }> = [];
  const refused: string[] = [];
  const server = new KvServer(store, { onTransfer: (s) => sent.push(s), onRefused: (_r, e) => refused.push(e) });
  const port = await server.listen(0, '127.0.0.1');
  cleanups.push(() => server.close(), () => store.close());
  return { store, port, sent, refused };
}

/** A TCP server that does whatever `onSocket` says with each connection. */
async function rawServer(onSocket: (s: net.Socket) => void): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    onSocket(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return (server.address() as net.AddressInfo).port;
}

async function failure(p: Promise<unknown>): Promise<Error> {
  const err = await p.then(
    () => null,
    (e: unknown) => e as Error,
  );
  expect(err).toBeInstanceOf(KvTransferError);
  return err as Error;
}

describe('KV transfer over TCP', () => {
  it('pulls every block of a prompt and counts its bytes; the blocks leave the store', async () => {
    const { store, port, sent } = await prefillServer();
    const kept = store.keep(40); // 16 + 16 + 8 tokens
    expect(kept.blockIds).toHaveLength(3);
    const expected = kvSize(40, layout);
    expect(expected).toEqual({ blocks: 3, bytes: 40 * 64 });
    const stats = await pullKvBlocks({ host: '127.0.0.1', port, engineId: kept.engineId, blockIds: kept.blockIds, expectBytes: expected.bytes });
    expect(stats).toMatchObject({ transport: 'tcp', blocks: 3, bytes: 2560, remote: `127.0.0.1:${port}` });
    expect(stats.ms).toBeGreaterThanOrEqual(0);
    await expect.poll(() => sent.length).toBe(1);
    expect(sent[0]).toMatchObject({ transport: 'tcp', blocks: 3, bytes: 2560, engineId: kept.engineId });
    expect(store.size).toBe(0);

    // Transferred once: a second pull of the same blocks is refused.
    const again = await failure(pullKvBlocks({ host: '127.0.0.1', port, engineId: kept.engineId, blockIds: kept.blockIds, expectBytes: null }));
    expect(again.message).toMatch(new RegExp(`prefill worker 127\\.0\\.0\\.1:${port} failed: unknown or expired block ids \\[0, 1, 2\\]`));
  });

  it('moves megabytes with backpressure', async () => {
    const big = { bytesPerToken: 4096, blockTokens: 16 };
    const { store, port } = await prefillServer(new KvBlockStore(big));
    const kept = store.keep(2000);
    const stats = await pullKvBlocks({ host: '127.0.0.1', port, engineId: kept.engineId, blockIds: kept.blockIds, expectBytes: 2000 * 4096 });
    expect(stats).toMatchObject({ blocks: 125, bytes: 2000 * 4096 });
  });

  it('refuses unknown block ids and an unknown engine id, keeping the blocks', async () => {
    const { store, port, refused } = await prefillServer();
    const kept = store.keep(20);
    const unknownBlocks = await failure(pullKvBlocks({ host: '127.0.0.1', port, engineId: kept.engineId, blockIds: [...kept.blockIds, 999], expectBytes: null }));
    expect(unknownBlocks.message).toContain('unknown or expired block ids [999]');
    const unknownEngine = await failure(pullKvBlocks({ host: '127.0.0.1', port, engineId: 'nope', blockIds: kept.blockIds, expectBytes: null }));
    expect(unknownEngine.message).toContain('unknown engine id nope');
    expect(refused).toHaveLength(2);
    expect(store.size).toBe(2);
  });

  it('fails on a byte count that does not match the prompt', async () => {
    const { store, port } = await prefillServer();
    const kept = store.keep(20);
    const err = await failure(pullKvBlocks({ host: '127.0.0.1', port, engineId: kept.engineId, blockIds: kept.blockIds, expectBytes: 21 * 64 }));
    expect(err.message).toMatch(/expected 1344 bytes for this prompt, the prefill worker announced 1280/);
  });

  it('fails fast on a refused connection, naming the remote', async () => {
    const dead = await rawServer((s) => s.destroy());
    // Close it again so the port refuses.
    await cleanups.pop()?.();
    const started = Date.now();
    const err = await failure(pullKvBlocks({ host: '127.0.0.1', port: dead, engineId: 'e', blockIds: [0], expectBytes: null }));
    expect(err.message).toMatch(new RegExp(`KV transfer from prefill worker 127\\.0\\.0\\.1:${dead} failed: connection refused`));
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('times out on a server that never answers', async () => {
    const port = await rawServer(() => undefined);
    const err = await failure(pullKvBlocks({ host: '127.0.0.1', port, engineId: 'e', blockIds: [0], expectBytes: null, timeoutMs: 200 }));
    expect(err.message).toMatch(/failed: timed out after 200 ms/);
  });

  it('reports a short read', async () => {
    const port = await rawServer((s) => {
      s.once('data', () => s.end(JSON.stringify({ ok: true, blocks: 1, bytes: 1000 }) + '\n' + 'x'.repeat(10)));
    });
    const err = await failure(pullKvBlocks({ host: '127.0.0.1', port, engineId: 'e', blockIds: [0], expectBytes: null }));
    expect(err.message).toMatch(/short read: 10 of 1000 bytes/);
  });

  it('cancels a pull when its signal aborts', async () => {
    const port = await rawServer(() => undefined);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const err = await failure(pullKvBlocks({ host: '127.0.0.1', port, engineId: 'e', blockIds: [0], expectBytes: null, signal: ac.signal }));
    expect(err.message).toMatch(/cancelled/);
  });
});

describe('KvBlockStore', () => {
  it('splits a prompt into blocks and expires them after the time to live', () => {
    let now = 1_000;
    const store = new KvBlockStore(layout, 60_000, () => now, 'engine-1');
    cleanups.push(() => store.close());
    const kept = store.keep(33);
    expect(kept).toEqual({ engineId: 'engine-1', blockIds: [0, 1, 2] });
    now += 60_000;
    expect(store.take('engine-1', kept.blockIds)).toMatchObject({ ok: false, error: expect.stringMatching(/unknown or expired/) });
    store.sweep();
    expect(store.size).toBe(0);
  });
});
