// Test helper: the pods (network namespaces) a service's local runtime made, found by its
// scope, and their removal after a test killed the service (SIGKILL leaves them, for its next
// start to sweep; a test that does not start it again removes them itself).

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { serviceScope } from '../../src/runtime/service-scope.js';

/** The scope of a service on the file store in `dataDir`, or on Redis at `redisUrl` with `prefix` (the service's default prefix when left out). */
export function scopeOf(dataDir: string, redisUrl?: string, prefix = 'infergate'): string {
  return redisUrl === undefined ? serviceScope(dataDir, null) : serviceScope(dataDir, redisUrl, prefix);
}

/** The names of the scope's namespaces under /var/run/netns. */
export function podNamespaces(scope: string): string[] {
  if (!existsSync('/var/run/netns')) return [];
  return readdirSync('/var/run/netns').filter((n) => n.startsWith(`infergate-${scope}-`));
}

/** Removes them (their veth pairs go with them): for a killed service that will not start again. */
export function removePods(scope: string): void {
  for (const name of podNamespaces(scope)) spawnSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
}
