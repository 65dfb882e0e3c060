// Owns the web console's files at `/` of the control API: index.html at `/` (revalidated on
// every load, so a new build is picked up), the content-hashed files under `/assets/` (cached
// for a year), their gzip or brotli copies when the build wrote them and the client accepts
// them, and the security headers every console response carries. The routes are public: the
// files hold no secret, and the console asks for a key itself. The console routes by the URL's
// hash, so there is no fallback to index.html: any other path stays the API's JSON 404.

import { access } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import { PlatformError } from '../core/errors.js';
import type { ControlApp } from './context.js';

/**
 * No inline script and no eval: every script is a file served from `/assets/`. Inline styles
 * are allowed only because xterm.js (the terminal) builds its theme's CSS at run time; a style
 * cannot run code, and scripts stay strict.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** Hashed names change with their content, so a cached copy is never stale. */
export const ASSET_CACHE = 'public, max-age=31536000, immutable';
/** index.html names the current hashed files: always revalidated (ETag / Last-Modified make that cheap). */
export const INDEX_CACHE = 'no-cache';

/**
 * `dist/console`, the console build's output, found from this module: it is
 * `dist/control/console-assets.js` when built and `src/control/console-assets.ts` when run
 * from source (tsx), and both are two levels below the package root.
 */
export function defaultConsoleDir(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'console');
}

export async function registerConsoleAssets(app: ControlApp, dir: string): Promise<void> {
  const index = path.join(dir, 'index.html');
  await app.register(async (scope) => {
    // Every route of this scope, @fastify/static's included, is public (the auth hook reads this).
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, public: true };
    });
    scope.addHook('onRequest', async (_request, reply) => {
      void reply.headers(CONSOLE_HEADERS);
    });
    await scope.register(fastifyStatic, {
      root: path.join(dir, 'assets'),
      prefix: '/assets/',
      // `<file>.gz` / `.br` beside a file are sent when the client accepts them (with Vary: Accept-Encoding).
      preCompressed: true,
      index: false,
      dotfiles: 'ignore',
      cacheControl: false,
      // A console that is not built yet is not a start-up problem: `/` says so.
      suppressWarning: true,
      // Also called for index.html (sent through the same plugin), which must stay revalidated.
      setHeaders: (reply: FastifyReply, file: string) => {
        void reply.header('cache-control', file === index ? INDEX_CACHE : ASSET_CACHE);
      },
    });
    scope.get('/', { schema: { hide: true } }, async (_request, reply) => {
      try {
        await access(index);
      } catch {
        throw new PlatformError('not_found', `the web console is not built (no ${index}): run npm run build, which builds the API and the console`);
      }
      return reply.sendFile('index.html', dir);
    });
  });
}
