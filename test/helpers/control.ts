// Test helper: a control API on a real HTTP port (port 0) over a file store in a temp dir,
// with an admin key, and a small JSON client for it. Every JSON answer is checked against its
// route's response schema (strictly, with TypeBox: fastify's serialiser alone lets a wrong enum
// value or a fraction in an integer through), so a view that drifts from its schema fails the test.

import { fileLogSource } from '../../src/runtime/log-source.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import { apiCall, type ApiResponse } from './admin-api.js';
import { Sealer } from '../../src/core/secrets.js';
import { DEFAULT_CATALOG, type Catalog } from '../../src/domain/catalog.js';
import { DEFAULT_IMAGE_MAP } from '../../src/domain/image-map.js';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { buildControlApp, type ControlApp } from '../../src/control/app.js';
import type { HostCommandPolicy } from '../../src/domain/host-commands.js';
import { Credentials } from '../../src/control/credentials.js';
import type { ActivitySource, RevisionMetricsSource } from '../../src/domain/ports.js';
import type { RegistryGate, ShellProvider } from '../../src/domain/ports.js';
import { loadOrCreateCa, type CertificateAuthority } from '../../src/pki/ca.js';
import { FileStore } from '../../src/store/file-store.js';
import type { IdentityService } from '../../src/identity/identity.js';
import type { Store } from '../../src/store/store.js';

export const ADMIN_KEY = 'igk_test-admin-key-0123456789abcdef';

export type { ApiResponse } from './admin-api.js';

export interface TestControl {
  app: ControlApp;
  store: Store;
  url: string;
  call(method: string, path: string, body?: unknown, key?: string | null): Promise<ApiResponse>;
  /** Answers that did not match their route's response schema, so far (call() and close() throw on any). */
  schemaMismatches: string[];
  close(): Promise<void>;
}

/** The schema a route declares for this status: exact, then `4xx`-style, then `default`; undefined when none. */
function responseSchemaFor(request: FastifyRequest, status: number): TSchema | undefined {
  const response = (request.routeOptions.schema as { response?: Record<string, TSchema> } | undefined)?.response;
  if (!response) return undefined;
  return response[String(status)] ?? response[`${String(status)[0]}xx`] ?? response.default;
}

/**
 * Checks each JSON answer against its route's response schema before fastify serialises it.
 * A mismatch is recorded (with the fields at fault) and answered 500, so whichever client made
 * the request sees it, and call() and close() fail with the record.
 */
export function checkResponsesAgainstSchemas(app: ControlApp, mismatches: string[]): void {
  app.addHook('preSerialization', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const schema = responseSchemaFor(request, reply.statusCode);
    if (schema === undefined || Value.Check(schema, payload)) return payload;
    const errors = [...Value.Errors(schema, payload)].slice(0, 5).map((e) => `${e.instancePath || '/'} ${e.message}`);
    const message = `${request.method} ${request.url} answered ${reply.statusCode} not matching its response schema: ${errors.join('; ')}`;
    mismatches.push(message);
    throw new Error(message);
  });
}

function failOnMismatch(mismatches: readonly string[]): void {
  if (mismatches.length > 0) throw new Error(`the control API answered outside its response schemas (fix the view or the schema):\n${mismatches.join('\n')}`);
}

let sharedCa: Promise<{ ca: CertificateAuthority; dir: string }> | null = null;

/** One platform CA per test process (RSA key generation is the slow part of start-up). */
export function testCa(): Promise<CertificateAuthority> {
  sharedCa ??= mkdtemp(path.join(os.tmpdir(), 'infergate-ca-')).then(async (dir) => {
    const ca = await loadOrCreateCa(dir);
    // The files are read once; the CA lives on in memory, so the directory can go now.
    await rm(dir, { recursive: true, force: true });
    return { ca, dir };
  });
  return sharedCa.then((s) => s.ca);
}

export interface StartControlOptions {
  gpuQuota?: number;
  /** Default: the embedded catalog. */
  catalog?: Catalog;
  store?: Store;
  ca?: CertificateAuthority;
  logsDir?: string;
  /** Default: the app's own (admins only). */
  hostCommands?: HostCommandPolicy;
  /** Which registry hosts the daemon may pull from (asked where images run in containers); default: the app's own rule. */
  registries?: RegistryGate;
  logger?: FastifyBaseLogger;
  /** Default: none (no console at `/`); a directory with index.html and assets/ to test the console's files. */
  consoleDir?: string | null;
  /** Where terminals open; default none. */
  shells?: ShellProvider;
  /** The autoscaler's activity history; default none (the route answers 409). */
  activity?: ActivitySource;
  /** What the gateways measured per revision; default none (the route answers 409). */
  revisionMetrics?: RevisionMetricsSource;
  /** People's sign-in (OpenID Connect), made over the store; default none (keys only). Told the API's URL once it listens. */
  identity?: (store: Store) => IdentityService;
  /** Called with the built app before it listens: a test adds routes of its own here. */
  beforeListen?: (app: ControlApp, store: Store) => void;
}

export async function startControl(opts: StartControlOptions = {}): Promise<TestControl> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-api-'));
  const store = opts.store ?? new FileStore({ dir });
  await store.open();
  await new Credentials(store, systemClock).ensureAdmin(ADMIN_KEY);
  const identity = opts.identity?.(store) ?? null;
  const app = await buildControlApp({
    store,
    catalog: opts.catalog ?? DEFAULT_CATALOG,
    images: DEFAULT_IMAGE_MAP,
    logs: opts.logsDir ? fileLogSource(opts.logsDir) : null,
    gpuQuota: opts.gpuQuota ?? 32,
    sealer: new Sealer(randomBytes(32)),
    clock: systemClock,
    endpoint: { domain: 'endpoints.test', port: 443 },
    ca: opts.ca ?? (await testCa()),
    ...(opts.hostCommands ? { hostCommands: opts.hostCommands } : {}),
    ...(opts.registries ? { registries: opts.registries } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.shells ? { shells: opts.shells } : {}),
    ...(opts.activity ? { activity: opts.activity } : {}),
    ...(opts.revisionMetrics ? { revisionMetrics: opts.revisionMetrics } : {}),
    consoleDir: opts.consoleDir ?? null,
    ...(identity ? { sessions: identity, identity } : {}),
  });
  const schemaMismatches: string[] = [];
  checkResponsesAgainstSchemas(app, schemaMismatches);
  opts.beforeListen?.(app, store);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  identity?.listeningAt(url);
  return {
    app,
    store,
    url,
    schemaMismatches,
    async call(method, p, body, key = ADMIN_KEY) {
      const res = await apiCall(url, key, method, p, body);
      failOnMismatch(schemaMismatches);
      return res;
    },
    async close() {
      identity?.close();
      await app.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
      failOnMismatch(schemaMismatches);
    },
  };
}

export { disaggregatedBody, generalBody } from './spec-fixtures.js';
