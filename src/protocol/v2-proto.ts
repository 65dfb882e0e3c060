// Owns loading proto/inference.proto and proto/health.proto with @grpc/proto-loader (the
// usual grpc-js options: keepCase, longs and enums as String, defaults, oneofs) and the
// TypeScript shapes of the messages the v2 flavor reads and writes, as proto-loader presents them: snake_case names, int64 as strings,
// enums as names, defaults filled in, the oneof case in `parameter_choice`.

import type { ServiceDefinition } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import type { InferParameterOut, InferParameterValue } from './v2-tensors.js';

/** The same relative path works from src/engine (tsx) and dist/engine (built). */
export const INFERENCE_PROTO = fileURLToPath(new URL('../../proto/inference.proto', import.meta.url));
export const HEALTH_PROTO = fileURLToPath(new URL('../../proto/health.proto', import.meta.url));

export const PROTO_LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

export const INFERENCE_SERVICE = 'inference.GRPCInferenceService';
export const HEALTH_SERVICE = 'grpc.health.v1.Health';

export interface V2Services {
  inference: ServiceDefinition;
  health: ServiceDefinition;
}

function service(definition: protoLoader.PackageDefinition, name: string, file: string): ServiceDefinition {
  const found = definition[name];
  // A service definition maps method names to objects with a `path`; messages and enums have `format`.
  if (found === undefined || 'format' in found) throw new Error(`${file} does not define service ${name}`);
  return found as ServiceDefinition;
}

export function loadV2Services(): V2Services {
  return {
    inference: service(protoLoader.loadSync(INFERENCE_PROTO, PROTO_LOADER_OPTIONS), INFERENCE_SERVICE, INFERENCE_PROTO),
    health: service(protoLoader.loadSync(HEALTH_PROTO, PROTO_LOADER_OPTIONS), HEALTH_SERVICE, HEALTH_PROTO),
  };
}

// ---- messages as received (defaults: true fills every field) ----

export type Params = Record<string, InferParameterValue>;

export interface InferTensorContentsIn {
  bytes_contents?: Buffer[];
}

export interface InferInputTensorIn {
  name: string;
  datatype: string;
  shape: string[];
  parameters?: Params;
  contents?: InferTensorContentsIn | null;
}

export interface ModelInferRequestIn {
  model_name: string;
  model_version: string;
  id: string;
  parameters?: Params;
  inputs?: InferInputTensorIn[];
  outputs?: Array<{ name: string; parameters?: Params }>;
  raw_input_contents?: Buffer[];
}

export interface NameVersionRequest {
  name: string;
  version: string;
}

export interface HealthCheckRequest {
  service: string;
}

// ---- messages as written ----

export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

export interface HealthCheckResponse {
  status: ServingStatus;
}

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: string[];
}

export interface ModelMetadataResponse {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export interface ServerMetadataResponse {
  name: string;
  version: string;
  extensions: string[];
}

export interface InferOutputTensorOut {
  name: string;
  datatype: string;
  shape: string[];
  contents?: { bytes_contents: Buffer[] };
}

export interface ModelInferResponseOut {
  model_name: string;
  model_version: string;
  id: string;
  parameters: Record<string, InferParameterOut>;
  outputs: InferOutputTensorOut[];
  raw_output_contents: Buffer[];
}

export interface ModelStreamInferResponseOut {
  error_message: string;
  infer_response: Partial<ModelInferResponseOut> | null;
}
