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

/** What every vitest project of this run gets: made once, whatever the number of projects. */
interface RunResources {
  certsTemplate: string;
  /** '' when no Redis is available (only allowed outside CI). */
  redisUrl: string;
  close(): Promise<void>;
}

// vitest calls the global setup once per project (vitest.config.ts has two), each time in a
// module graph of its own but in the one vitest process: the run's resources are kept on the
// process, made by the first call and closed by the last teardown.
const RUN = Symbol.for('infergate.test-run-resources');
type Shared = { resources?: Promise<RunResources>; users: number };
const shared = ((globalThis as { [RUN]?: Shared })[RUN] ??= { users: 0 });

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  shared.users++;
  const run = await (shared.resources ??= prepareRun());
  // Watch mode reruns after an edit: the child processes must run the edited source.
  project.onTestsRerun(() => ensureDistBuilt());
  project.provide('certsTemplate', run.certsTemplate);
  project.provide('redisUrl', run.redisUrl);
  return async () => {
    if (--shared.users > 0) return;
    delete shared.resources;
    await run.close();
  };
}

async function prepareRun(): Promise<RunResources> {
  await ensureDistBuilt();
  const certsTemplate = await makeCertsTemplate();
  const redis = await redisForRun();
  return {
    certsTemplate,
    redisUrl: redis?.url ?? '',
    async close() {
      await redis?.stop?.();
      await rm(path.dirname(certsTemplate), { recursive: true, force: true });
    },
  };
}

/** REDIS_URL, else a throwaway redis-server; undefined when neither (an error under CI=true). */
async function redisForRun(): Promise<{ url: string; stop?: () => Promise<void> } | undefined> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) return { url: fromEnv };
  try {
    return await startThrowawayRedis();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (process.env.CI === 'true') {
      throw new Error(`Redis is required under CI=true: set REDIS_URL or install redis-server (${why})`);
    }
    process.stderr.write(
      `\n!!! WARNING: no Redis (${why}).\n!!! Redis store suites are SKIPPED. Set REDIS_URL or install redis-server to run them.\n\n`,
    );
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
