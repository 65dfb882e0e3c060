// Owns the package's version, as `infergate version` prints it and the engines and the
// Frontend report it in their metadata (read once from package.json, next to src/ and dist/).

import { readFileSync } from 'node:fs';

let cached: string | null = null;

export function packageVersion(): string {
  if (cached === null) {
    try {
      cached = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? '0.0.0';
    } catch {
      cached = '0.0.0';
    }
  }
  return cached;
}
