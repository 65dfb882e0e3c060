// Owns the workers file of an orchestrated deployment: the ready workers' addresses the
// Frontend reads (`{"workers": [...]}` or `{"prefill": [...], "decode": [...]}`), written
// atomically (temp file, rename) and only when its content changed. Readable by others: the
// Frontend runs sandboxed as another user, and the file holds only loopback addresses.

import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export class WorkersFiles {
  /** The last body written per deployment. */
  private readonly written = new Map<number, string>();

  async write(deploymentId: number, file: string, content: Record<string, string[]>): Promise<void> {
    const body = JSON.stringify(content);
    if (this.written.get(deploymentId) === body) return;
    await mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
    await writeFile(`${file}.tmp`, body, { mode: 0o644 });
    await rename(`${file}.tmp`, file);
    this.written.set(deploymentId, body);
  }

  forget(deploymentId: number): void {
    this.written.delete(deploymentId);
  }
}
