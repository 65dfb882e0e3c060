import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { BodyError, BodyGate, grpcMessageCheck } from './request-body.js';

const frame = (length: number): Buffer => {
  const b = Buffer.alloc(5 + length);
  b.writeUInt32BE(length, 1);
  return b;
};

describe('grpcMessageCheck', () => {
  it('passes messages up to the limit, however the stream is cut into chunks', () => {
    const check = grpcMessageCheck(100);
    const stream = Buffer.concat([frame(100), frame(0), frame(37)]);
    for (let i = 0; i < stream.length; i += 3) expect(check(stream.subarray(i, i + 3))).toBeNull();
  });

  it('refuses the first message over the limit, even when its length prefix is split', () => {
    const check = grpcMessageCheck(100);
    const big = frame(101);
    expect(check(Buffer.concat([frame(10), big.subarray(0, 2)]))).toBeNull();
    const error = check(big.subarray(2));
    expect(error).toBeInstanceOf(BodyError);
    expect(error?.kind).toBe('too_large');
    expect(error?.message).toMatch(/gRPC message \(101 bytes\)/);
  });
});

describe('BodyGate', () => {
  it('announces the first byte, passes the body through, and caps its size', async () => {
    const gate = new BodyGate({ maxBytes: 8, idleMs: 5_000 }, null);
    const announced: boolean[] = [];
    gate.onFirstByte((r) => announced.push(r.ok));
    gate.write(Buffer.from('abcd'));
    expect(announced).toEqual([true]);
    const errored = new Promise<Error>((resolve) => gate.once('error', resolve));
    gate.write(Buffer.from('efghij'));
    const err = await errored;
    expect(err).toBeInstanceOf(BodyError);
    expect((err as BodyError).kind).toBe('too_large');
  });

  it('fails the wait with a timeout when the client sends nothing, but not while the gateway itself is not reading', async () => {
    vi.useFakeTimers();
    onTestFinished(() => void vi.useRealTimers());
    const silent = new BodyGate({ maxBytes: 1000, idleMs: 50 }, null);
    const outcome = new Promise<{ ok: boolean; kind?: string }>((resolve) =>
      silent.onFirstByte((r) => resolve(r.ok ? { ok: true } : { ok: false, kind: r.error?.kind })),
    );
    vi.advanceTimersByTime(50);
    expect(await outcome).toEqual({ ok: false, kind: 'timeout' });

    // Data waiting in the gate's buffer (nobody reads it yet) is our backpressure, not a stall.
    const waiting = new BodyGate({ maxBytes: 1_000_000, idleMs: 50 }, null);
    waiting.onFirstByte(() => undefined);
    waiting.write(Buffer.alloc(10));
    vi.advanceTimersByTime(200); // four idle periods with the bytes unread
    expect(waiting.destroyed).toBe(false);
    waiting.destroy();
  });
});
