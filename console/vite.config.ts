// Build of the web console: a single-page app (React + TypeScript) written to dist/console,
// which the control API serves at `/`. Hashed file names under assets/ (cached for a year);
// index.html is never cached. Each .js and .css also gets a .gz beside it, served when the
// browser accepts gzip, and the build prints the gzipped JavaScript total, the figure the
// console's size budget (350 KB) is about.

import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.resolve(here, '../dist/console');
const JS_BUDGET_GZIP = 350 * 1024;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/** Writes `<file>.gz` for JS and CSS, and fails the build when the gzipped JS passes the budget. */
function precompress(): Plugin {
  return {
    name: 'infergate-precompress',
    apply: 'build',
    closeBundle() {
      let jsGzip = 0;
      for (const file of filesUnder(outDir)) {
        if (!/\.(js|css)$/.test(file)) continue;
        const gz = gzipSync(readFileSync(file), { level: 9 });
        writeFileSync(`${file}.gz`, gz);
        if (file.endsWith('.js')) jsGzip += gz.length;
      }
      const kb = (jsGzip / 1024).toFixed(1);
      if (jsGzip > JS_BUDGET_GZIP) throw new Error(`console JavaScript is ${kb} KB gzipped, over the 350 KB budget`);
      console.log(`console: ${kb} KB of JavaScript, gzipped (budget 350 KB)`);
    },
  };
}

// The API routes the dev server forwards to a running `infergate serve` (npm run console:dev).
const API_PREFIXES = ['/deployments', '/vault', '/certificates', '/service-accounts', '/clusters', '/presets', '/whoami', '/healthz', '/readyz', '/openapi.json'];
const apiTarget = process.env.INFERGATE_API ?? 'http://127.0.0.1:8080';

export default defineConfig({
  root: here,
  base: '/',
  plugins: [react(), precompress()],
  build: {
    outDir,
    emptyOutDir: true,
    assetsDir: 'assets',
    // The polyfill would be the only script not loaded from a file; every browser the console
    // supports has modulepreload.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: Object.fromEntries(API_PREFIXES.map((p) => [p, { target: apiTarget, ws: true }])),
  },
});
