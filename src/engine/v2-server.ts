// Owns the engine's v2 flavor as a process-level server: KServe v2 / Open Inference Protocol
// over gRPC (insecure h2c) with Triton's ModelStreamInfer and grpc.health.v1 on the one port,
// the simulated model load (live at once, ready once loaded), inference through the same
// scheduler and metrics as the HTTP flavors, Prometheus text on --metrics-port only (without
// it there is no HTTP at all), and the drain on shutdown. Message parsing and building live in
// v2-api.ts; proto loading and message shapes in v2-proto.ts.

import * as grpc from '@grpc/grpc-js';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { startGeneration, type Generation } from './generation.js';
import { sendJson } from '../protocol/http-io.js';
import { EngineMetrics } from './metrics.js';
import { loadServedModel, type ModelStatus } from './model-loader.js';
import { EngineListenError, listen, type Engine, type EngineAddress, type EngineDeps } from './server.js';
import { Scheduler } from './scheduler.js';
import { countPromptTokens, generateCompletion, type MessageLike } from './text.js';
import { checkModel, inferResponse, modelMetadata, parseInferRequest, serverMetadata, streamError, V2Error, type InferInput } from '../protocol/v2-api.js';
import {
  INFERENCE_SERVICE,
  loadV2Services,
  type HealthCheckRequest,
  type HealthCheckResponse,
  type ModelInferRequestIn,
  type ModelInferResponseOut,
  type ModelMetadataResponse,
  type ModelStreamInferResponseOut,
  type NameVersionRequest,
  type ServerMetadataResponse,
  type ServingStatus,
} from '../protocol/v2-proto.js';
import { boolParam, int64Param, stringParam, type InferParameterOut } from '../protocol/v2-tensors.js';


/** Services the health service knows: the whole server ("") and the inference service. */
const HEALTH_SERVICES: readonly string[] = ['', INFERENCE_SERVICE];

/** Messages up to this size are accepted (grpc-js defaults to 4 MiB; prompts can be long). */
const MAX_RECEIVE_BYTES = 64 << 20;

interface Usage {
  promptTokens: number;
  completionTokens: number;
}

const codeName = (code: grpc.status): string => grpc.status[code] ?? String(code);

export function createV2Engine(deps: EngineDeps): Engine {
  const { options, log } = deps;
  const services = loadV2Services();
  const scheduler = new Scheduler(options, {
    onCallbackError: (err) => log.error({ err }, 'a response callback failed; its sequence was aborted'),
  });
  // Answers and metrics give the served name; a request may name it or the model itself.
  const served = options.servedModel;
  const named = (name: string): string => (name === options.model ? served : name);
  const metrics = new EngineMetrics({ flavor: options.flavor, models: () => [served], counts: () => scheduler.countsByModel() });
  let status: ModelStatus = { state: 'loading' };
  let draining = false;
  const loadAbort = new AbortController();
  let markLoaded: () => void = () => undefined;
  const loaded = new Promise<void>((resolve) => (markLoaded = resolve));

  // ---- health ----
  const serving = (): boolean => status.state === 'ready' && !draining;
  const watchers = new Set<() => void>();
  const watchCalls = new Set<grpc.ServerWritableStream<HealthCheckRequest, HealthCheckResponse>>();
  const healthChanged = () => {
    for (const w of watchers) w();
  };
  const healthOf = (service: string): ServingStatus | null => (HEALTH_SERVICES.includes(service) ? (serving() ? 'SERVING' : 'NOT_SERVING') : null);

  const check: grpc.handleUnaryCall<HealthCheckRequest, HealthCheckResponse> = (call, callback) => {
    const s = healthOf(call.request.service);
    if (s === null) callback({ code: grpc.status.NOT_FOUND, details: `unknown service '${call.request.service}'; known: '' (the server) and '${INFERENCE_SERVICE}'` });
    else callback(null, { status: s });
  };

  const watch: grpc.handleServerStreamingCall<HealthCheckRequest, HealthCheckResponse> = (call) => {
    const service = call.request.service;
    let last: ServingStatus = healthOf(service) ?? 'SERVICE_UNKNOWN';
    call.write({ status: last });
    watchCalls.add(call);
    const watcher = () => {
      const now = healthOf(service) ?? 'SERVICE_UNKNOWN';
      if (now === last || call.cancelled) return;
      last = now;
      call.write({ status: now });
    };
    watchers.add(watcher);
    const forget = () => {
      watchers.delete(watcher);
      watchCalls.delete(call);
    };
    call.on('cancelled', forget);
    call.on('close', forget);
  };

  // ---- inference ----

  /** UNAVAILABLE unless the model is loaded and the engine takes new work; NOT_FOUND for another model. */
  const admit = (req: { model_name: string; model_version: string }): void => {
    checkModel(served, named(req.model_name), req.model_version);
    if (draining) throw new V2Error(grpc.status.UNAVAILABLE, 'the engine is shutting down');
    if (status.state === 'loading') throw new V2Error(grpc.status.UNAVAILABLE, `model ${options.model} is still loading; retry when the server is ready`);
    if (status.state === 'failed') throw new V2Error(grpc.status.UNAVAILABLE, `model ${options.model} is not loaded: ${status.why}`);
  };

  const responseParams = (usage: Usage | null, extra: Record<string, InferParameterOut> = {}): Record<string, InferParameterOut> => ({
    ...extra,
    replica: stringParam(options.replicaId),
    ...(usage ? { completion_tokens: int64Param(usage.completionTokens), prompt_tokens: int64Param(usage.promptTokens) } : {}),
  });

  /** Plays one request through the scheduler: a token callback per step, then the usage. */
  const generate = (input: InferInput, on: { token(text: string, last: boolean, usage: Usage): void; finish(usage: Usage): void }): Generation => {
    const messages: MessageLike[] = [{ role: 'user', content: input.text }];
    const completion = generateCompletion(messages, 0, input.maxTokens ?? options.maxTokensDefault, input.ignoreEos);
    const usage: Usage = { promptTokens: countPromptTokens(messages), completionTokens: completion.tokens.length };
    return startGeneration(
      { scheduler, metrics },
      {
        model: served,
        completions: [completion],
        promptTokens: usage.promptTokens,
        onStep(step, deltas) {
          for (const d of deltas) on.token(d.text, step === completion.tokens.length - 1, usage);
        },
        onFinish: () => on.finish(usage),
      },
    );
  };

  const modelInfer: grpc.handleUnaryCall<ModelInferRequestIn, ModelInferResponseOut> = (call, callback) => {
    const started = performance.now();
    const req = call.request;
    const access = (code: grpc.status, extra: Record<string, unknown> = {}) =>
      log.info({ rpc: 'ModelInfer', id: req.id || undefined, code: codeName(code), ms: Math.round(performance.now() - started), ...extra }, `ModelInfer ${codeName(code)}`);
    let input: InferInput;
    try {
      admit(req);
      input = parseInferRequest(req);
    } catch (err) {
      if (!(err instanceof V2Error)) throw err;
      access(err.code);
      callback({ code: err.code, details: err.message });
      return;
    }
    let text = '';
    const generation = generate(input, {
      token: (t) => (text += t),
      finish(usage) {
        if (call.cancelled) return;
        access(grpc.status.OK, { completion_tokens: usage.completionTokens });
        callback(null, inferResponse({ model: served, id: input.id, text, raw: input.raw, parameters: responseParams(usage) }));
      },
    });
    call.on('cancelled', () => {
      if (generation.ended) return;
      generation.abort();
      access(grpc.status.CANCELLED);
      log.info({ rpc: 'ModelInfer', id: input.id || undefined }, 'ModelInfer cancelled by the client: its sequence was aborted and its slot freed');
    });
  };

  const modelStreamInfer: grpc.handleBidiStreamingCall<ModelInferRequestIn, ModelStreamInferResponseOut> = (call) => {
    const inflight = new Set<Generation>();
    let halfClosed = false;
    let cancelled = false;
    const maybeEnd = () => {
      if (halfClosed && inflight.size === 0 && !cancelled) call.end();
    };
    call.on('data', (req: ModelInferRequestIn) => {
      if (cancelled || call.cancelled) return;
      const started = performance.now();
      const access = (outcome: string, extra: Record<string, unknown> = {}) =>
        log.info({ rpc: 'ModelStreamInfer', id: req.id || undefined, outcome, ms: Math.round(performance.now() - started), ...extra }, `ModelStreamInfer request ${outcome}`);
      let input: InferInput;
      try {
        admit(req);
        input = parseInferRequest(req);
      } catch (err) {
        if (!(err instanceof V2Error)) throw err;
        // Triton's way: the request fails in error_message, the stream stays open.
        access(codeName(err.code));
        call.write(streamError(req.model_name, req.id, err.message));
        return;
      }
      const generation = generate(input, {
        token(text, last, usage) {
          if (cancelled || call.cancelled) return;
          const parameters = responseParams(last ? usage : null, { triton_final_response: boolParam(last) });
          call.write({ error_message: '', infer_response: inferResponse({ model: served, id: input.id, text, raw: input.raw, parameters }) });
        },
        finish(usage) {
          inflight.delete(generation);
          access('OK', { completion_tokens: usage.completionTokens });
          maybeEnd();
        },
      });
      inflight.add(generation);
    });
    call.on('end', () => {
      halfClosed = true;
      maybeEnd();
    });
    call.on('cancelled', () => {
      if (cancelled) return;
      cancelled = true;
      const aborted = inflight.size;
      for (const g of inflight) g.abort();
      inflight.clear();
      log.info({ rpc: 'ModelStreamInfer', aborted }, `ModelStreamInfer cancelled by the client: ${aborted} sequence(s) aborted, their slots freed`);
    });
    call.on('error', (err: Error) => log.debug({ err, rpc: 'ModelStreamInfer' }, 'stream error'));
  };

  const fail = <T>(callback: grpc.sendUnaryData<T>, fn: () => T) => {
    try {
      callback(null, fn());
    } catch (err) {
      if (!(err instanceof V2Error)) throw err;
      callback({ code: err.code, details: err.message });
    }
  };

  const inferenceImpl: grpc.UntypedServiceImplementation = {
    ServerLive: ((_call, callback) => callback(null, { live: true })) as grpc.handleUnaryCall<object, { live: boolean }>,
    ServerReady: ((_call, callback) => callback(null, { ready: serving() })) as grpc.handleUnaryCall<object, { ready: boolean }>,
    ModelReady: ((call, callback) =>
      fail(callback, () => {
        checkModel(served, named(call.request.name), call.request.version);
        return { ready: status.state === 'ready' };
      })) as grpc.handleUnaryCall<NameVersionRequest, { ready: boolean }>,
    ServerMetadata: ((_call, callback) => callback(null, serverMetadata(deps.release))) as grpc.handleUnaryCall<object, ServerMetadataResponse>,
    ModelMetadata: ((call, callback) =>
      fail(callback, () => {
        checkModel(served, named(call.request.name), call.request.version);
        return modelMetadata(served);
      })) as grpc.handleUnaryCall<NameVersionRequest, ModelMetadataResponse>,
    ModelInfer: modelInfer,
    ModelStreamInfer: modelStreamInfer,
  };

  const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_RECEIVE_BYTES });
  server.addService(services.inference, inferenceImpl);
  server.addService(services.health, { Check: check, Watch: watch });

  let metricsServer: http.Server | null = null;
  // --metrics false: no listener at all, as a Triton started with metrics off.
  if (options.metricsPort !== null && options.metrics) {
    metricsServer = http.createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method === 'GET' && path === '/metrics') {
        metrics.exposition().then(
          ({ contentType, body }) => {
            res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
            res.end(body);
          },
          () => res.destroy(),
        );
        return;
      }
      sendJson(res, 404, { error: 'the metrics listener serves GET /metrics only; inference is gRPC on the main port' });
    });
  }

  async function load(): Promise<void> {
    try {
      status = (await loadServedModel(options, log, loadAbort.signal)) ?? status;
    } finally {
      healthChanged();
    }
  }

  return {
    loaded,
    async start(): Promise<EngineAddress> {
      let metricsPort: number | null = null;
      metricsPort = metricsServer ? await listen(metricsServer, options.metricsPort ?? 0, options.host) : null;
      if (options.listen === 'after-load') {
        // Like Triton and vLLM, the port opens once the model is loaded: a TCP probe (the
        // platform's gRPC readiness check) then means the server can answer.
        log.info({ simulated: true, model: options.model }, `SIMULATED v2 engine: loading ${options.model} before opening the gRPC port`);
        await load().finally(markLoaded);
      }
      let port: number;
      try {
        port = await bind(server, options.host, options.port);
      } catch (err) {
        metricsServer?.close();
        throw err;
      }
      log.info(
        { simulated: true, options },
        `infergate reference engine: SIMULATED ${options.flavor} inference server (KServe v2 / Triton gRPC), no GPU and no real model`,
      );
      log.info(
        { port, metrics_port: metricsPort },
        `listening for gRPC (h2c) on ${options.host}:${port}` +
          (metricsPort !== null ? `; GET /metrics on http://${options.host}:${metricsPort}` : '; no HTTP listener (give --metrics-port for /metrics)'),
      );
      if (options.listen === 'at-start') void load().finally(markLoaded);
      return { port, metricsPort };
    },
    async shutdown(signal: string) {
      if (draining) return;
      draining = true;
      loadAbort.abort();
      healthChanged();
      log.info({ signal, running: scheduler.running, waiting: scheduler.waiting }, `${signal} received: no new requests; draining for up to ${options.shutdownGraceMs} ms`);
      const drained = await Promise.race([scheduler.idle().then(() => true), sleep(options.shutdownGraceMs).then(() => false)]);
      if (drained) log.info('drained: every running sequence finished');
      else log.warn({ running: scheduler.running, waiting: scheduler.waiting }, `grace period of ${options.shutdownGraceMs} ms over; closing with sequences still running`);
      for (const call of watchCalls) call.end();
      // Give finished responses a moment to flush; then cancel whatever is still open.
      await Promise.race([new Promise<void>((resolve) => server.tryShutdown(() => resolve())), sleep(drained ? 250 : 0)]);
      server.forceShutdown();
      metricsServer?.close();
      metricsServer?.closeAllConnections();
      log.info('engine stopped');
    },
  };
}

function bind(server: grpc.Server, host: string, port: number): Promise<number> {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => {
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, bound) => {
      if (err) reject(new EngineListenError(`cannot listen on ${host}:${port}: ${err.message}`));
      else resolve(bound);
    });
  });
}
