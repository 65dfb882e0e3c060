// Owns the engine's role in disaggregated serving (--kv-role prefill|decode): what a chat
// completion's `kv_transfer_params` asks of this worker, in the shape vLLM's NixlConnector
// speaks (docs/orchestrated.md). Prefill: a request with {"do_remote_decode": true} keeps its prompt's KV
// blocks and its reply names them (remote_engine_id, remote_block_ids, remote_host,
// remote_port). Decode: a request naming remote blocks pulls them over TCP before it is
// scheduled, and then skips its own prefill. Both sides log one line per transfer with the
// transport and KV metrics. The wire itself is in kv-connector.ts.

import type { Logger } from 'pino';
import { KvBlockStore, KvServer, KvTransferError, kvSize, pullKvBlocks, transferMessage } from './kv-connector.js';
import type { KvOptions } from './options.js';

/** What the connector decided for one request, before any byte of the reply. */
export type KvPlan =
  | {
      ok: true;
      /** The KV cache came from a prefill worker: the first token costs one itl, not ttft. */
      skipPrefill: boolean;
      /** Prefill only: keeps the blocks once the prompt is prefilled; the reply's kv_transfer_params. */
      keep: (() => Record<string, unknown>) | null;
    }
  | { ok: false; status: number; message: string; code: string | null };

export interface KvHook {
  prepare(params: Record<string, unknown>, req: { promptTokens: number; stream: boolean; signal: AbortSignal }): Promise<KvPlan>;
}

export interface KvWorker {
  hook: KvHook;
  /** Prefill: starts the block server and returns its port; decode: null. */
  start(listenHost: string): Promise<number | null>;
  close(): Promise<void>;
}

const NOTHING: KvPlan = { ok: true, skipPrefill: false, keep: null };
const bad = (message: string): KvPlan => ({ ok: false, status: 400, message, code: null });

export function createKvWorker(options: KvOptions, log: Logger, pullTimeoutMs = 10_000): KvWorker {
  const layout = { bytesPerToken: options.bytesPerToken, blockTokens: options.blockTokens };
  const store = options.role === 'prefill' ? new KvBlockStore(layout) : null;
  let kvPort: number | null = null;
  const server = store
    ? new KvServer(store, {
        onTransfer: (stats) => log.info({ kv_role: 'prefill', direction: 'send', engine_id: stats.engineId, ...stats }, transferMessage(stats)),
        onRefused: (remote, error) => log.warn({ kv_role: 'prefill', transport: 'tcp', remote }, `kv transfer refused: ${error}`),
      })
    : null;

  const asksPrefill = (p: Record<string, unknown>) => p.do_remote_decode === true;
  const asksDecode = (p: Record<string, unknown>) => p.do_remote_prefill === true || (p.remote_engine_id !== undefined && p.remote_engine_id !== null);

  async function prefill(p: Record<string, unknown>, req: { promptTokens: number; stream: boolean }): Promise<KvPlan> {
    if (asksDecode(p)) return bad('kv_transfer_params names remote KV blocks, but this is a prefill worker (--kv-role prefill); send it to a decode worker');
    if (!asksPrefill(p)) return NOTHING;
    if (req.stream) return bad("kv_transfer_params.do_remote_decode needs 'stream': false (the reply carries the KV transfer parameters)");
    return {
      ok: true,
      skipPrefill: false,
      keep: () => {
        const kept = (store as KvBlockStore).keep(req.promptTokens);
        return {
          do_remote_prefill: true,
          do_remote_decode: false,
          remote_engine_id: kept.engineId,
          remote_block_ids: kept.blockIds,
          remote_host: options.host,
          remote_port: kvPort,
        };
      },
    };
  }

  async function decode(p: Record<string, unknown>, req: { promptTokens: number; signal: AbortSignal }): Promise<KvPlan> {
    if (asksPrefill(p)) return bad('kv_transfer_params asks for do_remote_decode, but this is a decode worker (--kv-role decode); send it to a prefill worker');
    if (!asksDecode(p)) return NOTHING;
    const { remote_engine_id: engineId, remote_block_ids: blockIds, remote_host: host, remote_port: port } = p;
    if (typeof engineId !== 'string' || engineId === '') return bad("kv_transfer_params.remote_engine_id must be a non-empty string");
    if (!Array.isArray(blockIds) || !blockIds.every((b) => Number.isInteger(b) && (b as number) >= 0)) {
      return bad('kv_transfer_params.remote_block_ids must be an array of non-negative integers');
    }
    if (typeof host !== 'string' || host === '') return bad('kv_transfer_params.remote_host must be a non-empty string');
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return bad('kv_transfer_params.remote_port must be a port number');
    try {
      const stats = await pullKvBlocks({
        host,
        port,
        engineId,
        blockIds: blockIds as number[],
        expectBytes: kvSize(req.promptTokens, layout).bytes,
        timeoutMs: pullTimeoutMs,
        signal: req.signal,
      });
      log.info({ kv_role: 'decode', direction: 'receive', engine_id: engineId, ...stats }, transferMessage(stats));
      return { ok: true, skipPrefill: true, keep: null };
    } catch (err) {
      if (!(err instanceof KvTransferError)) throw err;
      log.warn({ kv_role: 'decode', transport: 'tcp', remote: `${host}:${port}`, engine_id: engineId }, err.message);
      return { ok: false, status: 502, message: err.message, code: 'kv_transfer_failed' };
    }
  }

  return {
    hook: {
      prepare(params, req) {
        if (options.role === 'prefill') return prefill(params, req);
        if (options.role === 'decode') return decode(params, req);
        return Promise.resolve(NOTHING);
      },
    },
    async start(listenHost) {
      if (options.role === 'decode') {
        log.info({ kv_role: 'decode', transport: 'tcp', bytes_per_token: options.bytesPerToken, block_tokens: options.blockTokens }, 'kv connector: decode role, pulls KV blocks from prefill workers over tcp');
      }
      if (!server) return null;
      kvPort = await server.listen(options.port, listenHost);
      log.info(
        { kv_role: 'prefill', transport: 'tcp', kv_port: kvPort, kv_host: options.host, bytes_per_token: options.bytesPerToken, block_tokens: options.blockTokens },
        `kv connector: prefill role, tcp KV block server on ${listenHost}:${kvPort}, advertised as ${options.host}:${kvPort}`,
      );
      return kvPort;
    },
    async close() {
      store?.close();
      await server?.close();
    },
  };
}
