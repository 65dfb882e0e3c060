// Owns slowing down a client address that keeps failing authentication: each address may fail
// `ratePerSecond` times a second (with a burst); past that its 401s are answered only after
// `delayMs`. A client flooding bad tokens over keep-alive connections waits for each answer
// before its next request, so its rate drops to about one request per connection per delay
// and the CPU goes to clients whose credentials pass — their requests are never delayed,
// even from the same address (behind a NAT or a load balancer). The answers held at once per
// address are bounded (`maxHeld`): past that, a 401 is sent at once, as before.

import type { Clock } from '../core/clock.js';

export interface AuthFailureBudgetOptions {
  ratePerSecond: number;
  burst: number;
  delayMs: number;
  maxHeld: number;
}

interface AddressState {
  level: number;
  at: number;
  held: number;
}

/** Addresses tracked at most; the idlest are dropped first (a full bucket is the default anyway). */
const MAX_ADDRESSES = 10_000;

export class AuthFailureBudget {
  private readonly addresses = new Map<string, AddressState>();

  constructor(
    private readonly opts: AuthFailureBudgetOptions,
    private readonly clock: Clock,
  ) {}

  /**
   * A failure from `address` happened: 0 to answer now, or how long to hold the answer. A held
   * answer must be released with `released(address)` once sent (or dropped).
   */
  delayFor(address: string): number {
    const now = this.clock.now();
    let s = this.addresses.get(address);
    if (!s) {
      if (this.addresses.size >= MAX_ADDRESSES) this.evictFull(now);
      s = { level: this.opts.burst, at: now, held: 0 };
      this.addresses.set(address, s);
    }
    s.level = Math.min(this.opts.burst, s.level + ((now - s.at) / 1000) * this.opts.ratePerSecond);
    s.at = now;
    if (s.level >= 1) {
      s.level -= 1;
      return 0;
    }
    if (s.held >= this.opts.maxHeld) return 0;
    s.held++;
    return this.opts.delayMs;
  }

  released(address: string): void {
    const s = this.addresses.get(address);
    if (s && s.held > 0) s.held--;
  }

  /** Addresses with a full bucket and nothing held carry no state worth keeping. */
  private evictFull(now: number): void {
    for (const [address, s] of this.addresses) {
      const level = Math.min(this.opts.burst, s.level + ((now - s.at) / 1000) * this.opts.ratePerSecond);
      if (s.held === 0 && level >= this.opts.burst) this.addresses.delete(address);
    }
    // All busy: drop the oldest entry rather than grow without bound.
    if (this.addresses.size >= MAX_ADDRESSES) {
      const oldest = this.addresses.keys().next().value;
      if (oldest !== undefined) this.addresses.delete(oldest);
    }
  }
}
