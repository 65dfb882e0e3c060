// The workers files on a real directory: one per revision, rewritten only when its content
// changed, the files of revisions that stopped removed — also those an earlier run left.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkersFiles, workersFilePath } from './workers-file.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-workers-files-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const read = async (revision: number) => JSON.parse(await readFile(workersFilePath(dir, 7, revision), 'utf8')) as unknown;

describe('WorkersFiles', () => {
  it('writes one file per revision and removes those of revisions that stopped', async () => {
    const files = new WorkersFiles(dir);
    await files.sync(
      7,
      new Map([
        [3, { workers: ['127.0.0.1:1'] }],
        [4, { workers: ['127.0.0.1:2'] }],
      ]),
    );
    expect(await read(3)).toEqual({ workers: ['127.0.0.1:1'] });
    expect(await read(4)).toEqual({ workers: ['127.0.0.1:2'] });
    expect((await stat(workersFilePath(dir, 7, 3))).mode & 0o777).toBe(0o644);

    await files.sync(7, new Map([[4, { workers: ['127.0.0.1:2'] }]]));
    expect(existsSync(workersFilePath(dir, 7, 3))).toBe(false);
    expect(await readdir(path.join(dir, '7'))).toEqual(['workers-r4.json']);
  });

  it('rewrites a file only when its content changed', async () => {
    const files = new WorkersFiles(dir);
    await files.sync(7, new Map([[3, { workers: [] }]]));
    await writeFile(workersFilePath(dir, 7, 3), 'tampered');
    await files.sync(7, new Map([[3, { workers: [] }]]));
    expect(await readFile(workersFilePath(dir, 7, 3), 'utf8')).toBe('tampered');
    await files.sync(7, new Map([[3, { workers: ['127.0.0.1:9'] }]]));
    expect(await read(3)).toEqual({ workers: ['127.0.0.1:9'] });
  });

  it('after a restart, rewrites the files of revisions that run and removes the others an earlier run left', async () => {
    await mkdir(path.join(dir, '7'), { recursive: true });
    for (const name of ['workers.json', 'workers-r2.json', 'workers-r3.json', 'notes.txt']) await writeFile(path.join(dir, '7', name), 'old');
    await new WorkersFiles(dir).sync(7, new Map([[3, { workers: ['127.0.0.1:1'] }]]));
    expect((await readdir(path.join(dir, '7'))).sort()).toEqual(['notes.txt', 'workers-r3.json']);
    expect(await read(3)).toEqual({ workers: ['127.0.0.1:1'] });
  });
});
