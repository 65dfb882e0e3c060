// Owns the controller's leadership: the store's `controller` lease (one controller per store),
// taken or renewed on a timer of its own, so one control process acts and any other stands
// by, ready to take over once the lease runs out (the leader was killed, or stalled).
//
// Renewal never waits behind reconcile work: it is one store call on its own timer (every
// `renewMs`, at most a third of the lease), not a step of a pass, and the controller cuts its
// passes into slices that give the event loop back, so the timer fires on time however many
// deployments a pass works on. A refused write (FencedError) asks for a renewal at once.
//
// The lease is a fence as well as a lock: the controller writes through a fenced store
// (store/fenced-store.ts), so a leader that stalled past its lease cannot write after its
// successor took over. Each hold reports the lease's epoch, which grows by one whenever the
// lease is taken while free: a holder that finds it grew by exactly one since its last hold
// lost it to a stall (the process, or the store unreachable) with nobody taking it meanwhile,
// so it takes it back at once and says so; one that finds it grew by more knows another
// controller held the lease meanwhile, and that what it runs was taken over (its records
// reaped, its replicas replaced), so it starts afresh.

import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import { DEFAULTS } from '../config/defaults.js';
import { StoreUnavailableError, type Fence, type Store } from '../store/store.js';

export const CONTROLLER_LEASE = 'controller';

/** How often a lease of `ttlMs` is renewed: every `tickMs`, and at least three times per lease, so two renewals may fail in a row before it runs out. */
export function renewalInterval(tickMs: number, ttlMs: number): number {
  return Math.max(1, Math.min(tickMs, Math.floor(ttlMs / 3)));
}

export interface LeaseEvents {
  /** Leadership starts (first taken, or taken again after another held it): reap what was left and reconcile everything. */
  gained(): void;
  /** Leadership ended: another process holds or held the lease; stop acting on what this one ran. */
  lost(): void;
  /** The lease had run out and was taken back with nobody holding it meanwhile: write again what was refused. */
  retaken(): void;
}

export class ControllerLease {
  private held = false;
  private epoch = 0;
  private standbyLogged = false;
  private timer: NodeJS.Timeout | null = null;
  private events: LeaseEvents | null = null;
  /** The renewal in flight: a second ask joins it rather than queueing another store call. */
  private renewal: Promise<boolean> | null = null;
  readonly holder = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    /** A standby takes over this long after the leader's last renewal. */
    readonly ttlMs: number = DEFAULTS.controller.leaseTtlMs,
  ) {}

  get isHeld(): boolean {
    return this.held;
  }

  /** What this controller's writes carry. */
  get fence(): Fence {
    return { lease: CONTROLLER_LEASE, holder: this.holder };
  }

  /**
   * Takes or renews the lease now and then every `renewMs` (by default every second, at most a
   * third of the lease: renewalInterval). A standby tries as often.
   */
  start(events: LeaseEvents, renewMs: number): Promise<boolean> {
    this.events = events;
    this.timer = setInterval(() => void this.renew(), Math.max(1, renewMs));
    this.timer.unref();
    return this.renew();
  }

  /** Stops renewing (the lease then runs out unless released). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Takes or renews the lease now (joining a renewal in flight); true when this process may act. */
  renew(): Promise<boolean> {
    this.renewal ??= this.hold().finally(() => {
      this.renewal = null;
    });
    return this.renewal;
  }

  private async hold(): Promise<boolean> {
    const events = this.events;
    if (events === null) return false;
    let epoch: number;
    try {
      epoch = await this.store.holdLease(CONTROLLER_LEASE, this.holder, this.ttlMs);
    } catch (err) {
      // An unreachable store is logged once by the store monitor; the next renewal tries again.
      if (err instanceof StoreUnavailableError) this.logger.debug({ err }, 'controller lease renewal failed');
      else this.logger.error({ err }, 'controller lease renewal failed');
      return this.held;
    }
    if (epoch === 0) {
      if (this.held) this.depose(events, 'controller lease lost to another process: no longer reconciling');
      else if (!this.standbyLogged) this.logger.warn('another controller holds the lease on this store: standing by');
      this.standbyLogged = true;
      return false;
    }
    if (this.held && epoch !== this.epoch) {
      if (epoch === this.epoch + 1) {
        // It ran out (a stall, the store unreachable) and nobody took it meanwhile: nothing was
        // taken over. Told once per occurrence: each one moves the epoch on.
        this.logger.warn({ epoch, ttl_ms: this.ttlMs }, 'controller lease had expired; taken back at once, no other controller held it meanwhile');
        this.epoch = epoch;
        events.retaken();
        return true;
      }
      this.depose(events, 'another controller held the lease meanwhile: starting afresh');
    }
    if (!this.held) {
      this.held = true;
      this.standbyLogged = false;
      this.epoch = epoch;
      this.logger.info({ holder: this.holder, epoch }, 'controller lease taken: reconciling');
      events.gained();
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
    this.stop();
    await this.renewal?.catch(() => undefined);
    if (this.held) await this.store.releaseLease(CONTROLLER_LEASE, this.holder).catch(() => undefined);
    this.held = false;
  }
}
