// Owns receiving a request body at the gateway: the deployment's size limit (413), the idle
// timeout between the client's bytes (408), `100 Continue` — sent only here, after the
// request passed authentication and the limit could be checked against Content-Length — and
// the moment a request becomes load: a body that has arrived (small sized bodies are read
// whole first, so a retry can send them again), or a streamed body whose first bytes came.
// A client that opens a request and stalls therefore never counts as in-flight work and
// never wakes the autoscaler; one that stalls mid-stream is cut, and leaves the count then.

import { Transform, type TransformCallback } from 'node:stream';
import type { DownstreamRequest, DownstreamResponse } from './downstream.js';

/** Sized bodies up to this are read whole before forwarding (retry-safe); larger ones stream. */
export const BUFFERED_BODY_LIMIT = 1 << 20;

export interface BodyLimits {
  /** Largest body, in bytes (HTTP); largest single message (gRPC). */
  maxBytes: number;
  /** Longest silence from the client while the gateway waits for body bytes. */
  idleMs: number;
}

export type BodyFailureKind = 'timeout' | 'too_large';

/** Why a body was refused; carried as the stream error of a gate cut mid-forward. */
export class BodyError extends Error {
  override name = 'BodyError';
  constructor(
    readonly kind: BodyFailureKind,
    message: string,
  ) {
    super(message);
  }
}

/** A received body: whole, none, or streaming through its gate. */
export type Body = Buffer | null | BodyGate;

export type ReceivedBody =
  | { ok: true; body: Buffer | null | BodyGate }
  | { ok: false; error: BodyError }
  /** The client went away before its body arrived. */
  | { ok: false; error: null };

export function hasNoBody(req: DownstreamRequest): boolean {
  const length = req.headers['content-length'];
  if (length === '0') return true;
  if ('stream' in req && req.stream) return req.stream.endAfterHeaders && length === undefined;
  return length === undefined && req.headers['transfer-encoding'] === undefined;
}

export function tooLarge(maxBytes: number, what = 'request body'): BodyError {
  return new BodyError('too_large', `the ${what} is larger than this endpoint accepts (${maxBytes} bytes; the deployment's max_request_body_bytes)`);
}

function idleTimeout(idleMs: number): BodyError {
  return new BodyError('timeout', `the request body stalled: no bytes for ${Math.round(idleMs / 1000)} s`);
}

/** The client asked to wait for `100 Continue` before sending its body. */
function wantsContinue(req: DownstreamRequest): boolean {
  const expect = req.headers.expect;
  return typeof expect === 'string' && expect.toLowerCase() === '100-continue';
}

/**
 * Calls `then` once: with the whole body (sized, small), null (none), or a gate that streams
 * it, as soon as its first byte is in; or with the reason it was refused.
 */
export function receiveBody(req: DownstreamRequest, res: DownstreamResponse, limits: BodyLimits, then: (r: ReceivedBody) => void): void {
  if (hasNoBody(req)) return then({ ok: true, body: null });
  const declared = Number(req.headers['content-length']);
  const sized = req.headers['content-length'] !== undefined && Number.isSafeInteger(declared) && declared >= 0;
  if (sized && declared > limits.maxBytes) return then({ ok: false, error: tooLarge(limits.maxBytes) });
  if (wantsContinue(req)) (res as { writeContinue(): void }).writeContinue();
  if (sized && declared <= BUFFERED_BODY_LIMIT) return readWhole(req, limits, then);
  const gate = new BodyGate(limits, null);
  gate.onFirstByte(then);
  followClient(req, gate);
}

/** Pipes the client's body into the gate; a client that leaves before its end ends the gate too. */
export function followClient(req: DownstreamRequest, gate: BodyGate): void {
  req.on('error', () => undefined);
  req.once('close', () => {
    if (!req.complete) gate.clientGone();
  });
  req.pipe(gate);
}

function readWhole(req: DownstreamRequest, limits: BodyLimits, then: (r: ReceivedBody) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const settle = (r: ReceivedBody) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    then(r);
  };
  const timer = setTimeout(() => settle({ ok: false, error: idleTimeout(limits.idleMs) }), limits.idleMs);
  req.on('data', (c: Buffer) => {
    size += c.length;
    // HTTP/2 does not hold a body to its Content-Length the way the HTTP/1.1 parser does.
    if (size > limits.maxBytes) return settle({ ok: false, error: tooLarge(limits.maxBytes) });
    chunks.push(c);
    timer.refresh();
  });
  req.on('end', () => settle({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) }));
  // A client that leaves mid-body may emit only 'close' (or 'error' first).
  req.once('close', () => settle({ ok: false, error: null }));
  req.on('error', () => undefined);
}

/** Looks at each chunk as it passes: a BodyError ends the stream with it. */
export type ChunkCheck = (chunk: Buffer) => BodyError | null;

/**
 * A pass-through for a body forwarded as it arrives: it caps the size (or checks each chunk),
 * cuts the body after `idleMs` without a byte from the client, and says when the first byte
 * (or the end of an empty body) came. Silence caused by the gateway's own backpressure — the
 * replica not reading yet, or a request held while its deployment scales up — is not the
 * client's and does not count.
 */
export class BodyGate extends Transform {
  private received = 0;
  private first: ((r: ReceivedBody) => void) | null = null;
  private started = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly limits: BodyLimits,
    private readonly check: ChunkCheck | null,
  ) {
    super();
    this.timer = setTimeout(() => this.idle(), limits.idleMs);
    this.once('close', () => clearTimeout(this.timer));
  }

  /** `then` runs at the first byte, the end of an empty body, or the first failure. */
  onFirstByte(then: (r: ReceivedBody) => void): void {
    this.first = then;
  }

  /** Body bytes received so far (a streamed completion's prompt estimate, usage-tap.ts). */
  get bytesReceived(): number {
    return this.received;
  }

  /** Ends the wait for body bytes (a bidirectional gRPC stream may rightly go quiet). */
  stopIdleTimer(): void {
    clearTimeout(this.timer);
  }

  /** The client closed before its body ended: nothing more will come. */
  clientGone(): void {
    if (this.first) this.announce({ ok: false, error: null });
    this.destroy();
  }

  private announce(r: ReceivedBody): void {
    const first = this.first;
    this.first = null;
    first?.(r);
  }

  private fail(error: BodyError): void {
    if (this.first) {
      this.announce({ ok: false, error });
      this.destroy();
    } else {
      this.destroy(error);
    }
  }

  private idle(): void {
    if (this.destroyed || this.writableFinished) return;
    if (this.writableLength > 0 || this.readableLength > 0) {
      this.timer.refresh(); // our own backpressure: the client is not the one waiting
      return;
    }
    this.fail(idleTimeout(this.limits.idleMs));
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.received += chunk.length;
    const error = this.check ? this.check(chunk) : this.received > this.limits.maxBytes ? tooLarge(this.limits.maxBytes) : null;
    if (error) {
      done();
      this.fail(error);
      return;
    }
    this.timer.refresh();
    this.push(chunk);
    done();
    if (!this.started) {
      this.started = true;
      this.announce({ ok: true, body: this });
    }
  }

  override _flush(done: TransformCallback): void {
    clearTimeout(this.timer);
    done();
    if (!this.started) {
      this.started = true;
      this.announce({ ok: true, body: this });
    }
  }
}

/**
 * Per-message size check of a gRPC request stream: messages are length-prefixed (1 byte
 * flag, 4 bytes big-endian length), and a message longer than the limit is refused the way
 * gRPC servers refuse one beyond their max receive size (RESOURCE_EXHAUSTED).
 */
export function grpcMessageCheck(maxBytes: number): ChunkCheck {
  let header = Buffer.alloc(0);
  let remaining = 0; // bytes of the current message still to come
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (remaining > 0) {
        const take = Math.min(remaining, chunk.length - at);
        remaining -= take;
        at += take;
        continue;
      }
      const need = 5 - header.length;
      header = Buffer.concat([header, chunk.subarray(at, at + need)]);
      at += Math.min(need, chunk.length - at);
      if (header.length < 5) break;
      const length = header.readUInt32BE(1);
      header = Buffer.alloc(0);
      if (length > maxBytes) return tooLarge(maxBytes, `gRPC message (${length} bytes)`);
      remaining = length;
    }
    return null;
  };
}
