// Test helper: a grpc-js client of the v2 inference protocol built from proto/inference.proto
// (as KServe and Triton clients build theirs), either over TLS to the gateway under an
// endpoint hostname or in cleartext to a replica, plus ModelInfer / ModelStreamInfer calls
// that send a BYTES `text_input` and read `text_output` back.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const definition = protoLoader.loadSync(path.join(ROOT, 'proto/inference.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
const inference = (grpc.loadPackageDefinition(definition) as unknown as { inference: { GRPCInferenceService: grpc.ServiceClientConstructor } }).inference;

export type V2Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

export function v2ClientTls(port: number, host: string, caPem: string): V2Client {
  return new inference.GRPCInferenceService(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(caPem)), {
    'grpc.ssl_target_name_override': host,
    'grpc.default_authority': host,
  }) as unknown as V2Client;
}

export function v2ClientPlain(address: string): V2Client {
  return new inference.GRPCInferenceService(address, grpc.credentials.createInsecure()) as unknown as V2Client;
}

export function bearer(token: string | null, extra: Record<string, string> = {}): grpc.Metadata {
  const m = new grpc.Metadata();
  if (token !== null) m.set('authorization', `Bearer ${token}`);
  for (const [k, v] of Object.entries(extra)) m.set(k, v);
  return m;
}

interface Parameter {
  bool_param?: boolean;
  int64_param?: string;
  string_param?: string;
}
interface InferResponse {
  outputs: { name: string; contents: { bytes_contents: Buffer[] } | null }[];
  raw_output_contents: Buffer[];
  parameters: Record<string, Parameter>;
}

export function inferRequest(model: string, text: string, maxTokens: number) {
  return {
    model_name: model,
    id: `req-${Math.random().toString(36).slice(2)}`,
    parameters: { max_tokens: { int64_param: String(maxTokens) } },
    inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from(text)] } }],
  };
}

export function textOf(res: InferResponse): string {
  return res.outputs.map((o) => (o.contents?.bytes_contents ?? []).map((b) => b.toString()).join('')).join('');
}

export function modelInfer(c: V2Client, model: string, text: string, maxTokens: number, md: grpc.Metadata): Promise<{ text: string; replica: string }> {
  return new Promise((resolve, reject) => {
    (c.ModelInfer as (r: unknown, m: grpc.Metadata, cb: (e: grpc.ServiceError | null, r?: InferResponse) => void) => void).call(c, inferRequest(model, text, maxTokens), md, (err, res) =>
      err ? reject(err) : resolve({ text: textOf(res!), replica: res!.parameters.replica?.string_param ?? '' }),
    );
  });
}

/** One streamed request: every response's text, and the final flags in order. */
export function modelStreamInfer(c: V2Client, model: string, text: string, maxTokens: number, md: grpc.Metadata): Promise<{ tokens: string[]; finals: boolean[] }> {
  return new Promise((resolve, reject) => {
    const call = (c.ModelStreamInfer as (m: grpc.Metadata) => grpc.ClientDuplexStream<unknown, { error_message: string; infer_response: InferResponse | null }>).call(c, md);
    const tokens: string[] = [];
    const finals: boolean[] = [];
    call.on('data', (msg) => {
      if (msg.error_message) return reject(new Error(msg.error_message));
      const res = msg.infer_response!;
      tokens.push(textOf(res));
      const final = res.parameters.triton_final_response?.bool_param === true;
      finals.push(final);
      if (final) call.end();
    });
    call.on('error', reject);
    call.on('end', () => resolve({ tokens, finals }));
    call.write(inferRequest(model, text, maxTokens));
  });
}
