// Owns the controller's leadership: the store's `controller` lease (one controller per store),
// taken or renewed on every reconcile pass, so one control process acts and any other stands
// by, ready to take over once the lease runs out (the leader was killed, or stalled).
//
// The lease is a fence as well as a lock: the controller writes through a fenced store
// (store/fenced-store.ts), so a leader that stalled past its lease cannot write after its
// successor took over. Each hold reports the lease's epoch, which grows by one whenever the
// lease is taken while free: a holder that finds it grew by more than one since its last
// hold knows another controller held the lease meanwhile, and that what it runs was taken
// over (its records reaped, its replicas replaced), so it starts afresh.

import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import { DEFAULTS } from '../config/defaults.js';
import type { Fence, Store } from '../store/store.js';

export const CONTROLLER_LEASE = 'controller';

export interface LeaseEvents {
  /** Leadership starts (first taken, or taken again after another held it): reap what was left. */
  gained(): Promise<void>;
  /** Leadership ended: another process holds or held the lease; stop acting on what this one ran. */
  lost(): void;
}

export class ControllerLease {
  private held = false;
  private epoch = 0;
  private standbyLogged = false;
  readonly holder = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    /** Renewed every pass (at least every second); a standby takes over this long after the leader's last renewal. */
    readonly ttlMs: number = DEFAULTS.controller.leaseTtlMs,
  ) {}

  get isHeld(): boolean {
    return this.held;
  }

  /** What this controller's writes carry. */
  get fence(): Fence {
    return { lease: CONTROLLER_LEASE, holder: this.holder };
  }

  /** Takes or renews the lease; true when this process may act now. */
  async hold(events: LeaseEvents): Promise<boolean> {
    const epoch = await this.store.holdLease(CONTROLLER_LEASE, this.holder, this.ttlMs);
    if (epoch === 0) {
      if (this.held) this.depose(events, 'controller lease lost to another process: no longer reconciling');
      else if (!this.standbyLogged) this.logger.warn('another controller holds the lease on this store: standing by');
      this.standbyLogged = true;
      return false;
    }
    if (this.held && epoch !== this.epoch) {
      if (epoch === this.epoch + 1) {
        // It ran out (a stall, the store unreachable) and nobody took it meanwhile: nothing was taken over.
        this.logger.warn({ epoch }, 'controller lease had expired; taken again, no other controller held it meanwhile');
      } else {
        this.depose(events, 'another controller held the lease meanwhile: starting afresh');
      }
    }
    if (!this.held) {
      this.held = true;
      this.standbyLogged = false;
      this.epoch = epoch;
      this.logger.info({ holder: this.holder, epoch }, 'controller lease taken: reconciling');
      await events.gained();
      return true;
    }
    this.epoch = epoch;
    return true;
  }

  private depose(events: LeaseEvents, message: string): void {
    this.logger.error({ holder: this.holder, epoch: this.epoch }, message);
    this.held = false;
    events.lost();
  }

  async release(): Promise<void> {
    if (this.held) await this.store.releaseLease(CONTROLLER_LEASE, this.holder).catch(() => undefined);
    this.held = false;
  }
}
