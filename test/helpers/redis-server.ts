// Test helper: a private redis-server on a port and directory the caller chooses, answered
// PING before it is handed over, stopped by its pid. The vitest global setup runs a throwaway
// one; a test that stops and starts Redis itself runs one with persistence, so the data
// survives the restart.

import { waitFor } from './wait.js';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { stopChild } from './child-process.js';

const READY_TIMEOUT_MS = 10_000;

export interface RedisServerOptions {
  port: number;
  dir: string;
  /** Every write appended to disk and fsynced before it is answered: a restart loses nothing. */
  persistent?: boolean;
}

export interface RedisServer {
  url: string;
  pid: number;
  /** SIGTERM (a persistent server finishes its append-only file), SIGKILL after 5 s. */
  stop(): Promise<void>;
}

export async function startRedisServer(opts: RedisServerOptions): Promise<RedisServer> {
  const persistence = opts.persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const child = spawn('redis-server', ['--port', String(opts.port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', opts.dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stop = () => stopChild(child);
  try {
    await waitUntilAnswering(child, opts.port);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `redis://127.0.0.1:${opts.port}`, pid: child.pid!, stop };
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
  await Promise.race([waitFor(() => pingOnce(port), READY_TIMEOUT_MS, `redis-server on port ${port} to answer PING`, 50), failed]);
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
