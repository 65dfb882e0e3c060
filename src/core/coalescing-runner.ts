// Owns "run this again soon, but never twice at once": a task started on a trigger, with
// triggers that arrive while it runs folded into one more run after it. The controller's
// reconcile, the autoscaler's tick and the gateway's routing-table rebuild all work this way.

export class CoalescingRunner {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly task: () => Promise<void>,
    private readonly onError: (err: Error) => void,
  ) {}

  trigger(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.task()
      .catch((err: Error) => this.onError(err))
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.trigger();
        }
      });
  }

  /** Resolves once the run in progress, if any, has ended. */
  current(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Resolves once no run is in progress or due: the one running now and every one folded after it have ended. */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }
}
