// Owns the replica's environment as the sandbox hands it over: a POSIX shell script of
// `export NAME='value'` lines that the replica's own shell sources just before it executes the
// command (sandbox.ts's loader). Single quotes keep every byte of a value as it is — newlines,
// `$`, backslashes — and a quote inside a value is closed, escaped and reopened. Names are the
// portable kind (letters, digits, underscores, not starting with a digit); any other is left
// out and reported, since no shell could export it. Pure.

const PORTABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface EnvScript {
  script: string;
  /** Names left out (not portable), for the replica's log. */
  skipped: string[];
}

const quote = (value: string): string => `'${value.replaceAll("'", `'\\''`)}'`;

export function envScript(env: Readonly<Record<string, string>>): EnvScript {
  const lines: string[] = [];
  const skipped: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    // A NUL cannot be in an environment at all: the kernel would cut the value there.
    if (!PORTABLE_NAME.test(name) || value.includes('\0')) skipped.push(name);
    else lines.push(`export ${name}=${quote(value)}\n`);
  }
  return { script: lines.join(''), skipped };
}
