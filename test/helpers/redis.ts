// Test helper: the Redis URL that test/global-setup.ts provided (from REDIS_URL or a private
// redis-server it started), and a describe that skips loudly when there is none.

import { describe, inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** '' when no Redis is available (only allowed outside CI). */
    redisUrl: string;
  }
}

export function redisUrlForTests(): string | undefined {
  const url = inject('redisUrl');
  return url ? url : undefined;
}

/** A describe block that needs Redis: skipped, with a warning naming it, when there is none. */
export function describeWithRedis(name: string, fn: () => void): void {
  if (redisUrlForTests()) {
    describe(name, fn);
    return;
  }
  console.warn(`SKIPPED (no Redis): ${name}`);
  describe.skip(name, fn);
}
