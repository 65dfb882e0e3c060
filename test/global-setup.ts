// Vitest global setup: makes a Redis available to the suites that need one. Uses REDIS_URL
// when set, otherwise starts a private, throwaway redis-server on a free port (never assumes
// 6379, never touches a Redis it did not start), and stops it by pid afterwards.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import type {} from './helpers/redis.js';
import { freePort } from './helpers/ports.js';

const READY_TIMEOUT_MS = 10_000;

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) {
    project.provide('redisUrl', fromEnv);
    return undefined;
  }
  try {
    const server = await startRedisServer();
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

async function startRedisServer(): Promise<RunningRedis> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-redis-'));
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const stop = async () => {
    await stopChild(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitUntilAnswering(child, port);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `redis://127.0.0.1:${port}`, stop };
}

/** Resolves once the server answers PING; rejects if it exits, cannot start, or is too slow. */
async function waitUntilAnswering(child: ChildProcess, port: number): Promise<void> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (err) => reject(new Error(`cannot start redis-server: ${err.message}`)));
    child.once('exit', (code, signal) =>
      reject(new Error(`redis-server exited (${signal ?? code}) before answering: ${stderr.trim()}`)),
    );
  });
  failed.catch(() => undefined);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const answered = await Promise.race([pingOnce(port), failed]);
    if (answered) return;
    await Promise.race([sleep(50), failed]);
  }
  throw new Error(`redis-server on port ${port} did not answer PING within ${READY_TIMEOUT_MS} ms`);
}

/** A raw RESP PING, so readiness does not depend on a client library's reconnect logic. */
function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
