// Owns the defaults of every tunable of the service, as one frozen object: the `infergate
// serve` flag table's own default strings, read by the same readers as a real command line
// (serve-flags.ts), grouped by the part they configure. A part built without an option reads
// its default here and nowhere else, so a default is written once: in the flag table, or,
// for a setting no flag sets, in settingsOf.

import { Flags } from '../flags/flags.js';
import { readTunables, SERVE, settingsOf, type Settings } from './serve-flags.js';

export type DeepReadonly<T> = T extends (...args: never[]) => unknown ? T : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value as DeepReadonly<T>;
}

/** What an empty command line in an empty environment configures. */
export const DEFAULTS: DeepReadonly<Settings> = deepFreeze(settingsOf(readTunables(Flags.parse(SERVE, [], {}))));
