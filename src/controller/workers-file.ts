// Owns the workers files of orchestrated deployments: one per revision that runs
// (`<dir>/<deployment-id>/workers-r<revision>.json`, named by the revision alone so a
// Frontend taken back after a restart reads the same file), holding the ready workers'
// addresses its Frontend reads (`{"workers": [...]}` or `{"prefill": [...], "decode":
// [...]}`), written atomically (temp file, rename) and only when its content changed; the
// files of revisions that no longer run are removed (also those an earlier run left).
// Readable by others: the Frontend runs sandboxed as another user, and the file holds only
// addresses in the deployment's own pod (loopback ports where there are no pods).

import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** The file the Frontend of one revision reads. */
export function workersFilePath(dir: string, deploymentId: number, revision: number): string {
  return path.join(dir, String(deploymentId), `workers-r${revision}.json`);
}

/** Files this module writes in a deployment's directory (`workers.json`: the name before files were per revision). */
const WORKERS_FILE = /^workers(-r\d+)?\.json$/;

export class WorkersFiles {
  /** Per deployment, the files in its directory and the body last written to each ('' when found, not written). */
  private readonly written = new Map<number, Map<string, string>>();

  constructor(private readonly dir: string) {}

  /**
   * Makes a deployment's directory hold exactly the files of `revisions` (revision → content):
   * each written when its content changed, every other workers file removed.
   */
  async sync(deploymentId: number, revisions: ReadonlyMap<number, Record<string, string[]>>): Promise<void> {
    const folder = path.join(this.dir, String(deploymentId));
    const files = await this.known(deploymentId, folder);
    const wanted = new Set<string>();
    for (const [revision, content] of revisions) {
      const file = workersFilePath(this.dir, deploymentId, revision);
      const name = path.basename(file);
      wanted.add(name);
      const body = JSON.stringify(content);
      if (files.get(name) === body) continue;
      await mkdir(folder, { recursive: true, mode: 0o755 });
      await writeFile(`${file}.tmp`, body, { mode: 0o644 });
      await rename(`${file}.tmp`, file);
      files.set(name, body);
    }
    for (const name of [...files.keys()]) {
      if (wanted.has(name)) continue;
      await rm(path.join(folder, name), { force: true });
      files.delete(name);
    }
  }

  forget(deploymentId: number): void {
    this.written.delete(deploymentId);
  }

  /** What the directory holds: read once per deployment (an earlier run's files), then tracked. */
  private async known(deploymentId: number, folder: string): Promise<Map<string, string>> {
    let files = this.written.get(deploymentId);
    if (files !== undefined) return files;
    files = new Map();
    const found = await readdir(folder).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    for (const name of found) if (WORKERS_FILE.test(name)) files.set(name, '');
    this.written.set(deploymentId, files);
    return files;
  }
}
