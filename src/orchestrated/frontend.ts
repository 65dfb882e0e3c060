// Owns `infergate frontend`, the orchestrated runtime's CPU-only Frontend (docs/orchestrated.md): an
// OpenAI-compatible HTTP server (node:http; undici to the workers) in front of GPU workers
// listed in a workers file. Aggregated: each chat completion goes whole to the worker with the
// fewest in-flight requests, or (--routing-policy prefix-aware) to the one the prefix-aware
// policy finds cheapest for its prompt, X-Session-Id as a hint. Disaggregated: first to a prefill worker (max_tokens 1, not
// streamed, kv_transfer_params {"do_remote_decode": true}), then the original request with the
// kv_transfer_params of that reply to a decode worker, which pulls the KV blocks itself — the
// contract vLLM's disaggregated workers speak. Worker answers (SSE included) are streamed back
// untouched with backpressure; a client that leaves aborts the upstream call. One pino JSON
// line per request on stdout.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { pino, type Logger } from 'pino';
import { Agent, request, type Dispatcher } from 'undici';
import { BodyError, readJsonBody, sendJson, sendOpenAIError } from '../protocol/http-io.js';
import { FrontendOptionsError, type FrontendOptions } from './options.js';
import { PrefixAwareSelector, type PrefixRequest } from '../balancer/prefix-aware.js';
import { blockHashes, canonicalPrompt } from '../balancer/prompt-blocks.js';
import { rolesOf, WorkerPool, WorkersFileWatcher, type Lease, type Role, type WorkerLists } from './workers.js';

export const OWNED_BY = 'infergate-frontend';
const CHAT_PATH = '/v1/chat/completions';
/** Hop-by-hop headers are the connection's, not the answer's. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate', 'proxy-authorization']);

export interface Frontend {
  start(): Promise<number>;
  stop(): Promise<void>;
  /** The current pools (tests and logs). */
  pools(): Record<Role, readonly string[]>;
}

/** What one request used, for its log line. */
interface Trace {
  workers: Partial<Record<Role, string>>;
  stream: boolean;
  error?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A failure talking to a worker, before any byte went to the client. */
class UpstreamError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function createFrontend(options: FrontendOptions, log: Logger): Frontend {
  const policy = options.mode === 'aggregated' && options.routingPolicy === 'prefix-aware' ? new PrefixAwareSelector() : null;
  const pools: Record<Role, WorkerPool> = { workers: new WorkerPool('workers', policy), prefill: new WorkerPool('prefill'), decode: new WorkerPool('decode') };
  const roles = rolesOf(options.mode);
  const servedName = options.servedModelName ?? options.model;
  const createdAt = Math.floor(Date.now() / 1000);
  // Inference answers take as long as they take: no header or body timeout (a client that leaves
  // aborts instead); connecting to a dead worker fails fast.
  const agent = new Agent({ connect: { timeout: 5_000 }, headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 4_000 });

  const watcher = new WorkersFileWatcher(options.workersFile, options.mode, options.pollMs, {
    onChange(lists: WorkerLists) {
      for (const role of roles) pools[role].set(lists[role]);
      const counts = Object.fromEntries(roles.map((r) => [r, lists[r]]));
      log.info({ workers_file: options.workersFile, ...counts }, `workers: ${roles.map((r) => `${lists[r].length} ${r}`).join(', ')}`);
    },
    onProblem(message) {
      log.warn({ workers_file: options.workersFile }, message);
    },
  });

  /** Which roles have no worker; empty when the Frontend can serve. */
  const missing = (): Role[] => roles.filter((r) => pools[r].size === 0);

  function health(res: http.ServerResponse): void {
    const lacking = missing();
    const workers = Object.fromEntries(roles.map((r) => [r, pools[r].size]));
    if (lacking.length === 0) return sendJson(res, 200, { status: 'ok', mode: options.mode, workers });
    const what = lacking.map((r) => (r === 'workers' ? 'no worker' : `no ${r} worker`)).join(' and ');
    sendJson(res, 503, { status: 'unhealthy', mode: options.mode, workers, message: `${what} in ${options.workersFile}` });
  }

  function models(res: http.ServerResponse): void {
    sendJson(res, 200, {
      object: 'list',
      data: [{ id: servedName, object: 'model', created: createdAt, owned_by: OWNED_BY, root: options.model, parent: null }],
    });
  }

  const upstreamHeaders = (req: http.IncomingMessage): Record<string, string> => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    for (const name of ['authorization', 'x-request-id', 'accept']) {
      const v = req.headers[name];
      if (typeof v === 'string') headers[name] = v;
    }
    return headers;
  };

  async function call(lease: Lease, role: Role, req: http.IncomingMessage, body: unknown, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    try {
      return await request(lease.url + CHAT_PATH, { method: 'POST', headers: upstreamHeaders(req), body: JSON.stringify(body), signal, dispatcher: agent });
    } catch (err) {
      if (signal.aborted) throw err;
      const e = err as NodeJS.ErrnoException;
      const cause = e.code === 'ECONNREFUSED' ? 'connection refused' : e.message;
      throw new UpstreamError(502, `${role === 'workers' ? 'worker' : `${role} worker`} ${lease.address} is unreachable: ${cause}`);
    }
  }

  /** Streams a worker's answer back as is: status, headers and body, with backpressure. */
  async function relay(up: Dispatcher.ResponseData, res: http.ServerResponse, lease?: Lease): Promise<void> {
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(up.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    res.writeHead(up.statusCode, headers);
    res.flushHeaders();
    const done = pipeline(up.body, res);
    if (lease) up.body.once('data', () => lease.firstByte());
    await done;
  }

  /** What the prefix-aware policy reads of a request: its session hint and its prompt. */
  function prefixRequest(req: http.IncomingMessage, body: unknown): PrefixRequest {
    if (policy === null) return { session: null, blocks: null };
    const session = req.headers['x-session-id'];
    const text = canonicalPrompt(body);
    return { session: typeof session === 'string' && session !== '' ? session : null, blocks: text === null ? null : blockHashes(text) };
  }

  function pick(role: Role, request?: PrefixRequest): Lease {
    const lease = pools[role].pick(request);
    if (!lease) throw new UpstreamError(503, `no ${role === 'workers' ? '' : role + ' '}worker available (the workers file ${options.workersFile} lists none)`);
    return lease;
  }

  async function chat(req: http.IncomingMessage, res: http.ServerResponse, trace: Trace, signal: AbortSignal): Promise<void> {
    let body: unknown;
    try {
      body = await readJsonBody(req);
    } catch (err) {
      if (!(err instanceof BodyError)) throw err;
      return sendOpenAIError(res, err.status, err.message);
    }
    if (!isObject(body)) return sendOpenAIError(res, 400, 'the request body must be a JSON object');
    const requested = body.model;
    if (typeof requested !== 'string' || requested === '') return sendOpenAIError(res, 400, "'model' is required and must be a non-empty string", { param: 'model' });
    if (requested !== servedName && requested !== options.model) {
      return sendOpenAIError(res, 404, `The model \`${requested}\` does not exist.`, { param: 'model', code: 'model_not_found' });
    }
    trace.stream = body.stream === true;
    // Workers serve the model id; the alias is the Frontend's. Every other field goes on as
    // sent — stream_options too: the gateway asks streams for their usage event with it, and
    // reads (and removes) that event from the answer relayed back.
    const forward = { ...body, model: options.model };

    if (options.mode === 'aggregated') {
      const lease = pick('workers', prefixRequest(req, body));
      trace.workers.workers = lease.address;
      try {
        await relay(await call(lease, 'workers', req, forward, signal), res, lease);
      } finally {
        lease.release();
      }
      return;
    }

    // Disaggregated: both pools must have a worker before any work starts.
    const lacking = missing();
    if (lacking.length > 0) throw new UpstreamError(503, `no ${lacking.join(' and no ')} worker available (the workers file ${options.workersFile} lists none)`);
    const prefillBody: Record<string, unknown> = { ...forward, max_tokens: 1, stream: false, kv_transfer_params: { do_remote_decode: true } };
    delete prefillBody.stream_options;
    if (prefillBody.max_completion_tokens !== undefined) prefillBody.max_completion_tokens = 1;
    const prefill = pick('prefill');
    trace.workers.prefill = prefill.address;
    let kvParams: unknown;
    try {
      const up = await call(prefill, 'prefill', req, prefillBody, signal);
      const text = await up.body.text();
      if (up.statusCode !== 200) {
        // The worker's own error (bad request, unknown model, …) goes back as it said it.
        trace.error = `prefill worker answered ${up.statusCode}`;
        res.writeHead(up.statusCode, { 'content-type': up.headers['content-type'] ?? 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      try {
        kvParams = (JSON.parse(text) as Record<string, unknown>).kv_transfer_params;
      } catch {
        kvParams = undefined;
      }
    } finally {
      prefill.release();
    }
    if (!isObject(kvParams)) {
      throw new UpstreamError(502, `prefill worker ${prefill.address} answered without kv_transfer_params; is it a prefill worker with a KV transfer connector?`);
    }
    const decode = pick('decode');
    trace.workers.decode = decode.address;
    try {
      await relay(await call(decode, 'decode', req, { ...forward, kv_transfer_params: kvParams }, signal), res);
    } finally {
      decode.release();
    }
  }

  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    if (method === 'GET' && path === '/health') return health(res);
    if (method === 'GET' && path === '/v1/models') return models(res);
    if (method !== 'POST' || path !== CHAT_PATH) {
      req.resume();
      return sendOpenAIError(res, 404, `no route for ${method} ${path} on the infergate frontend`);
    }
    const started = performance.now();
    const trace: Trace = { workers: {}, stream: false };
    // A client that leaves (before its answer has ended) aborts the upstream calls.
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
      const ms = Math.round(performance.now() - started);
      const via = Object.entries(trace.workers)
        .map(([r, a]) => `${r === 'workers' ? '' : r + ' '}${a}`)
        .join(' → ');
      log.info(
        { method, path, ...trace.workers, stream: trace.stream, status: res.statusCode, ms, completed: res.writableFinished, error: trace.error },
        `${method} ${path} ${res.statusCode} ${options.mode}${via ? ` via ${via}` : ''} in ${ms} ms`,
      );
    });
    chat(req, res, trace, gone.signal).catch((err: unknown) => {
      if (gone.signal.aborted) return;
      const status = err instanceof UpstreamError ? err.status : 502;
      const message = err instanceof UpstreamError ? err.message : `upstream failed: ${(err as Error).message}`;
      trace.error = message;
      if (!res.headersSent) sendOpenAIError(res, status, message, status === 503 ? { headers: { 'retry-after': '1' } } : {});
      else res.destroy();
    });
  });
  server.requestTimeout = 0;

  return {
    pools: () => ({ workers: pools.workers.list(), prefill: pools.prefill.list(), decode: pools.decode.list() }),
    async start() {
      await watcher.start();
      const port = await new Promise<number>((resolve, reject) => {
        server.once('error', (err) => reject(new FrontendOptionsError(`cannot listen on ${options.host}:${options.port}: ${err.message}`)));
        server.listen(options.port, options.host, () => resolve((server.address() as AddressInfo).port));
      });
      log.info(
        { port, mode: options.mode, model: options.model, served_model_name: servedName, workers_file: options.workersFile },
        `infergate frontend (${options.mode}) listening on http://${options.host}:${port}, serving ${servedName}`,
      );
      return port;
    },
    async stop() {
      watcher.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await Promise.race([closed, new Promise((r) => setTimeout(r, 2_000))]);
      server.closeAllConnections();
      await agent.destroy();
    },
  };
}
