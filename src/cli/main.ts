#!/usr/bin/env node
// Owns the `infergate` command line: runs the programs (serve, engine, frontend, image) with their
// own flag parsing (and a gateway worker when serve forks one), hands every other command to
// the control API's client (src/client/), and turns start-up failures into one clear line on
// stderr and exit code 1.

// Only what every command needs is imported here. The programs (serve, engine, …) and the
// error classes of the service are loaded with import() when used: a client command such as
// `infergate ls` then never loads fastify, the store, node-forge or dockerode, and starts in
// a fraction of the time (docs/cli.md has the figures; test/cli-install.test.ts keeps it so).
import cluster from 'node:cluster';
import { packageVersion } from './version.js';
import { WORKER_ENV } from './gateway-worker-protocol.js';

const USAGE = `usage: infergate <command> [options]

run the service:
  serve     run the control API, gateway and metrics (the embedded default)
  engine    run the reference engine, a SIMULATED inference server (one per replica)
  frontend  run the orchestrated runtime's Frontend (aggregated or disaggregated workers)
  image     build the reference engine's container image (infergate image build)
  admin     operator commands on the store (infergate admin reset-key: a new admin key when it was lost)
  version   print the version

manage deployments through the control API (docs/cli.md):
  login, whoami             save the API URL and a service-account key (or --sso: sign in as a person); who you are
  apply, diff, create       deployments from a YAML or JSON file, matched by name
  ls, get, describe         what runs, and in full
  logs, exec, wait          replica logs (-f), a shell in a replica, wait until ready
  scale, pause, resume, rollback, clone, delete, revisions, usage
  tokens, certs, service-accounts, clusters, presets, completion
  projects, members, audit  teams: projects and their GPU quota, who is in one with what role, the audit log
                            (--project P, or a context's project, chooses the project a command acts in)

infergate serve --help, infergate engine --help and infergate frontend --help list every flag and its environment override;
infergate image --help lists what it builds;
infergate <client command> --help shows its options and an example.`;


function fail(message: string): never {
  process.stderr.write(`infergate: error: ${message}\n`);
  process.exit(1);
}

/**
 * Failures a person can fix get one line; anything else is a bug and keeps its stack. The
 * service's error classes are loaded only once something has failed.
 */
async function isExpected(err: unknown): Promise<boolean> {
  if (!(err instanceof Error)) return false;
  if (err instanceof SyntaxError || ('code' in err && typeof (err as NodeJS.ErrnoException).syscall === 'string')) return true;
  const [{ ConfigError }, { StoreError }, { PkiError }, { KeyFileError }, { ListenError }] = await Promise.all([
    import('../config/config.js'),
    import('../store/store.js'),
    import('../pki/ca.js'),
    import('./key-files.js'),
    import('./listen.js'),
  ]);
  return [ConfigError, StoreError, PkiError, KeyFileError, ListenError].some((kind) => err instanceof kind);
}

async function runServe(args: string[]): Promise<void> {
  const { parseServeConfig, serveHelp } = await import('../config/config.js');
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(serveHelp() + '\n');
    return;
  }
  const config = parseServeConfig(args, process.env);
  // Loaded on demand: every replica runs this file as `infergate engine`, which needs none of it.
  const { serve } = await import('./serve.js');
  const starting = serve(config, (line) => process.stdout.write(line + '\n'));
  let stopping = false;
  // Listening from the start: a signal that arrives while the service starts (or just after
  // its last start-up line) stops it cleanly once it is up — replicas, the replica directories'
  // mounts, the Docker network — instead of killing it half-made. A start that fails is
  // reported by main's catch.
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`infergate: ${signal} received, shutting down\n`);
    starting.then(
      (service) =>
        service.stop().then(
          () => process.exit(0),
          (err: Error) => fail(`shutdown failed: ${err.message}`),
        ),
      () => undefined,
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  await starting;
}

/**
 * A reader that stops early (`infergate ls | head -1`) closes the pipe under a command that
 * prints a result: what it wanted was written, so the command ends quietly with 0 rather than
 * with an EPIPE stack. Called where such commands are dispatched, not for the programs: their
 * stdout is a log, or a key shown once (`admin reset-key`), and losing it is a failure to be seen.
 */
function endQuietlyWhenStdoutCloses(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

async function main(argv: string[]): Promise<void> {
  // A gateway worker forked by `serve --gateway-workers N`: its configuration comes from the primary.
  if (cluster.isWorker && process.env[WORKER_ENV] !== undefined) return (await import('./gateway-worker.js')).runGatewayWorker();
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return runServe(rest);
    case 'engine':
      return (await import('./engine.js')).runEngine(rest);
    case 'frontend':
      return (await import('./frontend.js')).runFrontend(rest);
    case 'image':
      return (await import('./image.js')).runImage(rest);
    case 'admin':
      return (await import('./admin-command.js')).runAdmin(rest);
    case 'version':
    case '--version':
      endQuietlyWhenStdoutCloses();
      process.stdout.write(packageVersion() + '\n');
      return;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      endQuietlyWhenStdoutCloses();
      process.stdout.write(USAGE + '\n');
      return;
    default: {
      endQuietlyWhenStdoutCloses();
      const { runClient } = await import('../client/run.js');
      process.exitCode = await runClient(argv);
    }
  }
}

main(process.argv.slice(2)).catch(async (err: unknown) => {
  if (await isExpected(err).catch(() => false)) fail((err as Error).message);
  process.stderr.write(`infergate: unexpected error\n${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
