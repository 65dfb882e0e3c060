// Owns what this gateway measured of each revision of each deployment over the last five
// minutes, in 5-second steps (domain/revision-stats.ts): requests that reached a replica of the
// revision, those answered 5xx, completion tokens, and a histogram of the time to first token
// of streamed answers. The load report carries it to the autoscaler (the `ttft` signal) and
// the control API (revisions side by side). A request that never reached a replica belongs to
// no revision and is not here (it is in the deployment's own metrics and usage).

import type { Clock } from '../core/clock.js';
import { sumSteps } from '../domain/load-report.js';
import { emptyStats, STATS_STEP_MS, STATS_STEPS, ttftBucket, type RevisionStep } from '../domain/revision-stats.js';

/** A step is kept while any of it is within the last five minutes (windowStats counts it so too). */
const KEPT_MS = STATS_STEPS * STATS_STEP_MS + STATS_STEP_MS;

export class RevisionHistory {
  /** Per deployment, per revision: steps oldest first, only those in which something ended. */
  private readonly deployments = new Map<number, Map<number, RevisionStep[]>>();

  constructor(private readonly clock: Clock) {}

  /**
   * A request that reached a replica of `revision` ended with `status`; `ttftMs`: arrival to
   * the first chunk of a streamed answer, null for any other answer.
   */
  record(deploymentId: number, revision: number, status: number, completionTokens: number, ttftMs: number | null): void {
    const now = this.clock.now();
    const start = now - (now % STATS_STEP_MS);
    let byRevision = this.deployments.get(deploymentId);
    if (!byRevision) {
      byRevision = new Map();
      this.deployments.set(deploymentId, byRevision);
    }
    let steps = byRevision.get(revision);
    if (!steps) {
      steps = [];
      byRevision.set(revision, steps);
    }
    let step = steps.at(-1);
    // A clock stepping back adds to the last step rather than reordering history.
    if (step === undefined || step.start < start) {
      while (steps.length > 0 && steps[0]!.start <= now - KEPT_MS) steps.shift();
      step = { start, ...emptyStats() };
      steps.push(step);
    }
    step.requests += 1;
    if (status >= 500) step.errors += 1;
    if (completionTokens > 0) step.completion_tokens += completionTokens;
    if (ttftMs !== null) step.ttft[ttftBucket(ttftMs)]! += 1;
  }

  /** One revision's steps of the last five minutes, oldest first (copies); null revision: the deployment's, summed. */
  steps(deploymentId: number, revision: number | null): RevisionStep[] {
    const byRevision = this.deployments.get(deploymentId);
    if (!byRevision) return [];
    const from = this.clock.now() - KEPT_MS;
    const recent = (steps: readonly RevisionStep[]) => steps.filter((s) => s.start > from).map((s) => ({ ...s, ttft: s.ttft.slice() }));
    if (revision !== null) return recent(byRevision.get(revision) ?? []);
    return sumSteps([...byRevision.values()].map(recent));
  }

  /** Revisions of a deployment with a step in the last five minutes (others are forgotten here). */
  revisions(deploymentId: number): number[] {
    const byRevision = this.deployments.get(deploymentId);
    if (!byRevision) return [];
    const from = this.clock.now() - KEPT_MS;
    for (const [revision, steps] of byRevision) if ((steps.at(-1)?.start ?? -Infinity) <= from) byRevision.delete(revision);
    if (byRevision.size === 0) this.deployments.delete(deploymentId);
    return [...byRevision.keys()];
  }

  /** Deployments with history. */
  deploymentIds(): number[] {
    return [...this.deployments.keys()];
  }

  /** Forgets deployments that left the routing table (deleted: ids are never reused). */
  retain(deploymentIds: { has(id: number): boolean }): void {
    for (const id of this.deployments.keys()) if (!deploymentIds.has(id)) this.deployments.delete(id);
  }
}
