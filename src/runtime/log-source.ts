// Owns the LogSource port (domain/ports.ts) over the local runtime's log files: what the
// control API's logs route reads, without importing the runtime.

import type { LogSource } from '../domain/ports.js';
import { followLogs, tailLogs } from './log-reader.js';

export function fileLogSource(logsDir: string): LogSource {
  return {
    tail: (deploymentId, filter, n) => tailLogs(logsDir, deploymentId, filter, n),
    follow: (deploymentId, filter, onLine, signal) => followLogs(logsDir, deploymentId, filter, onLine, signal),
  };
}
