// Owns `infergate engine`: the reference engine as a process. Parses flags, logs JSON lines to
// stdout with pino (the replica runtime captures stdout/stderr as the replica's logs), starts
// the server (HTTP, or gRPC for the v2 flavor) and drains it on SIGTERM/SIGINT before exiting
// 0. A bad flag or a port that cannot be bound is one line on stderr and exit code 1.

import { pino } from 'pino';
import { engineHelp, EngineOptionsError, parseEngineOptions, type EngineOptions } from '../engine/options.js';
import { readFile } from 'node:fs/promises';
import { packageVersion } from './version.js';
import { createEngine, EngineListenError } from '../engine/server.js';

function fail(message: string): never {
  process.stderr.write(`infergate engine: error: ${message}\n`);
  process.exit(1);
}


export async function runEngine(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(engineHelp() + '\n');
    return;
  }
  let options: EngineOptions;
  try {
    options = parseEngineOptions(args, process.env);
  } catch (err) {
    if (err instanceof EngineOptionsError) fail(err.message);
    throw err;
  }
  // Synchronous writes: the log must survive process.exit at the end of a drain.
  const log = pino(
    { level: options.logLevel, base: { service: 'infergate-engine', flavor: options.flavor, replica: options.replicaId, pid: process.pid } },
    pino.destination({ dest: 1, sync: true }),
  );
  const deps = { options, log, env: process.env, release: packageVersion() };
  await readHubCredential(options.hubTokenFile, log);
  // v2 speaks gRPC on its port; the other flavors share the HTTP server. gRPC and protobuf are
  // loaded only for v2: they are a third of an HTTP engine's start-up CPU otherwise.
  const engine = options.flavor === 'v2' ? (await import('../engine/v2-server.js')).createV2Engine(deps) : createEngine(deps);
  try {
    await engine.start();
  } catch (err) {
    if (err instanceof EngineListenError) fail(err.message);
    throw err;
  }
  const shutdown = (signal: NodeJS.Signals) => {
    engine.shutdown(signal).then(
      () => process.exit(0),
      (err: Error) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

/**
 * The model-hub credential of an orchestrated worker comes as a file (never an environment
 * variable): read it to know it is there, and say so without ever printing it.
 */
async function readHubCredential(file: string | null, log: import('pino').Logger): Promise<void> {
  if (file === null) return;
  try {
    const token = (await readFile(file, 'utf8')).trim();
    log.info({ file, bytes: Buffer.byteLength(token) }, `model hub credential loaded from ${file} (${Buffer.byteLength(token)} bytes); the simulator downloads nothing with it`);
  } catch (err) {
    log.error({ file }, `model hub credential file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}
