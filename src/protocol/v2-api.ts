// Owns the v2 flavor's protocol logic, free of sockets: the simulated model's metadata, turning
// a ModelInferRequest into the prompt text, token cap and encoding to answer in (or a gRPC
// status saying why not), and building ModelInferResponse / ModelStreamInferResponse messages.
// The model takes one BYTES input `text_input` and gives one BYTES output `text_output`, as
// Triton's LLM backends do; the text comes from the shared deterministic generator.

import { status } from '@grpc/grpc-js';
import type {
  InferInputTensorIn,
  InferOutputTensorOut,
  ModelInferRequestIn,
  ModelInferResponseOut,
  ModelMetadataResponse,
  ModelStreamInferResponseOut,
  ServerMetadataResponse,
} from './v2-proto.js';
import { decodeBytesTensor, encodeBytesTensor, readIntParam, shapeElements, TensorDecodeError, type InferParameterOut } from './v2-tensors.js';

export const SERVER_NAME = 'infergate-reference-engine';
/** ModelMetadata's platform: says plainly that no real framework runs the model. */
export const PLATFORM = 'infergate_simulator';
/** The one version the simulated model has. */
export const MODEL_VERSION = '1';
export const INPUT_NAME = 'text_input';
export const OUTPUT_NAME = 'text_output';
export const MAX_TOKENS_LIMIT = 1_000_000;

/** A request the engine answers with a gRPC status other than OK. */
export class V2Error extends Error {
  override name = 'V2Error';
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
  }
}

export function serverMetadata(release: string): ServerMetadataResponse {
  // "+simulated" is semver build metadata: version parsers still read the release.
  return { name: SERVER_NAME, version: `${release}+simulated`, extensions: [] };
}

export function modelMetadata(model: string): ModelMetadataResponse {
  return {
    name: model,
    versions: [MODEL_VERSION],
    platform: PLATFORM,
    inputs: [{ name: INPUT_NAME, datatype: 'BYTES', shape: ['1'] }],
    outputs: [{ name: OUTPUT_NAME, datatype: 'BYTES', shape: ['1'] }],
  };
}

/** NOT_FOUND unless name (and version, when given) is the served model. */
export function checkModel(served: string, name: string, version: string): void {
  if (name !== served) throw new V2Error(status.NOT_FOUND, `unknown model '${name}': this engine serves '${served}' only`);
  if (version !== '' && version !== MODEL_VERSION) {
    throw new V2Error(status.NOT_FOUND, `model '${name}' has no version '${version}'; its only version is '${MODEL_VERSION}'`);
  }
}

export interface InferInput {
  id: string;
  text: string;
  /** The max_tokens request parameter; null when absent. */
  maxTokens: number | null;
  /** The input came in raw_input_contents, so the output goes out in raw_output_contents. */
  raw: boolean;
  /** The `ignore_eos` bool parameter (vLLM's, also understood by Triton's vLLM backend). */
  ignoreEos: boolean;
}

const invalid = (message: string) => new V2Error(status.INVALID_ARGUMENT, message);
const utf8 = new TextDecoder('utf-8', { fatal: true });

function hasTypedContents(tensor: InferInputTensorIn): boolean {
  const contents = tensor.contents;
  if (contents === null || contents === undefined) return false;
  return Object.values(contents).some((v) => Array.isArray(v) && v.length > 0);
}

/** Reads the prompt text and the token cap; throws V2Error(INVALID_ARGUMENT) for a malformed request. */
export function parseInferRequest(req: ModelInferRequestIn): InferInput {
  const inputs = req.inputs ?? [];
  const rawContents = req.raw_input_contents ?? [];
  const raw = rawContents.length > 0;
  const names = inputs.map((t) => t.name);
  const at = names.indexOf(INPUT_NAME);
  const tensor = inputs[at];
  if (tensor === undefined) {
    throw invalid(`expected input tensor '${INPUT_NAME}' (BYTES, shape [1]); the request has ${names.length ? names.map((n) => `'${n}'`).join(', ') : 'no inputs'}`);
  }
  const unexpected = names.find((n) => n !== INPUT_NAME);
  if (unexpected !== undefined) throw invalid(`unexpected input '${unexpected}': the model takes '${INPUT_NAME}' only`);
  if (names.length > 1) throw invalid(`input '${INPUT_NAME}' is given more than once`);
  if (tensor.datatype !== 'BYTES') throw invalid(`input '${INPUT_NAME}' must have datatype BYTES, not '${tensor.datatype}'`);
  const count = shapeElements(tensor.shape ?? []);
  if (count !== 1) throw invalid(`input '${INPUT_NAME}' must hold exactly one element (shape [1]), not shape [${(tensor.shape ?? []).join(', ')}]`);

  let element: Buffer;
  if (raw) {
    if (inputs.some(hasTypedContents)) throw invalid('raw_input_contents is set, so no input may also set contents');
    if (rawContents.length !== inputs.length) {
      throw invalid(`raw_input_contents has ${rawContents.length} entries for ${inputs.length} input(s); there must be one per input`);
    }
    try {
      element = decodeBytesTensor(rawContents[at] as Buffer, 1)[0] as Buffer;
    } catch (err) {
      if (err instanceof TensorDecodeError) throw invalid(`raw_input_contents for '${INPUT_NAME}' is not a BYTES tensor of one element: ${err.message}`);
      throw err;
    }
  } else {
    const elements = tensor.contents?.bytes_contents ?? [];
    if (elements.length !== 1) {
      throw invalid(`input '${INPUT_NAME}' must carry one element in contents.bytes_contents (or raw_input_contents), found ${elements.length}`);
    }
    element = elements[0] as Buffer;
  }
  let text: string;
  try {
    text = utf8.decode(element);
  } catch {
    throw invalid(`input '${INPUT_NAME}' is not valid UTF-8 text`);
  }

  for (const o of req.outputs ?? []) {
    if (o.name !== OUTPUT_NAME) throw invalid(`unknown output '${o.name}': the model gives '${OUTPUT_NAME}' only`);
  }
  const maxTokens = readIntParam(req.parameters, 'max_tokens', 1, MAX_TOKENS_LIMIT);
  if ('error' in maxTokens) throw invalid(maxTokens.error);
  const ignoreEos = req.parameters?.ignore_eos?.bool_param === true;
  return { id: req.id, text, maxTokens: maxTokens.value, raw, ignoreEos };
}

/** A ModelInferResponse with `text` as the one BYTES element of text_output. */
export function inferResponse(fields: {
  model: string;
  id: string;
  text: string;
  raw: boolean;
  parameters: Record<string, InferParameterOut>;
}): ModelInferResponseOut {
  const element = Buffer.from(fields.text, 'utf8');
  const output: InferOutputTensorOut = { name: OUTPUT_NAME, datatype: 'BYTES', shape: ['1'] };
  if (!fields.raw) output.contents = { bytes_contents: [element] };
  return {
    model_name: fields.model,
    model_version: MODEL_VERSION,
    id: fields.id,
    parameters: fields.parameters,
    outputs: [output],
    raw_output_contents: fields.raw ? [encodeBytesTensor([element])] : [],
  };
}

/** A stream response reporting one request's failure, as Triton does: id and model set, no outputs. */
export function streamError(model: string, id: string, message: string): ModelStreamInferResponseOut {
  return { error_message: message, infer_response: { model_name: model, model_version: MODEL_VERSION, id } };
}
