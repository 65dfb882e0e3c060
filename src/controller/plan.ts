// Owns the controller's plan for one deployment as pure functions: from the components it
// should run (with their desired counts) and a snapshot of the replicas it runs now, which
// replicas to start and which to retire, and why. The controller performs the actions in
// the order given; rollout.ts then says how the rollout stands.
//
// One revision (traffic names one: planReplicas): a component no longer planned is retired
// whole; with nothing runnable, or a desired count of zero, a component is retired whole;
// otherwise missing replicas of the revision to run are started and surplus ones retired.
// During a rolling update at most `surge` replicas run beyond the desired count, and a
// replica of another revision is retired only once a new one is ready to take its place, so
// capacity never drops — also when a traffic split ends and its other revisions go.
//
// A traffic split (planSplit): every revision of the split runs its own replicas at its own
// count, a failed one runs nothing; replicas of revisions outside the split are retired only
// once every revision of the split serves (a ready replica of the routed component) or the
// split is a minute old (SPLIT_DRAIN_MS; splitDrainAt says when, so the controller sets a
// timer for it), so the gateway always has somewhere to send a share that moved.
//
// Replicas are retired in this order: not yet ready first, then the least loaded, then the
// newest.

import type { DeploymentRecord } from '../domain/records.js';
import { soleRevisionOf } from '../domain/traffic.js';

/**
 * How long after an edit revisions outside a traffic split keep their replicas while a
 * revision of the split has no ready one: past it they go anyway, so a revision that never
 * gets ready does not hold the capacity of one that takes no traffic.
 */
export const SPLIT_DRAIN_MS = 60_000;

/** A running (not retiring) replica, as the controller sees it at the start of a pass. */
export interface LiveReplica {
  recordId: number;
  component: string;
  revision: number;
  ready: boolean;
  /** Requests in flight at it (the gateway's count; 0 without one). */
  inflight: number;
}

export interface ComponentTarget {
  component: string;
  desired: number;
}

export interface PlanInput {
  /** The deployment's current revision (named when it failed). */
  revision: number;
  /** The revision to run replicas of (runRevision), null when there is none. */
  runRevision: number | null;
  /** Whether the revision to run has a spec this controller can start. */
  runnable: boolean;
  paused: boolean;
  components: readonly ComponentTarget[];
  replicas: readonly LiveReplica[];
  /** Replicas a rolling update may run beyond the desired count. */
  surge: number;
}

export type Action = { kind: 'start'; component: string; revision: number } | { kind: 'retire'; recordId: number; reason: string };

/**
 * The revision to run without a split: the one traffic sends everything to (normally the
 * newest), unless its rollout failed — then the one serving.
 */
export function runRevisionOf(d: Pick<DeploymentRecord, 'revision' | 'serving_revision' | 'revisions' | 'traffic'>): number | null {
  const target = soleRevisionOf(d);
  const failed = d.revisions.find((r) => r.revision === target)?.status === 'failed';
  return failed ? (d.serving_revision ?? null) : target;
}

/** One revision of a traffic split, as the plan sees it. */
export interface RevisionTarget {
  revision: number;
  /** Why it runs nothing (it failed, its spec cannot run here); null: it runs. */
  blocked: string | null;
  components: readonly ComponentTarget[];
}

export interface SplitPlanInput {
  /** The revisions traffic splits between (domain/traffic.ts: splitOf), tag-only ones included. */
  split: readonly RevisionTarget[];
  paused: boolean;
  /** The component requests reach (routedComponent): a revision serves once one of its replicas is ready. */
  routed: string;
  /** A minute has passed since the deployment was last edited: revisions outside the split go, ready or not. */
  drainDue: boolean;
  replicas: readonly LiveReplica[];
}

/** Retire order: replicas not yet serving first, then the least loaded, then the newest. */
function retireOrder(a: LiveReplica, b: LiveReplica): number {
  return Number(a.ready) - Number(b.ready) || a.inflight - b.inflight || b.recordId - a.recordId;
}

/** The first `n` of `replicas` in retire order (none when n ≤ 0). */
function firstToRetire(replicas: readonly LiveReplica[], n: number): LiveReplica[] {
  return [...replicas].sort(retireOrder).slice(0, Math.max(0, n));
}

export function planReplicas(input: PlanInput): Action[] {
  const actions: Action[] = [];
  const retire = (replicas: readonly LiveReplica[], reason: string) => {
    for (const r of replicas) actions.push({ kind: 'retire', recordId: r.recordId, reason });
  };
  const planned = new Set(input.components.map((c) => c.component));
  for (const r of input.replicas) {
    if (!planned.has(r.component)) retire([r], `component ${r.component} is not part of the deployment any more`);
  }
  const run = input.runnable ? input.runRevision : null;
  for (const { component, desired } of input.components) {
    const ofComponent = input.replicas.filter((r) => r.component === component);
    if (run === null || desired === 0) {
      retire(ofComponent, desired === 0 ? (input.paused ? 'the deployment is paused' : 'scaled to 0') : `revision ${input.revision} failed`);
      continue;
    }
    const current = ofComponent.filter((r) => r.revision === run);
    const older = ofComponent.filter((r) => r.revision !== run);
    const start = (n: number) => {
      for (let i = 0; i < n; i++) actions.push({ kind: 'start', component, revision: run });
    };
    if (older.length === 0) {
      start(desired - current.length);
    } else {
      // Rolling update: new replicas up to the desired count, within `surge` beyond it.
      start(Math.max(0, Math.min(desired - current.length, desired + input.surge - (current.length + older.length))));
      // Old ones stay while the new ones that would replace them are not ready yet.
      const keepOld = Math.max(0, desired - current.filter((r) => r.ready).length);
      retire(firstToRetire(older, older.length - keepOld), `replaced by revision ${run}`);
    }
    retire(firstToRetire(current, current.length - desired), `scaled to ${desired}`);
  }
  return actions;
}

/**
 * The plan of a deployment whose traffic splits between revisions: each revision of the split
 * at its own counts (surplus retired in retire order), a blocked one retired whole, and the
 * replicas of revisions outside the split retired once every revision of the split that runs
 * has a ready replica of the routed component, or once `drainDue` — never before.
 */
export function planSplit(input: SplitPlanInput): Action[] {
  const actions: Action[] = [];
  const retire = (replicas: readonly LiveReplica[], reason: string) => {
    for (const r of replicas) actions.push({ kind: 'retire', recordId: r.recordId, reason });
  };
  for (const target of input.split) {
    const ofRevision = input.replicas.filter((r) => r.revision === target.revision);
    if (target.blocked !== null) {
      retire(ofRevision, target.blocked);
      continue;
    }
    const planned = new Set(target.components.map((c) => c.component));
    for (const r of ofRevision) {
      if (!planned.has(r.component)) retire([r], `component ${r.component} is not part of revision ${target.revision}`);
    }
    for (const { component, desired } of target.components) {
      const current = ofRevision.filter((r) => r.component === component);
      if (desired === 0) {
        retire(current, input.paused ? 'the deployment is paused' : 'scaled to 0');
        continue;
      }
      for (let i = current.length; i < desired; i++) actions.push({ kind: 'start', component, revision: target.revision });
      retire(firstToRetire(current, current.length - desired), `revision ${target.revision} scaled to ${desired}`);
    }
  }
  const inSplit = new Set(input.split.map((t) => t.revision));
  const outside = input.replicas.filter((r) => !inSplit.has(r.revision));
  if (outside.length === 0) return actions;
  if (input.paused) {
    retire(outside, 'the deployment is paused');
    return actions;
  }
  const running = input.split.filter((t) => t.blocked === null);
  const serves = (revision: number) => input.replicas.some((r) => r.revision === revision && r.component === input.routed && r.ready);
  const splitServes = running.length > 0 && running.every((t) => serves(t.revision));
  if (!splitServes && !input.drainDue) return actions;
  for (const revision of [...new Set(outside.map((r) => r.revision))]) {
    const ofRevision = outside.filter((r) => r.revision === revision);
    retire(firstToRetire(ofRevision, ofRevision.length), `revision ${revision} takes no traffic any more`);
  }
  return actions;
}

/**
 * When planSplit's `drainDue` turns true for replicas of revisions outside the split, while
 * some run and it is not due yet (`updatedAt`: the deployment's last edit); null when nothing
 * waits for it. The controller reconciles the deployment again then, whether or not anything
 * else happened to it.
 */
export function splitDrainAt(updatedAt: string, split: readonly { revision: number }[], replicas: readonly Pick<LiveReplica, 'revision'>[], now: number): number | null {
  const inSplit = new Set(split.map((t) => t.revision));
  if (!replicas.some((r) => !inSplit.has(r.revision))) return null;
  const at = Date.parse(updatedAt) + SPLIT_DRAIN_MS;
  return at > now ? at : null;
}
