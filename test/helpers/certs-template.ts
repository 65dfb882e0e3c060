// Test helper: one platform CA and gateway certificate for the test run's platforms. Making
// them costs `serve` two RSA-2048 keys (about half a second of CPU on a loaded 2-core
// machine); the global setup makes them once and startPlatform copies them into a platform's
// empty certs directory, where `serve` loads them as it would its own from a previous start.
// Tests of first-start behaviour (serve-process, the CLI) start `serve` on empty directories.

import { cp, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadOrCreateCa } from '../../src/pki/ca.js';
import { loadOrIssueGatewayCertificate } from '../../src/pki/server-certs.js';

/** The endpoints' domain every test platform uses: the template's gateway certificate covers it. */
export const ENDPOINT_DOMAIN = 'endpoints.localhost';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A certs directory holding the run's CA and gateway certificate. */
    certsTemplate: string;
  }
}

/** Makes the template in a new temp directory and returns it (the caller removes it). */
export async function makeCertsTemplate(): Promise<string> {
  const dir = path.join(await mkdtemp(path.join(os.tmpdir(), 'infergate-certs-')), 'certs');
  const ca = await loadOrCreateCa(dir);
  await loadOrIssueGatewayCertificate(ca, dir, ENDPOINT_DOMAIN);
  return dir;
}

/** Copies the template into `certsDir` (which must not exist yet), keeping the files' modes. */
export async function seedCerts(template: string, certsDir: string): Promise<void> {
  await cp(template, certsDir, { recursive: true, errorOnExist: true, force: false });
}
