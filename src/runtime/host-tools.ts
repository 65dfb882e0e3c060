// Owns finding the host's own tools the runtime runs as root (bubblewrap, setpriv, ip, nsenter,
// iptables, mount): by absolute path from a fixed list, never through PATH, so nothing a
// deployment or the service's environment sets chooses which program runs.

import { accessSync, constants } from 'node:fs';

/** The first of `candidates` that exists and is executable, or null. */
export function firstExecutable(candidates: readonly string[]): string | null {
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // try the next
    }
  }
  return null;
}
