// Owns flow control at the gateway (docs/flow-control.md), per deployment and for
// every routing policy: a request is dispatched only while some replica of its deployment is
// below saturation — by the latency model the gateway learns, or by the engine's own queue,
// whichever says saturated first (the CapacityView decides, gateway.ts builds it). Otherwise
// it waits in the deployment's queue (flow-queue.ts: by class, fair between credentials) and
// leaves it when a replica frees a slot, when its client goes, or when it has waited its
// class's limit — answered 429 with Retry-After, as is a request that finds the queue full
// (the lowest class below it is shed first, to make room). A deployment that can no longer
// serve at all (no ready replica, paused) answers its waiting requests 503 with Retry-After.
// While interactive requests come, sheddable ones leave part of each replica free for them
// (room, and a short prefill queue): a class at the gateway cannot reorder an engine's queue.
// Nothing here runs for a deployment whose replicas have room and whose queue is empty: that
// is one check per request (llm-d's flow control and Envoy's admission control do the same).

import { type Priority, PRIORITIES } from '../domain/priority.js';
import type { FlowControl } from '../domain/records.js';
import { FlowQueue, type QueueEntry } from './flow-queue.js';
import type { Rejection } from './phases.js';
import type { Route } from './routing-table.js';

/** Why a waiting request was refused, for the metrics. */
export type ShedReason = 'wait_timeout' | 'queue_full' | 'displaced' | 'unavailable';

/** How many more requests a replica can take now, and its limit; Infinity while not known. */
export interface CapacityView {
  /** limit − in flight: 0 or less is saturated. */
  room(replicaId: number): number;
  limit(replicaId: number): number;
  /** Predicted ms of prefill the replica still has to do for requests already sent (0: none known). */
  prefillAheadMs(replicaId: number): number;
}

/** What flow control reports, for the metrics (flow-metrics.ts). */
export interface FlowMeters {
  waited(deployment: string, priority: Priority, seconds: number): void;
  shed(deployment: string, priority: Priority, reason: ShedReason): void;
}

/** A request at the door of flow control: its class, its credential, and how to let it go or refuse it. */
export interface FlowRequest {
  readonly priority: Priority;
  readonly credential: string;
  /** Tokens it is estimated to cost (its fair-share charge). */
  readonly cost: number;
  /** Dispatch it now, to the deployment as the routing table has it now. */
  go(route: Route): void;
  /** Refuse it with this answer (429 or 503, always with Retry-After). */
  refuse(r: Rejection, reason: ShedReason): void;
}

/** A request waiting in a queue. */
interface Waiter extends QueueEntry {
  readonly request: FlowRequest;
  readonly since: number;
  timer: NodeJS.Timeout | null;
  flow: DeploymentFlow;
}

/**
 * The share of a replica's limit sheddable requests leave free while interactive (critical or
 * standard) requests have been seen lately: a critical request arriving under a sheddable flood
 * then finds a free slot instead of waiting for one to end. A flood alone uses every slot.
 */
const SHEDDABLE_RESERVE = 0.125;
/**
 * …and they wait while a replica's prefill ahead is longer than this: an engine prefills new
 * prompts one after another, so a critical request sent to a replica behind a flood's
 * prefills waits for all of them, whatever its class at the gateway.
 */
const SHEDDABLE_PREFILL_AHEAD_MS = 50;
/** How long after the last interactive request the reserve is kept. */
const INTERACTIVE_MEMORY_MS = 10_000;
/** How long a pump waits before looking again while requests wait and nothing has ended. */
const REPOLL_MS = 50;
/** The time constant of the dispatch-rate estimate behind Retry-After. */
const RATE_TAU_MS = 5_000;
const RETRY_AFTER_MAX_S = 60;

class DeploymentFlow {
  readonly queue = new FlowQueue();
  /** Dispatches per ms, exponentially decaying (τ = RATE_TAU_MS). */
  rate = 0;
  rateAt = 0;
  repoll: NodeJS.Timeout | null = null;
  /** When a critical or standard request last arrived (-Infinity: never). */
  interactiveAt = -Infinity;
  constructor(public route: Route) {}
}

/** A handle the pipeline keeps while its request waits, to take it out when its client leaves. */
export interface Waiting {
  /** Takes the request out of the queue; false when it had already left it. */
  cancel(): boolean;
}

export class FlowController {
  private readonly flows = new Map<number, DeploymentFlow>();

  constructor(
    private readonly capacity: CapacityView,
    private readonly meters: FlowMeters,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Lets the request go now (`go` is called before this returns), or refuses it at once (the
   * same, with `refuse`) — null comes back — or queues it: a handle comes back, and `go` or
   * `refuse` is called later.
   */
  admit(route: Route, request: FlowRequest): Waiting | null {
    if (this.mayGoNow(route, request.priority)) {
      request.go(route);
      return null;
    }
    return this.wait(route, request);
  }

  /**
   * The request cannot go now (mayGoNow said no): queues it — a handle comes back, and `go` or
   * `refuse` is called later — or refuses it at once, or lets it go at once if its class may
   * pass those waiting (null then).
   */
  wait(route: Route, request: FlowRequest): Waiting | null {
    return this.enqueue(this.flowOf(route), route.flowControl, request);
  }

  /**
   * Whether a request of this class may go on now, without waiting: nothing of its deployment
   * waits and a replica has room. True counts it as dispatched. The request path asks this
   * first, so the common case builds no FlowRequest at all.
   */
  mayGoNow(route: Route, priority: Priority): boolean {
    // A deployment whose requests never waited has no flow yet, and nothing to reserve for.
    const flow = this.flows.get(route.deploymentId);
    if (flow === undefined) return this.hasRoom(route, priority, undefined);
    if (priority !== 'sheddable') flow.interactiveAt = this.now();
    if (flow.queue.size > 0 || !this.hasRoom(route, priority, flow)) return false;
    this.dispatched(flow);
    return true;
  }

  /** A replica of the deployment may have freed a slot (a request ended): dispatch what waits. */
  released(deploymentId: number): void {
    const flow = this.flows.get(deploymentId);
    if (flow !== undefined && flow.queue.size > 0) this.pump(flow);
  }

  /** The routing table changed: follow each route, refuse what a route can no longer serve, drop what left. */
  sync(routes: Iterable<Route>): void {
    const present = new Map<number, Route>();
    for (const route of routes) present.set(route.deploymentId, route);
    for (const id of [...this.flows.keys()]) this.follow(id, present.get(id));
  }

  /** One deployment's route changed (undefined: it left the table): follow it, as sync() does for all. */
  follow(deploymentId: number, route: Route | undefined): void {
    const flow = this.flows.get(deploymentId);
    if (flow === undefined) return;
    if (route === undefined) {
      this.refuseAll(flow, { status: 503, code: 'unavailable', message: `deployment ${flow.route.name} was deleted`, headers: { 'retry-after': '5' } });
      this.flows.delete(deploymentId);
      return;
    }
    flow.route = route;
    if (flow.queue.size > 0) this.pump(flow);
  }

  /** Deployments with requests waiting now. */
  queuedDeployments(): number[] {
    const out: number[] = [];
    for (const [id, flow] of this.flows) if (flow.queue.size > 0) out.push(id);
    return out;
  }

  /** Waiting requests of a deployment by class (metrics; empty when none wait). */
  waiting(deploymentId: number): Record<Priority, number> | null {
    const flow = this.flows.get(deploymentId);
    if (flow === undefined || flow.queue.size === 0) return null;
    const out = {} as Record<Priority, number>;
    for (const p of PRIORITIES) out[p] = flow.queue.sizeOf(p);
    return out;
  }

  /** Every waiting request is answered 503 (the gateway is closing). */
  close(): void {
    for (const flow of this.flows.values()) {
      this.refuseAll(flow, { status: 503, code: 'unavailable', message: 'the gateway is shutting down; retry', headers: { 'retry-after': '1' } });
    }
    this.flows.clear();
  }

  /**
   * Whether a request of this class may go now: a replica with room — for a sheddable one while
   * interactive requests were seen lately, room beyond the reserve it leaves them.
   */
  private hasRoom(route: Route, priority: Priority, flow: DeploymentFlow | undefined): boolean {
    const reserving = priority === 'sheddable' && flow !== undefined && this.now() - flow.interactiveAt < INTERACTIVE_MEMORY_MS;
    for (const r of route.replicas) {
      const room = this.capacity.room(r.id);
      if (room <= 0) continue;
      if (!reserving) return true;
      if (this.capacity.prefillAheadMs(r.id) > SHEDDABLE_PREFILL_AHEAD_MS) continue;
      if (room === Infinity || room > Math.floor(this.capacity.limit(r.id) * SHEDDABLE_RESERVE)) return true;
    }
    return false;
  }

  private flowOf(route: Route): DeploymentFlow {
    let flow = this.flows.get(route.deploymentId);
    if (flow === undefined) {
      flow = new DeploymentFlow(route);
      flow.rateAt = this.now();
      this.flows.set(route.deploymentId, flow);
    }
    flow.route = route;
    return flow;
  }

  private enqueue(flow: DeploymentFlow, settings: FlowControl, request: FlowRequest): Waiting | null {
    const { priority } = request;
    const route = flow.route;
    const maxWaitS = settings.max_wait_seconds[priority];
    if (maxWaitS <= 0) {
      this.shed(flow, request, 'wait_timeout', 0, `deployment ${route.name} is at capacity and a ${priority} request does not wait (its max_wait_seconds is 0)`);
      return null;
    }
    if (flow.queue.size >= settings.max_queue) {
      const displaced = flow.queue.displaceFor(priority) as Waiter | null;
      if (displaced === null) {
        this.shed(flow, request, 'queue_full', 0, `deployment ${route.name} is at capacity and its queue is full (${settings.max_queue} waiting, none of a lower class than ${priority})`);
        return null;
      }
      this.settle(displaced);
      this.shed(flow, displaced.request, 'displaced', this.now() - displaced.since, `deployment ${route.name} is at capacity: this ${displaced.priority} request gave its place in the full queue to a ${priority} one`);
    }
    const waiter: Waiter = { priority, credential: request.credential, cost: request.cost, prev: null, next: null, queued: false, request, since: this.now(), timer: null, flow };
    flow.queue.push(waiter);
    waiter.timer = setTimeout(() => {
      waiter.timer = null;
      if (!flow.queue.remove(waiter)) return;
      this.shed(flow, request, 'wait_timeout', this.now() - waiter.since, `deployment ${route.name} is at capacity: this ${priority} request waited ${maxWaitS} s (its class's limit) for a replica`);
    }, maxWaitS * 1000);
    waiter.timer.unref();
    // It may go at once: a critical request behind sheddable ones held back by the reserve.
    this.pump(flow);
    return waiter.queued ? { cancel: () => this.cancel(waiter) } : null;
  }

  private cancel(waiter: Waiter): boolean {
    if (!waiter.flow.queue.remove(waiter)) return false;
    this.settle(waiter);
    return true;
  }

  /** A waiter out of the queue: its timer goes. */
  private settle(waiter: Waiter): void {
    if (waiter.timer !== null) clearTimeout(waiter.timer);
    waiter.timer = null;
  }

  /**
   * Dispatches waiting requests while a replica has room — at most one per replica with room
   * per pass, since a policy may send a request to a replica other than the one with room (a
   * session's), and then looks again on the next end or after REPOLL_MS.
   */
  private pump(flow: DeploymentFlow): void {
    const route = flow.route;
    if (route.paused || route.replicas.length === 0) {
      const why = route.paused ? `deployment ${route.name} was paused` : `deployment ${route.name} has no ready replica`;
      this.refuseAll(flow, { status: 503, code: 'unavailable', message: `${why}; retry`, headers: { 'retry-after': '5' } });
      return;
    }
    let room = 0;
    for (const r of route.replicas) if (this.capacity.room(r.id) > 0) room++;
    for (let next = flow.queue.peek(); room-- > 0 && next !== null && this.hasRoom(route, next, flow); next = flow.queue.peek()) {
      const waiter = flow.queue.pop() as Waiter;
      this.settle(waiter);
      this.meters.waited(route.name, waiter.priority, (this.now() - waiter.since) / 1000);
      this.dispatched(flow);
      waiter.request.go(route);
    }
    this.schedulePoll(flow);
  }

  /** While requests wait, the learnt limits and the engines' queues may change without an end to tell. */
  private schedulePoll(flow: DeploymentFlow): void {
    if (flow.queue.size === 0 || flow.repoll !== null) return;
    flow.repoll = setTimeout(() => {
      flow.repoll = null;
      if (flow.queue.size > 0) this.pump(flow);
    }, REPOLL_MS);
    flow.repoll.unref();
  }

  private dispatched(flow: DeploymentFlow): void {
    const now = this.now();
    flow.rate = flow.rate * Math.exp(-(now - flow.rateAt) / RATE_TAU_MS) + 1 / RATE_TAU_MS;
    flow.rateAt = now;
  }

  /** Seconds until the queue as it stands has drained, at the recent dispatch rate: the Retry-After of a shed request. */
  private retryAfter(flow: DeploymentFlow): number {
    const now = this.now();
    const perMs = flow.rate * Math.exp(-(now - flow.rateAt) / RATE_TAU_MS);
    if (perMs <= 0) return RETRY_AFTER_MAX_S;
    return Math.min(RETRY_AFTER_MAX_S, Math.max(1, Math.ceil((flow.queue.size + 1) / perMs / 1000)));
  }

  private shed(flow: DeploymentFlow, request: FlowRequest, reason: ShedReason, waitedMs: number, why: string): void {
    const seconds = this.retryAfter(flow);
    this.meters.waited(flow.route.name, request.priority, waitedMs / 1000);
    this.meters.shed(flow.route.name, request.priority, reason);
    request.refuse({ status: 429, code: 'overloaded', message: `${why}; retry in ${seconds} s`, headers: { 'retry-after': String(seconds) } }, reason);
  }

  private refuseAll(flow: DeploymentFlow, r: Rejection): void {
    for (const entry of flow.queue.drain()) {
      const waiter = entry as Waiter;
      this.settle(waiter);
      this.meters.waited(flow.route.name, waiter.priority, (this.now() - waiter.since) / 1000);
      this.meters.shed(flow.route.name, waiter.priority, 'unavailable');
      waiter.request.refuse(r, 'unavailable');
    }
    if (flow.repoll !== null) clearTimeout(flow.repoll);
    flow.repoll = null;
  }
}
