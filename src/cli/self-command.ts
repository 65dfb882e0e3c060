// Owns how this program runs itself in a child process (`infergate engine` for replicas):
// the same Node binary, the same loader flags with bare specifiers made absolute (replicas
// run in their own directories, where `--import tsx` would not resolve), the same script.

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const LOADER_FLAGS = new Set(['--import', '--loader', '--experimental-loader', '--require', '-r']);

export function selfCommand(): string[] {
  const script = process.argv[1];
  if (script === undefined) throw new Error('cannot tell which script is running: process.argv[1] is empty');
  const require = createRequire(pathToFileURL(script).href);
  const args: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] as string;
    args.push(flag);
    const value = argv[i + 1];
    if (LOADER_FLAGS.has(flag) && value !== undefined) {
      args.push(isBare(value) ? resolveBare(require, value, flag) : value);
      i++;
    }
  }
  return [process.execPath, ...args, script];
}

function isBare(specifier: string): boolean {
  return !/^(\.{0,2}\/|file:|data:|node:)/.test(specifier);
}

function resolveBare(require: NodeJS.Require, specifier: string, flag: string): string {
  try {
    // ESM loaders resolve with the import condition, --require with the require condition.
    return flag === '--require' || flag === '-r' ? require.resolve(specifier) : import.meta.resolve(specifier);
  } catch {
    return specifier;
  }
}
