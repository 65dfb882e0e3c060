// Owns one generation: the completions of a chat request (one per choice) played through the
// shared scheduler, with the vLLM metrics recorded on the way. The API modules only format
// what it reports (SSE chunks, NDJSON lines, one JSON body) and abort it when their client
// goes away.

import type { EngineMetrics } from './metrics.js';
import type { Scheduler, SequenceHandle } from './scheduler.js';
import type { Completion, FinishReason } from './text.js';

export interface GenerationContext {
  scheduler: Scheduler;
  metrics: EngineMetrics;
}

/** One choice's token at a step; finishReason is set on that choice's last token. */
export interface ChoiceDelta {
  index: number;
  text: string;
  finishReason: FinishReason | null;
}

/** performance.now() instants of one generation, for durations clients are told about. */
export interface GenerationTimings {
  arrivedAt: number;
  startedAt: number | null;
  firstTokenAt: number | null;
  finishedAt: number | null;
}

export interface GenerationSpec {
  /** The served model name (metrics label). */
  model: string;
  completions: readonly Completion[];
  promptTokens: number;
  /** The KV cache was transferred in: decode only (see SequenceSpec.skipPrefill). */
  skipPrefill?: boolean;
  /** Prefill lane time of the uncached prompt (SequenceSpec.prefillMs). */
  prefillMs?: number;
  /** The prefill is done (SequenceSpec.onPrefilled). */
  onPrefilled?(): void;
  onStep(step: number, deltas: ChoiceDelta[]): void;
  onFinish(): void;
}

export interface Generation {
  readonly timings: GenerationTimings;
  readonly ended: boolean;
  /** Stops (or dequeues) the generation and counts its choices as aborted; no-op once ended. */
  abort(): void;
}

export function startGeneration(ctx: GenerationContext, spec: GenerationSpec): Generation {
  const { metrics } = ctx;
  const timings: GenerationTimings = { arrivedAt: performance.now(), startedAt: null, firstTokenAt: null, finishedAt: null };
  const steps = Math.max(...spec.completions.map((c) => c.tokens.length));
  let lastTokenAt = 0;
  let ended = false;

  const handle: SequenceHandle = ctx.scheduler.submit({
    model: spec.model,
    steps,
    skipPrefill: spec.skipPrefill === true,
    prefillMs: spec.prefillMs ?? 0,
    onPrefilled: spec.onPrefilled,
    onStart() {
      timings.startedAt = performance.now();
    },
    onStep(step) {
      const now = performance.now();
      if (step === 0) {
        timings.firstTokenAt = now;
        metrics.promptTokens(spec.model, spec.promptTokens);
        metrics.firstToken(spec.model, (now - timings.arrivedAt) / 1000);
      } else {
        metrics.interToken(spec.model, (now - lastTokenAt) / 1000);
      }
      lastTokenAt = now;
      const deltas: ChoiceDelta[] = [];
      spec.completions.forEach((c, index) => {
        const text = c.tokens[step];
        if (text === undefined) return;
        deltas.push({ index, text, finishReason: step === c.tokens.length - 1 ? c.finishReason : null });
      });
      metrics.generationTokens(spec.model, deltas.length);
      spec.onStep(step, deltas);
    },
    onFinish() {
      ended = true;
      timings.finishedAt = performance.now();
      for (const c of spec.completions) metrics.finished(spec.model, c.finishReason);
      metrics.endToEnd(spec.model, (timings.finishedAt - timings.arrivedAt) / 1000);
      spec.onFinish();
    },
  });

  return {
    timings,
    get ended() {
      return ended;
    },
    abort() {
      if (ended) return;
      ended = true;
      handle.abort();
      metrics.finished(spec.model, 'abort', spec.completions.length);
    },
  };
}
