// Bench helper: interleaved rounds and their medians, shared by the benches that compare
// proxies on two shared cores (noisy, so every target runs once per round, in turn, and the
// median of the rounds is kept) — load runs (lib/load.ts) and stream runs (lib/streams.ts) —
// their command line, and the PASS/MISS/UNDECIDED report with its JSON file.

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { measure, type Generator, type LoadResult, type LoadTarget, type RunOptions } from './load.js';
import { measureStreams, type StreamResult, type StreamTarget } from './streams.js';

export const round2 = (n: number) => Math.round(n * 100) / 100;
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A target's totals over its rounds and the medians of its figures, with each round's CPU per request. */
export interface LoadSummary extends LoadResult {
  cpuRounds: string;
  /** CPU µs per request of each round, in round order (null: no process measured). */
  cpuByRound: Array<number | null>;
}

/** The settings every proxy comparison shares; the names are the command-line flags. */
const SHARED = ['duration', 'rounds', 'connections', 'streams', 'generator', 'method'] as const;
type Shared = (typeof SHARED)[number];

/**
 * The command line of the proxy comparisons: one load and streams setting for every target.
 * A bench may change the shared defaults and add string flags of its own (`extra`: name →
 * default), returned as they were given.
 */
export function roundOptions<E extends string = never>(
  argv = process.argv.slice(2),
  more: { defaults?: Partial<Record<Shared, string>>; extra?: Record<E, string> } = {},
) {
  const defaults: Record<Shared, string> = { duration: '6', rounds: '3', connections: '50', streams: '50', generator: 'autocannon', method: 'POST', ...more.defaults };
  const extra = (more.extra ?? {}) as Record<string, string>;
  const options = Object.fromEntries(
    [...SHARED.map((name) => [name, defaults[name]] as const), ...Object.entries(extra)].map(([name, value]) => [name, { type: 'string' as const, default: value }]),
  );
  const values = parseArgs({ args: argv, options }).values as Record<string, string>;
  const generator = values.generator as Generator;
  if (generator !== 'autocannon' && generator !== 'wrk') throw new Error('--generator must be autocannon or wrk');
  return {
    seconds: Number(values.duration),
    rounds: Number(values.rounds),
    connections: Number(values.connections),
    streamCount: Number(values.streams),
    generator,
    method: values.method === 'GET' ? ('GET' as const) : ('POST' as const),
    extra: Object.fromEntries(Object.keys(extra).map((name) => [name, values[name]!])) as Record<E, string>,
  };
}

/**
 * Every target once per round, in turn; per target, the totals and the medians of its rounds.
 * `rotate` starts each round one target later, so no target always follows the same one.
 */
export async function loadRounds(targets: LoadTarget[], rounds: number, opts: RunOptions & { generator?: Generator; rotate?: boolean }): Promise<LoadSummary[]> {
  const runs = new Map<string, LoadResult[]>(targets.map((t) => [t.name, []]));
  for (let r = 0; r < rounds; r++) {
    const shift = opts.rotate ? r % targets.length : 0;
    const order = [...targets.slice(shift), ...targets.slice(0, shift)];
    for (const t of order) runs.get(t.name)!.push(await measure(t, { ...opts, warmupSeconds: 1 }));
  }
  return targets.map((t) => {
    const rs = runs.get(t.name)!;
    const cpu = rs.map((x) => x.cpuUsPerRequest).filter((x): x is number => x !== null);
    const cores = rs.map((x) => x.cpuCores ?? null).filter((x): x is number => x !== null);
    return {
      target: t.name,
      requests: rs.reduce((a, x) => a + x.requests, 0),
      rps: round2(median(rs.map((x) => x.rps))),
      p50ms: median(rs.map((x) => x.p50ms)),
      p99ms: median(rs.map((x) => x.p99ms)),
      non2xx: rs.reduce((a, x) => a + x.non2xx, 0),
      errors: rs.reduce((a, x) => a + x.errors, 0),
      cpuUsPerRequest: cpu.length ? round2(median(cpu)) : null,
      cpuCores: cores.length ? round2(median(cores)) : null,
      cpuRounds: cpu.map(round2).join(' / '),
      cpuByRound: rs.map((x) => (x.cpuUsPerRequest === null ? null : round2(x.cpuUsPerRequest))),
    };
  });
}

/** Figures of a run with failures mix in something else than what they name: this refuses them. */
export function assertNoFailedRequests(load: LoadSummary[]): void {
  const failed = load.filter((x) => x.non2xx > 0 || x.errors > 0);
  if (failed.length > 0) throw new Error(`failed requests (${failed.map((x) => `${x.target}: ${x.non2xx} non-2xx, ${x.errors} errors`).join('; ')}): no figures`);
}

/** Warm then cold streams through every target once per round; per target and mode, the medians of the rounds' figures. */
export async function streamRounds(targets: StreamTarget[], rounds: number, count: number): Promise<StreamResult[]> {
  const runs = new Map<string, StreamResult[]>();
  for (let r = 0; r < rounds; r++) {
    for (const mode of ['warm', 'cold'] as const) {
      for (const t of targets) {
        const result = await measureStreams(t, count, mode);
        runs.set(result.target, [...(runs.get(result.target) ?? []), result]);
      }
    }
  }
  const streams = [...runs.values()].map((rs) => {
    const m = (field: keyof Omit<StreamResult, 'target'>) => round2(median(rs.map((x) => x[field])));
    return {
      target: rs[0]!.target,
      streams: rs.reduce((a, x) => a + x.streams, 0),
      failed: rs.reduce((a, x) => a + x.failed, 0),
      headersP50: m('headersP50'),
      headersP99: m('headersP99'),
      firstChunkP50: m('firstChunkP50'),
      firstChunkP99: m('firstChunkP99'),
      maxGapP50: m('maxGapP50'),
      maxGapP99: m('maxGapP99'),
    };
  });
  const failed = streams.filter((x) => x.failed > 0);
  if (failed.length > 0) throw new Error(`failed streams (${failed.map((x) => `${x.target}: ${x.failed}`).join('; ')}): no figures`);
  return streams;
}

/**
 * A verdict: met (true), missed (false), or undecided (null: the measurements disagree, e.g.
 * rounds on both sides of the target, so the run cannot say).
 */
export type Verdict = [text: string, met: boolean | null];

/** PASS, MISS or UNDECIDED, by whether every round's figure is on the same side of the target. */
export function byRounds(values: number[], met: (x: number) => boolean): boolean | null {
  if (values.length === 0) return null;
  if (values.every(met)) return true;
  if (!values.some(met)) return false;
  return null;
}

/** Prints each target as PASS, MISS or UNDECIDED and writes the summary with them to bench/results/<name>-<date>.json. */
export async function reportVerdicts(root: string, name: string, summary: { date: string }, verdicts: Verdict[]): Promise<void> {
  for (const [text, ok] of verdicts) console.log(`${ok === null ? 'UNDECIDED' : ok ? 'PASS' : 'MISS'}  ${text}`);
  await mkdir(path.join(root, 'bench/results'), { recursive: true });
  const file = path.join(root, 'bench/results', `${name}-${summary.date.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, JSON.stringify({ ...summary, targets: verdicts.map(([text, pass]) => ({ text, pass })) }, null, 2));
  console.log(`bench: results in ${path.relative(root, file)}`);
}
