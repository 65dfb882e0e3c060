// Owns taking back what an earlier leader (or an earlier run on this node) left when the lease
// is taken: a replica the runtime can take back under its record is run on, with its record;
// every other one is reaped and its record removed; then whatever no kept replica names is swept.

import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { TimeSlices } from '../core/time-slices.js';
import type { DeploymentRecord, ReplicaRecord } from '../domain/records.js';
import type { ReplicaHandle, Runtime } from '../runtime/runtime.js';
import type { Store } from '../store/store.js';
import type { ReplicaRequests } from './replica-requests.js';
import type { Replicas } from './replicas.js';

export interface TakeBackOptions {
  runtime: Runtime;
  logger: Logger;
  clock: Clock;
}

/**
 * What an earlier leader (or an earlier run on this node) left: a replica the runtime can
 * take back under its record (a container still running) is kept, with its record, so the
 * endpoint keeps serving and no duplicate starts; every other one is reaped and its record
 * removed. Then whatever no kept replica names is swept (directories, stray containers).
 */
export async function takeBackLeftovers(
  store: Store,
  opts: TakeBackOptions,
  requests: ReplicaRequests,
  replicas: Replicas,
): Promise<void> {
  const { runtime, logger } = opts;
  const deployments = new Map((await store.list('deployment')).map((d) => [d.value.id, d.value]));
  const slices = new TimeSlices();
  for (const { value: r } of await store.list('replica')) {
    const handle = await adopt(opts, requests, replicas, deployments.get(r.deployment_id), r);
    if (handle === null) {
      if (await runtime.reap({ name: r.name, pid: r.pid, restarts: r.restarts })) logger.warn({ replica: r.name }, 'reaped a replica left by an earlier run');
      await store.delete('replica', r.id);
    }
    await slices.yield();
  }
  await runtime.sweep(new Set([...replicas.owned.values()].map((o) => o.handle.name)));
}

/** Takes back one leftover replica whose deployment and revision still exist; null when the runtime cannot. */
async function adopt(opts: TakeBackOptions, requests: ReplicaRequests, replicas: Replicas, d: DeploymentRecord | undefined, r: ReplicaRecord): Promise<ReplicaHandle | null> {
  const spec = d?.revisions.find((rev) => rev.revision === r.revision)?.spec;
  if (d === undefined || spec === undefined || r.state === 'draining' || r.state === 'stopped') return null;
  const plan = requests.componentPlans(d, spec, null).find((p) => p.component === r.component);
  const part = plan?.request(spec, r.revision, r.name) ?? null;
  if (plan === undefined || part === null) return null;
  const handle = await opts.runtime.adopt({ name: r.name, pid: r.pid, restarts: r.restarts }, await requests.completeRequest(d, plan, spec, part));
  if (handle === null) return null;
  // Left running by a clean stop: counted from where that stop counted it to (after a kill, from now).
  const countedUntil = r.counted_until ? Date.parse(r.counted_until) : NaN;
  replicas.own(d, plan, r.revision, r.id, handle, Number.isFinite(countedUntil) ? Math.min(countedUntil, opts.clock.now()) : undefined);
  opts.logger.info({ deployment: d.name, replica: r.name }, 'took back a replica left running by an earlier run');
  return handle;
}
