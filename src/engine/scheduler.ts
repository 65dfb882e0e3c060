// Owns the simulated continuous-batching scheduler shared by every request of the engine:
// at most maxRunning sequences run, the rest wait in FIFO order. A running sequence emits its
// first token ttftMs after it starts, then one token per inter-token interval, where the
// interval is recomputed before every token from the number of sequences running at that
// moment: itl = itlMs × (1 + itlGrowth × (running − 1)). That is how decode slows down as a
// real GPU batch grows.
//
// Choice: one request is one sequence holding one slot, and its n choices advance in lockstep
// (one "step" emits the next token of every choice that still has one). vLLM fans n out into
// n sequences; one slot per request keeps the queue arithmetic readable for operators and
// tests (max-running 1 really means one request at a time).
//
// Prefill (--prefill-ms-per-token): a sequence whose prompt is not all cached first waits for
// its turn on ONE prefill lane, shared by every running sequence and worked in FIFO order, for
// prefillMs; its first token comes ttftMs after that. A GPU prefills a batch's new prompts one
// chunk budget at a time, so a long uncached prompt delays the first tokens of the prompts
// behind it: the effect that makes cache-aware routing pay. With prefillMs 0 a sequence skips
// the lane, and the timing is exactly as without it.
//
// Timing is plain setTimeout per sequence: nothing polls, an idle engine costs nothing, and
// an aborted sequence (client gone) frees its slot at once.

export interface SchedulerTiming {
  ttftMs: number;
  itlMs: number;
  itlGrowth: number;
  maxRunning: number;
}

export interface SequenceSpec {
  /** The model label the sequence counts under (metrics). */
  model: string;
  /** Tokens to emit: the longest choice; at least 1. */
  steps: number;
  /**
   * The prompt's KV cache came from elsewhere (a disaggregated decode worker pulled it from a
   * prefill worker): no prefill here, so the first token comes one inter-token interval after
   * the start instead of ttftMs.
   */
  skipPrefill?: boolean;
  /** Prefill time of the uncached part of its prompt, on the shared prefill lane (default 0). */
  prefillMs?: number;
  /** Left the queue (prefill begins). */
  onStart?(): void;
  /** Its prefill is done (the prompt's KV blocks exist): at start when it has none to do. */
  onPrefilled?(): void;
  /** Step `step` (0-based) is emitted; step 0 is the first token. */
  onStep(step: number): void;
  /** The last step was emitted; the slot is already free. */
  onFinish(): void;
}

export type SequenceState = 'waiting' | 'running' | 'finished' | 'aborted';

export interface SequenceHandle {
  readonly state: SequenceState;
  /** Removes a waiting sequence from the queue or stops a running one; no more callbacks. */
  abort(): void;
}

/** The timer functions the scheduler uses, so tests may substitute their own. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

class Sequence implements SequenceHandle {
  state: SequenceState = 'waiting';
  timer: unknown = null;
  step = 0;
  constructor(
    readonly spec: SequenceSpec,
    private readonly scheduler: Scheduler,
  ) {}
  abort(): void {
    this.scheduler.abort(this);
  }
}

export class Scheduler {
  private readonly queue: Sequence[] = [];
  private readonly active = new Set<Sequence>();
  /** Running sequences waiting for the prefill lane, and the one on it. */
  private readonly lane: Sequence[] = [];
  private prefilling: Sequence | null = null;
  private idleWaiters: Array<() => void> = [];

  private readonly timers: Timers;
  private readonly onCallbackError: (err: unknown) => void;

  constructor(
    private readonly timing: SchedulerTiming,
    hooks: { timers?: Timers; onCallbackError?: (err: unknown) => void } = {},
  ) {
    this.timers = hooks.timers ?? realTimers;
    this.onCallbackError = hooks.onCallbackError ?? ((err) => queueMicrotask(() => {
      throw err;
    }));
  }

  get running(): number {
    return this.active.size;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** The inter-token interval a running sequence gets right now. */
  currentItlMs(): number {
    const running = Math.max(1, this.active.size);
    return this.timing.itlMs * (1 + this.timing.itlGrowth * (running - 1));
  }

  /** Running and waiting sequences by model label. */
  countsByModel(): Map<string, { running: number; waiting: number }> {
    const counts = new Map<string, { running: number; waiting: number }>();
    const entry = (model: string) => {
      let c = counts.get(model);
      if (!c) counts.set(model, (c = { running: 0, waiting: 0 }));
      return c;
    };
    for (const s of this.active) entry(s.spec.model).running++;
    for (const s of this.queue) entry(s.spec.model).waiting++;
    return counts;
  }

  submit(spec: SequenceSpec): SequenceHandle {
    if (!Number.isInteger(spec.steps) || spec.steps < 1) throw new RangeError(`a sequence needs at least one step, not ${spec.steps}`);
    const seq = new Sequence(spec, this);
    this.queue.push(seq);
    this.admit();
    return seq;
  }

  /** Resolves once nothing runs or waits (used to drain on shutdown). */
  idle(): Promise<void> {
    if (this.active.size === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  abort(seq: Sequence): void {
    if (seq.state === 'waiting') {
      const at = this.queue.indexOf(seq);
      if (at >= 0) this.queue.splice(at, 1);
      seq.state = 'aborted';
      this.settle();
      return;
    }
    if (seq.state === 'running') {
      if (seq.timer !== null) this.timers.clearTimeout(seq.timer);
      seq.timer = null;
      seq.state = 'aborted';
      this.active.delete(seq);
      const queued = this.lane.indexOf(seq);
      if (queued >= 0) this.lane.splice(queued, 1);
      if (this.prefilling === seq) {
        this.prefilling = null;
        this.runLane();
      }
      this.admit();
      this.settle();
    }
  }

  /** Moves queued sequences into free slots, oldest first. */
  private admit(): void {
    while (this.active.size < this.timing.maxRunning && this.queue.length > 0) {
      const seq = this.queue.shift() as Sequence;
      seq.state = 'running';
      this.active.add(seq);
      this.call(seq, () => seq.spec.onStart?.());
      if (seq.state !== 'running') continue; // aborted from inside onStart
      if (!seq.spec.skipPrefill && (seq.spec.prefillMs ?? 0) > 0) {
        this.lane.push(seq);
        this.runLane();
        continue;
      }
      const firstMs = seq.spec.skipPrefill ? this.currentItlMs() : this.timing.ttftMs;
      seq.timer = this.timers.setTimeout(() => this.tick(seq), firstMs);
      this.call(seq, () => seq.spec.onPrefilled?.());
    }
  }

  /** Starts the next prefill when the lane is free; its first token follows ttftMs after it. */
  private runLane(): void {
    if (this.prefilling !== null) return;
    const seq = this.lane.shift();
    if (!seq) return;
    this.prefilling = seq;
    seq.timer = this.timers.setTimeout(() => {
      this.prefilling = null;
      seq.timer = this.timers.setTimeout(() => this.tick(seq), this.timing.ttftMs);
      this.call(seq, () => seq.spec.onPrefilled?.());
      this.runLane();
    }, seq.spec.prefillMs ?? 0);
  }

  private tick(seq: Sequence): void {
    seq.timer = null;
    if (seq.state !== 'running') return;
    const step = seq.step++;
    this.call(seq, () => seq.spec.onStep(step));
    if (seq.state !== 'running') return; // aborted from inside onStep
    if (seq.step >= seq.spec.steps) {
      seq.state = 'finished';
      this.active.delete(seq);
      this.admit();
      this.call(seq, () => seq.spec.onFinish());
      this.settle();
      return;
    }
    seq.timer = this.timers.setTimeout(() => this.tick(seq), this.currentItlMs());
  }

  /** A callback that throws must not wedge the scheduler: its sequence is aborted instead. */
  private call(seq: Sequence, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.abort(seq);
      this.onCallbackError(err);
    }
  }

  private settle(): void {
    if (this.active.size > 0 || this.queue.length > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
