// Owns the Frontend's gRPC protocol (orchestrated gRPC deployments, spec: "expose the v2
// inference protocol (ModelInfer, ModelStreamInfer)"): a grpc-js server of
// inference.GRPCInferenceService on the Frontend's port that turns each call into a chat
// completion on the Frontend's own HTTP side (on loopback), so aggregated and disaggregated
// routing, KV transfer included, stay in one place. The BYTES input `text_input` becomes
// the user message, `max_tokens` and `ignore_eos` pass through; the answer comes back as
// `text_output` — whole for ModelInfer, one response per streamed delta for
// ModelStreamInfer, the last with Triton's `triton_final_response` true.

import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { request } from 'undici';
import { checkModel, inferResponse, modelMetadata, parseInferRequest, streamError, V2Error } from '../protocol/v2-api.js';
import { loadV2Services, type ModelInferRequestIn, type ModelStreamInferResponseOut, type NameVersionRequest } from '../protocol/v2-proto.js';
import { boolParam, int64Param, stringParam } from '../protocol/v2-tensors.js';

export interface GrpcFrontendOptions {
  host: string;
  port: number;
  /** The Frontend's HTTP side, on loopback. */
  httpPort: number;
  /** The name gRPC clients use (the alias, else the model id) and the model-hub id. */
  servedName: string;
  model: string;
  release: string;
  log: Logger;
}

/** HTTP answers of the chat side as gRPC statuses. */
function statusOf(httpStatus: number): grpc.status {
  if (httpStatus === 400) return grpc.status.INVALID_ARGUMENT;
  if (httpStatus === 404) return grpc.status.NOT_FOUND;
  if (httpStatus === 429) return grpc.status.RESOURCE_EXHAUSTED;
  if (httpStatus === 502 || httpStatus === 503) return grpc.status.UNAVAILABLE;
  return grpc.status.INTERNAL;
}

class ChatError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

export async function startGrpcFrontend(o: GrpcFrontendOptions): Promise<{ port: number; stop(): Promise<void> }> {
  const services = loadV2Services();
  const server = new grpc.Server();
  const chatUrl = `http://127.0.0.1:${o.httpPort}/v1/chat/completions`;
  const healthUrl = `http://127.0.0.1:${o.httpPort}/health`;
  const accepts = (name: string) => name === o.servedName || name === o.model;

  const healthy = async (): Promise<boolean> => {
    try {
      const res = await request(healthUrl);
      await res.body.dump();
      return res.statusCode === 200;
    } catch {
      return false;
    }
  };

  const chatBody = (text: string, maxTokens: number | null, ignoreEos: boolean, stream: boolean) => ({
    model: o.model,
    messages: [{ role: 'user', content: text }],
    ...(maxTokens !== null ? { max_tokens: maxTokens } : {}),
    ...(ignoreEos ? { ignore_eos: true } : {}),
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  });

  async function post(body: unknown, signal: AbortSignal) {
    const res = await request(chatUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal });
    if (res.statusCode !== 200) {
      const text = await res.body.text();
      let message = text;
      try {
        message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
      } catch {
        // not JSON: keep the text
      }
      throw new ChatError(statusOf(res.statusCode), message);
    }
    return res;
  }

  const fail = (err: unknown): grpc.ServiceError => {
    if (err instanceof V2Error) return Object.assign(new Error(err.message), { code: err.code, details: err.message, metadata: new grpc.Metadata() });
    if (err instanceof ChatError) return Object.assign(new Error(err.message), { code: err.code, details: err.message, metadata: new grpc.Metadata() });
    return Object.assign(new Error((err as Error).message), { code: grpc.status.INTERNAL, details: (err as Error).message, metadata: new grpc.Metadata() });
  };

  server.addService(services.inference, {
    ServerLive: (_c: unknown, cb: grpc.sendUnaryData<{ live: boolean }>) => cb(null, { live: true }),
    ServerReady: (_c: unknown, cb: grpc.sendUnaryData<{ ready: boolean }>) => void healthy().then((ready) => cb(null, { ready })),
    ModelReady: (call: grpc.ServerUnaryCall<NameVersionRequest, unknown>, cb: grpc.sendUnaryData<{ ready: boolean }>) =>
      void healthy().then((ready) => cb(null, { ready: ready && accepts(call.request.name) })),
    ServerMetadata: (_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { name: 'infergate-frontend', version: o.release, extensions: [] }),
    ModelMetadata: (call: grpc.ServerUnaryCall<NameVersionRequest, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      if (!accepts(call.request.name)) return cb(fail(new ChatError(grpc.status.NOT_FOUND, `model ${call.request.name} is not served here; it is ${o.servedName}`)));
      cb(null, { ...modelMetadata(o.servedName), platform: 'infergate_frontend' });
    },
    ModelInfer: (call: grpc.ServerUnaryCall<ModelInferRequestIn, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const aborted = new AbortController();
      call.on('cancelled', () => aborted.abort());
      (async () => {
        checkModel(accepts(call.request.model_name) ? call.request.model_name : o.servedName, call.request.model_name, call.request.model_version);
        const input = parseInferRequest(call.request);
        const res = await post(chatBody(input.text, input.maxTokens, input.ignoreEos, false), aborted.signal);
        const answer = (await res.body.json()) as { choices: { message: { content: string } }[]; usage?: { prompt_tokens: number; completion_tokens: number }; system_fingerprint?: string };
        return inferResponse({
          model: call.request.model_name,
          id: input.id,
          text: answer.choices[0]?.message.content ?? '',
          raw: input.raw,
          parameters: {
            replica: stringParam(answer.system_fingerprint ?? ''),
            prompt_tokens: int64Param(answer.usage?.prompt_tokens ?? 0),
            completion_tokens: int64Param(answer.usage?.completion_tokens ?? 0),
          },
        });
      })().then(
        (response) => cb(null, response),
        (err: unknown) => cb(fail(err)),
      );
    },
    ModelStreamInfer: (call: grpc.ServerDuplexStream<ModelInferRequestIn, ModelStreamInferResponseOut>) => {
      const aborted = new AbortController();
      let finished = false;
      call.on('cancelled', () => {
        if (!finished) aborted.abort();
      });
      let chain = Promise.resolve();
      call.on('data', (req: ModelInferRequestIn) => {
        chain = chain.then(() => streamOne(call, req, aborted.signal)).catch((err: unknown) => {
          if (!aborted.signal.aborted) call.write(streamError(req.model_name, req.id, (err as Error).message));
        });
      });
      call.on('end', () => {
        void chain.then(() => {
          finished = true;
          call.end();
        });
      });
    },
  });

  async function streamOne(call: grpc.ServerDuplexStream<ModelInferRequestIn, ModelStreamInferResponseOut>, req: ModelInferRequestIn, signal: AbortSignal): Promise<void> {
    if (!accepts(req.model_name)) throw new ChatError(grpc.status.NOT_FOUND, `model ${req.model_name} is not served here; it is ${o.servedName}`);
    const input = parseInferRequest(req);
    const res = await post(chatBody(input.text, input.maxTokens, input.ignoreEos, true), signal);
    let pending: { text: string; replica: string } | null = null;
    let usage: { prompt_tokens: number; completion_tokens: number } | null = null;
    const send = (text: string, replica: string, final: boolean) =>
      call.write({
        error_message: '',
        infer_response: inferResponse({
          model: req.model_name,
          id: input.id,
          text,
          raw: input.raw,
          parameters: {
            triton_final_response: boolParam(final),
            replica: stringParam(replica),
            ...(final && usage ? { prompt_tokens: int64Param(usage.prompt_tokens), completion_tokens: int64Param(usage.completion_tokens) } : {}),
          },
        }),
      });
    let buffer = '';
    for await (const chunk of res.body) {
      buffer += (chunk as Buffer).toString('utf8');
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) !== -1) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = event.split('\n').find((l) => l.startsWith('data: '))?.slice(6);
        if (data === undefined || data === '[DONE]') continue;
        const parsed = JSON.parse(data) as { choices: { delta: { content?: string } }[]; usage?: { prompt_tokens: number; completion_tokens: number } | null; system_fingerprint?: string; error?: { message: string } };
        if (parsed.error) throw new ChatError(grpc.status.INTERNAL, parsed.error.message);
        if (parsed.usage) usage = parsed.usage;
        const delta = parsed.choices[0]?.delta.content;
        if (delta === undefined || delta === '') continue;
        // One behind, so the last delta can carry the final flag.
        if (pending) send(pending.text, pending.replica, false);
        pending = { text: delta, replica: parsed.system_fingerprint ?? '' };
      }
    }
    send(pending?.text ?? '', pending?.replica ?? '', true);
  }

  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${o.host}:${o.port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
  o.log.info({ port, served_model_name: o.servedName }, `gRPC v2 inference protocol on ${o.host}:${port}, translated to chat completions on 127.0.0.1:${o.httpPort}`);
  return {
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000).unref();
      }),
  };
}
