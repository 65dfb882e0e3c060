// Test runner configuration: unit tests sit next to their source, cross-module tests in test/.
import { defineConfig } from 'vitest/config';

/**
 * Files that replace a module with vi.mock: they need a module graph of their own. Every
 * other file shares its worker's modules with the files that ran there before it (isolate:
 * false) — a fresh graph per file cost the suite more than two minutes of imports on a 2-core
 * machine. Tests therefore keep their state in their own module and restore what they change
 * in the process (fake timers, environment variables).
 */
const NEEDS_OWN_MODULES = ['test/response-schemas.test.ts'];

export default defineConfig({
  test: {
    // The default reporter plus the slowest ten files at the end of the run (test/slowest-files-reporter.ts).
    reporters: ['default', './test/slowest-files-reporter.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most suites wait on child processes, sockets and polls rather than compute: two files at
    // a time halve the wall time even on a 2-core machine (vitest's default there is one).
    maxWorkers: 2,
    // Browser tests poll the page for what a live service shows; a loaded CI machine needs more than the 1 s default.
    expect: { poll: { timeout: 10_000 } },
    projects: [
      { extends: true, test: { name: 'shared', isolate: false, include: ['src/**/*.test.ts', 'test/**/*.test.ts'], exclude: NEEDS_OWN_MODULES } },
      { extends: true, test: { name: 'own-modules', isolate: true, include: NEEDS_OWN_MODULES } },
    ],
  },
});
