// Owns usage accounting: counts added on hot paths (a request answered, a replica alive for
// a while) are summed in memory per deployment and clock hour, then flushed every couple of
// seconds into one `usage` record per (deployment, hour) with a compare-and-set add, so
// several processes (gateways, the controller) add to the same figures exactly. Figures that
// name the revision of the replica behind them count under that revision too. A flush that
// fails (the store is unreachable) keeps its deltas in memory for the next one, and a write
// whose answer was lost is recognised when retried, so nothing is lost or counted twice
// (usage-batches.ts); stop() flushes what is left. A usage record names the project of its
// deployment, as the caller says (the gateway knows its route's) or, when none did, as the
// deployment record says when the hour's record is created.

import { randomBytes } from 'node:crypto';
import type { RevisionUsage, UsageRecord } from '../domain/records.js';
import { projectOf } from '../domain/access.js';
import { ConflictError, modify, type Store } from './store.js';
import { UsageBatches, type Batch } from './usage-batches.js';

export const USAGE_INDEX = 'usage-hour';
const HOUR_MS = 3_600_000;

export interface UsageDelta {
  requests?: number;
  errors?: number;
  prompt_tokens?: number;
  completion_tokens?: number;
  rate_limited?: number;
  gpu_seconds?: number;
  replica_seconds?: Record<string, number>;
  /**
   * The revision of the replica these figures come from: its requests, errors, tokens and
   * gpu_seconds count under it as well (rate_limited and replica_seconds only in the
   * deployment's). Absent: the request reached no replica.
   */
  revision?: number;
}

type Pending = Required<Omit<UsageDelta, 'replica_seconds' | 'revision'>> & { replica_seconds: Record<string, number>; revisions: Record<string, RevisionUsage> };

const empty = (): Pending => ({ requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, rate_limited: 0, gpu_seconds: 0, replica_seconds: {}, revisions: {} });

const noRevisionUsage = (): RevisionUsage => ({ requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, gpu_seconds: 0 });

/** `into` plus `d`, field by field (a new object: records' maps are never changed in place). */
function plus(into: RevisionUsage | undefined, d: Partial<RevisionUsage>): RevisionUsage {
  const base = into ?? noRevisionUsage();
  return {
    requests: base.requests + (d.requests ?? 0),
    errors: base.errors + (d.errors ?? 0),
    prompt_tokens: base.prompt_tokens + (d.prompt_tokens ?? 0),
    completion_tokens: base.completion_tokens + (d.completion_tokens ?? 0),
    gpu_seconds: base.gpu_seconds + (d.gpu_seconds ?? 0),
  };
}

export function hourOf(ms: number): string {
  return new Date(ms - (ms % HOUR_MS)).toISOString();
}

function merge(into: Pending, d: UsageDelta): void {
  into.requests += d.requests ?? 0;
  into.errors += d.errors ?? 0;
  into.prompt_tokens += d.prompt_tokens ?? 0;
  into.completion_tokens += d.completion_tokens ?? 0;
  into.rate_limited += d.rate_limited ?? 0;
  into.gpu_seconds += d.gpu_seconds ?? 0;
  for (const [c, v] of Object.entries(d.replica_seconds ?? {})) into.replica_seconds[c] = (into.replica_seconds[c] ?? 0) + v;
  if (d.revision !== undefined) into.revisions[d.revision] = plus(into.revisions[d.revision], d);
}

export class UsageLedger {
  private readonly batches = new UsageBatches<Pending, UsageDelta>(empty, merge);
  /** This ledger's name in the records' `flushed` map: a process's batch numbers are its own. */
  private readonly writer = randomBytes(6).toString('hex');
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  /** The project of each deployment added to since the last flush took its batches, as the callers said. */
  private projects = new Map<number, string>();

  constructor(
    private readonly store: Store,
    private readonly flushMs = 2000,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  /** The hour of the last add: the gateway adds once per request, and hours rarely change. */
  private lastHour = { start: -1, iso: '' };

  /** `project`: the deployment's, when the caller knows it (else read from its record when the hour's record is created). */
  add(deploymentId: number, atMs: number, delta: UsageDelta, project?: string): void {
    if (project !== undefined) this.projects.set(deploymentId, project);
    const start = atMs - (atMs % HOUR_MS);
    if (start !== this.lastHour.start) this.lastHour = { start, iso: new Date(start).toISOString() };
    this.batches.add(`${deploymentId}:${this.lastHour.iso}`, delta);
  }

  /** Deployment-hours whose usage is counted here and not yet in the store. */
  get unflushed(): number {
    return this.batches.size;
  }

  /** A replica of `revision` alive from `fromMs` to `toMs`: its seconds, split at hour boundaries. */
  addLifetime(deploymentId: number, component: string, gpus: number, fromMs: number, toMs: number, revision?: number): void {
    for (let start = fromMs; start < toMs; ) {
      const end = Math.min(toMs, start - (start % HOUR_MS) + HOUR_MS);
      const seconds = (end - start) / 1000;
      this.add(deploymentId, start, { gpu_seconds: seconds * gpus, replica_seconds: { [component]: seconds }, ...(revision !== undefined ? { revision } : {}) });
      start = end;
    }
  }

  /** Writes every pending delta; one flush at a time. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    this.flushing = (async () => {
      // Taken with the batches, so the map holds only deployments added to since.
      const projects = this.projects;
      this.projects = new Map();
      for (const batch of this.batches.take()) {
        let written = false;
        try {
          written = await this.write(batch, projects);
          if (written) this.batches.confirm(batch);
        } catch {
          // Kept, unchanged, for the next flush: usage is never dropped for a store outage.
        }
        // A batch kept for the next flush keeps the project it was told.
        const id = Number(batch.key.slice(0, batch.key.indexOf(':')));
        const project = projects.get(id);
        if (!written && project !== undefined && !this.projects.has(id)) this.projects.set(id, project);
      }
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /** True once the batch is in the store (added now, or by an earlier write whose answer was lost). */
  private async write(batch: Batch<Pending>, projects: ReadonlyMap<number, string>): Promise<boolean> {
    const { key, seq, delta } = batch;
    const colon = key.indexOf(':');
    const deploymentId = Number(key.slice(0, colon));
    const hour = key.slice(colon + 1);
    const now = new Date().toISOString();
    const stamp = { writer: this.writer, seq };
    for (let attempt = 0; attempt < 3; attempt++) {
      const found = await this.store.lookup(USAGE_INDEX, key);
      if (found) {
        await modify(this.store, 'usage', found.id, (u) => ((u.flushed?.[this.writer] ?? 0) >= seq ? undefined : add(u, delta, now, stamp)));
        return true;
      }
      try {
        const zero = { requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, rate_limited: 0, gpu_seconds: 0, replica_seconds: {} };
        const project = projects.get(deploymentId) ?? (await this.projectOf(deploymentId));
        const owner = project === null ? {} : { project };
        await this.store.create('usage', (id) => add({ id, ...owner, deployment_id: deploymentId, hour, ...zero, updated_at: now }, delta, now, stamp), {
          unique: [{ index: USAGE_INDEX, key }],
        });
        return true;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err; // another process created it first: add to it
      }
    }
    return false;
  }

  /** The deployment's project from its record; null when it is gone (its usage rows are removed with its other leftovers). */
  private async projectOf(deploymentId: number): Promise<string | null> {
    const d = await this.store.get('deployment', deploymentId);
    return d === undefined ? null : projectOf(d.value);
  }
}

function add(u: UsageRecord, d: Pending, now: string, stamp: { writer: string; seq: number }): UsageRecord {
  const replica_seconds = { ...u.replica_seconds };
  for (const [c, v] of Object.entries(d.replica_seconds)) replica_seconds[c] = (replica_seconds[c] ?? 0) + v;
  const revisions = { ...u.revisions };
  for (const [r, v] of Object.entries(d.revisions)) revisions[r] = plus(revisions[r], v);
  return {
    ...u,
    requests: u.requests + d.requests,
    errors: u.errors + d.errors,
    prompt_tokens: u.prompt_tokens + d.prompt_tokens,
    completion_tokens: u.completion_tokens + d.completion_tokens,
    rate_limited: (u.rate_limited ?? 0) + d.rate_limited,
    gpu_seconds: u.gpu_seconds + d.gpu_seconds,
    replica_seconds,
    // Left out while no revision has figures: such a record reads the same as an older one.
    ...(Object.keys(revisions).length > 0 ? { revisions } : {}),
    flushed: { ...u.flushed, [stamp.writer]: stamp.seq },
    updated_at: now,
  };
}
