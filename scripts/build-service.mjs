#!/usr/bin/env node
// Builds the service into dist/: tsc compiles src/ module for module, then esbuild replaces
// dist/core/typebox.js (a re-export of the typebox package) with typebox bundled into that one
// file — 373 ES modules loaded one by one cost each process about 0.3 s of CPU at start
// (src/core/typebox.ts says more). Used by `npm run build` and by the tests' dist check.
// tsc's type errors are the typecheck's to report: it emits anyway, and the build goes on
// when it did; no dist/cli/main.js at all is a failure.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { cwd: root, encoding: 'utf8' });
if (!existsSync(path.join(root, 'dist/cli/main.js'))) {
  process.stderr.write(`tsc -p tsconfig.build.json produced no dist/cli/main.js:\n${tsc.stdout}${tsc.stderr}`);
  process.exit(1);
}
if (tsc.status !== 0) process.stderr.write(`tsc reported errors (npm run typecheck shows them); dist/ was written anyway\n`);

await build({
  entryPoints: [path.join(root, 'src/core/typebox.ts')],
  outfile: path.join(root, 'dist/core/typebox.js'),
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  allowOverwrite: true,
  logLevel: 'warning',
});
process.exit(tsc.status === 0 ? 0 : 2);
