// Owns running the client for one command line: the exit status of every way it can end —
// 0 done, 1 the API refused (message and field printed), 2 a usage error (commander's or
// ours), 3 the API unreachable — so scripts can tell them apart.

import { readFileSync } from 'node:fs';
import { CommanderError } from 'commander';
import { buildProgram } from './commands.js';
import { ClientError, describeFailure, EXIT } from './errors.js';
import { stdoutOut } from './output.js';

export async function runClient(argv: string[]): Promise<number> {
  let exitCode: number = EXIT.ok;
  const program = buildProgram({
    env: process.env,
    out: stdoutOut(process.env),
    readStdin: () => readFileSync(0, 'utf8'),
    setExitCode: (code) => (exitCode = code),
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too, with code 0; commander has printed what it had to.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof ClientError) {
      for (const line of describeFailure(err)) process.stderr.write(`infergate: ${line}\n`);
      return err.exitCode;
    }
    throw err;
  }
}
