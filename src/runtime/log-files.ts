// Owns where replica logs live and how they are written: one file per replica under
// `<logs-dir>/<deployment-id>/<revision>/<component>/<replica>.log`, one JSON object per
// line (time, stream, line), rotated to `.1` past a size cap so a chatty engine cannot fill
// the disk. Partial lines are held until their newline arrives.

import { createWriteStream, mkdirSync, renameSync, type WriteStream } from 'node:fs';
import path from 'node:path';

export type LogStream = 'stdout' | 'stderr' | 'runtime';

export interface LogLine {
  time: string;
  stream: LogStream;
  line: string;
}

export interface LogLocation {
  deploymentId: number;
  revision: number;
  component: string;
  replica: string;
}

const MAX_LINE = 16 * 1024;

export function logFilePath(logsDir: string, at: LogLocation): string {
  return path.join(logsDir, String(at.deploymentId), String(at.revision), at.component, `${at.replica}.log`);
}

export function deploymentLogsDir(logsDir: string, deploymentId: number): string {
  return path.join(logsDir, String(deploymentId));
}

export class ReplicaLogWriter {
  private out: WriteStream;
  private size = 0;
  private readonly partial: Record<LogStream, string> = { stdout: '', stderr: '', runtime: '' };

  constructor(
    private readonly file: string,
    private readonly maxBytes = 16 * 1024 * 1024,
  ) {
    mkdirSync(path.dirname(file), { recursive: true });
    this.out = createWriteStream(file, { flags: 'a' });
    this.out.on('error', () => {}); // a full disk must not take the service down
  }

  /** A chunk of a process's output: complete lines are written, the rest waits for more. */
  chunk(stream: LogStream, data: Buffer | string): void {
    const text = this.partial[stream] + data.toString();
    const lines = text.split('\n');
    this.partial[stream] = lines.pop() ?? '';
    if (this.partial[stream].length > MAX_LINE) {
      lines.push(this.partial[stream]);
      this.partial[stream] = '';
    }
    for (const line of lines) this.line(stream, line.replace(/\r$/, ''));
  }

  line(stream: LogStream, line: string): void {
    const entry: LogLine = { time: new Date().toISOString(), stream, line: line.length > MAX_LINE ? line.slice(0, MAX_LINE) + '…' : line };
    const text = JSON.stringify(entry) + '\n';
    this.size += Buffer.byteLength(text);
    this.out.write(text);
    if (this.size > this.maxBytes) this.rotate();
  }

  close(): Promise<void> {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.partial[stream] !== '') this.line(stream, this.partial[stream]);
      this.partial[stream] = '';
    }
    return new Promise((resolve) => this.out.end(resolve));
  }

  private rotate(): void {
    // Writes still queued on the old stream land in the renamed file: it keeps its descriptor.
    try {
      renameSync(this.file, `${this.file}.1`);
    } catch {
      return;
    }
    this.out.end();
    this.out = createWriteStream(this.file, { flags: 'a' });
    this.out.on('error', () => {});
    this.size = 0;
  }
}
