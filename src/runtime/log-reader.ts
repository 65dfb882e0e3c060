// Owns reading replica logs back for the logs route: find a deployment's log files by
// revision, component and replica; the last N lines across them in time order; and follow,
// which delivers every line appended after the call until the caller stops listening.

import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { deploymentLogsDir, type LogLine } from './log-files.js';

export interface LogFilter {
  revision?: number;
  component?: string;
  replica?: string;
}

export interface LogEntry extends LogLine {
  revision: number;
  component: string;
  replica: string;
}

interface LogFile {
  revision: number;
  component: string;
  replica: string;
  file: string;
}

const TAIL_WINDOW = 2 * 1024 * 1024;

async function entries(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

export async function findLogFiles(logsDir: string, deploymentId: number, filter: LogFilter): Promise<LogFile[]> {
  const root = deploymentLogsDir(logsDir, deploymentId);
  const found: LogFile[] = [];
  for (const rev of await entries(root)) {
    const revision = Number(rev);
    if (!Number.isInteger(revision) || (filter.revision !== undefined && revision !== filter.revision)) continue;
    for (const component of await entries(path.join(root, rev))) {
      if (filter.component !== undefined && component !== filter.component) continue;
      for (const name of await entries(path.join(root, rev, component))) {
        if (!name.endsWith('.log')) continue;
        const replica = name.slice(0, -'.log'.length);
        if (filter.replica !== undefined && replica !== filter.replica) continue;
        found.push({ revision, component, replica, file: path.join(root, rev, component, name) });
      }
    }
  }
  return found;
}

function parse(text: string, from: LogFile): LogEntry[] {
  const out: LogEntry[] = [];
  for (const raw of text.split('\n')) {
    if (raw === '') continue;
    try {
      const line = JSON.parse(raw) as LogLine;
      out.push({ time: line.time, revision: from.revision, component: from.component, replica: from.replica, stream: line.stream, line: line.line });
    } catch {
      // a torn first line of the tail window, or a line cut by a crash: skip it
    }
  }
  return out;
}

async function readRange(file: string, start: number, end: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(end - start);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** The last `n` lines across the matching files, oldest first. */
export async function tailLogs(logsDir: string, deploymentId: number, filter: LogFilter, n: number): Promise<LogEntry[]> {
  const all: LogEntry[] = [];
  for (const f of await findLogFiles(logsDir, deploymentId, filter)) {
    const size = (await stat(f.file)).size;
    all.push(...parse(await readRange(f.file, Math.max(0, size - TAIL_WINDOW), size), f).slice(-n));
  }
  all.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  return all.slice(-n);
}

/**
 * Calls `onLine` for every line written to a matching file after the call (new replicas'
 * files included), polling every `intervalMs`, until `signal` aborts.
 */
export async function followLogs(
  logsDir: string,
  deploymentId: number,
  filter: LogFilter,
  onLine: (entry: LogEntry) => void,
  signal: AbortSignal,
  intervalMs = 200,
): Promise<void> {
  const offsets = new Map<string, { offset: number; partial: string }>();
  const scan = async (initial: boolean) => {
    for (const f of await findLogFiles(logsDir, deploymentId, filter)) {
      let size: number;
      try {
        size = (await stat(f.file)).size;
      } catch {
        continue;
      }
      const known = offsets.get(f.file);
      // Files that exist at the call start at their end; files created later, at 0.
      if (!known) {
        offsets.set(f.file, { offset: initial ? size : 0, partial: '' });
        if (initial) continue;
      }
      const state = offsets.get(f.file)!;
      if (size < state.offset) state.offset = 0; // rotated
      if (size === state.offset) continue;
      const text = state.partial + (await readRange(f.file, state.offset, size));
      state.offset = size;
      const cut = text.lastIndexOf('\n');
      state.partial = text.slice(cut + 1);
      for (const entry of parse(text.slice(0, cut + 1), f)) onLine(entry);
    }
  };
  await scan(true);
  while (!signal.aborted) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    if (!signal.aborted) await scan(false);
  }
}
