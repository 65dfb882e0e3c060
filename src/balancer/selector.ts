// Owns the one interface every replica-selection policy implements (Caddy's selection
// policies and Pingora's candidate iterator are the models): a policy returns the replicas in
// the order to try them, so the forwarder's retry loop never knows which policy chose.

export interface ReplicaRef {
  readonly id: number;
  readonly address: string;
  /** The deployment revision the replica runs (set by the gateway's routing table; absent elsewhere). */
  readonly revision?: number;
  /**
   * Where its engine's Prometheus metrics are when they are not `/metrics` on `address` (the
   * spec's metrics_port and metrics_path: a gRPC engine, or one serving them apart), as
   * `http://host:port/path`; absent: `/metrics` on its address, for HTTP replicas.
   */
  readonly metrics?: string;
}

/** In-flight requests per replica, as counted by the gateway right now. */
export interface LoadView {
  inflight(replicaId: number): number;
}

export interface Selector {
  /**
   * Ordered candidates: the first is the choice, the rest the fallback order for retries.
   * Contains every replica exactly once; empty only when `replicas` is empty.
   */
  select(replicas: readonly ReplicaRef[], load: LoadView, key: string | null): ReplicaRef[];
}

/** What a placement policy may know of a request when it places it. */
export interface PlacementRequest {
  /** The deployment the request is for: the same session id on two deployments is two conversations. */
  scope: number;
  /** The session hint (X-Session-Id); null: none. */
  session: string | null;
  /** The request body when it is already in whole (an LLM prompt); null: not known yet. */
  body: Buffer | null;
  /**
   * How many more requests each replica takes before it queues (flow control's view; 0 or
   * less: saturated). A policy that weighs load may send a request to a replica with room
   * first; absent: not known.
   */
  room?(replicaId: number): number;
}

/** Tokens a response reported (or the gateway estimated), for policies that learn from them. */
export interface PlacementUsage {
  prompt: number;
  completion: number;
  /** An estimate made at the gateway, not the replica's count. */
  estimated?: boolean;
}

/**
 * What happens to a placed request after the choice, for policies that keep books on their
 * replicas (what each was sent, what it still owes). Every hook is optional; the request
 * context calls them, and only them, whichever policy placed the request.
 */
export interface PlacementHooks {
  /** An attempt goes to `replica` now; the previous attempt, if any, is over. */
  attemptStarted?(replica: ReplicaRef): void;
  /** The first byte of the response body reached the client. */
  firstByte?(): void;
  /** The response reported its token usage. */
  usage?(tokens: PlacementUsage): void;
  /** The request ended, however. */
  end?(): void;
}

/** A session kept on its replica, moved off it, or placed for the first time. */
export type SessionDecision = 'kept' | 'moved' | 'new';

export interface Placement {
  /** Every replica once, in the order to try them. */
  order: readonly ReplicaRef[];
  /** What the policy did with the request's session, when it has one and the policy says. */
  session: SessionDecision | null;
  hooks: PlacementHooks | null;
  /**
   * For the replica an attempt went to, the prefill tokens it had to do before this request's
   * first token (its uncached prompt and what it still owed at dispatch), for the latency
   * model's samples; absent: the policy does not read prompts (0).
   */
  tokensAhead?(replica: ReplicaRef): number;
}

/**
 * One request's first token, as the gateway saw it: what the latency model (latency-model.ts)
 * learns from. Declared with the placement interface because the gateway's request path
 * reports it, and that path knows the balancer only through this file.
 */
export interface LatencySample {
  replicaId: number;
  /** The deployment: replicas of one deployment share a prior. */
  scope: number;
  /**
   * Prefill tokens the replica had to do before this request's first token: its uncached
   * prompt tokens + what it still owed at dispatch (0 when unknown, e.g. a policy that does
   * not read prompts).
   */
  tokensAhead: number;
  /** Requests in flight on that replica at dispatch, this one excluded. */
  inflight: number;
  /** Dispatch → first byte of the response body. */
  ttftMs: number;
}

/** A replica-selection policy as the gateway uses it: the order, and hooks for its books. */
export interface PlacementPolicy {
  place(replicas: readonly ReplicaRef[], load: LoadView, request: PlacementRequest): Placement;
}

/**
 * The `affinity` routing policy: a request with a session goes where consistent hashing puts
 * it, one without to the less loaded of two; neither keeps books after the choice.
 */
export function sessionOrLoadPolicy(bySession: Selector, byLoad: Selector): PlacementPolicy {
  return {
    place: (replicas, load, request) => ({
      order: request.session !== null ? bySession.select(replicas, load, request.session) : byLoad.select(replicas, load, null),
      session: null,
      hooks: null,
    }),
  };
}
