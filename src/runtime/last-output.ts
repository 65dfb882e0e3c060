// Owns finding what a replica last said: the last line its process wrote (stdout or stderr,
// not the runtime's own notes) in its log file, read from the file's end only, for the
// controller's reason when the replica keeps crashing. Null when logging is off, or it said
// nothing. The line is the replica's to choose and ends up in status reasons and events that
// terminals print (`infergate ls`, `describe`), so terminal escapes and other control
// characters are taken out and it is cut to a length that reads as one line.

import { open } from 'node:fs/promises';
import { logFilePath, type LogLine, type LogLocation } from './log-files.js';

/** Enough for the last few lines of any process; the file is never read whole. */
const TAIL_BYTES = 64 * 1024;
const MAX_LINE = 300;
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|\p{Cc}/gu;

/** The line as safe to print anywhere: no escape sequence or control character, one line's length. */
export function printable(line: string): string {
  const clean = line.replace(ESCAPES, '').trim();
  return clean.length > MAX_LINE ? `${clean.slice(0, MAX_LINE - 1)}…` : clean;
}

export async function lastOutputLine(logsDir: string, at: LogLocation): Promise<string | null> {
  let text: string;
  try {
    const handle = await open(logFilePath(logsDir, at), 'r');
    try {
      const { size } = await handle.stat();
      const start = Math.max(0, size - TAIL_BYTES);
      const buffer = Buffer.alloc(size - start);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return null; // no log: logging off, or nothing written yet
  }
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    let entry: LogLine;
    try {
      entry = JSON.parse(lines[i]!) as LogLine;
    } catch {
      continue; // the torn first line of the window, or an empty one
    }
    if (entry.stream === 'runtime' || typeof entry.line !== 'string') continue;
    const line = printable(entry.line);
    if (line !== '') return line;
  }
  return null;
}
