// Owns what a pass writes of a deployment besides its replicas: its observed fields (status and
// its reason, desired counts, serving revision, rollout, revisions) when they changed and no
// one edited its desired state meanwhile; the orchestrated Frontends' workers files; and the
// traffic split's changes and drained revisions told as events, each once.

import { COMPONENT } from '../domain/components.js';
import type { Logger } from 'pino';
import type { DeploymentRecord } from '../domain/records.js';
import type { EventNote } from '../store/event-writer.js';
import { modify, NotFoundError, type Store } from '../store/store.js';
import { resolveTraffic, type RevisionShare } from '../domain/traffic.js';
import type { PassPlan } from './pass-plan.js';
import type { Owned } from './replicas.js';
import type { RolloutResult } from './rollout.js';
import { drainedEvent, trafficEvents } from './traffic-events.js';
import type { WorkersFiles } from './workers-file.js';

/** Of one deployment: the traffic shares last run (their changes are told once) and the revisions that left a split and still drain. */
export interface TrafficSeen {
  shares: RevisionShare[];
  draining: Set<number>;
}

/** Writes the observed fields when they changed; false when the record was gone or edited meanwhile (the next pass writes them). */
export async function writeDeploymentState(
  store: Store,
  logger: Logger,
  d: DeploymentRecord,
  plan: PassPlan,
  status: DeploymentRecord['status'],
  reason: string | null,
  rollout: RolloutResult,
): Promise<boolean> {
  // While paused, the figures to come back to are kept (resume restores the counts).
  const desiredReplicas = d.paused ? (d.desired_replicas ?? plan.desired) : plan.desired;
  const revisionDesired = plan.revisionDesired === null ? null : d.paused ? (d.revision_desired ?? plan.revisionDesired) : plan.revisionDesired;
  const statusReason = d.paused ? null : reason;
  const observed = {
    status,
    status_reason: statusReason,
    desired_replicas: desiredReplicas,
    revision_desired: revisionDesired,
    serving_revision: rollout.serving,
    rollout: rollout.rollout,
    revisions: rollout.revisions,
  };
  const before = {
    status: d.status,
    status_reason: d.status_reason ?? null,
    desired_replicas: d.desired_replicas ?? {},
    revision_desired: d.revision_desired ?? null,
    serving_revision: d.serving_revision ?? null,
    rollout: d.rollout ?? null,
    revisions: d.revisions,
  };
  if (JSON.stringify(observed) === JSON.stringify(before)) return true;
  let written = false;
  try {
    await modify(store, 'deployment', d.id, (now) => {
      // Only observed fields change; a concurrent edit of desired state is kept (next pass).
      written = !(
        now.revision !== d.revision ||
        now.paused !== d.paused ||
        now.revisions.length !== d.revisions.length ||
        JSON.stringify(now.traffic ?? null) !== JSON.stringify(d.traffic ?? null)
      );
      return written ? { ...now, ...observed } : undefined;
    });
    if (written && status !== d.status) logger.info({ deployment: d.name, from: d.status, to: status }, 'deployment status changed');
    return written;
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    return false;
  }
}


/**
 * Writes each running revision's workers file for its Frontend: without a split every ready
 * worker (a rolling update's new Frontend uses the old workers until its own are ready),
 * with a split only its own revision's; the files of revisions that run nothing any more go.
 */
export async function writeWorkersFiles(workersFiles: WorkersFiles | null, d: DeploymentRecord, plan: PassPlan, owned: Iterable<Owned>): Promise<void> {
  if (d.spec.family !== 'orchestrated' || workersFiles === null) return;
  const all = [...owned].filter((o) => o.deploymentId === d.id);
  const ready = all.filter((o) => !o.retiring && o.handle.observe().phase === 'ready');
  const files = new Map<number, Record<string, string[]>>();
  for (const revision of new Set([...plan.files, ...all.map((o) => o.revision)])) {
    const spec = d.revisions.find((r) => r.revision === revision)?.spec ?? d.spec;
    const workers = plan.split === null ? ready : ready.filter((o) => o.revision === revision);
    const addresses = (component: string) =>
      workers
        .filter((o) => o.component === component)
        .map((o) => o.handle.observe().address)
        .filter((a): a is string => a !== null)
        .sort();
    const disaggregated = spec.family === 'orchestrated' && spec.serving_mode === 'disaggregated';
    files.set(revision, disaggregated ? { prefill: addresses(COMPONENT.Prefill), decode: addresses(COMPONENT.Decode) } : { workers: addresses(COMPONENT.Worker) });
  }
  await workersFiles.sync(d.id, files);
}


/**
 * Tells a change of the traffic split once (the shares this controller last ran are kept;
 * the first pass after it starts only learns them), and each revision that left the split
 * once its last replica stopped.
 */
export function tellTraffic(
  trafficSeen: Map<number, TrafficSeen>,
  d: DeploymentRecord,
  plan: PassPlan,
  owned: Iterable<Owned>,
  recordEvent: (deploymentId: number, note: EventNote) => void,
): void {
  const shares = plan.split ?? resolveTraffic(d);
  const seen = trafficSeen.get(d.id);
  const withReplicas = new Set([...owned].filter((o) => o.deploymentId === d.id).map((o) => o.revision));
  if (seen === undefined) {
    trafficSeen.set(d.id, { shares, draining: new Set() });
    return;
  }
  if (JSON.stringify(seen.shares) !== JSON.stringify(shares)) {
    for (const note of trafficEvents(seen.shares, shares)) recordEvent(d.id, note);
    const wasSplit = seen.shares.length > 1 || shares.length > 1;
    for (const s of seen.shares) if (wasSplit && withReplicas.has(s.revision) && !shares.some((a) => a.revision === s.revision)) seen.draining.add(s.revision);
    seen.shares = shares;
  }
  for (const revision of [...seen.draining]) {
    if (shares.some((s) => s.revision === revision)) seen.draining.delete(revision);
    else if (!withReplicas.has(revision)) {
      seen.draining.delete(revision);
      recordEvent(d.id, drainedEvent(revision));
    }
  }
}
