// Owns what the autoscaler reads of the store, kept in memory from the change feed: each
// replica's deployment, component, revision and state (a few fields, every replica), and the
// records of the deployments it is deciding for now (those it leaves idle are dropped and read
// again when they change or get traffic). Read whole when it opens and after the store's resync
// (events were lost); after that each event re-reads only the record it names, once however
// many events named it — so a tick costs nothing per deployment that did not change.

import type { DeploymentRecord, ReplicaRecord } from '../domain/records.js';
import type { ChangeEvent, Store } from '../store/store.js';

/** What the autoscaler reads of a replica. */
export type ReplicaFacts = Pick<ReplicaRecord, 'id' | 'deployment_id' | 'revision' | 'component' | 'state'>;

/** What a sync found. */
export interface RecordsSync {
  /** Every deployment's id after a full read (the first one, or after a resync); null otherwise. */
  all: number[] | null;
  /** Deployments whose record or one of whose replicas changed (a full read: none listed, see `all`). */
  changed: Set<number>;
  /** Deployments whose record is gone. */
  deleted: Set<number>;
}

type Pending = { kind: 'deployment' | 'replica'; id: number; op: ChangeEvent['op'] };

export class ScalingRecords {
  private readonly deployments = new Map<number, DeploymentRecord>();
  private readonly replicas = new Map<number, ReplicaFacts>();
  private readonly byDeployment = new Map<number, Map<number, ReplicaFacts>>();
  private readonly pending = new Map<string, Pending>();
  private full = true;
  private unwatch: (() => void) | null = null;
  private unresync: (() => void) | null = null;

  constructor(private readonly store: Store) {}

  /** Follows the change feed from now on; the next sync reads everything. No-op when open. */
  open(): void {
    if (this.unwatch !== null) return;
    this.full = true;
    this.unwatch = this.store.watch((event) => {
      if (event.kind !== 'deployment' && event.kind !== 'replica') return;
      this.pending.set(`${event.kind}:${event.id}`, { kind: event.kind, id: event.id, op: event.op });
    });
    this.unresync = this.store.onResync(() => {
      this.full = true;
    });
  }

  close(): void {
    this.unwatch?.();
    this.unresync?.();
    this.unwatch = this.unresync = null;
    this.pending.clear();
  }

  /** Applies what the feed named since the last sync, reading each named record once. */
  async sync(): Promise<RecordsSync> {
    if (this.full) return this.readAll();
    const batch = [...this.pending.values()];
    this.pending.clear();
    let read: Array<DeploymentRecord | ReplicaRecord | undefined>;
    try {
      // Ids are never reused: a deleted record needs no read.
      read = await Promise.all(batch.map((p) => (p.op === 'delete' ? Promise.resolve(undefined) : this.read(p))));
    } catch (err) {
      // Still to do; a newer event of the same record, if one came meanwhile, stands.
      for (const p of batch) if (!this.pending.has(`${p.kind}:${p.id}`)) this.pending.set(`${p.kind}:${p.id}`, p);
      throw err;
    }
    const out: RecordsSync = { all: null, changed: new Set(), deleted: new Set() };
    batch.forEach((p, i) => {
      const value = read[i];
      if (p.kind === 'replica') {
        const before = this.replicas.get(p.id);
        if (before) out.changed.add(before.deployment_id);
        this.setReplica(p.id, value as ReplicaRecord | undefined);
        if (value) out.changed.add((value as ReplicaRecord).deployment_id);
      } else if (value) {
        this.deployments.set(p.id, value as DeploymentRecord);
        out.changed.add(p.id);
      } else {
        this.deployments.delete(p.id);
        out.deleted.add(p.id);
      }
    });
    for (const id of out.deleted) out.changed.delete(id);
    return out;
  }

  /** Reads the records of the deployments in `ids` not held (a deployment that woke up); those that do not exist stay unknown. */
  async ensure(ids: Iterable<number>): Promise<void> {
    const missing = [...ids].filter((id) => !this.deployments.has(id));
    const read = await Promise.all(missing.map((id) => this.store.get('deployment', id)));
    for (const r of read) if (r && !this.deployments.has(r.value.id)) this.deployments.set(r.value.id, r.value);
  }

  /** The deployment's record, if held. */
  deployment(id: number): DeploymentRecord | undefined {
    return this.deployments.get(id);
  }

  /** Stops holding a deployment's record (it is idle); read again when it changes or wakes. */
  drop(id: number): void {
    this.deployments.delete(id);
  }

  /** The deployment's replicas, by id. */
  replicasOf(deploymentId: number): ReplicaFacts[] {
    const mine = this.byDeployment.get(deploymentId);
    return mine === undefined ? [] : [...mine.values()].sort((a, b) => a.id - b.id);
  }

  private async read(p: Pending): Promise<DeploymentRecord | ReplicaRecord | undefined> {
    return p.kind === 'deployment' ? (await this.store.get('deployment', p.id))?.value : (await this.store.get('replica', p.id))?.value;
  }

  private async readAll(): Promise<RecordsSync> {
    this.full = false;
    // What the feed names from here on is as new as these lists or newer: it is applied after.
    this.pending.clear();
    const [deployments, replicas] = await Promise.all([this.store.list('deployment'), this.store.list('replica')]).catch((err: unknown) => {
      this.full = true;
      throw err;
    });
    const before = new Set(this.deployments.keys());
    this.deployments.clear();
    this.replicas.clear();
    this.byDeployment.clear();
    for (const { value } of deployments) this.deployments.set(value.id, value);
    for (const { value } of replicas) this.setReplica(value.id, value);
    const deleted = new Set([...before].filter((id) => !this.deployments.has(id)));
    return { all: deployments.map((d) => d.value.id), changed: new Set(), deleted };
  }

  private setReplica(id: number, r: ReplicaRecord | undefined): void {
    const before = this.replicas.get(id);
    if (before) {
      const mine = this.byDeployment.get(before.deployment_id);
      mine?.delete(id);
      if (mine?.size === 0) this.byDeployment.delete(before.deployment_id);
      this.replicas.delete(id);
    }
    if (!r) return;
    const facts: ReplicaFacts = { id: r.id, deployment_id: r.deployment_id, revision: r.revision, component: r.component, state: r.state };
    this.replicas.set(id, facts);
    let mine = this.byDeployment.get(r.deployment_id);
    if (!mine) this.byDeployment.set(r.deployment_id, (mine = new Map()));
    mine.set(id, facts);
  }
}
