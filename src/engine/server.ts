// Owns one engine process's HTTP server (node:http, no framework: the engine is a leaf and
// should cost the benchmark nothing): the route table of its flavor, the model's lifecycle
// (listening at once, loading, ready or failed), /metrics (or none, with --metrics false), and
// the drain on shutdown. The protocol details live in openai-api.ts, ollama-api.ts and nim-api.ts.

import { stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { sendJson, sendOpenAIError } from '../protocol/http-io.js';
import { EngineMetrics } from './metrics.js';
import { createKvWorker } from './kv-worker.js';
import { loadServedModel, type ModelStatus } from './model-loader.js';
import * as nim from './nim-api.js';
import * as ollama from './ollama-api.js';
import { handleChatCompletions, handleModels, modelCard, type ModelResolution, type OpenAIContext } from './openai-api.js';
import type { EngineOptions } from './options.js';
import { PrefillModel, PrefixCache } from './prefix-cache.js';
import { Scheduler } from './scheduler.js';

export interface EngineDeps {
  options: EngineOptions;
  log: Logger;
  env: NodeJS.ProcessEnv;
  /** The infergate release, reported by the nim flavor's /v1/version. */
  release: string;
}

export interface EngineAddress {
  port: number;
  metricsPort: number | null;
}

export interface Engine {
  /** Listens, logs the banner, and starts the model load without waiting for it. */
  start(): Promise<EngineAddress>;
  /** Settles when the start-up load has ended, however it ended (tests wait on it; the CLI does not). */
  readonly loaded: Promise<void>;
  /** Stops accepting, lets running work finish for up to shutdown-grace-ms, closes. */
  shutdown(signal: string): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void | Promise<void>;

/** Counts work outside the scheduler (ollama pulls) so the drain can wait for it. */
class WorkTracker {
  private open = 0;
  private waiters: Array<() => void> = [];
  begin(): () => void {
    this.open++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--this.open === 0) for (const w of this.waiters.splice(0)) w();
    };
  }
  idle(): Promise<void> {
    return this.open === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}

export function createEngine(deps: EngineDeps): Engine {
  const { options, log, env } = deps;
  const scheduler = new Scheduler(options, {
    onCallbackError: (err) => log.error({ err }, 'a response callback failed; its sequence was aborted'),
  });
  const work = new WorkTracker();
  const pulled = new ollama.OllamaModels();
  const startedAt = Math.floor(Date.now() / 1000);
  let status: ModelStatus = options.flavor === 'ollama' ? { state: 'ready' } : { state: 'loading' };
  let draining = false;
  const loadAbort = new AbortController();
  let markLoaded: () => void = () => undefined;
  const loaded = new Promise<void>((resolve) => (markLoaded = resolve));

  // Disaggregated serving (--kv-role prefill|decode): the KV transfer connector.
  const kvWorker = options.kv.role !== 'none' ? createKvWorker(options.kv, log) : null;

  const served = options.servedModel;
  const servedModels = (): string[] => (options.flavor === 'ollama' ? pulled.names() : [served]);
  // Prefix caching and prefill cost model the OpenAI-compatible API of one served model.
  const prefixCache = options.prefix.enabled && options.flavor !== 'ollama' ? new PrefixCache(options.prefix.blockSize, options.prefix.capacityTokens) : null;
  const prefill = prefixCache !== null || options.prefix.prefillMsPerToken > 0 ? new PrefillModel(prefixCache, options.prefix.prefillMsPerToken) : null;
  const metrics = new EngineMetrics({ flavor: options.flavor, models: servedModels, counts: () => scheduler.countsByModel(), prefixCache });

  const readiness = (): nim.Readiness => {
    if (status.state === 'ready') return { ready: true };
    if (status.state === 'failed') return { ready: false, why: status.why };
    return { ready: false, why: `model ${options.model} is loading` };
  };

  const resolveServed = (requested: string): ModelResolution => {
    if (status.state === 'loading') return { ok: false, status: 503, message: `model ${options.model} is still loading; retry when the engine is ready`, code: null };
    if (status.state === 'failed') return { ok: false, status: 503, message: `model ${options.model} is not loaded: ${status.why}`, code: null };
    // The served name or the model itself, as vLLM answers and as the orchestrated Frontend
    // (which forwards the model id) needs; answers and metrics say the served name.
    if (requested !== served && requested !== options.model) return { ok: false, status: 404, message: `The model \`${requested}\` does not exist.`, code: 'model_not_found' };
    return { ok: true, model: served, label: served };
  };

  const base = {
    scheduler,
    metrics,
    maxTokensDefault: options.maxTokensDefault,
    accepting: () => !draining,
  };
  const openai: OpenAIContext =
    options.flavor === 'ollama'
      ? { ...base, replicaId: options.replicaId, resolve: (m) => pulled.resolve(m), models: () => pulled.cards() }
      : { ...base, replicaId: options.replicaId, resolve: resolveServed, models: () => [modelCard(served, startedAt)], ...(kvWorker ? { kv: kvWorker.hook } : {}), ...(prefill ? { prefill } : {}) };
  const ollamaCtx: ollama.OllamaContext = {
    ...base,
    models: pulled,
    cacheDir: options.cacheDir,
    pullMs: options.pullMs,
    warmRatio: options.warmLoadRatio,
    log,
    beginWork: () => work.begin(),
  };

  const serveMetrics: Handler = async (_req, res) => {
    // A server that exports nothing answers as one would (404), not with an empty exposition,
    // which a scraper could read as "no running requests".
    if (!options.metrics) return notFound(res, 'this engine exports no metrics (--metrics false)');
    const { contentType, body } = await metrics.exposition();
    res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };

  // Route table: path → method → handler.
  const routes = new Map<string, Record<string, Handler>>();
  const on = (method: string, path: string, handler: Handler) => {
    routes.set(path, { ...routes.get(path), [method]: handler });
  };
  on('GET', '/metrics', serveMetrics);
  on('GET', '/v1/health/ready', (_req, res) => nim.handleReady(res, readiness()));
  if (options.flavor === 'ollama') {
    on('GET', '/', (_req, res) => ollama.handleRoot(res));
    on('HEAD', '/', (_req, res) => ollama.handleRoot(res));
    on('GET', '/api/version', (_req, res) => ollama.handleVersion(res));
    on('GET', '/api/tags', (_req, res) => ollama.handleTags(res, ollamaCtx));
    on('POST', '/api/pull', (req, res) => ollama.handlePull(req, res, ollamaCtx));
    on('POST', '/api/chat', (req, res) => ollama.handleChat(req, res, ollamaCtx));
  } else {
    // vLLM's /health: 200 once the engine can serve; here also 503 while the model loads.
    on('GET', '/health', (_req, res) => {
      if (status.state === 'ready') {
        res.writeHead(200, { 'content-length': 0 });
        res.end();
      } else sendJson(res, 503, { status: status.state === 'loading' ? 'loading' : 'failed' });
    });
    // `/` is the platform's default health check path: answer it the same way, saying what this is.
    on('GET', '/', (_req, res) =>
      sendJson(res, status.state === 'ready' ? 200 : 503, {
        engine: 'infergate reference engine',
        simulated: true,
        flavor: options.flavor,
        model: served,
        status: status.state,
      }),
    );
  }
  if (options.flavor === 'nim') {
    on('GET', '/v1/health/live', (_req, res) => nim.handleLive(res));
    on('GET', '/v1/metadata', (_req, res) => nim.handleMetadata(res, served, deps.release));
    on('GET', '/v1/version', (_req, res) => nim.handleVersion(res, deps.release));
    on('GET', '/v1/metrics', serveMetrics);
  }
  on('GET', '/v1/models', (_req, res) => handleModels(res, openai));
  on('POST', '/v1/chat/completions', (req, res) => handleChatCompletions(req, res, openai));

  const notFound = (res: http.ServerResponse, message: string, status = 404) => {
    if (options.flavor === 'ollama') sendJson(res, status, { error: message });
    else sendOpenAIError(res, status, message);
  };

  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    // One access line per inference call, as engines log them (health and metrics polls are not).
    if (req.method === 'POST') {
      const started = performance.now();
      res.once('close', () => log.info({ method: req.method, path, status: res.statusCode, ms: Math.round(performance.now() - started), completed: res.writableFinished }, `${req.method} ${path} ${res.statusCode}`));
    }
    const methods = routes.get(path);
    const method = req.method ?? 'GET';
    const handler = methods?.[method];
    if (!handler) {
      req.resume();
      if (methods) {
        res.setHeader('allow', Object.keys(methods).join(', '));
        return notFound(res, `method ${method} is not allowed on ${path}`, 405);
      }
      return notFound(res, `no route for ${method} ${path} on the ${options.flavor} flavor of the simulated engine`);
    }
    Promise.resolve()
      .then(() => handler(req, res))
      .catch((err: unknown) => {
        log.error({ err, method, path }, 'request failed');
        if (!res.headersSent) sendOpenAIError(res, 500, `internal error: ${(err as Error).message}`);
        else res.destroy();
      });
  });
  // Long streams are normal for an inference server; only the request headers are timed.
  server.requestTimeout = 0;

  let metricsServer: http.Server | null = null;
  if (options.metricsPort !== null && options.metrics) {
    metricsServer = http.createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method === 'GET' && path === '/metrics') {
        Promise.resolve(serveMetrics(req, res)).catch(() => res.destroy());
        return;
      }
      sendJson(res, 404, { error: 'the metrics listener serves GET /metrics only' });
    });
  }

  async function load(): Promise<void> {
    if (options.flavor === 'ollama') {
      log.info({ cache_dir: options.cacheDir }, 'ollama flavor: server is up; models come by POST /api/pull');
      return;
    }
    if (options.flavor === 'nim' && nim.registryKeyMissing(env)) {
      const why = 'REGISTRY_API_KEY is not set, so the model weights cannot be downloaded from the registry';
      status = { state: 'failed', why };
      log.error({ model: options.model }, `could not load model ${options.model}: ${why}; the engine stays live but never becomes ready`);
      return;
    }
    status = (await loadServedModel(options, log, loadAbort.signal)) ?? status;
  }

  async function logConfigFile(): Promise<void> {
    const file = env.INFERGATE_CONFIG_FILE;
    if (!file) return;
    try {
      const info = await stat(file);
      log.info({ config_file: file, bytes: info.size }, `config file mounted at ${file} (${info.size} bytes)`);
    } catch (err) {
      log.warn({ config_file: file }, `INFERGATE_CONFIG_FILE is ${file} but it cannot be read: ${(err as Error).message}`);
    }
  }

  return {
    loaded,
    async start() {
      const port = await listen(server, options.port, options.host);
      const metricsPort = metricsServer ? await listen(metricsServer, options.metricsPort ?? 0, options.host) : null;
      log.info(
        { simulated: true, options },
        `infergate reference engine: SIMULATED ${options.flavor} inference server, no GPU and no real model`,
      );
      log.info({ port, metrics_port: metricsPort }, `listening on http://${options.host}:${port}` + (metricsPort !== null ? ` (metrics also on port ${metricsPort})` : ''));
      if (!options.metrics) log.info(options.metricsPort !== null ? `--metrics false: no metrics exported; --metrics-port ${options.metricsPort} is not opened` : '--metrics false: no metrics exported (GET /metrics answers 404)');
      await logConfigFile();
      await kvWorker?.start(options.host).catch((err: Error) => {
        throw new EngineListenError(err.message);
      });
      void load().finally(markLoaded);
      return { port, metricsPort };
    },
    async shutdown(signal: string) {
      if (draining) return;
      draining = true;
      loadAbort.abort();
      log.info({ signal, running: scheduler.running, waiting: scheduler.waiting }, `${signal} received: no new requests; draining for up to ${options.shutdownGraceMs} ms`);
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      metricsServer?.close();
      server.closeIdleConnections();
      const drained = await Promise.race([
        Promise.all([scheduler.idle(), work.idle()]).then(() => true),
        sleep(options.shutdownGraceMs).then(() => false),
      ]);
      if (drained) log.info('drained: every running sequence finished');
      else log.warn({ running: scheduler.running, waiting: scheduler.waiting }, `grace period of ${options.shutdownGraceMs} ms over; closing with sequences still running`);
      // Give finished responses a moment to flush before the sockets go.
      server.closeIdleConnections();
      await Promise.race([serverClosed, sleep(drained ? 250 : 0)]);
      server.closeAllConnections();
      metricsServer?.closeAllConnections();
      await kvWorker?.close();
      log.info('engine stopped');
    },
  };
}

export class EngineListenError extends Error {
  override name = 'EngineListenError';
}

/** Binds an HTTP server; a port that cannot be bound is an EngineListenError. */
export function listen(server: http.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(new EngineListenError(`cannot listen on ${host}:${port}: ${err.message}`));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
