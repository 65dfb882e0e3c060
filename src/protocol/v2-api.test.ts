// The v2 flavor's protocol logic without sockets: metadata, reading text_input from
// bytes_contents or raw_input_contents, max_tokens, the INVALID_ARGUMENT / NOT_FOUND cases, and
// the response's output in the encoding the request used.
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { checkModel, inferResponse, modelMetadata, parseInferRequest, serverMetadata, streamError, V2Error } from './v2-api.js';
import type { ModelInferRequestIn } from './v2-proto.js';
import { decodeBytesTensor, encodeBytesTensor, stringParam } from './v2-tensors.js';

const request = (over: Partial<ModelInferRequestIn> = {}): ModelInferRequestIn => ({
  model_name: 'sim/model',
  model_version: '',
  id: 'req-1',
  parameters: {},
  inputs: [{ name: 'text_input', datatype: 'BYTES', shape: ['1'], parameters: {}, contents: { bytes_contents: [Buffer.from('hello there')] } }],
  outputs: [],
  raw_input_contents: [],
  ...over,
});

function failure(fn: () => unknown): V2Error {
  try {
    fn();
  } catch (err) {
    if (err instanceof V2Error) return err;
    throw err;
  }
  throw new Error('expected a V2Error');
}

describe('metadata', () => {
  it('says it is a simulator', () => {
    expect(serverMetadata('1.2.3')).toEqual({ name: 'infergate-reference-engine', version: '1.2.3+simulated', extensions: [] });
    expect(modelMetadata('m')).toMatchObject({
      name: 'm',
      platform: 'infergate_simulator',
      inputs: [{ name: 'text_input', datatype: 'BYTES', shape: ['1'] }],
      outputs: [{ name: 'text_output', datatype: 'BYTES', shape: ['1'] }],
    });
  });

  it('knows only the served model and its version', () => {
    expect(() => checkModel('m', 'm', '')).not.toThrow();
    expect(() => checkModel('m', 'm', '1')).not.toThrow();
    expect(failure(() => checkModel('m', 'other', ''))).toMatchObject({ code: status.NOT_FOUND, message: expect.stringMatching(/unknown model 'other'/) });
    expect(failure(() => checkModel('m', 'm', '9')).code).toBe(status.NOT_FOUND);
  });
});

describe('parseInferRequest', () => {
  it('reads bytes_contents', () => {
    expect(parseInferRequest(request())).toEqual({ id: 'req-1', text: 'hello there', maxTokens: null, raw: false, ignoreEos: false });
  });

  it('reads raw_input_contents with the 4-byte length prefix', () => {
    const parsed = parseInferRequest(
      request({
        inputs: [{ name: 'text_input', datatype: 'BYTES', shape: ['1'], contents: null }],
        raw_input_contents: [encodeBytesTensor([Buffer.from('raw text')])],
        parameters: { max_tokens: { parameter_choice: 'int64_param', int64_param: '3' } },
      }),
    );
    expect(parsed).toEqual({ id: 'req-1', text: 'raw text', maxTokens: 3, raw: true, ignoreEos: false });
  });

  it('reads the ignore_eos bool parameter', () => {
    expect(parseInferRequest({ ...request(), parameters: { ignore_eos: { bool_param: true } } } as Parameters<typeof parseInferRequest>[0]).ignoreEos).toBe(true);
  });

  it.each<[string, Partial<ModelInferRequestIn>, RegExp]>([
    ['no inputs', { inputs: [] }, /expected input tensor 'text_input'.*no inputs/],
    ['a wrong datatype', { inputs: [{ name: 'text_input', datatype: 'FP32', shape: ['1'] }] }, /datatype BYTES, not 'FP32'/],
    ['two elements', { inputs: [{ name: 'text_input', datatype: 'BYTES', shape: ['2'], contents: { bytes_contents: [Buffer.from('a'), Buffer.from('b')] } }] }, /exactly one element/],
    ['no contents', { inputs: [{ name: 'text_input', datatype: 'BYTES', shape: ['1'], contents: null }] }, /found 0/],
    ['raw and contents', { raw_input_contents: [encodeBytesTensor([Buffer.from('x')])] }, /no input may also set contents/],
    ['a malformed raw tensor', { inputs: [{ name: 'text_input', datatype: 'BYTES', shape: ['1'] }], raw_input_contents: [Buffer.from('xy')] }, /not a BYTES tensor of one element/],
    ['an unknown output', { outputs: [{ name: 'logits' }] }, /unknown output 'logits'/],
    ['a bad max_tokens', { parameters: { max_tokens: { parameter_choice: 'string_param', string_param: 'lots' } } }, /max_tokens/],
    ['invalid UTF-8', { inputs: [{ name: 'text_input', datatype: 'BYTES', shape: ['1'], contents: { bytes_contents: [Buffer.from([0xff, 0xfe])] } }] }, /UTF-8/],
  ])('rejects %s with INVALID_ARGUMENT', (_what, over, message) => {
    const err = failure(() => parseInferRequest(request(over)));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.message).toMatch(message);
  });
});

describe('inferResponse', () => {
  it('puts the text in bytes_contents for a typed request', () => {
    const res = inferResponse({ model: 'm', id: 'a', text: 'Hi there.', raw: false, parameters: { replica: stringParam('r') } });
    expect(res).toMatchObject({ model_name: 'm', model_version: '1', id: 'a', raw_output_contents: [], parameters: { replica: { string_param: 'r' } } });
    expect(res.outputs[0]?.contents?.bytes_contents[0]?.toString()).toBe('Hi there.');
  });

  it('puts the text in raw_output_contents for a raw request', () => {
    const res = inferResponse({ model: 'm', id: 'a', text: 'Hi there.', raw: true, parameters: {} });
    expect(res.outputs[0]).toEqual({ name: 'text_output', datatype: 'BYTES', shape: ['1'] });
    expect(decodeBytesTensor(res.raw_output_contents[0] as Buffer, 1)[0]?.toString()).toBe('Hi there.');
  });

  it('reports a stream failure with id and model but no outputs', () => {
    expect(streamError('m', 'x', 'boom')).toEqual({ error_message: 'boom', infer_response: { model_name: 'm', model_version: '1', id: 'x' } });
  });
});
