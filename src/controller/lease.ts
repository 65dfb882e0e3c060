// Owns the controller's leadership: the store's `controller` lease (one controller per store), taken or
// renewed on every reconcile pass, so one control process acts and any other stands by.
// It reports the moment leadership is gained (the new leader reaps what an earlier run left)
// and lost (a stalled process must stop acting).

import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';

const LEASE = 'controller';
/** Renewed every pass (at least every second); a controller that stalls this long loses it. */
const LEASE_TTL_MS = 15_000;

export class ControllerLease {
  private held = false;
  private standbyLogged = false;
  readonly holder = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
  ) {}

  get isHeld(): boolean {
    return this.held;
  }

  /** Takes or renews the lease; `onGained` runs once each time leadership starts. */
  async hold(onGained: () => Promise<void>): Promise<boolean> {
    const held = await this.store.holdLease(LEASE, this.holder, LEASE_TTL_MS);
    if (held && !this.held) {
      this.logger.info({ holder: this.holder }, 'controller lease taken: reconciling');
      this.held = true;
      await onGained();
    } else if (!held && this.held) {
      this.logger.error('controller lease lost to another process: no longer reconciling');
      this.held = false;
    } else if (!held && !this.standbyLogged) {
      this.logger.warn('another controller holds the lease on this store: standing by');
      this.standbyLogged = true;
    }
    return held;
  }

  async release(): Promise<void> {
    if (this.held) await this.store.releaseLease(LEASE, this.holder).catch(() => undefined);
    this.held = false;
  }
}
