// Owns the command lines of the three programs (`infergate serve`, `engine`, `frontend`):
// one table per program of flags with their environment fallbacks, defaults and help; the
// parsing of argv against it (a mistake is one line naming the flag, in the program's own
// error class); the value rule "flag, else environment, else default"; typed readers for
// the kinds of values they take (whole numbers, decimals, choices, sizes, switches, log
// levels); and the help text. Pure parsing: it knows nothing of what the flags configure.

import { parseArgs } from 'node:util';

export interface FlagSpec {
  flag: string;
  /** The environment variable read when the flag is absent. */
  env?: string;
  /** '' means "no default" (the value stays empty, or the reader says what it falls back to). */
  default: string;
  help: string;
  /** A switch: present (or its env set to 1/true/yes) means on. */
  boolean?: true;
}

/** The program's own error class, so each CLI keeps the errors its callers catch. */
export type FlagErrorClass = new (message: string) => Error;

export interface Program {
  /** As typed after `infergate`: serve, engine, frontend. */
  name: string;
  flags: readonly FlagSpec[];
  error: FlagErrorClass;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** "a", "a or b", "a, b or c": how choices are listed in messages. */
export function listChoices(values: readonly string[]): string {
  if (values.length <= 1) return values.join('');
  return `${values.slice(0, -1).join(', ')} or ${values.at(-1)!}`;
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, kb: 1000, mb: 1000 ** 2, gb: 1000 ** 3 };

/** A program's parsed command line, read value by value. */
export class Flags {
  private constructor(
    private readonly program: Program,
    private readonly values: Record<string, string | boolean | undefined>,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Parses argv against the program's table; unknown flags, missing values and positionals are refused. */
  static parse(program: Program, argv: string[], env: NodeJS.ProcessEnv): Flags {
    const options = Object.fromEntries(program.flags.map((o) => [o.flag, { type: o.boolean ? ('boolean' as const) : ('string' as const) }]));
    try {
      const { values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
      return new Flags(program, values, env);
    } catch (err) {
      // parseArgs explains some mistakes over several lines; the CLI promises one.
      const message = (err as Error).message.replace(/\s*\n\s*/g, ' ');
      throw new program.error(`${message} (see infergate ${program.name} --help)`);
    }
  }

  /** The error of this program, for checks the caller makes across flags. */
  fail(message: string): Error {
    return new this.program.error(message);
  }

  private spec(flag: string): FlagSpec {
    const spec = this.program.flags.find((o) => o.flag === flag);
    if (!spec) throw new Error(`--${flag} is not a flag of infergate ${this.program.name}`);
    return spec;
  }

  /** The flag's value, else its environment variable's (when set and not empty), else its default. */
  string(flag: string): string {
    const spec = this.spec(flag);
    const fromFlag = this.values[flag];
    if (typeof fromFlag === 'string') return fromFlag;
    const fromEnv = spec.env ? this.env[spec.env] : undefined;
    if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
    return spec.default;
  }

  /** As `string`, with the empty value as null (an optional path, URL or name). */
  optional(flag: string): string | null {
    const value = this.string(flag);
    return value === '' ? null : value;
  }

  /** A value that must not be empty. */
  required(flag: string, why = 'must not be empty'): string {
    const value = this.string(flag);
    if (value === '') throw this.fail(`--${flag} ${why}`);
    return value;
  }

  /** A switch: the flag given, or its environment variable 1/true/yes (0/false/no/unset: off). */
  enabled(flag: string): boolean {
    if (this.values[flag] === true) return true;
    const spec = this.spec(flag);
    const fromEnv = (spec.env ? this.env[spec.env] : undefined)?.toLowerCase() ?? '';
    if (fromEnv === '' || ['0', 'false', 'no'].includes(fromEnv)) return false;
    if (['1', 'true', 'yes'].includes(fromEnv)) return true;
    throw this.fail(`${spec.env} must be 1, true or yes (or 0, false, no), not "${fromEnv}"`);
  }

  integer(flag: string, min: number, max: number): number {
    return wholeNumber(flag, this.string(flag), min, max, this.program.error);
  }

  /** A TCP port; 0 asks the OS for a free one. */
  port(flag: string): number {
    return this.integer(flag, 0, 65535);
  }

  /** A non-negative decimal such as 0.5 or 12. */
  decimal(flag: string, min: number, max: number): number {
    const raw = this.string(flag);
    const n = /^\d+(\.\d+)?$|^\.\d+$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isFinite(n)) throw this.fail(`--${flag} must be a non-negative number, not "${raw}"`);
    if (n < min || n > max) throw this.fail(`--${flag} must be between ${min} and ${max}, not ${n}`);
    return n;
  }

  oneOf<T extends string>(flag: string, choices: readonly T[]): T {
    const raw = this.string(flag);
    if (!(choices as readonly string[]).includes(raw)) throw this.fail(`--${flag} must be ${listChoices(choices)}, not "${raw}"`);
    return raw as T;
  }

  logLevel(flag = 'log-level'): (typeof LOG_LEVELS)[number] {
    return this.oneOf(flag, LOG_LEVELS);
  }

  /** A byte count: `1048576`, `512KiB`, `16MiB`, `1GiB` (and the decimal kB/MB/GB), within 1KiB–64GiB. */
  size(flag: string): number {
    const raw = this.string(flag);
    const m = /^(\d+)\s*([a-zA-Z]*)$/.exec(raw.trim());
    const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
    if (!m || unit === undefined) throw this.fail(`--${flag} must be a size such as 1048576, 512KiB, 16MiB or 1GiB, not "${raw}"`);
    const bytes = Number(m[1]) * unit;
    if (bytes < 1024 || bytes > 64 * 1024 ** 3) throw this.fail(`--${flag} must be between 1KiB and 64GiB, not "${raw}"`);
    return bytes;
  }
}

/** A whole number within bounds, from text; the message names the flag. */
export function wholeNumber(flag: string, raw: string, min: number, max: number, error: FlagErrorClass): number {
  if (!/^\d+$/.test(raw)) throw new error(`--${flag} must be a whole number, not "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new error(`--${flag} must be between ${min} and ${max}, not ${n}`);
  return n;
}

export interface HelpText {
  /** Lines between the usage line and the flags. */
  intro?: readonly string[];
  /** Lines after the flags. */
  outro?: readonly string[];
  /** Width of the flag column. */
  width: number;
}

/** `usage: infergate <program> [options]`, the intro, one row per flag with its default and env, the outro. */
export function helpText(program: Program, text: HelpText): string {
  const rows = program.flags.map((o) => {
    const env = o.env ? ` (env ${o.env})` : '';
    const def = o.default ? ` [default: ${o.default}]` : '';
    return `  --${o.flag.padEnd(text.width)} ${o.help}${def}${env}`;
  });
  const intro = text.intro ?? [];
  const outro = text.outro ?? [];
  return [`usage: infergate ${program.name} [options]`, '', ...(intro.length > 0 ? [...intro, ''] : []), ...rows, ...(outro.length > 0 ? ['', ...outro] : [])].join('\n');
}
