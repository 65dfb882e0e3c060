// `infergate engine --flavor v2` as a real child process, driven by a grpc-js client built with
// @grpc/proto-loader from proto/inference.proto and proto/health.proto (the files clients
// get): live at once, ready and SERVING only after the simulated load, server and model
// metadata, ModelInfer with bytes_contents and with raw_input_contents, max_tokens, NOT_FOUND
// and UNAVAILABLE, ModelStreamInfer's per-token responses with triton_final_response, a
// client cancel freeing the scheduler slot (seen on --metrics-port), and SIGTERM.
// Every child is killed by pid in afterAll.

import { killChildren } from './helpers/child-process.js';
import { waitFor } from './helpers/wait.js';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCompletion } from '../src/engine/text.js';
import { decodeBytesTensor, encodeBytesTensor } from '../src/protocol/v2-tensors.js';
import { freePort } from './helpers/ports.js';
import { spawnCli } from './helpers/serve-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LOADER: protoLoader.Options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

// ---- the client side, typed as proto-loader presents messages ----

interface InferParameter {
  parameter_choice?: string;
  bool_param?: boolean;
  int64_param?: string;
  string_param?: string;
}
type ParameterIn = { bool_param: boolean } | { int64_param: string } | { string_param: string };
interface InferRequest {
  model_name: string;
  model_version?: string;
  id?: string;
  parameters?: Record<string, ParameterIn>;
  inputs: Array<{ name: string; datatype: string; shape: number[]; contents?: { bytes_contents: Buffer[] } }>;
  raw_input_contents?: Buffer[];
}
interface OutputTensor {
  name: string;
  datatype: string;
  shape: string[];
  contents: { bytes_contents: Buffer[] } | null;
}
interface InferResponse {
  model_name: string;
  model_version: string;
  id: string;
  parameters: Record<string, InferParameter>;
  outputs: OutputTensor[];
  raw_output_contents: Buffer[];
}
interface StreamResponse {
  error_message: string;
  infer_response: InferResponse | null;
}
interface TensorMetadata {
  name: string;
  datatype: string;
  shape: string[];
}

type Callback<Res> = (err: grpc.ServiceError | null, res?: Res) => void;
type Unary<Req, Res> = (req: Req, options: grpc.CallOptions, cb: Callback<Res>) => grpc.ClientUnaryCall;

interface InferenceClient extends grpc.Client {
  ServerLive: Unary<object, { live: boolean }>;
  ServerReady: Unary<object, { ready: boolean }>;
  ModelReady: Unary<{ name: string; version?: string }, { ready: boolean }>;
  ServerMetadata: Unary<object, { name: string; version: string; extensions: string[] }>;
  ModelMetadata: Unary<{ name: string; version?: string }, { name: string; versions: string[]; platform: string; inputs: TensorMetadata[]; outputs: TensorMetadata[] }>;
  ModelInfer: Unary<InferRequest, InferResponse>;
  ModelStreamInfer(options?: grpc.CallOptions): grpc.ClientDuplexStream<InferRequest, StreamResponse>;
}
interface HealthClient extends grpc.Client {
  Check: Unary<{ service: string }, { status: string }>;
  Watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }>;
}

function serviceConstructor(file: string, pkg: string[], name: string): grpc.ServiceClientConstructor {
  let node: grpc.GrpcObject = grpc.loadPackageDefinition(protoLoader.loadSync(path.join(ROOT, 'proto', file), LOADER));
  for (const part of pkg) node = node[part] as grpc.GrpcObject;
  return node[name] as grpc.ServiceClientConstructor;
}
const InferenceService = serviceConstructor('inference.proto', ['inference'], 'GRPCInferenceService');
const HealthService = serviceConstructor('health.proto', ['grpc', 'health', 'v1'], 'Health');

function call<Req, Res>(client: grpc.Client, method: Unary<Req, Res>, req: Req): Promise<Res> {
  return new Promise((resolve, reject) => {
    method.call(client, req, { deadline: Date.now() + 10_000 }, (err, res) => (err ? reject(err) : resolve(res as Res)));
  });
}

async function callError<Req, Res>(client: grpc.Client, method: Unary<Req, Res>, req: Req): Promise<grpc.ServiceError> {
  try {
    await call(client, method, req);
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('expected the call to fail');
}

// ---- the engine process ----

const children: ChildProcess[] = [];
afterAll(() => killChildren(children));



const MODEL = 'sim/model';
let child: ChildProcess;
let output = '';
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
let port: number;
let metricsPort: number;
let inference: InferenceClient;
let health: HealthClient;
/** What the engine said while the model was still loading. */
let early: {
  live: boolean;
  ready: boolean;
  modelReady: boolean;
  check: string;
  checkInference: string;
  infer: grpc.ServiceError;
};
const watched: string[] = [];
let watchCall: grpc.ClientReadableStream<{ status: string }>;

async function runningGauge(): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const prefix = `vllm:num_requests_running{model_name="${MODEL}",engine="0"} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}

const textRequest = (text: string, over: Partial<InferRequest> = {}): InferRequest => ({
  model_name: MODEL,
  inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from(text)] } }],
  ...over,
});
const maxTokens = (n: number): Record<string, ParameterIn> => ({ max_tokens: { int64_param: String(n) } });
const expectedText = (prompt: string, cap: number) => generateCompletion([{ role: 'user', content: prompt }], 0, cap).tokens.join('');
const outputText = (res: InferResponse): string => {
  expect(res.outputs[0]).toMatchObject({ name: 'text_output', datatype: 'BYTES', shape: ['1'] });
  const raw = res.raw_output_contents[0];
  return (raw ? decodeBytesTensor(raw, 1)[0] : res.outputs[0]?.contents?.bytes_contents[0])?.toString('utf8') ?? '';
};

beforeAll(async () => {
  port = await freePort();
  metricsPort = await freePort();
  // The first checks ask the engine while its model loads: the load must outlast a gRPC
  // connect and six calls on a loaded CI machine (300 ms did not, once); later tests wait on
  // ServerReady, so a longer load costs this file its length and nothing else.
  child = spawnCli(
    ['engine', '--flavor', 'v2', '--host', '127.0.0.1', '--port', String(port), '--metrics-port', String(metricsPort), '--startup-ms', '3000', '--ttft-ms', '10', '--itl-ms', '5', '--model', MODEL, '--replica-id', 'r-1', '--listen', 'at-start'],
    { INFERGATE_CONFIG_FILE: '' },
  );
  children.push(child);
  child.stdout?.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (output += b.toString()));
  exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let gone = false;
  void exited.then(() => (gone = true));
  // The "listening" line is written once the gRPC port is bound, just before the load starts.
  await waitFor(
    async () => {
      if (gone) throw new Error(`engine exited:\n${output}`);
      return /listening for gRPC/.test(output) ? true : undefined;
    },
    15_000,
    'the listening line',
  );
  const channel = { 'grpc.initial_reconnect_backoff_ms': 50, 'grpc.max_reconnect_backoff_ms': 200 };
  inference = new InferenceService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), channel) as unknown as InferenceClient;
  health = new HealthService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), channel) as unknown as HealthClient;
  watchCall = health.Watch({ service: '' });
  watchCall.on('data', (m: { status: string }) => watched.push(m.status));
  watchCall.on('error', () => undefined);
  const [live, ready, modelReady, check, checkInference, infer] = await Promise.all([
    call(inference, inference.ServerLive, {}),
    call(inference, inference.ServerReady, {}),
    call(inference, inference.ModelReady, { name: MODEL }),
    call(health, health.Check, { service: '' }),
    call(health, health.Check, { service: 'inference.GRPCInferenceService' }),
    callError(inference, inference.ModelInfer, textRequest('too early')),
  ]);
  early = { live: live.live, ready: ready.ready, modelReady: modelReady.ready, check: check.status, checkInference: checkInference.status, infer };
  await waitFor(async () => ((await call(inference, inference.ServerReady, {})).ready ? true : undefined), 15_000, 'ServerReady');
});

afterAll(() => {
  watchCall?.cancel();
  inference?.close();
  health?.close();
});

describe('v2 engine: lifecycle and health', () => {
  it('is live at once but neither ready nor SERVING while the model loads', () => {
    expect(early.live).toBe(true);
    expect(early.ready).toBe(false);
    expect(early.modelReady).toBe(false);
    expect(early.check).toBe('NOT_SERVING');
    expect(early.checkInference).toBe('NOT_SERVING');
    expect(early.infer.code).toBe(grpc.status.UNAVAILABLE);
    expect(early.infer.details).toMatch(/still loading/);
  });

  it('is ready and SERVING once loaded, and Watch saw the change', async () => {
    expect((await call(inference, inference.ServerLive, {})).live).toBe(true);
    expect((await call(inference, inference.ModelReady, { name: MODEL })).ready).toBe(true);
    expect((await call(health, health.Check, { service: '' })).status).toBe('SERVING');
    expect((await call(health, health.Check, { service: 'inference.GRPCInferenceService' })).status).toBe('SERVING');
    await waitFor(async () => (watched.includes('SERVING') ? true : undefined), 15_000, 'Watch to report SERVING');
    expect(watched).toEqual(['NOT_SERVING', 'SERVING']);
  });

  it('answers NOT_FOUND for an unknown health service', async () => {
    expect((await callError(health, health.Check, { service: 'nope.Service' })).code).toBe(grpc.status.NOT_FOUND);
  });

  it('logs that it is a simulator and serves no HTTP on the gRPC port', async () => {
    expect(output).toMatch(/SIMULATED v2 inference server/);
    await expect(fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(3000) })).rejects.toThrow();
  });
});

describe('v2 engine: metadata', () => {
  it('describes the server as the reference engine, a simulator', async () => {
    const meta = await call(inference, inference.ServerMetadata, {});
    expect(meta).toEqual({ name: 'infergate-reference-engine', version: expect.stringMatching(/\+simulated$/), extensions: [] });
  });

  it('describes the model: text_input and text_output, BYTES [1]', async () => {
    const meta = await call(inference, inference.ModelMetadata, { name: MODEL });
    expect(meta).toEqual({
      name: MODEL,
      versions: ['1'],
      platform: 'infergate_simulator',
      inputs: [{ name: 'text_input', datatype: 'BYTES', shape: ['1'] }],
      outputs: [{ name: 'text_output', datatype: 'BYTES', shape: ['1'] }],
    });
  });

  it('answers NOT_FOUND for an unknown model', async () => {
    const err = await callError(inference, inference.ModelMetadata, { name: 'other/model' });
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toMatch(/unknown model 'other\/model'/);
    expect((await callError(inference, inference.ModelReady, { name: 'other/model' })).code).toBe(grpc.status.NOT_FOUND);
  });
});

describe('v2 engine: ModelInfer', () => {
  const prompt = 'What does a gateway do with a session id?';

  it('answers a bytes_contents request in bytes_contents, with replica and token counts', async () => {
    const res = await call(inference, inference.ModelInfer, textRequest(prompt, { id: 'req-7', parameters: maxTokens(4) }));
    expect(res).toMatchObject({ model_name: MODEL, model_version: '1', id: 'req-7', raw_output_contents: [] });
    expect(res.outputs[0]?.contents?.bytes_contents).toHaveLength(1);
    expect(outputText(res)).toBe(expectedText(prompt, 4));
    expect(res.parameters.replica).toMatchObject({ parameter_choice: 'string_param', string_param: 'r-1' });
    expect(res.parameters.completion_tokens).toMatchObject({ parameter_choice: 'int64_param', int64_param: '4' });
    expect(Number(res.parameters.prompt_tokens?.int64_param)).toBe(9 + 4);
  });

  it('answers a raw_input_contents request in raw_output_contents (4-byte length prefix)', async () => {
    const res = await call(inference, inference.ModelInfer, {
      model_name: MODEL,
      id: 'raw-1',
      parameters: { max_tokens: { string_param: '3' } },
      inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1] }],
      raw_input_contents: [encodeBytesTensor([Buffer.from(prompt)])],
    });
    expect(res.outputs[0]?.contents).toBeNull();
    expect(res.raw_output_contents).toHaveLength(1);
    expect(outputText(res)).toBe(expectedText(prompt, 3));
    expect(res.parameters.replica?.string_param).toBe('r-1');
    expect(res.parameters.completion_tokens?.int64_param).toBe('3');
  });

  it('respects max_tokens and falls back to --max-tokens-default', async () => {
    for (const n of [1, 2, 6]) {
      const res = await call(inference, inference.ModelInfer, textRequest('count me', { parameters: maxTokens(n) }));
      expect(outputText(res).split(' ')).toHaveLength(n);
    }
    const uncapped = await call(inference, inference.ModelInfer, textRequest('count me'));
    expect(Number(uncapped.parameters.completion_tokens?.int64_param)).toBeLessThanOrEqual(16);
  });

  it('answers NOT_FOUND for an unknown model and INVALID_ARGUMENT for a bad tensor', async () => {
    const missing = await callError(inference, inference.ModelInfer, textRequest('hi', { model_name: 'other/model' }));
    expect(missing.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.details).toMatch(/unknown model 'other\/model'/);
    const bad = await callError(inference, inference.ModelInfer, { model_name: MODEL, inputs: [{ name: 'text_input', datatype: 'FP32', shape: [1] }] });
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});

describe('v2 engine: ModelStreamInfer', () => {
  it('streams one response per token, triton_final_response only on the last; a failed request does not end the stream', async () => {
    const prompt = 'Stream me some tokens please';
    const stream = inference.ModelStreamInfer();
    const responses: StreamResponse[] = [];
    stream.on('data', (r: StreamResponse) => responses.push(r));
    const ended = new Promise<grpc.StatusObject>((resolve, reject) => {
      stream.on('status', resolve);
      stream.on('error', reject);
    });
    stream.write(textRequest(prompt, { id: 'bad', model_name: 'other/model' }));
    stream.write(textRequest(prompt, { id: 's-1', parameters: maxTokens(5) }));
    stream.end();
    expect((await ended).code).toBe(grpc.status.OK);

    const failed = responses.filter((r) => r.error_message !== '');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.error_message).toMatch(/unknown model 'other\/model'/);
    expect(failed[0]?.infer_response).toMatchObject({ id: 'bad', model_name: 'other/model', outputs: [] });

    const tokens = responses.filter((r) => r.error_message === '').map((r) => r.infer_response as InferResponse);
    expect(tokens).toHaveLength(5);
    expect(tokens.every((t) => t.id === 's-1' && t.parameters.replica?.string_param === 'r-1')).toBe(true);
    expect(tokens.map((t) => t.parameters.triton_final_response)).toEqual([
      ...Array.from({ length: 4 }, () => ({ parameter_choice: 'bool_param', bool_param: false })),
      { parameter_choice: 'bool_param', bool_param: true },
    ]);
    expect(tokens.map(outputText).join('')).toBe(expectedText(prompt, 5));
    expect(tokens[4]?.parameters.completion_tokens?.int64_param).toBe('5');
  });

  it('a client cancel mid-stream aborts the sequence, frees its slot and is logged', async () => {
    const stream = inference.ModelStreamInfer();
    let received = 0;
    stream.on('data', () => received++);
    const closed = new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    stream.write(textRequest('a long story', { id: 'long', parameters: maxTokens(5000) }));
    await waitFor(async () => (received >= 3 ? true : undefined), 15_000, 'a few streamed tokens');
    expect(await runningGauge()).toBe(1);
    stream.cancel();
    expect((await closed).code).toBe(grpc.status.CANCELLED);
    // The gauge at 0 is the sequence gone: nothing is left to produce another token.
    await waitFor(async () => ((await runningGauge()) === 0 ? true : undefined), 5000, 'the running gauge to return to 0');
    await waitFor(async () => (/ModelStreamInfer cancelled by the client/.test(output) ? true : undefined), 5000, 'the cancel log line');
  });
});

describe('v2 engine: shutdown', () => {
  it('exits 0 on SIGTERM after draining', async () => {
    child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(output).toMatch(/engine stopped/);
  });
});
