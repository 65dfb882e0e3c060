// Test helper: a control API on a real HTTP port (port 0) over a file store in a temp dir,
// with an admin key, and a small JSON client for it.

import { fileLogSource } from '../../src/runtime/log-source.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import { Sealer } from '../../src/core/secrets.js';
import { DEFAULT_CATALOG } from '../../src/domain/catalog.js';
import { DEFAULT_IMAGE_MAP } from '../../src/domain/image-map.js';
import type { FastifyBaseLogger } from 'fastify';
import { buildControlApp, type ControlApp } from '../../src/control/app.js';
import type { HostCommandPolicy } from '../../src/domain/host-commands.js';
import { Credentials } from '../../src/control/credentials.js';
import type { ActivitySource, RevisionMetricsSource } from '../../src/domain/ports.js';
import type { ShellProvider } from '../../src/domain/ports.js';
import { loadOrCreateCa, type CertificateAuthority } from '../../src/pki/ca.js';
import { FileStore } from '../../src/store/file-store.js';
import type { Store } from '../../src/store/store.js';

export const ADMIN_KEY = 'igk_test-admin-key-0123456789abcdef';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- test convenience
}

export interface TestControl {
  app: ControlApp;
  store: Store;
  url: string;
  call(method: string, path: string, body?: unknown, key?: string | null): Promise<ApiResponse>;
  close(): Promise<void>;
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
  store?: Store;
  ca?: CertificateAuthority;
  logsDir?: string;
  /** Default: the app's own (admins only). */
  hostCommands?: HostCommandPolicy;
  logger?: FastifyBaseLogger;
  /** Default: none (no console at `/`); a directory with index.html and assets/ to test the console's files. */
  consoleDir?: string | null;
  /** Where terminals open; default none. */
  shells?: ShellProvider;
  /** The autoscaler's activity history; default none (the route answers 409). */
  activity?: ActivitySource;
  /** What the gateways measured per revision; default none (the route answers 409). */
  revisionMetrics?: RevisionMetricsSource;
}

export async function startControl(opts: StartControlOptions = {}): Promise<TestControl> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-api-'));
  const store = opts.store ?? new FileStore({ dir });
  await store.open();
  await new Credentials(store, systemClock).ensureAdmin(ADMIN_KEY);
  const app = await buildControlApp({
    store,
    catalog: DEFAULT_CATALOG,
    images: DEFAULT_IMAGE_MAP,
    logs: opts.logsDir ? fileLogSource(opts.logsDir) : null,
    gpuQuota: opts.gpuQuota ?? 32,
    sealer: new Sealer(randomBytes(32)),
    clock: systemClock,
    endpoint: { domain: 'endpoints.test', port: 443 },
    ca: opts.ca ?? (await testCa()),
    ...(opts.hostCommands ? { hostCommands: opts.hostCommands } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.shells ? { shells: opts.shells } : {}),
    ...(opts.activity ? { activity: opts.activity } : {}),
    ...(opts.revisionMetrics ? { revisionMetrics: opts.revisionMetrics } : {}),
    consoleDir: opts.consoleDir ?? null,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  return {
    app,
    store,
    url,
    async call(method, p, body, key = ADMIN_KEY) {
      const headers: Record<string, string> = {};
      if (key !== null) headers.authorization = `Bearer ${key}`;
      let payload: string | undefined;
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        payload = typeof body === 'string' ? body : JSON.stringify(body);
      }
      const res = await fetch(url + p, { method, headers, body: payload });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
    },
    async close() {
      await app.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export { disaggregatedBody, generalBody } from './spec-fixtures.js';
