// The architecture's boundaries as rules (.dependency-cruiser.cjs), checked two ways: the real
// src/ breaks none of them, and each rule reports a deliberate violation in a scratch tree —
// so a rule that silently stopped matching would fail here, not pass everything.
// Tests synchronise on events, not fixed sleeps: no test file sleeps unless the allow-list
// below says why, and the scanner is shown to catch each shape of sleep.

import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseOptions, type IViolation } from 'dependency-cruiser';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const config = createRequire(import.meta.url)(path.join(ROOT, '.dependency-cruiser.cjs')) as { forbidden: ICruiseOptions['ruleSet'] extends infer R ? R extends { forbidden?: infer F } ? F : never : never; options: Record<string, unknown> };

async function violations(baseDir: string, withTsConfig: boolean): Promise<IViolation[]> {
  const { tsConfig, ...options } = config.options;
  const result = await cruise(['src'], {
    ...(options as ICruiseOptions),
    ...(withTsConfig ? { tsConfig } : {}),
    baseDir,
    ruleSet: { forbidden: config.forbidden },
    validate: true,
  } as ICruiseOptions);
  if (typeof result.output === 'string') throw new Error('dependency-cruiser gave text, not a result');
  return result.output.summary.violations;
}

describe('architecture boundaries', () => {
  it('src/ breaks none of them', async () => {
    const found = await violations(ROOT, true);
    expect(found.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)).toEqual([]);
  }, 60_000);

  let scratch: string | undefined;
  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('each rule reports a deliberate violation', async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'infergate-arch-'));
    const files: Record<string, string> = {
      'src/core/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'src/core/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
      'src/core/c.ts': "import type { D } from './d.js';\nexport interface C { d?: D }\n",
      'src/core/d.ts': "import type { C } from './c.js';\nexport interface D { c?: C }\n",
      'src/domain/reads-files.ts': "import { readFileSync } from 'node:fs';\nexport const r = readFileSync;\n",
      'src/domain/uses-store.ts': "import { s } from '../store/store.js';\nexport const u = s;\n",
      'src/store/store.ts': 'export const s = 1;\n',
      'src/control/route.ts': "import { l } from '../runtime/log-reader.js';\nexport const r = l;\n",
      'src/runtime/log-reader.ts': 'export const l = 1;\n',
      'src/gateway/g.ts': "import { c } from '../control/c.js';\nexport const g = c;\n",
      'src/control/c.ts': 'export const c = 1;\n',
      'src/engine/e.ts': "import { s } from '../store/store.js';\nexport const e = s;\n",
      'src/orchestrated/o.ts': "import { p } from '../protocol/p.js';\nimport { x } from '../engine/x.js';\nexport const o = [p, x];\n",
      'src/protocol/p.ts': 'export const p = 1;\n',
      'src/engine/x.ts': 'export const x = 1;\n',
      'src/engine/cli.ts': "import { f } from '../flags/f.js';\nexport const c = f;\n",
      'src/flags/f.ts': "import { s } from '../store/store.js';\nexport const f = s;\n",
      'src/balancer/b.ts': "import { g } from '../gateway/g.js';\nimport { k } from '../core/k.js';\nexport const b = [g, k];\n",
      'src/core/k.ts': 'export const k = 1;\n',
      'src/gateway/pipeline.ts': "import { p } from '../balancer/prefix-aware.js';\nimport type { S } from '../balancer/selector.js';\nexport const x: S | number = p;\n",
      'src/balancer/prefix-aware.ts': 'export const p = 1;\n',
      'src/balancer/selector.ts': 'export type S = number;\n',
      'src/orchestrated/uses-balancer.ts': "import { b } from '../balancer/b.js';\nexport const u = b;\n",
      'src/client/reads-store.ts': "import { s } from '../store/store.js';\nexport const r = s;\n",
      'src/cli/main.ts': "import { s } from '../store/store.js';\nimport { v } from './version.js';\nexport const m = async () => [s, v, await import('./serve.js')];\n",
      'src/cli/version.ts': 'export const v = 1;\n',
      'src/cli/serve.ts': 'export const serve = 1;\n',
    };
    for (const [file, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(scratch, file)), { recursive: true });
      await writeFile(path.join(scratch, file), text);
    }
    const found = (await violations(scratch, false)).map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^no-circular: src\/core\/(a|b)\.ts/),
        // A cycle of type-only imports is a cycle too.
        expect.stringMatching(/^no-circular: src\/core\/(c|d)\.ts/),
        'pure-layers-no-io: src/domain/reads-files.ts → fs',
        'pure-layers-no-io: src/domain/uses-store.ts → src/store/store.ts',
        'control-plane-not-data-plane: src/control/route.ts → src/runtime/log-reader.ts',
        'data-plane-not-control-plane: src/gateway/g.ts → src/control/c.ts',
        'engines-stand-alone: src/engine/e.ts → src/store/store.ts',
        'frontend-stands-alone: src/orchestrated/o.ts → src/engine/x.ts',
        'balancer-stands-alone: src/balancer/b.ts → src/gateway/g.ts',
        'pure-layers-no-io: src/flags/f.ts → src/store/store.ts',
        'client-over-http-only: src/client/reads-store.ts → src/store/store.ts',
        'request-path-knows-no-policy: src/gateway/pipeline.ts → src/balancer/prefix-aware.ts',
        'cli-entry-loads-programs-lazily: src/cli/main.ts → src/store/store.ts',
      ]),
    );
    // The entry may import the version statically, and a program with import().
    expect(found.some((v) => v.includes('src/cli/main.ts → src/cli/'))).toBe(false);
    // The shared protocol code and the flag parser are allowed to both programs.
    expect(found.some((v) => v.includes('src/orchestrated/o.ts → src/protocol/p.ts'))).toBe(false);
    expect(found.some((v) => v.includes('src/engine/cli.ts → src/flags/f.ts'))).toBe(false);
    // The Frontend chooses workers with the gateway's policies; a policy may use core/.
    expect(found.some((v) => v.includes('src/orchestrated/uses-balancer.ts →'))).toBe(false);
    expect(found.some((v) => v.includes('src/balancer/b.ts → src/core/k.ts'))).toBe(false);
    // The placement interface is the request path's way to a policy.
    expect(found.some((v) => v.includes('src/gateway/pipeline.ts → src/balancer/selector.ts'))).toBe(false);
  }, 60_000);

  it('schemas are built with the Type of src/core/typebox.ts: no other file of src/ imports a value from typebox', async () => {
    // The build bundles typebox into dist/core/typebox.js; an import of the package elsewhere
    // would load its 373 modules again at every start. Types may come from the package.
    const valueImport = /^\s*import\s+(?!type\b)[^;]*?\bfrom\s+['"]typebox(?:\/[^'"]*)?['"]/m;
    expect(valueImport.test("import { Type } from 'typebox';")).toBe(true);
    expect(valueImport.test("import type { Static } from 'typebox';")).toBe(false);
    const files = await testFiles('src', (n) => n.endsWith('.ts') && !n.endsWith('.test.ts') && !n.endsWith('.contract.ts'));
    const offenders: string[] = [];
    for (const file of files) if (file !== 'src/core/typebox.ts' && valueImport.test(await readFile(path.join(ROOT, file), 'utf8'))) offenders.push(file);
    expect(offenders).toEqual([]);
  });
});

/**
 * Lines of `text` that wait a fixed time: a promise resolved by a timer
 * (`setTimeout(r, 200)`, `setTimeout(() => resolve(), 200)`), timers/promises' delay, or a
 * call of a `sleep(` / `delay(` function (an injected clock's `clock.sleep(` is a method call,
 * not matched: a fake clock wakes it). Comment lines are skipped.
 */
export function bareSleeps(text: string): number[] {
  const shapes = [
    /setTimeout\(\s*(?:\(\)\s*=>\s*)?(?:r|res|resolve|done|wake|next)\b\s*(?:\(\s*\w*\s*\))?\s*,/,
    /from\s+['"](?:node:)?timers\/promises['"]/,
    /(?<![\w.$'"`-])(?:sleep|delay)\s*\(/,
  ];
  const found: number[] = [];
  text.split('\n').forEach((line, i) => {
    const t = line.trim();
    if (t.startsWith('//') || t.startsWith('*') || t.startsWith('/*')) return;
    if (shapes.some((shape) => shape.test(line))) found.push(i + 1);
  });
  return found;
}

/**
 * Test files that may sleep, each with why: a timer is the thing under test, or a pause
 * paces load, or nothing observable marks the moment. A file here that no longer sleeps
 * fails the check too, so the list stays true.
 */
const SLEEPS_ALLOWED: Record<string, string> = {
  'test/swarm-ground.test.ts': 'the pause between attempts of a probe that runs inside a container on the overlay, where no event of the test reaches (it retries while an engine on another node loads)',
  'test/helpers/wait.ts': 'the one polling helper: the pause between two looks at the condition (vi.waitFor cannot serve here: global set-up starts redis-server with it, outside any test worker)',
  'test/helpers/raw-tls.ts': 'the deadline of a wait that data ends first: a parsed response or the close wakes it',
  'test/helpers/chat-upstream.ts': "a fake engine's pacing between streamed chunks: the stream's timing is what the tests read",
  'test/security/stalled-bodies.test.ts': "a load generator's pacing: a valid client's request every 250 ms beside the stalled ones",
  'test/security/gateway-auth-matrix.test.ts': 'the pacing of requests sent until a withdrawn credential is refused (how long that takes is the measure)',
  'test/redis-outage.test.ts': "the outage's length is the scenario, and a flush interval of the service (another process) passes to show nothing was counted twice",
};

async function testFiles(dir: string, keep: (name: string) => boolean): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') out.push(...(await testFiles(rel, keep)));
    } else if (keep(entry.name)) out.push(rel);
  }
  return out;
}

describe('tests wait on events, not fixed sleeps', () => {
  it('no test file sleeps outside the allow-list, and every file on it still needs to', async () => {
    const files = [
      ...(await testFiles('src', (n) => n.endsWith('.test.ts') || n.endsWith('.contract.ts'))),
      ...(await testFiles('test', (n) => n.endsWith('.ts'))),
    ].sort();
    const sleeping = new Map<string, number[]>();
    for (const file of files) {
      const lines = bareSleeps(await readFile(path.join(ROOT, file), 'utf8'));
      if (lines.length > 0) sleeping.set(file, lines);
    }
    const unexplained = [...sleeping].filter(([file]) => !(file in SLEEPS_ALLOWED)).map(([file, lines]) => `${file}:${lines.join(',')}`);
    expect(unexplained, 'wait on the event instead (expect.poll, vi.waitFor, a ManualClock, Controller.settled()), or add the file to SLEEPS_ALLOWED with why').toEqual([]);
    const stale = Object.keys(SLEEPS_ALLOWED).filter((file) => !sleeping.has(file));
    expect(stale, 'these files no longer sleep: take them off SLEEPS_ALLOWED').toEqual([]);
  });

  it('the scanner catches each shape of sleep and leaves waits on events alone', () => {
    // Written with a '@' the maps take out, so this file's own source holds no sleep.
    const sleeps = [
      'await new Promise((r) => setTimeout@(r, 200));',
      'await new Promise((resolve) => setTimeout@(resolve, 50));',
      'await new Promise<void>((done) => setTimeout@(() => done(), 10));',
      "import { setTimeout as pause } from 'node:timers@/promises';",
      'await sleep@(100);',
      'await delay@(25);',
    ].map((line) => line.replace('@', ''));
    const waits = [
      'await clock.sleep(100);',
      'await expect.poll(() => live().length).toBe(1);',
      'await vi.waitFor(() => expect(seen).toBe(true));',
      "spawn('sleep', ['30']);",
      "command: ['/bin/sh', '-c', 'exec sleep 30'],",
      'const timer = setTimeout(() => controller.abort(), 5000);',
      '// a comment may say sleep@(1) without sleeping',
      'await c.settled();',
    ].map((line) => line.replace('@', ''));
    expect(sleeps.map((line) => bareSleeps(line).length)).toEqual(sleeps.map(() => 1));
    expect(waits.map((line) => bareSleeps(line).length)).toEqual(waits.map(() => 0));
  });
});
