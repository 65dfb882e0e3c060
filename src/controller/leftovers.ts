// Owns what a deployment leaves behind on this node and in the store, and its removal: a
// directory named by the deployment's id under each per-deployment parent (replica logs,
// model cache, orchestrated workers files) and its usage rows. It only finds and removes;
// when to remove is the controller's call — an id with leftovers, no deployment record and
// no replica of its own still running.

import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Store } from '../store/store.js';
import type { UsageLedger } from '../store/usage-ledger.js';

export interface DeploymentLeftovers {
  /** Ids with a directory under a parent: one readdir per parent, cheap enough for every pass. */
  onDisk(): Promise<Set<number>>;
  /** Ids with usage rows: a scan of every usage record, so it is read seldom. */
  inStore(): Promise<Set<number>>;
  /** Removes everything of deployment `id`; what is already gone is no error. */
  remove(id: number): Promise<void>;
}

export interface LocalLeftoversOptions {
  store: Store;
  /** Parents whose entries are named by deployment id. */
  dirs: string[];
  /** This process's ledger: flushed before usage rows are removed, or its pending counts would write them again. */
  usage?: UsageLedger;
}

export class LocalLeftovers implements DeploymentLeftovers {
  constructor(private readonly opts: LocalLeftoversOptions) {}

  async onDisk(): Promise<Set<number>> {
    const ids = new Set<number>();
    for (const dir of this.opts.dirs) {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch {
        continue; // not made yet: nothing there
      }
      for (const name of names) if (/^[1-9]\d*$/.test(name)) ids.add(Number(name));
    }
    return ids;
  }

  async inStore(): Promise<Set<number>> {
    return new Set((await this.opts.store.list('usage')).map((u) => u.value.deployment_id));
  }

  async remove(id: number): Promise<void> {
    for (const dir of this.opts.dirs) await rm(path.join(dir, String(id)), { recursive: true, force: true });
    await this.opts.usage?.flush();
    for (const u of await this.opts.store.list('usage')) if (u.value.deployment_id === id) await this.opts.store.delete('usage', u.value.id);
  }
}
