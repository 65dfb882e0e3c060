// Owns the Frontend's view of its workers: the workers file the platform rewrites as replicas
// come and go (read every poll interval, applied when its content changes), and one pool per
// role that picks the worker with the fewest in-flight requests, ties taken round-robin — or,
// for an aggregated Frontend with --routing-policy prefix-aware, the worker the gateway's own
// prefix-aware policy (balancer/prefix-aware.ts) would choose: where the prompt's prefix is
// thought to be cached, weighed against the in-flight requests and prefill it has been sent.
//
// A file that cannot be parsed (a write caught half way, a typo) keeps the last good lists and
// logs why: dropping every worker on a bad read would fail traffic the workers could serve. A
// missing or empty file means no workers.

import { readFile } from 'node:fs/promises';
import type { Dispatch, PrefixAwareSelector, PrefixRequest } from '../balancer/prefix-aware.js';
import type { ReplicaRef } from '../balancer/selector.js';
import type { FrontendMode } from './options.js';

export type Role = 'workers' | 'prefill' | 'decode';

export interface WorkerLists {
  workers: string[];
  prefill: string[];
  decode: string[];
}

export const NO_WORKERS: WorkerLists = { workers: [], prefill: [], decode: [] };

const ADDRESS_RE = /^(?:https?:\/\/)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):(\d{1,5})\/?$/;

/** The roles a mode routes to, in the order a request uses them. */
export function rolesOf(mode: FrontendMode): Role[] {
  return mode === 'aggregated' ? ['workers'] : ['prefill', 'decode'];
}

/** Parses the workers file; a string is why it cannot be used. */
export function parseWorkersFile(text: string, mode: FrontendMode): WorkerLists | string {
  if (text.trim() === '') return NO_WORKERS;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return `not JSON: ${(err as Error).message}`;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'expected a JSON object';
  const record = body as Record<string, unknown>;
  const lists: WorkerLists = { workers: [], prefill: [], decode: [] };
  for (const role of rolesOf(mode)) {
    const value = record[role];
    if (value === undefined || value === null) continue;
    if (!Array.isArray(value)) return `"${role}" must be an array of "host:port" strings`;
    for (const entry of value) {
      if (typeof entry !== 'string' || !ADDRESS_RE.test(entry.trim())) return `"${role}" has ${JSON.stringify(entry)}, which is not "host:port"`;
      const port = Number(ADDRESS_RE.exec(entry.trim())?.[1]);
      if (port < 1 || port > 65535) return `"${role}" has ${JSON.stringify(entry)}, whose port is out of range`;
    }
    lists[role] = [...new Set((value as string[]).map((e) => e.trim().replace(/\/$/, '')))];
  }
  return lists;
}

/** The base URL of a worker address ("host:port" or a URL). */
export function workerUrl(address: string): string {
  return /^https?:\/\//.test(address) ? address : `http://${address}`;
}

/** One request's hold on a worker; release() once its response has ended (idempotent). */
export interface Lease {
  address: string;
  url: string;
  /** The worker's first response byte: its prefill for this request is done (idempotent). */
  firstByte(): void;
  release(): void;
}

const NO_DISPATCH: Dispatch = { firstByte: () => undefined, end: () => undefined };

export class WorkerPool {
  private addresses: string[] = [];
  private cursor = 0;
  /** By address, not by list position: a worker's count survives the file being rewritten. */
  private readonly inFlight = new Map<string, number>();
  /** A number per address, as the policy knows replicas by id; kept while the address is listed. */
  private readonly ids = new Map<string, number>();
  private nextId = 1;

  constructor(
    readonly role: Role,
    private readonly policy: PrefixAwareSelector | null = null,
  ) {}

  get size(): number {
    return this.addresses.length;
  }

  list(): readonly string[] {
    return this.addresses;
  }

  set(addresses: readonly string[]): void {
    this.addresses = [...addresses];
    this.cursor = this.addresses.length === 0 ? 0 : this.cursor % this.addresses.length;
    for (const a of this.ids.keys()) if (!this.addresses.includes(a)) this.ids.delete(a);
    for (const a of this.addresses) if (!this.ids.has(a)) this.ids.set(a, this.nextId++);
    // A worker that left takes what the policy thought it cached with it.
    this.policy?.retain(new Set(this.ids.values()));
  }

  inFlightOf(address: string): number {
    return this.inFlight.get(address) ?? 0;
  }

  /**
   * With the prefix-aware policy, the worker it finds cheapest for this prompt (a request
   * without a prompt it can read counts as one with no cached prefix anywhere); else the
   * worker with the fewest in-flight requests, among equals the next one round-robin.
   */
  pick(request: PrefixRequest = { session: null, blocks: null }): Lease | null {
    if (this.policy !== null) return this.pickByPolicy(this.policy, request);
    const n = this.addresses.length;
    if (n === 0) return null;
    let best = -1;
    let bestCount = Infinity;
    for (let k = 0; k < n; k++) {
      const i = (this.cursor + k) % n;
      const count = this.inFlightOf(this.addresses[i] as string);
      if (count < bestCount) {
        best = i;
        bestCount = count;
      }
    }
    this.cursor = (best + 1) % n;
    return this.lease(this.addresses[best] as string, NO_DISPATCH);
  }

  private pickByPolicy(policy: PrefixAwareSelector, request: PrefixRequest): Lease | null {
    const refs: ReplicaRef[] = this.addresses.map((address) => ({ id: this.ids.get(address)!, address }));
    const byId = new Map(refs.map((r) => [r.id, r.address]));
    const load = { inflight: (id: number) => this.inFlightOf(byId.get(id) ?? '') };
    const chosen = policy.choose(refs, load, request).order[0];
    if (!chosen) return null;
    return this.lease(chosen.address, policy.dispatched(chosen, request));
  }

  private lease(address: string, dispatch: Dispatch): Lease {
    this.inFlight.set(address, this.inFlightOf(address) + 1);
    let released = false;
    return {
      address,
      url: workerUrl(address),
      firstByte: () => dispatch.firstByte(),
      release: () => {
        if (released) return;
        released = true;
        dispatch.end();
        const left = this.inFlightOf(address) - 1;
        if (left <= 0) this.inFlight.delete(address);
        else this.inFlight.set(address, left);
      },
    };
  }
}

export interface WatcherHooks {
  onChange(lists: WorkerLists): void;
  onProblem(message: string): void;
}

/** Polls the workers file; the first read happens in start() so the pools are right from the start. */
export class WorkersFileWatcher {
  private last: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private reading = false;

  constructor(
    private readonly file: string,
    private readonly mode: FrontendMode,
    private readonly pollMs: number,
    private readonly hooks: WatcherHooks,
  ) {}

  async start(): Promise<void> {
    await this.poll();
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async poll(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      let text: string;
      try {
        text = await readFile(this.file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') throw err;
        text = '';
        if (this.last !== '\0missing') this.hooks.onProblem(`workers file ${this.file} does not exist (yet): no workers`);
        if (this.last !== '\0missing') this.hooks.onChange(NO_WORKERS);
        this.last = '\0missing';
        return;
      }
      if (text === this.last) return;
      this.last = text;
      const parsed = parseWorkersFile(text, this.mode);
      if (typeof parsed === 'string') this.hooks.onProblem(`workers file ${this.file} is not usable, keeping the last good workers: ${parsed}`);
      else this.hooks.onChange(parsed);
    } catch (err) {
      this.hooks.onProblem(`workers file ${this.file} cannot be read: ${(err as Error).message}`);
    } finally {
      this.reading = false;
    }
  }
}
