// Owns the prefix-aware selection policy (docs/routing.md): for an LLM endpoint, the replica
// with the lowest predicted time to first token (TTFT) for this prompt now. The prediction is
// the latency model's (latency-model.ts, learnt from the first tokens the gateway sees) for
//   the prefill still to do there — the prompt's blocks the replica is not thought to hold
//                                    (prefix-index.ts), plus the prefill the gateway sent it
//                                    that has not produced a first byte yet, in tokens;
//   its load                       — in-flight requests as the gateway counts them now, past
//                                    its learnt concurrency limit a queue turn each;
// plus, where the replica exposes them (vLLM's vllm:num_requests_waiting and
// vllm:kv_cache_usage_perc), its own queue and KV pressure in queue turns. Everything is in
// milliseconds, so a slow replica, a full batch and a long uncached prompt weigh against each
// other as what they cost the client. Prefix scoring alone piles popular prefixes onto one
// replica, load alone throws the cache away; llm-d's endpoint picker, Dynamo's KV router and
// the SGLang router all combine the two for that reason.
// X-Session-Id is a strong hint, never a pin: a session stays on its replica unless moving
// saves more than a margin of its predicted TTFT (its cache is already counted in the cost).
// The policy never feeds the model: the gateway observes every request in one place
// (Placement.tokensAhead says what this policy knows of the prefill an attempt faced).

import type { LoadView, Placement, PlacementPolicy, PlacementRequest, ReplicaRef, SessionDecision, Selector } from './selector.js';

export type { SessionDecision };
import { LatencyModel } from './latency-model.js';
import { PrefixIndex } from './prefix-index.js';
import { DEFAULT_BLOCK_CHARS, requestBlocks } from './prompt-blocks.js';

/**
 * Characters of prompt per token until responses tell (the usual rule of thumb for BPE
 * tokenisers); learnt from `usage.prompt_tokens`, since code, other languages and other
 * tokenisers differ by a factor of two or more either way.
 */
const DEFAULT_CHARS_PER_TOKEN = 4;
/** KV usage above which the replica evicts: what it is thought to hold is less certain, and new sequences wait for memory. */
const KV_PRESSURE_FROM = 0.9;

/** What a replica says about itself (scraped); null fields: it does not expose them. */
export interface ReplicaSignals {
  running: number | null;
  waiting: number | null;
  /** 0..1 */
  kvUsage: number | null;
}

/** Recent replica signals; null when none is fresh enough to trust. */
export interface SignalView {
  signals(replicaId: number): ReplicaSignals | null;
}

export interface PrefixRequest {
  /** The session hint (already scoped to the deployment); null: none. */
  session: string | null;
  /** Chained block hashes of the prompt (prompt-blocks.ts); null: the prompt is not known. */
  blocks: readonly number[] | null;
  /** The deployment, whose replicas share what the latency model learnt (default 0). */
  scope?: number;
  /** Flow control's room per replica (PlacementRequest.room); absent: not known. */
  room?(replicaId: number): number;
}


export interface PrefixChoice {
  /** Every replica once, cheapest first: the choice, then the fallback order. */
  order: ReplicaRef[];
  session: SessionDecision | null;
  /** Prefill tokens the choice faces, as of the choice (0 with no replicas). */
  tokensAhead: number;
}

/** One request's hold on the policy's books; both calls are idempotent. */
export interface Dispatch {
  /** The replica started answering: its prefill for this request is done. */
  firstByte(): void;
  /** The request ended, however. */
  end(): void;
  /** Prefill tokens the replica faced at dispatch: this prompt's uncached part and what it already owed. */
  readonly tokensAhead?: number;
}

export interface PrefixAwareOptions {
  /**
   * The latency model whose predictions are the cost (the gateway shares one with its other
   * users and feeds it); default: one of its own, at its prior, which retain() keeps in step.
   */
  model?: LatencyModel;
  /**
   * How much faster another replica must be predicted before a session moves, as a share of
   * its own replica's predicted TTFT (default 0.25), and at least moveFloorMs (default 10).
   */
  moveMargin?: number;
  moveFloorMs?: number;
  /** Blocks remembered per replica when its capacity is not known (default 16,384). */
  indexBlocks?: number;
  /** Sessions remembered (default 65,536), least recently used forgotten first. */
  sessions?: number;
  random?: () => number;
}

/** Added to the cost of a replica with no room, so that any replica with room is cheaper. */
const SATURATED_MS = 1e9;

const NO_SIGNALS: SignalView = { signals: () => null };

export class PrefixAwareSelector implements Selector, PlacementPolicy {
  readonly index: PrefixIndex;
  readonly model: LatencyModel;
  /** A model made here has no other owner to forget replicas for it. */
  private readonly ownsModel: boolean;
  private readonly moveMargin: number;
  private readonly moveFloorMs: number;
  private readonly maxSessions: number;
  private readonly random: () => number;
  /** Session → the replica its last request went to. */
  private readonly sessions = new Map<string, number>();
  /** Prefill blocks sent to each replica that have not produced a first byte yet. */
  private readonly outstanding = new Map<number, number>();
  private charsPerToken = DEFAULT_CHARS_PER_TOKEN;

  constructor(
    opts: PrefixAwareOptions = {},
    private readonly signals: SignalView = NO_SIGNALS,
  ) {
    this.ownsModel = opts.model === undefined;
    this.model = opts.model ?? new LatencyModel();
    this.moveMargin = opts.moveMargin ?? 0.25;
    this.moveFloorMs = opts.moveFloorMs ?? 10;
    this.maxSessions = opts.sessions ?? 65_536;
    this.random = opts.random ?? Math.random;
    this.index = new PrefixIndex(opts.indexBlocks ?? 16_384);
  }

  /** The Selector interface: a session key and nothing known of the prompt. */
  select(replicas: readonly ReplicaRef[], load: LoadView, key: string | null): ReplicaRef[] {
    return this.choose(replicas, load, { session: key, blocks: null }).order;
  }

  /**
   * The PlacementPolicy interface: the prompt's blocks when the body is in whole, hooks that
   * keep the books of each attempt (what the replica now holds and owes) and learn the
   * tokenizer's ratio from reported usage, and the prefill each attempt faced, for the
   * latency model's samples.
   */
  place(replicas: readonly ReplicaRef[], load: LoadView, request: PlacementRequest): Placement {
    const prefix: PrefixRequest = {
      session: request.session === null ? null : `${request.scope}\u0000${request.session}`,
      blocks: request.body === null ? null : requestBlocks(request.body),
      scope: request.scope,
      room: request.room,
    };
    const choice = this.choose(replicas, load, prefix);
    const chosen = choice.order[0]?.id;
    let dispatch: Dispatch | null = null;
    let dispatchedTo = -1;
    /** What earlier attempts' replicas faced, should a caller ask after a retry. */
    let earlier: Map<number, number> | null = null;
    return {
      order: choice.order,
      session: choice.session,
      // Asked before or after the attempt starts, the same answer: once dispatched, what the
      // replica faced then; before, what it would face now (for the first choice, known from
      // the choice a moment ago).
      tokensAhead: (replica) => {
        if (replica.id === dispatchedTo) return dispatch?.tokensAhead ?? 0;
        if (dispatch === null && replica.id === chosen) return choice.tokensAhead;
        return earlier?.get(replica.id) ?? this.tokensAhead(replica.id, prefix.blocks);
      },
      hooks: {
        attemptStarted: (replica) => {
          if (dispatch !== null) {
            dispatch.end();
            (earlier ??= new Map()).set(dispatchedTo, dispatch.tokensAhead ?? 0);
          }
          dispatch = this.dispatched(replica, prefix);
          dispatchedTo = replica.id;
        },
        firstByte: () => dispatch?.firstByte(),
        end: () => dispatch?.end(),
        usage: (tokens) => {
          // An estimate says nothing of the replica's tokenizer: only reported usage calibrates.
          if (prefix.blocks !== null && !tokens.estimated) this.promptTokens(prefix.blocks.length, tokens.prompt);
        },
      },
    };
  }

  choose(replicas: readonly ReplicaRef[], load: LoadView, request: PrefixRequest): PrefixChoice {
    const n = replicas.length;
    const previous = request.session === null ? undefined : this.sessions.get(request.session);
    if (n === 0) return { order: [], session: null, tokensAhead: 0 };
    const costs = new Float64Array(n);
    const ahead = new Float64Array(n);
    const saturated = new Float64Array(n);
    const start = Math.floor(this.random() * n);
    const scope = request.scope ?? 0;
    let best = -1;
    let stay = -1;
    for (let k = 0; k < n; k++) {
      const i = (start + k) % n;
      const r = replicas[i]!;
      ahead[i] = this.tokensAhead(r.id, request.blocks);
      costs[i] = this.costAt(r.id, load, ahead[i]!, scope);
      // A replica at its limit makes the request wait for one of its requests to end, which
      // the learnt queue turn underestimates when requests are long: one with room comes first.
      saturated[i] = request.room !== undefined && request.room(r.id) <= 0 ? SATURATED_MS : 0;
      costs[i]! += saturated[i]!;
      if (best === -1 || costs[i]! < costs[best]!) best = i;
      if (r.id === previous) stay = i;
    }
    let chosen = best;
    let session: SessionDecision | null = null;
    if (request.session !== null) {
      if (stay === -1) session = 'new';
      else if (costs[stay]! - costs[best]! <= Math.max(this.moveFloorMs, this.moveMargin * (costs[stay]! - saturated[stay]!))) {
        chosen = stay;
        session = 'kept';
      } else session = 'moved';
    }
    const rest = Array.from({ length: n }, (_, i) => i).filter((i) => i !== chosen);
    rest.sort((a, b) => costs[a]! - costs[b]!);
    return { order: [replicas[chosen]!, ...rest.map((i) => replicas[i]!)], session, tokensAhead: ahead[chosen]! };
  }

  /**
   * The request goes to `replica` (the first choice or a fallback): its prompt is now thought
   * to be cached there, its uncached part is prefill the replica owes until a first byte, and
   * its session follows it.
   */
  dispatched(replica: ReplicaRef, request: PrefixRequest): Dispatch {
    const id = replica.id;
    let owed = 0;
    if (request.blocks !== null) {
      const blocks = request.blocks;
      owed = blocks.length - this.index.match(id, blocks);
      this.index.record(id, blocks);
    }
    if (request.session !== null) this.remember(request.session, id);
    const before = this.owed(id);
    const tokensAhead = this.tokens(before + owed);
    if (owed > 0) this.outstanding.set(id, before + owed);
    let settled = owed === 0;
    const settle = (): void => {
      if (settled) return;
      settled = true;
      const left = (this.outstanding.get(id) ?? 0) - owed;
      if (left > 0) this.outstanding.set(id, left);
      else this.outstanding.delete(id);
    };
    return { firstByte: settle, end: settle, tokensAhead };
  }

  /** Forgets replicas that left: their index, their debts, and sessions pointing at them (and, in a model of its own, what it learnt of them). */
  retain(present: ReadonlySet<number>): void {
    this.index.retain(present);
    for (const id of this.outstanding.keys()) if (!present.has(id)) this.outstanding.delete(id);
    for (const [session, id] of this.sessions) if (!present.has(id)) this.sessions.delete(session);
    if (this.ownsModel) this.model.retain(present);
  }

  /** The replica said its KV cache holds this many tokens: remember about as much prompt for it. */
  cacheSize(replicaId: number, tokens: number): void {
    this.index.setCapacity(replicaId, Math.max(1, Math.ceil((tokens * this.charsPerToken) / DEFAULT_BLOCK_CHARS)));
  }

  /**
   * A response said how many tokens a prompt of `blocks` full blocks was: the ratio of
   * characters to tokens, which sizes the index from a replica's cache size in tokens.
   */
  promptTokens(blocks: number, tokens: number): void {
    if (blocks < 4 || tokens <= 0) return; // too short to say much (the partial block is left out)
    const sample = Math.min(16, Math.max(1, (blocks * DEFAULT_BLOCK_CHARS) / tokens));
    this.charsPerToken += (sample - this.charsPerToken) * 0.05;
  }

  /** Prefill blocks owed by a replica (tests, metrics). */
  owed(replicaId: number): number {
    return this.outstanding.get(replicaId) ?? 0;
  }

  /** Blocks of prompt as tokens, at the characters per token responses have shown. */
  tokens(blocks: number): number {
    return (blocks * DEFAULT_BLOCK_CHARS) / this.charsPerToken;
  }

  /** Prefill tokens a request with these blocks would face at the replica now: its uncached part and what the replica owes. */
  tokensAhead(replicaId: number, blocks: readonly number[] | null): number {
    const uncached = blocks === null ? 0 : blocks.length - this.index.match(replicaId, blocks);
    return this.tokens(uncached + this.owed(replicaId));
  }

  /**
   * The predicted TTFT of this prompt on this replica now, in ms: the latency model's
   * prediction for the prefill it would face and its in-flight count, plus what the replica
   * itself says — requests waiting in its queue beyond those the model already counts, and
   * KV pressure, each in the model's queue turns.
   */
  cost(replicaId: number, load: LoadView, blocks: readonly number[] | null, scope = 0): number {
    return this.costAt(replicaId, load, this.tokensAhead(replicaId, blocks), scope);
  }

  /** cost() for a request that would face `tokensAhead` prefill tokens there. */
  private costAt(replicaId: number, load: LoadView, tokensAhead: number, scope: number): number {
    const inflight = load.inflight(replicaId);
    let waiting = 0;
    let kvPressure = 0;
    const s = this.signals.signals(replicaId);
    if (s !== null) {
      // The batch it runs when it queues is the limit the model learns the slow way.
      if (s.running !== null) this.model.engineBatch(replicaId, scope, s.running, s.waiting ?? 0);
      waiting = s.waiting ?? 0;
      // Near full, it evicts (what it is thought to hold is less certain) and admits new
      // sequences only as memory frees: up to one queue turn at 100 %.
      if (s.kvUsage !== null && s.kvUsage > KV_PRESSURE_FROM) kvPressure = (s.kvUsage - KV_PRESSURE_FROM) / (1 - KV_PRESSURE_FROM);
    }
    let ms = this.model.predict(replicaId, scope, tokensAhead, inflight);
    if (waiting > 0 || kvPressure > 0) {
      // The scrape is up to a second old and the gateway's own count is not: a queue the
      // engine reports counts only past what the model already predicts from the count. A
      // newcomer waits behind every waiting request and for a slot: waiting + 1 turns.
      const beyond = (waiting > 0 ? waiting + 1 : 0) - this.model.queuePositions(replicaId, inflight);
      const turn = this.model.queueTurnMs(replicaId, scope);
      if (beyond > 0) ms += beyond * turn;
      ms += kvPressure * turn;
    }
    return ms;
  }

  private remember(session: string, replicaId: number): void {
    this.sessions.delete(session);
    this.sessions.set(session, replicaId);
    if (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next();
      if (!oldest.done) this.sessions.delete(oldest.value);
    }
  }
}
