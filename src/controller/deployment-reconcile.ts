// Owns one deployment's reconcile: the plan made from this pass's snapshot (pass-plan.ts,
// plan.ts) performed in its order — replicas started, retired — then its rollout advanced, its
// status and reason told, its time rules set as one timer, its observed state, workers files
// and events written (deployment-state.ts). Between passes it keeps, per deployment, the
// rollout's last step told and the traffic shares last run.

import { routedComponent } from '../domain/components.js';
import { DEFAULTS } from '../config/defaults.js';
import type { Logger } from 'pino';
import { isoNow, type Clock } from '../core/clock.js';
import type { DeploymentRecord, DeploymentSpec } from '../domain/records.js';
import type { Runtime } from '../runtime/runtime.js';
import type { EventNote } from '../store/event-writer.js';
import type { Store } from '../store/store.js';
import { crashLooping, deploymentStatus, failingReason, GENERAL_COMPONENT } from './desired.js';
import type { DeletedDeployments } from './deleted-deployments.js';
import { tellTraffic, writeDeploymentState, writeWorkersFiles, type TrafficSeen } from './deployment-state.js';
import { orchestratedStatus } from './orchestrated.js';
import { passPlan } from './pass-plan.js';
import type { ReconcileQueue } from './reconcile-queue.js';
import type { ComponentPlan, ReplicaRequests } from './replica-requests.js';
import type { Owned, ReplicaLoad, Replicas } from './replicas.js';
import { advanceRollout, rolloutDeadlineAt, splitRollout, type RolloutResult } from './rollout.js';
import { rolloutEvents, type RolloutProgress } from './rollout-events.js';
import type { WorkersFiles } from './workers-file.js';

export interface ReconcileOptions {
  runtime: Runtime;
  clock: Clock;
  logger: Logger;
  load: ReplicaLoad | null;
  workersDir?: string;
  rolloutSurge?: number;
  rolloutDeadlineMs?: number;
}

export class DeploymentReconciler {
  /** Per deployment, the counts of its rollout's last step told (while one is in progress). */
  readonly rolloutSteps = new Map<number, RolloutProgress>();
  /** Per deployment, the traffic shares last run (their changes are told once) and the revisions that left a split and still drain. */
  readonly trafficSeen = new Map<number, TrafficSeen>();

  constructor(
    private readonly opts: ReconcileOptions,
    /** The fenced store. */
    private readonly store: Store,
    private readonly replicas: Replicas,
    private readonly requests: ReplicaRequests,
    private readonly workersFiles: WorkersFiles | null,
    /** Where its timer is set. */
    private readonly queue: ReconcileQueue,
    /** A deployment reconciled is known to exist. */
    private readonly deletions: DeletedDeployments,
    private readonly recordEvent: (deploymentId: number, note: EventNote) => void,
  ) {}

  /**
   * One deployment: the plan made from this pass's snapshot (plan.ts: what to start, what to
   * retire and why) performed in its order, then the revisions' bookkeeping, the status and
   * the events recorded. Orchestrated: the Frontends learn their workers from files the
   * controller rewrites, and the deployment is ready only while a Frontend is, whatever the
   * workers do.
   */
  async reconcile(d: DeploymentRecord): Promise<void> {
    this.deletions.known.add(d.id);
    if (d.spec.family === 'orchestrated' && !this.opts.workersDir) return;
    const { load, clock } = this.opts;
    const deadlineMs = this.opts.rolloutDeadlineMs ?? DEFAULTS.controller.rolloutDeadlineMs;
    const mine = () => [...this.replicas.owned.values()].filter((o) => o.deploymentId === d.id && !o.retiring);
    const isReady = (o: Owned) => o.handle.observe().phase === 'ready';
    const plan = passPlan(
      d,
      mine().map((o) => ({ recordId: o.recordId, component: o.component, revision: o.revision, ready: isReady(o), inflight: load?.inflight(o.recordId) ?? 0 })),
      (d, spec, split) => this.requests.componentPlans(d, spec, split),
      clock.now(),
      this.opts.rolloutSurge ?? DEFAULTS.controller.rolloutSurge,
    );
    // The file first: a Frontend should know a worker before the deployment says ready.
    await writeWorkersFiles(this.workersFiles, d, plan, this.replicas.owned.values());
    for (const action of plan.actions) {
      if (action.kind === 'start') {
        const run = plan.runs.find((r) => r.revision === action.revision);
        const component = run?.plans.find((p) => p.component === action.component);
        if (run !== undefined && component !== undefined) await this.startReplica(d, component, run.spec, action.revision);
      } else {
        const o = this.replicas.owned.get(action.recordId);
        if (o && !o.retiring) this.replicas.retire(o, action.reason);
      }
    }

    const after = mine();
    const running = [...new Set([...this.replicas.owned.values()].filter((o) => o.deploymentId === d.id).map((o) => o.revision))];
    const runRevisions = new Set(plan.runs.map((r) => r.revision));
    const targetReplicas = plan.target === null ? after.filter((o) => runRevisions.has(o.revision)) : after.filter((o) => o.revision === plan.target);
    const desiredTotal = Object.values(plan.desired).reduce((sum, n) => sum + n, 0);
    let result: RolloutResult;
    if (plan.split === null) {
      result = advanceRollout(
        d,
        {
          desired: desiredTotal,
          targetReady: targetReplicas.filter(isReady).length,
          others: after.length - targetReplicas.length,
          targetRestarts: targetReplicas.reduce((sum, o) => sum + o.handle.observe().restarts, 0),
          running,
        },
        clock.now(),
        deadlineMs,
      );
      if (result.rollout?.state === 'failed' && d.rollout?.state !== 'failed') {
        this.opts.logger.warn({ deployment: d.name, revision: result.rollout.revision, reason: result.rollout.reason }, 'rollout failed');
      }
    } else {
      const routed = routedComponent(d);
      const serving = [...new Set(after.filter((o) => o.component === routed && isReady(o)).map((o) => o.revision))];
      result = splitRollout(d, plan.split, { serving, running });
    }
    const readyReplicas = after.filter(isReady);
    const byComponent: Record<string, number> = {};
    for (const o of readyReplicas) byComponent[o.component] = (byComponent[o.component] ?? 0) + 1;
    // What the revisions being brought up wait on, while any of their replicas is not ready: the first one that says.
    const waiting = targetReplicas.map((o) => o.handle.observe()).find((o) => o.phase !== 'ready' && o.detail !== null);
    // Failing is told from the replicas of the revisions that should run: a rollout replacing
    // a crash-looping revision is pending, not failing.
    const looping = after.filter((o) => runRevisions.has(o.revision)).find((o) => crashLooping(this.replicas.health(o))) ?? null;
    const newStatus =
      d.spec.family === 'general'
        ? deploymentStatus(d, readyReplicas.length, plan.desired[GENERAL_COMPONENT] ?? 0, looping !== null)
        : orchestratedStatus(d, byComponent, plan.desired, looping !== null);
    const reason =
      newStatus === 'failing' && looping !== null
        ? failingReason(this.replicas.health(looping), await this.replicas.lastLine(looping))
        : (waiting?.detail ?? (newStatus === 'pending' && desiredTotal === 0 && after.length === 0 && !d.paused ? AT_ZERO_BEFORE_FIRST_REQUEST : null));
    // The time rules of this deployment, as one timer: the rollout's deadline, the split's
    // drain delay. It is reconciled then even if nothing else happens to it.
    const deadlineAt = plan.split === null ? rolloutDeadlineAt(d, result, desiredTotal, deadlineMs) : null;
    this.queue.at(d.id, earliest(deadlineAt, plan.drainAt));
    tellTraffic(this.trafficSeen, d, plan, this.replicas.owned.values(), (id, note) => this.recordEvent(id, note));
    const written = await writeDeploymentState(this.store, this.opts.logger, d, plan, newStatus, reason, result);
    await writeWorkersFiles(this.workersFiles, d, plan, this.replicas.owned.values());
    if (!written) return;
    if (newStatus === 'failing' && d.status !== 'failing' && reason !== null) this.recordEvent(d.id, { type: 'warning', reason: 'ReplicaFailing', message: reason });
    if (plan.target === null) {
      this.rolloutSteps.delete(d.id);
      return;
    }
    const progress: RolloutProgress = { revision: plan.target, targetReady: targetReplicas.filter(isReady).length, desired: desiredTotal, others: after.length - targetReplicas.length };
    for (const note of rolloutEvents(d, result, progress, this.rolloutSteps.get(d.id) ?? null)) this.recordEvent(d.id, note);
    if (result.rollout?.state === 'in_progress') this.rolloutSteps.set(d.id, progress);
    else this.rolloutSteps.delete(d.id);
  }

  private async startReplica(d: DeploymentRecord, plan: ComponentPlan, spec: DeploymentSpec, revision: number): Promise<void> {
    const { runtime, clock } = this.opts;
    const store = this.store;
    const suffix = plan.component === GENERAL_COMPONENT ? '' : `-${plan.component.toLowerCase()}`;
    const record = await store.create('replica', (id) => ({
      id,
      deployment_id: d.id,
      revision,
      component: plan.component,
      name: `${d.name}-r${revision}${suffix}-${id}`,
      address: '',
      state: 'starting' as const,
      restarts: 0,
      pid: null,
      metrics_target: null,
      updated_at: isoNow(clock),
    }));
    const part = plan.request(spec, revision, record.value.name);
    if (part === null) {
      await store.delete('replica', record.value.id);
      return;
    }
    const handle = runtime.start(await this.requests.completeRequest(d, plan, spec, part));
    this.replicas.own(d, plan, revision, record.value.id, handle);
    this.opts.logger.info({ deployment: d.name, replica: handle.name, component: plan.component, revision }, 'replica starting');
    const component = plan.component === GENERAL_COMPONENT ? '' : ` (${plan.component})`;
    this.recordEvent(d.id, { type: 'normal', reason: 'ReplicaStarted', message: `started replica ${handle.name}${component} of revision ${revision}` });
  }
}

/** The status reason of a deployment that has never served and runs nothing on purpose (initial_replicas 0): what brings it up. */
const AT_ZERO_BEFORE_FIRST_REQUEST = 'no replica runs until the first request, which starts one (initial_replicas 0)';

/** The earlier of two times, either of which may be absent. */
function earliest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  return b === null ? a : Math.min(a, b);
}
