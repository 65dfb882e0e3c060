// Owns the prefix-aware selection policy (docs/routing.md): for an LLM endpoint, the replica
// with the lowest estimated cost of serving this prompt first, where the cost weighs
//   the prefill still to do there  — the prompt's blocks the replica is not thought to hold
//                                    (prefix-index.ts), plus the prefill the gateway sent it
//                                    that has not produced a first byte yet;
//   against its load               — in-flight requests as the gateway counts them now, and
//                                    its own queue and KV usage where it exposes them (vLLM's
//                                    vllm:num_requests_waiting and vllm:kv_cache_usage_perc).
// Both sides are in blocks of prompt, so they compare without units: one in-flight request
// is worth a fraction of an average prompt, a queued one several. Prefix scoring alone piles
// popular prefixes onto one replica, load alone throws the cache away; llm-d's endpoint
// picker, Dynamo's KV router and the SGLang router all combine the two for that reason.
// X-Session-Id is a strong hint, never a pin: a session stays on its replica unless staying
// costs more than moving by a margin (its cache is already counted in the cost).

import type { LoadView, Placement, PlacementPolicy, PlacementRequest, ReplicaRef, SessionDecision, Selector } from './selector.js';

export type { SessionDecision };
import { PrefixIndex } from './prefix-index.js';
import { DEFAULT_BLOCK_CHARS, requestBlocks } from './prompt-blocks.js';

/**
 * Characters of prompt per token until responses tell (the usual rule of thumb for BPE
 * tokenisers); learnt from `usage.prompt_tokens`, since code, other languages and other
 * tokenisers differ by a factor of two or more either way.
 */
const DEFAULT_CHARS_PER_TOKEN = 4;

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
}


export interface PrefixChoice {
  /** Every replica once, cheapest first: the choice, then the fallback order. */
  order: ReplicaRef[];
  session: SessionDecision | null;
}

/** One request's hold on the policy's books; both calls are idempotent. */
export interface Dispatch {
  /** The replica started answering: its prefill for this request is done. */
  firstByte(): void;
  /** The request ended, however. */
  end(): void;
}

export interface PrefixAwareOptions {
  /**
   * Cost of one in-flight request, in average prompts (default 0.05): in a continuous batch a
   * running request slows a new one's first token little (it shares decode steps), while a
   * queued one delays it by a whole turn — hence the much larger queueWeight.
   */
  loadWeight?: number;
  /** Cost of one request queued at the replica, in average prompts (default 2). */
  queueWeight?: number;
  /** How much cheaper another replica must be before a session moves, in average prompts (default 0.25). */
  moveMargin?: number;
  /** Blocks remembered per replica when its capacity is not known (default 16,384). */
  indexBlocks?: number;
  /** Sessions remembered (default 65,536), least recently used forgotten first. */
  sessions?: number;
  random?: () => number;
}

const NO_SIGNALS: SignalView = { signals: () => null };

export class PrefixAwareSelector implements Selector, PlacementPolicy {
  readonly index: PrefixIndex;
  private readonly loadWeight: number;
  private readonly queueWeight: number;
  private readonly moveMargin: number;
  private readonly maxSessions: number;
  private readonly random: () => number;
  /** Session → the replica its last request went to. */
  private readonly sessions = new Map<string, number>();
  /** Prefill blocks sent to each replica that have not produced a first byte yet. */
  private readonly outstanding = new Map<number, number>();
  /** Running sequences at which a replica was seen queueing: its batch cap, as observed. */
  private readonly observedCap = new Map<number, number>();
  /** Average prompt length in blocks (exponentially weighted): the unit of load. */
  private meanBlocks = 32;
  private charsPerToken = DEFAULT_CHARS_PER_TOKEN;

  constructor(
    opts: PrefixAwareOptions = {},
    private readonly signals: SignalView = NO_SIGNALS,
  ) {
    this.loadWeight = opts.loadWeight ?? 0.05;
    this.queueWeight = opts.queueWeight ?? 2;
    this.moveMargin = opts.moveMargin ?? 0.25;
    this.maxSessions = opts.sessions ?? 65_536;
    this.random = opts.random ?? Math.random;
    this.index = new PrefixIndex(opts.indexBlocks ?? 16_384);
  }

  /** The Selector interface: a session key and nothing known of the prompt. */
  select(replicas: readonly ReplicaRef[], load: LoadView, key: string | null): ReplicaRef[] {
    return this.choose(replicas, load, { session: key, blocks: null }).order;
  }

  /**
   * The PlacementPolicy interface: the prompt's blocks when the body is in whole, and hooks
   * that keep the books of each attempt (what the replica now holds and owes) and learn the
   * tokenizer's ratio from reported usage.
   */
  place(replicas: readonly ReplicaRef[], load: LoadView, request: PlacementRequest): Placement {
    const prefix: PrefixRequest = {
      session: request.session === null ? null : `${request.scope}\u0000${request.session}`,
      blocks: request.body === null ? null : requestBlocks(request.body),
    };
    const choice = this.choose(replicas, load, prefix);
    let dispatch: Dispatch | null = null;
    return {
      order: choice.order,
      session: choice.session,
      hooks: {
        attemptStarted: (replica) => {
          dispatch?.end();
          dispatch = this.dispatched(replica, prefix);
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
    if (n === 0) return { order: [], session: null };
    const costs = new Float64Array(n);
    const start = Math.floor(this.random() * n);
    let best = -1;
    let stay = -1;
    for (let k = 0; k < n; k++) {
      const i = (start + k) % n;
      const r = replicas[i]!;
      costs[i] = this.cost(r.id, load, request.blocks);
      if (best === -1 || costs[i]! < costs[best]!) best = i;
      if (r.id === previous) stay = i;
    }
    let chosen = best;
    let session: SessionDecision | null = null;
    if (request.session !== null) {
      if (stay === -1) session = 'new';
      else if (costs[stay]! <= costs[best]! + this.moveMargin * this.meanBlocks) {
        chosen = stay;
        session = 'kept';
      } else session = 'moved';
    }
    const rest = Array.from({ length: n }, (_, i) => i).filter((i) => i !== chosen);
    rest.sort((a, b) => costs[a]! - costs[b]!);
    return { order: [replicas[chosen]!, ...rest.map((i) => replicas[i]!)], session };
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
      this.meanBlocks += (Math.max(blocks.length, 1) - this.meanBlocks) * 0.05;
    }
    if (request.session !== null) this.remember(request.session, id);
    this.outstanding.set(id, (this.outstanding.get(id) ?? 0) + owed);
    let settled = owed === 0;
    const settle = (): void => {
      if (settled) return;
      settled = true;
      const left = (this.outstanding.get(id) ?? 0) - owed;
      if (left > 0) this.outstanding.set(id, left);
      else this.outstanding.delete(id);
    };
    return { firstByte: settle, end: settle };
  }

  /** Forgets replicas that left: their index, their debts, and sessions pointing at them. */
  retain(present: ReadonlySet<number>): void {
    this.index.retain(present);
    for (const id of this.outstanding.keys()) if (!present.has(id)) this.outstanding.delete(id);
    for (const id of this.observedCap.keys()) if (!present.has(id)) this.observedCap.delete(id);
    for (const [session, id] of this.sessions) if (!present.has(id)) this.sessions.delete(session);
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

  /** The estimated cost of this prompt on this replica, in blocks. */
  cost(replicaId: number, load: LoadView, blocks: readonly number[] | null): number {
    const unit = Math.max(this.meanBlocks, 8);
    const uncached = blocks === null ? 0 : blocks.length - this.index.match(replicaId, blocks);
    const inflight = load.inflight(replicaId);
    let queued = 0;
    let kvPressure = 0;
    const s = this.signals.signals(replicaId);
    if (s !== null) {
      if (s.waiting !== null && s.waiting > 0 && s.running !== null && s.running > 0) this.observedCap.set(replicaId, s.running);
      queued = s.waiting ?? 0;
      // Above 90 % the replica is evicting: what it is thought to hold is less certain.
      if (s.kvUsage !== null && s.kvUsage > 0.9) kvPressure = (s.kvUsage - 0.9) * 10;
    }
    // The scrape is a second old; the gateway's own count is not. Past the batch cap the
    // replica has seen, a new request waits.
    const cap = this.observedCap.get(replicaId);
    if (cap !== undefined) queued = Math.max(queued, inflight + 1 - cap);
    return uncached + this.owed(replicaId) + unit * (this.loadWeight * inflight + this.queueWeight * Math.max(0, queued) + kvPressure);
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
