// Owns reading this process's open-file limit (Linux /proc/self/limits), so the service can
// say at start when its connection caps are above what the kernel will let it open: past
// that limit accept() fails for every listener at once, which is what the caps are for.

import { readFileSync } from 'node:fs';

/** The soft limit on open files, or null when it cannot be read (not Linux) or is unlimited. */
export function openFileLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    return soft === undefined || soft === 'unlimited' ? null : Number(soft);
  } catch {
    return null;
  }
}

/**
 * A warning when the caps (plus room for upstream connections, replicas' pipes and files)
 * do not fit under the limit; null when they do. 0 in a cap means none: always a warning.
 */
export function capsWarning(limit: number | null, caps: number[]): string | null {
  if (limit === null) return null;
  const needed = caps.some((c) => c === 0) ? Infinity : caps.reduce((a, b) => a + b, 0) + 1024;
  if (needed <= limit) return null;
  const what = Number.isFinite(needed) ? `${needed - 1024} connections (+1024 for upstreams and files)` : 'an uncapped listener';
  return `infergate: warning: the open-file limit is ${limit}, below ${what}; raise it (ulimit -n, LimitNOFILE=) or lower --max-connections / --api-max-connections`;
}
