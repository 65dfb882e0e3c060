// Unit tests of the engine image's pure parts: reading ldd's output (which files land in the
// image's rootfs), the walk of the production dependency closure (which packages do), and the
// content digest an image is reused by.

import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { engineContentDigest, engineImageRef, parseLddOutput, productionPackageDirs, type PackageManifest } from './engine-image.js';

describe('parseLddOutput', () => {
  it('keeps resolved libraries and the loader at their exact paths, without the vDSO', () => {
    const out = [
      '\tlinux-vdso.so.1 (0x00007ffd4a5f2000)',
      '\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007fabfa32b000)',
      '\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007fabfa000000)',
      '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007fabf9e1e000)',
      '\t/lib64/ld-linux-x86-64.so.2 (0x00007fabfa343000)',
      '',
    ].join('\n');
    expect(parseLddOutput(out)).toEqual({
      libraries: ['/lib/x86_64-linux-gnu/libdl.so.2', '/lib/x86_64-linux-gnu/libstdc++.so.6', '/lib/x86_64-linux-gnu/libc.so.6', '/lib64/ld-linux-x86-64.so.2'],
      missing: [],
    });
  });

  it('reports sonames the loader cannot find', () => {
    const out = '\tlibfoo.so.1 => not found\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0000000000)\n';
    expect(parseLddOutput(out)).toEqual({ libraries: ['/lib/x86_64-linux-gnu/libc.so.6'], missing: ['libfoo.so.1'] });
  });

  it('reads the older vDSO form (an arrow to nothing) and static executables as nothing', () => {
    expect(parseLddOutput('\tlinux-vdso.so.1 =>  (0x00007fff8b9fe000)\n')).toEqual({ libraries: [], missing: [] });
    expect(parseLddOutput('\tstatically linked\n')).toEqual({ libraries: [], missing: [] });
    expect(parseLddOutput('\tnot a dynamic executable\n')).toEqual({ libraries: [], missing: [] });
  });

  it('lists a library once however often it appears', () => {
    const line = '\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f0000000000)\n';
    expect(parseLddOutput(line + line).libraries).toEqual(['/lib/x86_64-linux-gnu/libm.so.6']);
  });
});

/** An installed tree as a map from directory to its package.json. */
function tree(app: string, manifests: Record<string, PackageManifest>): (dir: string) => PackageManifest | undefined {
  const byDir = new Map(Object.entries(manifests).map(([rel, m]) => [rel === '.' ? app : path.join(app, rel), m]));
  return (dir) => byDir.get(dir);
}

const APP = '/srv/app';
const rel = (dirs: string[]) => dirs.map((d) => path.relative(APP, d));

describe('productionPackageDirs', () => {
  it('follows dependencies recursively and never devDependencies', () => {
    const read = tree(APP, {
      '.': { name: 'app', dependencies: { a: '^1' }, devDependencies: { dev: '^1' } },
      'node_modules/a': { name: 'a', dependencies: { b: '^1' } },
      'node_modules/b': { name: 'b' },
      'node_modules/dev': { name: 'dev', dependencies: { b: '^1' } },
    });
    expect(rel(productionPackageDirs(APP, read))).toEqual(['node_modules/a', 'node_modules/b']);
  });

  it('resolves the nearest copy first, nested node_modules included, as Node does', () => {
    const read = tree(APP, {
      '.': { dependencies: { a: '^1', c: '^1' } },
      'node_modules/a': { dependencies: { b: '^2' } },
      'node_modules/a/node_modules/b': { name: 'b', dependencies: { d: '^1' } },
      'node_modules/b': { name: 'b' },
      'node_modules/c': { dependencies: { b: '^1' } },
      'node_modules/d': {},
    });
    // b@1 (hoisted) only for c; a gets its own b@2, whose d resolves up to the top.
    expect(rel(productionPackageDirs(APP, read))).toEqual(['node_modules/a', 'node_modules/a/node_modules/b', 'node_modules/b', 'node_modules/c', 'node_modules/d']);
  });

  it('handles scoped packages and dependency cycles', () => {
    const read = tree(APP, {
      '.': { dependencies: { '@s/x': '^1' } },
      'node_modules/@s/x': { dependencies: { y: '^1' } },
      'node_modules/y': { dependencies: { '@s/x': '^1' } },
    });
    expect(rel(productionPackageDirs(APP, read))).toEqual(['node_modules/@s/x', 'node_modules/y']);
  });

  it('skips optional and peer dependencies that are not installed, keeps the ones that are', () => {
    const read = tree(APP, {
      '.': { dependencies: { a: '^1' } },
      'node_modules/a': { dependencies: { gone: '^1' }, optionalDependencies: { gone: '^1', native: '^1' }, peerDependencies: { peer: '*', absent: '*' } },
      'node_modules/native': {},
      'node_modules/peer': {},
    });
    expect(rel(productionPackageDirs(APP, read))).toEqual(['node_modules/a', 'node_modules/native', 'node_modules/peer']);
  });

  it('refuses an install that lacks a plain dependency, naming who needs it', () => {
    const read = tree(APP, { '.': { dependencies: { a: '^1' } }, 'node_modules/a': { name: 'a', dependencies: { b: '^1' } } });
    expect(() => productionPackageDirs(APP, read)).toThrow(/b, a dependency of a, is not installed/);
  });

  it('never looks above the app directory', () => {
    const read = (dir: string) => (dir === APP ? { dependencies: { outside: '^1' } } : dir === '/srv/node_modules/outside' ? {} : undefined);
    expect(() => productionPackageDirs(APP, read)).toThrow(/outside/);
  });
});

describe('engineImageRef', () => {
  it('is the engine repository tagged with the version', () => {
    expect(engineImageRef('1.2.3')).toBe('infergate/engine:1.2.3');
  });
});

describe('engineContentDigest', () => {
  it('is stable for the same file contents, rebuilt or not, and changes with dist/', async () => {
    const app = await mkdtemp(path.join(os.tmpdir(), 'infergate-digest-'));
    try {
      await mkdir(path.join(app, 'dist/cli'), { recursive: true });
      await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0' }));
      await writeFile(path.join(app, 'dist/cli/main.js'), 'one');
      const first = await engineContentDigest(app);
      expect(await engineContentDigest(app)).toBe(first);
      // The same bytes written again (a rebuild): the same digest, whatever the file's time.
      await writeFile(path.join(app, 'dist/cli/main.js'), 'one');
      await utimes(path.join(app, 'dist/cli/main.js'), new Date(), new Date(Date.now() + 60_000));
      expect(await engineContentDigest(app)).toBe(first);
      await writeFile(path.join(app, 'dist/cli/main.js'), 'two');
      expect(await engineContentDigest(app)).not.toBe(first);
    } finally {
      await rm(app, { recursive: true, force: true });
    }
  });
});
