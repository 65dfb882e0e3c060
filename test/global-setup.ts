// Vitest global setup: builds dist/ when src/ is newer (every process a test starts runs
// dist/cli/main.js; see helpers/dist-build.ts), makes the run's platform CA
// (helpers/certs-template.ts), and makes a Redis available to the suites that
// need one. Uses REDIS_URL when set, otherwise starts a private, throwaway redis-server on a
// free port (never assumes 6379, never touches a Redis it did not start), and stops it by pid
// afterwards.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import type {} from './helpers/redis.js';
import { makeCertsTemplate } from './helpers/certs-template.js';
import { ensureDistBuilt } from './helpers/dist-build.js';
import { freePort } from './helpers/ports.js';
import { startRedisServer } from './helpers/redis-server.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await ensureDistBuilt();
  // Watch mode reruns after an edit: the child processes must run the edited source.
  project.onTestsRerun(() => ensureDistBuilt());
  const certs = await makeCertsTemplate();
  project.provide('certsTemplate', certs);
  const removeCerts = () => rm(path.dirname(certs), { recursive: true, force: true });
  const stopRedis = await provideRedis(project);
  return async () => {
    await stopRedis?.();
    await removeCerts();
  };
}

async function provideRedis(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) {
    project.provide('redisUrl', fromEnv);
    return undefined;
  }
  try {
    const server = await startThrowawayRedis();
    project.provide('redisUrl', server.url);
    return server.stop;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (process.env.CI === 'true') {
      throw new Error(`Redis is required under CI=true: set REDIS_URL or install redis-server (${why})`);
    }
    process.stderr.write(
      `\n!!! WARNING: no Redis (${why}).\n!!! Redis store suites are SKIPPED. Set REDIS_URL or install redis-server to run them.\n\n`,
    );
    project.provide('redisUrl', '');
    return undefined;
  }
}

interface RunningRedis {
  url: string;
  stop: () => Promise<void>;
}

async function startThrowawayRedis(): Promise<RunningRedis> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-redis-'));
  try {
    const server = await startRedisServer({ port: await freePort(), dir });
    return {
      url: server.url,
      stop: async () => {
        await server.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
