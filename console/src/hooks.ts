// Owns the data hooks: a GET that refreshes on an interval (the deployments list and detail
// update by themselves), keeping the last good answer on screen while the next one loads so
// tables never jump, and pausing while the tab is hidden; and the same for a paged list read
// whole (every page, api/pages.ts), which waits longer between refreshes when a walk is slow.

import { useCallback, useEffect, useRef, useState } from 'react';
import { api, ApiError } from './api/client';
import { allPages } from './api/pages';
import type { Items } from './api/types';

export interface Polled<T> {
  data: T | null;
  error: ApiError | null;
  reload: () => void;
}

/**
 * A load function polled as usePoll polls a GET. `after(tookMs)`: how long to wait before the
 * next load (default intervalMs).
 */
function usePolled<T>(key: string | null, intervalMs: number, fetcher: (signal: AbortSignal) => Promise<T>, after?: (tookMs: number) => number): Polled<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const keyRef = useRef(key);
  const fetcherRef = useRef(fetcher);
  fetcherRef.current = fetcher;
  const afterRef = useRef(after);
  afterRef.current = after;

  useEffect(() => {
    if (keyRef.current !== key) {
      keyRef.current = key;
      setData(null);
      setError(null);
    }
    if (key === null) return;
    const aborter = new AbortController();
    let timer: number | undefined;
    const load = async () => {
      const started = performance.now();
      try {
        const answer = await fetcherRef.current(aborter.signal);
        setData(answer);
        setError(null);
      } catch (err) {
        if ((err as Error).name === 'AbortError') return;
        setError(err instanceof ApiError ? err : new ApiError(0, 'error', String(err), undefined, []));
      }
      const wait = afterRef.current?.(performance.now() - started) ?? intervalMs;
      if (!aborter.signal.aborted && intervalMs > 0) timer = window.setTimeout(() => void loadWhenVisible(), wait);
    };
    const loadWhenVisible = async () => {
      if (document.visibilityState === 'hidden') {
        timer = window.setTimeout(() => void loadWhenVisible(), intervalMs);
        return;
      }
      await load();
    };
    void load();
    return () => {
      aborter.abort();
      if (timer !== undefined) window.clearTimeout(timer);
    };
  }, [key, intervalMs, tick]);

  return { data, error, reload };
}

/**
 * Waits between two walks through a paged list: the interval, or ten times the walk's own
 * time when that is longer, so a long list refreshing costs the API at most a tenth of its time.
 */
export const walkPause = (intervalMs: number) => (tookMs: number) => Math.max(intervalMs, 10 * tookMs);

/** Every page of the list at `path` (api/pages.ts), refreshed like usePoll; `data` holds them all as `{ items }`. */
export function usePollAll<T>(path: string | null, intervalMs: number): Polled<Items<T>> {
  return usePolled<Items<T>>(path, intervalMs, async (signal) => ({ items: await allPages<T>(path ?? '', signal) }), walkPause(intervalMs));
}

export function usePoll<T>(path: string | null, intervalMs: number): Polled<T> {
  return usePolled<T>(path, intervalMs, (signal) => api.get<T>(path ?? '', signal));
}
