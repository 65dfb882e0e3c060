// Owns how the client prints results: `-o table` for people (aligned columns, kubectl
// style, colour only on a terminal and never with NO_COLOR), `json` and `yaml` for scripts
// (the API's objects as they are), `name` for pipes (one name a line).

import { createRequire } from 'node:module';
import Table from 'cli-table3';
import pc from 'picocolors';
import type * as Yaml from 'yaml';
import { UsageError } from './errors.js';

// yaml is required for `-o yaml` only: a table needs none of it, and loading it costs a
// noticeable part of a command's start-up.
const require = createRequire(import.meta.url);
const toYaml = (data: unknown): string => (require('yaml') as typeof Yaml).stringify(data);

export const FORMATS = ['table', 'json', 'yaml', 'name'] as const;
export type Format = (typeof FORMATS)[number];

export function parseFormat(raw: string): Format {
  if (!(FORMATS as readonly string[]).includes(raw)) throw new UsageError(`-o must be table, json, yaml or name, not "${raw}"`);
  return raw as Format;
}

/** Where output goes, and whether it may be coloured. */
export interface Out {
  write(text: string): void;
  isTTY: boolean;
  color: boolean;
}

export function stdoutOut(env: NodeJS.ProcessEnv): Out {
  const isTTY = process.stdout.isTTY === true;
  return { write: (t) => void process.stdout.write(t), isTTY, color: isTTY && !('NO_COLOR' in env) };
}

export interface Column<T> {
  header: string;
  value(row: T): string;
}

/** A borderless table: a header row, then one row per item. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[], out: Out): string {
  const t = new Table({
    head: columns.map((c) => (out.color ? pc.bold(c.header) : c.header)),
    chars: {
      top: '', 'top-mid': '', 'top-left': '', 'top-right': '', bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
      left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '   ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
  });
  for (const row of rows) t.push(columns.map((c) => c.value(row)));
  return t.toString().split('\n').map((l) => l.trimEnd()).join('\n') + '\n';
}

/** Prints a list (or one object) in the chosen format. */
export function print<T extends object>(data: T | readonly T[], format: Format, out: Out, columns: readonly Column<T>[], nameOf: (item: T) => string): void {
  const items: readonly T[] = Array.isArray(data) ? data : [data as T];
  if (format === 'json') return out.write(JSON.stringify(data, null, 2) + '\n');
  if (format === 'yaml') return out.write(toYaml(data));
  if (format === 'name') return out.write(items.map(nameOf).join('\n') + (items.length ? '\n' : ''));
  out.write(items.length === 0 ? 'nothing here\n' : table(items, columns, out));
}

/** A status word, coloured by what it means when colour is on. */
export function statusWord(status: string, out: Out): string {
  if (!out.color) return status;
  if (status === 'ready') return pc.green(status);
  // Failing (a replica crash-loops) is red like failed: waiting will not mend it.
  if (status === 'failed' || status === 'failing') return pc.red(status);
  if (status === 'paused') return pc.dim(status);
  return pc.yellow(status);
}
