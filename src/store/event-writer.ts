// Owns writing deployments' events from the controller and the autoscaler without making
// them wait: `record` queues the event stamped with the clock's time and returns; one write
// at a time goes to the store, in order. A write that fails (the store unreachable, a fence
// refusing a deposed controller) is dropped with a warning — the first of a run of failures
// warns, the rest are debug until one succeeds — so neither a reconcile pass nor an
// autoscaler tick ever fails or slows for an event. A full queue drops its oldest.

import type { Logger } from 'pino';
import { isoNow, type Clock } from '../core/clock.js';
import type { EventType, NewDeploymentEvent } from '../domain/records.js';
import { EVENT_REASON } from './events.js';
import type { Store } from './store.js';

/** What a writer says happened; the time is the writer's clock at `record`. */
export interface EventNote {
  type: EventType;
  reason: string;
  message: string;
}

/** Somewhere to record a deployment's events (the controller's fenced writer, or none in tests). */
export type EventSink = (deploymentId: number, note: EventNote) => void;

const MAX_QUEUED = 1000;
/** Long enough for any status reason or log line worth reading; the rest is cut. */
const MAX_MESSAGE = 1024;

export class EventWriter {
  private readonly queue: Array<{ deploymentId: number; event: NewDeploymentEvent }> = [];
  private draining: Promise<void> | null = null;
  private failing = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Queues the event; never throws, never waits. */
  record(deploymentId: number, note: EventNote): void {
    if (!EVENT_REASON.test(note.reason)) {
      this.logger.error({ reason: note.reason }, 'event reason is not one CamelCase word; not recorded');
      return;
    }
    const message = note.message.length > MAX_MESSAGE ? `${note.message.slice(0, MAX_MESSAGE - 1)}…` : note.message;
    this.queue.push({ deploymentId, event: { time: isoNow(this.clock), type: note.type, reason: note.reason, message } });
    if (this.queue.length > MAX_QUEUED) {
      this.queue.shift();
      this.logger.debug('event queue full: the oldest event was dropped');
    }
    this.draining ??= this.drain().finally(() => {
      this.draining = null;
    });
  }

  /** Resolves once every event queued so far has been written (or dropped). */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private async drain(): Promise<void> {
    for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
      try {
        await this.store.appendEvent(next.deploymentId, next.event);
        this.failing = false;
      } catch (err) {
        const fields = { err, deployment_id: next.deploymentId, reason: next.event.reason };
        if (this.failing) this.logger.debug(fields, 'event not recorded');
        else this.logger.warn(fields, 'event not recorded: the store refused or could not take it; events are dropped until it can');
        this.failing = true;
      }
    }
  }
}
