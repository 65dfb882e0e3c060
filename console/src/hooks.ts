// Owns the data hooks: a GET that refreshes on an interval (the deployments list and detail
// update by themselves), keeping the last good answer on screen while the next one loads so
// tables never jump, and pausing while the tab is hidden.

import { useCallback, useEffect, useRef, useState } from 'react';
import { api, ApiError } from './api/client';

export interface Polled<T> {
  data: T | null;
  error: ApiError | null;
  reload: () => void;
}

export function usePoll<T>(path: string | null, intervalMs: number): Polled<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const pathRef = useRef(path);

  useEffect(() => {
    if (pathRef.current !== path) {
      pathRef.current = path;
      setData(null);
      setError(null);
    }
    if (path === null) return;
    const aborter = new AbortController();
    let timer: number | undefined;
    const load = async () => {
      try {
        const answer = await api.get<T>(path, aborter.signal);
        setData(answer);
        setError(null);
      } catch (err) {
        if ((err as Error).name === 'AbortError') return;
        setError(err instanceof ApiError ? err : new ApiError(0, 'error', String(err), undefined, []));
      }
      if (!aborter.signal.aborted && intervalMs > 0) timer = window.setTimeout(() => void loadWhenVisible(), intervalMs);
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
  }, [path, intervalMs, tick]);

  return { data, error, reload };
}
