// Test reporter: after the run, the ten test files that took longest (collect + setup +
// tests), so the suite's time budget has an owner to look at. Added next to the default
// reporter; it writes plain lines to stdout, so it reads the same under CI=true.

import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

const SHOWN = 10;

export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const timed = modules
      .map((m) => {
        const d = m.diagnostic();
        return { file: path.relative(process.cwd(), m.moduleId), ms: d.collectDuration + d.setupDuration + d.duration };
      })
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SHOWN);
    if (timed.length === 0) return;
    const lines = timed.map((t) => `  ${(t.ms / 1000).toFixed(1).padStart(6)} s  ${t.file}`);
    process.stdout.write(`\nSlowest ${timed.length} test files:\n${lines.join('\n')}\n`);
  }
}
