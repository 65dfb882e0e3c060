// Owns time as a dependency: code that needs "now", or to wait, takes a Clock so tests can
// step it instead of sleeping.

export interface Clock {
  now(): number;
  /** Resolves once `ms` have passed on this clock. */
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
};

/** A clock tests move by hand: sleepers wake when `advance` or `set` passes their time. */
export class ManualClock implements Clock {
  private sleepers: Array<{ at: number; wake: () => void }> = [];
  constructor(private t = 0) {}
  now(): number {
    return this.t;
  }
  sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((wake) => this.sleepers.push({ at: this.t + ms, wake }));
  }
  /** How many sleepers wait: a loop that sleeps on this clock is back at its wait once this grows again after an `advance`. */
  waiting(): number {
    return this.sleepers.length;
  }
  advance(ms: number): void {
    this.set(this.t + ms);
  }
  set(ms: number): void {
    this.t = ms;
    const due = this.sleepers.filter((s) => s.at <= ms);
    this.sleepers = this.sleepers.filter((s) => s.at > ms);
    for (const s of due) s.wake();
  }
}

export const isoNow = (clock: Clock): string => new Date(clock.now()).toISOString();
