// Owns `infergate frontend` as a process: parses its flags, logs JSON lines to stdout with
// pino, starts the orchestrated Frontend (src/orchestrated/frontend.ts) and, for gRPC
// deployments, the v2 protocol side in front of it once workers are there; stops both on
// SIGTERM/SIGINT. A bad flag is one line on stderr and exit code 1.

import { pino } from 'pino';
import { createFrontend } from '../orchestrated/frontend.js';
import { frontendHelp, FrontendOptionsError, parseFrontendOptions, type FrontendOptions } from '../orchestrated/options.js';
import { packageVersion } from './version.js';

export async function runFrontend(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(frontendHelp() + '\n');
    return;
  }
  let options: FrontendOptions;
  try {
    options = parseFrontendOptions(args, process.env);
  } catch (err) {
    if (err instanceof FrontendOptionsError) {
      process.stderr.write(`infergate frontend: error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const log = pino(
    { level: options.logLevel, base: { service: 'infergate-frontend', mode: options.mode, pid: process.pid } },
    pino.destination({ dest: 1, sync: true }),
  );
  // gRPC: the v2 protocol on the port, the chat-completions side on loopback behind it.
  const grpcMode = options.protocol === 'grpc';
  const frontend = createFrontend(grpcMode ? { ...options, host: '127.0.0.1', port: 0 } : options, log);
  let grpcSide: { stop(): Promise<void> } | null = null;
  try {
    const httpPort = await frontend.start();
    if (grpcMode) {
      // A gRPC replica's readiness is a TCP connect: open the port only once there are
      // workers to serve, as the HTTP side's /health waits for them.
      for (let logged = false; (await fetch(`http://127.0.0.1:${httpPort}/health`)).status !== 200; ) {
        if (!logged) log.info('waiting for workers before opening the gRPC port');
        logged = true;
        await new Promise((r) => setTimeout(r, 100));
      }
      const { startGrpcFrontend } = await import('../orchestrated/grpc-frontend.js');
      grpcSide = await startGrpcFrontend({ host: options.host, port: options.port, httpPort, servedName: options.servedModelName ?? options.model, model: options.model, release: packageVersion(), log });
    }
  } catch (err) {
    process.stderr.write(`infergate frontend: error: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const shutdown = (signal: string) => {
    log.info({ signal }, `${signal} received: stopping`);
    Promise.all([grpcSide?.stop(), frontend.stop()]).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}
