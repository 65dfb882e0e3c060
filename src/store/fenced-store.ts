// Owns the fenced view of a store: the same reads, change feed and leases, with every write
// (create, update, delete — and so `modify` — and events) carrying the holder's fence, so that the store
// refuses it once the lease has passed to another process (FencedError). The controller
// writes through one; what it must always be able to write (usage, which counts what really
// ran) goes to the store itself.

import type { Kind, RecordMap } from '../domain/records.js';
import type { CreateOptions, Fence, Store, Versioned, WriteOptions } from './store.js';

export function fencedStore(store: Store, fence: Fence): Store {
  const withFence = <T extends WriteOptions>(options: T | undefined): T => ({ ...(options ?? ({} as T)), fence });
  return {
    open: () => store.open(),
    close: () => store.close(),
    ping: () => store.ping(),
    get: (kind, id) => store.get(kind, id),
    list: (kind) => store.list(kind),
    lookup: (index, key) => store.lookup(index, key),
    create: <K extends Kind>(kind: K, build: (id: number) => RecordMap[K], options?: CreateOptions): Promise<Versioned<RecordMap[K]>> =>
      store.create(kind, build, withFence(options)),
    update: <K extends Kind>(kind: K, id: number, expectedVersion: number, value: RecordMap[K], options?: WriteOptions): Promise<Versioned<RecordMap[K]>> =>
      store.update(kind, id, expectedVersion, value, withFence(options)),
    delete: (kind, id, expectedVersion, options) => store.delete(kind, id, expectedVersion, withFence(options)),
    appendEvent: (deploymentId, event, options) => store.appendEvent(deploymentId, event, withFence(options)),
    listEvents: (deploymentId) => store.listEvents(deploymentId),
    watch: (listener) => store.watch(listener),
    onResync: (listener) => store.onResync(listener),
    holdLease: (name, holder, ttlMs) => store.holdLease(name, holder, ttlMs),
    releaseLease: (name, holder) => store.releaseLease(name, holder),
    publishReport: (topic, publisher, body, ttlMs) => store.publishReport(topic, publisher, body, ttlMs),
    readReports: (topic) => store.readReports(topic),
  };
}
