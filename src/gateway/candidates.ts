// Owns the one candidate loop of both forwarders (HTTP and gRPC), which are transport only:
// which replicas to try and in what order (the policy's order, ejected replicas left out
// unless every one is), how many attempts (at most four), and what a failed attempt means.
//   connect   the request never reached the replica (refused, unreachable, the connect timer):
//             held against the replica (enough in a row eject it), and tried on the next
//             candidate when the body can be sent again;
//   upstream  the replica had the request and failed before answering: neither retried (it
//             may have acted on it: a POST is not idempotent) nor ejected (the connection
//             worked; the request may be what failed);
//   timeout   no response within the upstream-headers (HTTP) or first-message (gRPC) timer:
//             answered 504 / DEADLINE_EXCEEDED, not retried, not ejected;
//   local     the gateway's own transport refused the request: neither.
// A retry happens only before the first response byte: once a response has started, a
// failure is a cut (the forwarder's), never a second attempt.

import type { ReplicaRef } from '../balancer/selector.js';
import type { Rejection } from './phases.js';
import type { ForwardReport } from './request-context.js';

/** Attempts per request at most, the first included. */
export const MAX_ATTEMPTS = 4;

export type AttemptFailure =
  | { kind: 'connect'; detail: string }
  | { kind: 'upstream'; detail: string }
  | { kind: 'timeout'; detail: string }
  | { kind: 'local'; detail: string };

export class CandidateLoop {
  private readonly order: readonly ReplicaRef[];
  private index = -1;

  constructor(
    private readonly ctx: ForwardReport,
    candidates: readonly ReplicaRef[],
    isEjected: (replicaId: number) => boolean,
    /** Sends the request to one replica; the transport reports back through `failed`. */
    private readonly send: (replica: ReplicaRef) => void,
    private readonly maxAttempts = MAX_ATTEMPTS,
  ) {
    const live = candidates.filter((c) => !isEjected(c.id));
    this.order = live.length > 0 ? live : candidates; // all ejected: try them anyway
  }

  /** The number of attempts started so far. */
  get attempts(): number {
    return this.index + 1;
  }

  start(): void {
    if (this.order.length === 0) {
      return this.ctx.fail({ status: 503, code: 'unavailable', message: `deployment ${this.deployment} has no ready replica` });
    }
    this.next();
  }

  /**
   * An attempt failed before any byte of its response reached the client. `replayable`: the
   * request's body can be sent again (held whole, or not read yet).
   */
  failed(replica: ReplicaRef, failure: AttemptFailure, replayable: boolean, err?: Error): void {
    if (this.ctx.ended) return;
    if (failure.kind === 'connect') this.ctx.connectionFailed(replica);
    if (failure.kind === 'connect' && replayable && this.index + 1 < Math.min(this.order.length, this.maxAttempts)) {
      this.ctx.retrying();
      return this.next();
    }
    this.ctx.upstreamError(replica, err ?? new Error(failure.detail));
    this.ctx.fail(this.rejection(replica, failure));
  }

  private next(): void {
    this.index++;
    const replica = this.order[this.index]!;
    this.ctx.attempt(replica);
    this.send(replica);
  }

  private get deployment(): string {
    return this.ctx.route?.name ?? '';
  }

  private rejection(replica: ReplicaRef, failure: AttemptFailure): Rejection {
    const name = this.deployment;
    switch (failure.kind) {
      case 'timeout':
        return { status: 504, code: 'gateway_timeout', message: `replica ${replica.id} of ${name} sent no response in time (${failure.detail})` };
      case 'connect':
        return { status: 502, code: 'bad_gateway', message: `no replica of ${name} accepted the connection (tried ${this.attempts}; last: ${failure.detail})` };
      default:
        return { status: 502, code: 'bad_gateway', message: `replica ${replica.id} of ${name} failed before answering (${failure.detail})` };
    }
  }
}
