// Owns what deleted deployments leave (directories, usage rows): which ids are known to exist,
// which were deleted and still have something to remove, when the store is next scanned for
// usage rows of deployments deleted unseen, and the removal itself, once none of a deleted
// deployment's replicas runs.

import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { DEFAULTS } from '../config/defaults.js';
import type { Store } from '../store/store.js';
import type { DeploymentLeftovers } from './leftovers.js';

export interface DeletedOptions {
  clock: Clock;
  logger: Logger;
  leftovers?: DeploymentLeftovers;
  leftoverScanMs?: number;
}

export class DeletedDeployments {
  /** Deployment ids known to exist (the last full pass, then the change feed): an id with leftovers and not here was deleted. */
  known = new Set<number>();
  /** Deleted deployments whose leftovers are still to be removed. */
  readonly gone = new Set<number>();
  /** The lease was just taken: read the leftovers on disk and in the store with the full pass. */
  leftoversDue = false;
  /** When the store is next scanned for usage rows of deployments deleted unseen. */
  nextStoreScan = Infinity;

  constructor(
    private readonly opts: DeletedOptions,
    /** The fenced store. */
    private readonly store: Store,
  ) {}

  /** Ids with something left at the taking of the lease: directories, and usage rows (the store scan's clock starts here). */
  async findLeftovers(): Promise<Set<number>> {
    const { leftovers, clock } = this.opts;
    if (!leftovers) return new Set();
    const ids = await leftovers.onDisk();
    for (const id of await leftovers.inStore()) ids.add(id);
    this.nextStoreScan = clock.now() + (this.opts.leftoverScanMs ?? DEFAULTS.controller.leftoverScanMs);
    return ids;
  }

  /**
   * The slow scan of usage rows (another process may flush a deleted deployment's late): an id
   * with rows that this controller does not know is read on its own — deleted, its rows go;
   * there (created since), it is reconciled.
   */
  async scanStoreLeftovers(mark: (deploymentId: number) => void): Promise<void> {
    const { leftovers, clock } = this.opts;
    this.nextStoreScan = clock.now() + (this.opts.leftoverScanMs ?? DEFAULTS.controller.leftoverScanMs);
    if (!leftovers) return;
    for (const id of await leftovers.inStore()) {
      if (this.known.has(id) || this.gone.has(id)) continue;
      if ((await this.store.get('deployment', id)) === undefined) this.gone.add(id);
      else mark(id);
    }
  }

  /**
   * Removes what deleted deployments left, whatever state they were deleted in (paused, at
   * zero, never started, or while no controller ran); one with replicas still draining waits
   * for them, since they write logs until they stop. Idempotent: a failure is retried at the
   * next tick.
   */
  async removeLeftovers(
    stopped: () => boolean,
    /** Whether a replica of the deployment still runs (or drains). */
    runs: (deploymentId: number) => boolean,
    /** Forgets the deployment's workers files. */
    forget: (deploymentId: number) => void,
  ): Promise<void> {
    for (const id of [...this.gone]) {
      if (stopped()) return;
      if (runs(id)) continue;
      try {
        await this.opts.leftovers?.remove(id);
        forget(id);
        this.gone.delete(id);
        if (this.opts.leftovers) this.opts.logger.info({ deployment_id: id }, 'removed what a deleted deployment left');
      } catch (err) {
        this.opts.logger.warn({ err, deployment_id: id }, 'removing what a deleted deployment left failed; retrying at the next tick');
      }
    }
  }
}
