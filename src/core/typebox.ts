// Owns the one import of the typebox package at run time: every schema in src/ is built with
// the Type exported here. The build (`npm run build:service`) replaces this file's compiled
// output, dist/core/typebox.js, with typebox bundled into that one file: the package is 373 ES
// modules, and loading them one by one cost every `infergate` process that builds schemas
// about 0.3 s of CPU at start (0.45 s against 0.15 s bundled, on a 2-core machine). Types need
// no bundling: import them from 'typebox' with `import type`.

export { Type } from 'typebox';
