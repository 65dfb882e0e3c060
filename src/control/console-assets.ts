// Owns the web console's files at `/` of the control API: index.html at `/` (revalidated on
// every load, so a new build is picked up), the content-hashed files under `/assets/` (cached
// for a year), their gzip or brotli copies when the build wrote them and the client accepts
// them, and the security headers every console response carries. The routes are public: the
// files hold no secret, and the console asks for a key itself. The console routes by the URL's
// hash, so there is no fallback to index.html: any other path stays the API's JSON 404, and
// what the static plugin refuses (traversal, NUL bytes, `//`, a directory, an unsatisfiable
// range) is the client's mistake — a 4xx in the API's error body with one warning, never a 500.

import { access } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PlatformError } from '../core/errors.js';
import type { ControlApp } from './context.js';
import { errorHandler } from './errors.js';

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

/** A refusal of the static plugin or of @fastify/send, as the client's answer. */
interface AssetRefusal {
  status: number;
  error: PlatformError;
  headers: Record<string, string>;
  /** What refused it (the plugin's code or the error's name), for the log. */
  reason: string;
}

/**
 * @fastify/static refuses a non-canonical path (`..`, `//`, `.`, a NUL byte, a backslash)
 * with FST_STATIC_FORBIDDEN_PATH, and @fastify/send answers a directory, a bad path, a failed
 * precondition or an unsatisfiable range with an http-errors 4xx. The API's error handler
 * knows neither and would call them internal errors; each is about the request, not the server.
 * A 5xx from send (a file it could not read) is not a refusal and stays an internal error.
 */
function assetRefusal(err: unknown, request: FastifyRequest): AssetRefusal | null {
  // A PlatformError (the `/` route's "not built") has a `status` too, and already says what it means.
  if (!(err instanceof Error) || err instanceof PlatformError) return null;
  const where = request.url.split('?')[0] ?? '';
  const e = err as Error & { code?: unknown; status?: unknown; headers?: unknown };
  const refusal = (status: number, error: PlatformError, headers: Record<string, string> = {}): AssetRefusal => ({
    status,
    error,
    headers,
    reason: typeof e.code === 'string' ? e.code : e.name,
  });
  if (e.code === 'FST_STATIC_FORBIDDEN_PATH') {
    return refusal(400, new PlatformError('invalid_request', `${where} is not a console file's path: ask for /assets/<file name>`));
  }
  const status = typeof e.status === 'number' ? e.status : null;
  if (status === null || status < 400 || status >= 500) return null;
  if (status === 400) return refusal(400, new PlatformError('invalid_request', `${where} is not a console file's path`));
  // The status itself is the answer a cache or a resuming client acts on; the body says why.
  if (status === 412) return refusal(412, new PlatformError('invalid_request', 'the file does not match the If-Match / If-Unmodified-Since precondition'));
  if (status === 416) {
    const range = typeof e.headers === 'object' && e.headers !== null ? (e.headers as Record<string, unknown>)['Content-Range'] : undefined;
    return refusal(416, new PlatformError('invalid_request', 'the requested range is outside the file'), typeof range === 'string' ? { 'content-range': range } : {});
  }
  // 403 (a directory, `/assets/` itself) and 404 alike: there is no such file to serve.
  return refusal(404, new PlatformError('not_found', `no console file at ${where}`));
}

export async function registerConsoleAssets(app: ControlApp, dir: string): Promise<void> {
  const index = path.join(dir, 'index.html');
  await app.register(async (scope) => {
    // @fastify/static hands its errors to this scope's handler (it registers without
    // encapsulation), so refusals are answered here and everything else goes to the API's.
    // A warning without the error object: a probe is worth a line, not a stack trace.
    scope.setErrorHandler((err, request, reply) => {
      const refused = assetRefusal(err, request);
      if (refused === null) {
        errorHandler(err, request, reply);
        return;
      }
      request.log.warn({ status: refused.status, reason: refused.reason }, 'refused a console file request');
      void reply.status(refused.status).headers(refused.headers).send(refused.error.toBody());
    });
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
