// Test helper: a Store that counts what is read through it — each get (kind and id) and each
// list (kind) — and passes everything to the real store underneath, so a test can show that
// work follows what changed (one record read) rather than how many records there are.

import type { Kind } from '../../src/domain/records.js';
import type { Store } from '../../src/store/store.js';

export interface StoreReads {
  gets: Array<{ kind: Kind; id: number }>;
  lists: Kind[];
}

export function countingStore(inner: Store): { store: Store; reads: StoreReads; reset(): void } {
  const reads: StoreReads = { gets: [], lists: [] };
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'get') {
        return (kind: Kind, id: number) => {
          reads.gets.push({ kind, id });
          return target.get(kind, id);
        };
      }
      if (prop === 'list') {
        return (kind: Kind) => {
          reads.lists.push(kind);
          return target.list(kind);
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    store,
    reads,
    reset: () => {
      reads.gets.length = 0;
      reads.lists.length = 0;
    },
  };
}
