// Owns what every client command shares: the process around it (ClientIo), the global flags
// (--api, --key, --context, -o), and the helpers an action uses to reach the API and print
// in the chosen format.

import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ApiClient } from './api.js';
import { resolveConnection, type ConnectionFlags } from './contexts.js';
import { UsageError } from './errors.js';
import type { Requester } from './http-request.js';
import { parseFormat, print, type Format, type Out } from './output.js';

export interface ClientIo {
  env: NodeJS.ProcessEnv;
  out: Out;
  /** Reads all of standard input (the key for login, a file for apply -f -). */
  readStdin(): string;
  /** Sets the process exit status (exec passes the shell's on). */
  setExitCode(code: number): void;
  /** How requests reach the API (default node:http/https); the unit tests answer with a stand-in. */
  request?: Requester;
}

export interface GlobalFlags extends ConnectionFlags {
  output: string;
}

/** The helpers of one program's actions. */
export interface Kit {
  io: ClientIo;
  out: Out;
  globals(cmd: Command): GlobalFlags;
  api(cmd: Command): ApiClient;
  format(cmd: Command): Format;
  /** JSON or YAML when asked for, else what `table` prints. */
  printData(cmd: Command, data: unknown, table: () => void): void;
}

export function makeKit(io: ClientIo): Kit {
  const globals = (cmd: Command): GlobalFlags => cmd.optsWithGlobals<GlobalFlags>();
  const format = (cmd: Command): Format => parseFormat(globals(cmd).output);
  return {
    io,
    out: io.out,
    globals,
    api: (cmd) => new ApiClient(resolveConnection(globals(cmd), io.env), { request: io.request }),
    format,
    printData(cmd, data, table) {
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') print(data as object, f, io.out, [], () => '');
      else table();
    },
  };
}

/** A commander argument parser for whole numbers, naming the option in its refusal. */
export function integer(name: string) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw)) throw new UsageError(`${name} must be a whole number, not "${raw}"`);
    return Number(raw);
  };
}

/** A commander argument parser for whole numbers from `min` to `max`, naming the option in its refusal. */
export function upTo(name: string, max: number, min: number) {
  const whole = integer(name);
  return (raw: string): number => {
    const n = whole(raw);
    if (n < min || n > max) throw new UsageError(`${name} must be from ${min} to ${max}, not ${n}`);
    return n;
  };
}

/** A commander argument parser for numbers, whole or not (0.5), naming the option in its refusal. */
export function decimal(name: string) {
  return (raw: string): number => {
    if (!/^\d+(\.\d+)?$/.test(raw)) throw new UsageError(`${name} must be a number, like 5 or 0.5, not "${raw}"`);
    return Number(raw);
  };
}

/** A file an option names (a key, a password), read whole; a file that cannot be read is a usage error naming the option. */
export function readOptionFile(option: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${option} ${file}: ${(err as Error).message}`);
  }
}
