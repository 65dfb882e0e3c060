// Owns a service's scope: a short hash of its store (the Redis URL and key prefix, else the
// data directory's real path), the same for every process and restart of one installation
// and different between installations on one host. What a service leaves on the host under
// its own name — the Docker runtime's containers and network, the local runtime's pods — is
// named or labelled with it, so a later start finds its own leftovers and no one else's.

import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import path from 'node:path';

export function serviceScope(dataDir: string, redisUrl: string | null, redisPrefix = ''): string {
  let where = redisUrl === null ? dataDir : `${redisUrl}\n${redisPrefix}`;
  if (redisUrl === null) {
    try {
      where = realpathSync(dataDir);
    } catch {
      where = path.resolve(dataDir);
    }
  }
  return createHash('sha256').update(where).digest('hex').slice(0, 10);
}
