// The v2 flavor's pure encodings: raw BYTES tensors (4-byte little-endian length per element)
// both ways, malformed raw tensors, shape element counts, and reading integer parameters.
import { describe, expect, it } from 'vitest';
import { decodeBytesTensor, encodeBytesTensor, readIntParam, shapeElements, TensorDecodeError } from './v2-tensors.js';

describe('encodeBytesTensor / decodeBytesTensor', () => {
  it('prefixes every element with its length as a little-endian uint32', () => {
    const raw = encodeBytesTensor([Buffer.from('hi'), Buffer.from('')]);
    expect([...raw]).toEqual([2, 0, 0, 0, 0x68, 0x69, 0, 0, 0, 0]);
  });

  it('round-trips UTF-8 text, empty elements and binary data', () => {
    const elements = [Buffer.from('héllo wörld ✓'), Buffer.alloc(0), Buffer.from([0, 255, 1, 254]), Buffer.alloc(300, 7)];
    const decoded = decodeBytesTensor(encodeBytesTensor(elements));
    expect(decoded.map((b) => [...b])).toEqual(elements.map((b) => [...b]));
    expect(decodeBytesTensor(encodeBytesTensor(elements), 4)).toHaveLength(4);
  });

  it('decodes lengths past 255 little-endian', () => {
    const raw = Buffer.concat([Buffer.from([0x2c, 0x01, 0, 0]), Buffer.alloc(300, 1)]);
    expect(decodeBytesTensor(raw)[0]).toHaveLength(300);
  });

  it('decodes a plain Uint8Array and an empty tensor', () => {
    expect(decodeBytesTensor(new Uint8Array([1, 0, 0, 0, 0x41]))[0]?.toString()).toBe('A');
    expect(decodeBytesTensor(Buffer.alloc(0))).toEqual([]);
  });

  it.each([
    ['a truncated length prefix', Buffer.from([5, 0]), /too few for its 4-byte length/],
    ['an element longer than the data', Buffer.from([9, 0, 0, 0, 1, 2]), /claims 9 bytes but only 2 remain/],
    ['a big-endian length', Buffer.from([0, 0, 0, 2, 0x68, 0x69]), /claims 33554432 bytes/],
  ])('rejects %s', (_what, raw, message) => {
    expect(() => decodeBytesTensor(raw)).toThrow(TensorDecodeError);
    expect(() => decodeBytesTensor(raw)).toThrow(message);
  });

  it('rejects an element count other than the expected one', () => {
    const raw = encodeBytesTensor([Buffer.from('a'), Buffer.from('b')]);
    expect(() => decodeBytesTensor(raw, 1)).toThrow(/holds 2 element\(s\), the shape says 1/);
  });
});

describe('shapeElements', () => {
  it('multiplies int64 dims given as strings or numbers', () => {
    expect(shapeElements(['1'])).toBe(1);
    expect(shapeElements(['2', 3])).toBe(6);
    expect(shapeElements([])).toBe(1);
    expect(shapeElements(['-1'])).toBeNull();
    expect(shapeElements(['x'])).toBeNull();
  });
});

describe('readIntParam', () => {
  it('reads int64, uint64, string and whole double parameters', () => {
    expect(readIntParam({ n: { parameter_choice: 'int64_param', int64_param: '12' } }, 'n', 1, 100)).toEqual({ value: 12 });
    expect(readIntParam({ n: { parameter_choice: 'uint64_param', uint64_param: '7' } }, 'n', 1, 100)).toEqual({ value: 7 });
    expect(readIntParam({ n: { parameter_choice: 'string_param', string_param: ' 5 ' } }, 'n', 1, 100)).toEqual({ value: 5 });
    expect(readIntParam({ n: { parameter_choice: 'double_param', double_param: 3 } }, 'n', 1, 100)).toEqual({ value: 3 });
    expect(readIntParam({ n: { int64_param: 4 } }, 'n', 1, 100)).toEqual({ value: 4 });
  });

  it('is null when absent', () => {
    expect(readIntParam(undefined, 'n', 1, 100)).toEqual({ value: null });
    expect(readIntParam({}, 'n', 1, 100)).toEqual({ value: null });
    expect(readIntParam({ n: {} }, 'n', 1, 100)).toEqual({ value: null });
  });

  it('explains a bad value', () => {
    expect(readIntParam({ n: { parameter_choice: 'string_param', string_param: 'many' } }, 'n', 1, 100)).toEqual({ error: `parameter 'n' must be a whole number, not "many"` });
    expect(readIntParam({ n: { parameter_choice: 'int64_param', int64_param: '0' } }, 'n', 1, 100)).toEqual({ error: `parameter 'n' must be between 1 and 100, got 0` });
    expect(readIntParam({ n: { parameter_choice: 'double_param', double_param: 2.5 } }, 'n', 1, 100)).toMatchObject({ error: expect.stringMatching(/whole number/) });
    expect(readIntParam({ n: { parameter_choice: 'bool_param', bool_param: true } }, 'n', 1, 100)).toMatchObject({ error: expect.stringMatching(/not bool_param/) });
  });
});
