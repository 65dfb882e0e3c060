// Owns the v2 protocol's value encodings the engine needs, as pure functions: BYTES tensors in
// raw form (each element a 4-byte little-endian length, then its bytes, as in the v2
// protocol's raw_input_contents and Triton's binary-data extension) and reading InferParameter values. No gRPC here, so the
// encodings are unit-tested on their own.

/** Largest BYTES element the 4-byte length prefix can describe. */
export const MAX_BYTES_ELEMENT = 0xffff_ffff;

/** A raw BYTES tensor that cannot be decoded; the message says where it went wrong. */
export class TensorDecodeError extends Error {
  override name = 'TensorDecodeError';
}

/** Encodes BYTES elements as one raw tensor: per element a uint32 LE length, then the bytes. */
export function encodeBytesTensor(elements: readonly Uint8Array[]): Buffer {
  let size = 0;
  for (const e of elements) {
    if (e.length > MAX_BYTES_ELEMENT) throw new RangeError(`a BYTES element of ${e.length} bytes does not fit a 4-byte length`);
    size += 4 + e.length;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const e of elements) {
    out.writeUInt32LE(e.length, at);
    at += 4;
    out.set(e, at);
    at += e.length;
  }
  return out;
}

/**
 * Decodes a raw BYTES tensor into its elements (views into `raw`, not copies). With
 * `expected`, the element count must match it (the product of the tensor's shape).
 */
export function decodeBytesTensor(raw: Uint8Array, expected?: number): Buffer[] {
  const buf = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const elements: Buffer[] = [];
  let at = 0;
  while (at < buf.length) {
    if (buf.length - at < 4) {
      throw new TensorDecodeError(`element ${elements.length} at byte ${at}: ${buf.length - at} byte(s) left, too few for its 4-byte length`);
    }
    const length = buf.readUInt32LE(at);
    at += 4;
    if (length > buf.length - at) {
      throw new TensorDecodeError(`element ${elements.length} claims ${length} bytes but only ${buf.length - at} remain`);
    }
    elements.push(buf.subarray(at, at + length));
    at += length;
  }
  if (expected !== undefined && elements.length !== expected) {
    throw new TensorDecodeError(`holds ${elements.length} element(s), the shape says ${expected}`);
  }
  return elements;
}

/** Element count of a shape (int64 dims arrive as strings with longs: String); null if a dim is bad. */
export function shapeElements(shape: readonly (string | number)[]): number | null {
  let n = 1;
  for (const d of shape) {
    const v = typeof d === 'number' ? d : Number(d);
    if (!Number.isSafeInteger(v) || v < 0) return null;
    n *= v;
  }
  return n;
}

/** An InferParameter as @grpc/proto-loader gives it (oneofs: true, longs: String). */
export interface InferParameterValue {
  parameter_choice?: string;
  bool_param?: boolean;
  int64_param?: string | number;
  string_param?: string;
  double_param?: number;
  uint64_param?: string | number;
}

/** An InferParameter as the engine writes one: exactly one choice set. */
export type InferParameterOut = { bool_param: boolean } | { int64_param: string } | { string_param: string };

export const boolParam = (value: boolean): InferParameterOut => ({ bool_param: value });
export const int64Param = (value: number): InferParameterOut => ({ int64_param: String(Math.trunc(value)) });
export const stringParam = (value: string): InferParameterOut => ({ string_param: value });

/**
 * Reads a whole-number parameter: int64_param, uint64_param, a string_param holding digits, or
 * a whole double_param. Returns null when absent, and an error message when it is not a whole
 * number in [min, max].
 */
export function readIntParam(
  params: Readonly<Record<string, InferParameterValue>> | undefined,
  key: string,
  min: number,
  max: number,
): { value: number | null } | { error: string } {
  const p = params?.[key];
  if (p === undefined || p === null) return { value: null };
  const choice = p.parameter_choice ?? (['int64_param', 'uint64_param', 'string_param', 'double_param', 'bool_param'] as const).find((k) => p[k] !== undefined);
  let raw: string | number | undefined;
  if (choice === 'int64_param' || choice === 'uint64_param') raw = p[choice];
  else if (choice === 'string_param') raw = p.string_param?.trim();
  else if (choice === 'double_param') raw = p.double_param;
  else if (choice === undefined) return { value: null };
  else return { error: `parameter '${key}' must be an int64, uint64 or string parameter holding a whole number, not ${choice}` };
  const value = typeof raw === 'number' ? raw : raw !== undefined && /^[+-]?\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value)) return { error: `parameter '${key}' must be a whole number, not ${JSON.stringify(raw)}` };
  if (value < min || value > max) return { error: `parameter '${key}' must be between ${min} and ${max}, got ${value}` };
  return { value };
}
