// Test runner configuration: unit tests sit next to their source, cross-module tests in test/.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
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
  },
});
