// Owns the reference engine's container image, infergate/engine:<version>: builds it from this
// checkout through the Engine API without pulling anything. The image is FROM scratch with one
// layer assembled from the host — the running Node binary and the shared objects it loads
// (found with ldd), dash as /bin/sh and a few coreutils for a terminal and for tests, a
// two-user /etc, and the app (package.json, dist/, proto/, and only the production dependency
// closure of node_modules) — streamed to the daemon as a tar build context, file by file.
//
// Size, measured on Debian 12 with NodeSource's Node 20.20: 149 MiB (156 MB) — the node
// binary 94 MiB, the production closure of node_modules 49 MiB (179 packages; the
// Windows and macOS prebuilds node-pty ships, 58 MiB, are left out), libraries and tools 6 MiB,
// dist/ 3 MiB. A build takes 10-15 s on 2 cores, most of it the daemon unpacking the context;
// the same inputs give the same layer, which the daemon's cache then reuses.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { lstat, open, readdir, readFile, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import tar from 'tar-stream';

export const ENGINE_IMAGE_REPO = 'infergate/engine';
export const ENGINE_IMAGE_TITLE = 'infergate reference engine (simulated GPU)';
/** Label holding engineContentDigest() of what the image was built from. */
export const ENGINE_CONTENT_LABEL = 'io.infergate.engine.content';

/** Where the app lives inside the image; the entrypoint runs its dist/cli/main.js. */
export const ENGINE_APP_DIR = '/opt/infergate';
/** The Node binary inside the image (a pod holder runs it with a script of its own). */
export const ENGINE_NODE = '/usr/local/bin/node';
const NOBODY = 65534;
/** Host tools placed in /usr/bin: enough for a terminal to look around, and for tests to ask `id`. */
const TOOLS = ['id', 'cat', 'ls', 'env', 'sleep'];
const TOOL_DIRS = ['/usr/bin', '/bin'];
/** Bump when the rootfs changes in a way the digest's other inputs do not show (which files go in). */
const RECIPE_REVISION = 1;
/** Two users only; nobody's home is /tmp: Docker sets HOME from passwd, and it is the one writable directory. */
const ETC_FILES: Record<string, string> = {
  '/etc/passwd': `root:x:0:0:root:/root:/bin/sh\nnobody:x:${NOBODY}:${NOBODY}:nobody:/tmp:/bin/sh\n`,
  '/etc/group': `root:x:0:\nnobody:x:${NOBODY}:\n`,
  // Without it glibc asks DNS before /etc/hosts, so `localhost` would wait on a resolver.
  '/etc/nsswitch.conf': 'passwd: files\ngroup: files\nhosts: files dns\n',
};
/** A fixed mtime: the same inputs give the same layer, so the daemon's build cache can reuse it. */
const MTIME = new Date('2000-01-01T00:00:00Z');

export function engineImageRef(version: string): string {
  return `${ENGINE_IMAGE_REPO}:${version}`;
}

export interface EngineImageBuild {
  ref: string;
  /** sha256:… */
  id: string;
  bytes: number;
}

export interface BuildEngineImageOptions {
  /** The checkout (or installed package) holding package.json, dist/, proto/ and node_modules/. */
  appDir: string;
  ref: string;
  onProgress?: (line: string) => void;
}

export async function buildEngineImage(docker: Dockerode, opts: BuildEngineImageOptions): Promise<EngineImageBuild> {
  const progress = opts.onProgress ?? (() => undefined);
  const appDir = path.resolve(opts.appDir);
  const version = readAppVersion(appDir);
  const rootfs = await collectRootfs(appDir);
  const digest = await engineContentDigest(appDir);
  progress(`context: ${rootfs.length} entries, ${mib(contextBytes(rootfs))} MiB`);
  const pack = tar.pack();
  // tar-stream's packer is a streamx stream; the request body Dockerode pipes is a Node one.
  const body = new PassThrough();
  pack.pipe(body);
  // Their errors are reported through contextError or the request's own failure, not as events
  // nobody listens to (which would crash the process).
  pack.on('error', () => undefined);
  body.on('error', () => undefined);
  let contextError: Error | undefined;
  const producing = writeContext(pack, dockerfile(version), rootfs).catch((err: Error) => {
    contextError = err;
    pack.destroy(err);
    body.destroy(err);
  });
  try {
    const output = await docker.buildImage(body, {
      t: opts.ref,
      labels: { [ENGINE_CONTENT_LABEL]: digest },
      // Intermediate containers go even when a step fails; nothing is ever pulled (FROM scratch).
      rm: true,
      forcerm: true,
      pull: false,
    });
    const builtId = await followBuild(docker, output, progress);
    await producing;
    if (contextError) throw contextError;
    const image = await docker.getImage(opts.ref).inspect();
    return { ref: opts.ref, id: builtId ?? image.Id, bytes: image.Size };
  } catch (err) {
    // A failed context is the cause (the daemon only saw its request body end early); either
    // way nothing must keep feeding a request that is over.
    pack.destroy();
    body.destroy();
    throw contextError ?? err;
  }
}

/**
 * A digest of what the image is built from, cheap enough to compute before every use: the
 * recipe (Dockerfile, tools, /etc, RECIPE_REVISION), the Node binary, package.json and the lock
 * file's contents, and the paths, sizes and mtimes of dist/ and proto/. The same whether this
 * module runs from src/ or dist/, so a service and the tests agree on an image.
 */
export async function engineContentDigest(appDir: string): Promise<string> {
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ revision: RECIPE_REVISION, dockerfile: dockerfile(readAppVersion(appDir)), tools: TOOLS, etc: ETC_FILES, node: ENGINE_NODE }));
  hash.update(`${process.execPath}\0${process.version}\0`);
  for (const name of ['package.json', 'package-lock.json']) {
    hash.update(`${name}\0`);
    hash.update(await readFile(path.join(appDir, name)).catch(() => Buffer.alloc(0)));
  }
  for (const dir of ['dist', 'proto']) {
    for await (const file of walkFiles(path.join(appDir, dir))) {
      // Contents, not times: a rebuild of dist/ (npm link runs `prepare`) that writes the same
      // files must not cost a new image.
      const s = await lstat(file);
      hash.update(`${path.relative(appDir, file)}\0${s.size}\0`);
      if (s.isFile()) hash.update(await readFile(file));
    }
  }
  return `sha256:${hash.digest('hex')}`;
}

// ---- ldd --------------------------------------------------------------------------------------

export interface LddResult {
  /** Absolute paths as the loader resolved them (the dynamic loader included), in order, once each. */
  libraries: string[];
  /** Sonames ldd reported as "not found". */
  missing: string[];
}

/** Reads `ldd <file>` output; the vDSO (no file) and "statically linked" add nothing. */
export function parseLddOutput(text: string): LddResult {
  const libraries: string[] = [];
  const missing: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const arrow = /^(\S+)\s+=>\s*(.*)$/.exec(line);
    if (arrow) {
      const [, soname = '', target = ''] = arrow;
      if (target.startsWith('not found')) missing.push(soname);
      else {
        const resolved = target.split(/\s+/)[0] ?? '';
        if (resolved.startsWith('/')) libraries.push(resolved);
      }
      continue;
    }
    // The loader itself (and any library named by path) has no arrow.
    const direct = /^(\/\S+)\s+\(0x[0-9a-f]+\)$/i.exec(line);
    if (direct?.[1]) libraries.push(direct[1]);
  }
  return { libraries: [...new Set(libraries)], missing: [...new Set(missing)] };
}

const execFileAsync = promisify(execFile);

async function sharedLibraries(file: string): Promise<string[]> {
  let text: string;
  try {
    text = (await execFileAsync('ldd', [file])).stdout;
  } catch (err) {
    const failed = err as { stdout?: string; stderr?: string; code?: unknown; message: string };
    // ldd exits non-zero for a static executable; that needs nothing.
    if (/not a dynamic executable|statically linked/.test(`${failed.stdout ?? ''}${failed.stderr ?? ''}`)) return [];
    throw new Error(`ldd ${file} failed: ${failed.stderr?.trim() || failed.message}`);
  }
  const { libraries, missing } = parseLddOutput(text);
  if (missing.length > 0) throw new Error(`${file} needs ${missing.join(', ')}, which the host's loader cannot find`);
  return libraries;
}

// ---- the production dependency closure -------------------------------------------------------

export interface PackageManifest {
  name?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  /** Never followed: the image holds what the app needs to run. */
  devDependencies?: Record<string, string>;
}

/** Reads `<dir>/package.json`, or undefined where there is none. */
export type ManifestReader = (dir: string) => PackageManifest | undefined;

/**
 * Every package directory under appDir's node_modules that the app's `dependencies` need,
 * recursively, resolved the way Node resolves a bare import (the nearest node_modules first,
 * nested ones included, never above appDir). devDependencies are never followed; an
 * optional or peer dependency that is not installed is skipped, a missing plain dependency is
 * an error (the install is incomplete). Sorted, absolute.
 */
export function productionPackageDirs(appDir: string, readManifest: ManifestReader): string[] {
  const root = readManifest(appDir);
  if (!root) throw new Error(`no package.json in ${appDir}`);
  const found = new Set<string>();
  const queue: Array<{ dir: string; manifest: PackageManifest }> = [{ dir: appDir, manifest: root }];
  for (let next = queue.shift(); next; next = queue.shift()) {
    for (const { name, required } of dependencyNames(next.manifest)) {
      const dir = resolvePackageDir(appDir, next.dir, name, readManifest);
      if (dir === undefined) {
        if (required) throw new Error(`${name}, a dependency of ${next.manifest.name ?? next.dir}, is not installed under ${appDir}/node_modules`);
        continue;
      }
      if (found.has(dir.path)) continue;
      found.add(dir.path);
      queue.push({ dir: dir.path, manifest: dir.manifest });
    }
  }
  return [...found].sort();
}

function dependencyNames(manifest: PackageManifest): Array<{ name: string; required: boolean }> {
  const optional = new Set([...Object.keys(manifest.optionalDependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
  const names = new Set([...Object.keys(manifest.dependencies ?? {}), ...optional]);
  return [...names].map((name) => ({ name, required: !optional.has(name) }));
}

/** Node's lookup: <dir>/node_modules/<name> for dir and each ancestor that is not itself a node_modules. */
function resolvePackageDir(appDir: string, fromDir: string, name: string, readManifest: ManifestReader): { path: string; manifest: PackageManifest } | undefined {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    if (path.basename(dir) !== 'node_modules') {
      const candidate = path.join(dir, 'node_modules', name);
      const manifest = readManifest(candidate);
      if (manifest) return { path: candidate, manifest };
    }
    if (dir === appDir || !dir.startsWith(appDir + path.sep)) return undefined;
  }
}

function readManifestFile(dir: string): PackageManifest | undefined {
  try {
    return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as PackageManifest;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}

function readAppVersion(appDir: string): string {
  const manifest = readManifestFile(appDir) as { version?: unknown } | undefined;
  if (!manifest) throw new Error(`no package.json in ${appDir}`);
  if (typeof manifest.version !== 'string') throw new Error(`${appDir}/package.json has no version`);
  return manifest.version;
}

// ---- the rootfs -------------------------------------------------------------------------------

type RootfsEntry =
  | { kind: 'dir'; path: string; mode: number }
  | { kind: 'file'; path: string; source: string; size: number; mode: number }
  | { kind: 'data'; path: string; data: Buffer; mode: number }
  | { kind: 'symlink'; path: string; target: string };

/** Entries by their absolute path in the image; later additions of the same path are ignored. */
class Rootfs {
  private readonly entries = new Map<string, RootfsEntry>();

  dir(at: string, mode = 0o755): void {
    for (let p = path.dirname(at); p !== '/' && !this.entries.has(p); p = path.dirname(p)) this.entries.set(p, { kind: 'dir', path: p, mode: 0o755 });
    if (!this.entries.has(at) || mode !== 0o755) this.entries.set(at, { kind: 'dir', path: at, mode });
  }

  /** A host file's content at `at`, through any symlinks: the loader looks up real files. */
  async hostFile(at: string, source: string): Promise<void> {
    if (this.entries.has(at)) return;
    const s = await stat(source);
    if (!s.isFile()) throw new Error(`${source} is not a regular file`);
    this.dir(path.dirname(at));
    this.entries.set(at, { kind: 'file', path: at, source, size: s.size, mode: s.mode & 0o111 ? 0o755 : 0o644 });
  }

  data(at: string, text: string, mode = 0o644): void {
    this.dir(path.dirname(at));
    this.entries.set(at, { kind: 'data', path: at, data: Buffer.from(text), mode });
  }

  symlink(at: string, target: string): void {
    this.dir(path.dirname(at));
    this.entries.set(at, { kind: 'symlink', path: at, target });
  }

  /** Parents before children, as a tar extractor wants them. */
  sorted(): RootfsEntry[] {
    return [...this.entries.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
}

async function collectRootfs(appDir: string): Promise<RootfsEntry[]> {
  const fs = new Rootfs();
  const elfs: string[] = [];
  await fs.hostFile(ENGINE_NODE, process.execPath);
  elfs.push(process.execPath);
  const shell = await hostShell();
  await fs.hostFile('/bin/sh', shell);
  elfs.push(shell);
  for (const tool of TOOLS) {
    const source = await hostTool(tool);
    await fs.hostFile(`/usr/bin/${tool}`, source);
    elfs.push(source);
  }
  const appElfs = await addApp(fs, appDir);
  for (const lib of await librariesOf([...elfs, ...appElfs])) await fs.hostFile(lib, lib);
  addEtc(fs);
  // The only writable place for the engine's user (and the WORKDIR).
  fs.dir('/tmp', 0o1777);
  return fs.sorted();
}

async function librariesOf(files: string[]): Promise<string[]> {
  const all = new Set<string>();
  for (const file of files) for (const lib of await sharedLibraries(file)) all.add(lib);
  return [...all];
}

/** dash, as the spec of a small image's shell; the host's /bin/sh when dash is not there. */
async function hostShell(): Promise<string> {
  for (const candidate of ['/usr/bin/dash', '/bin/dash']) {
    if (await isFile(candidate)) return realpath(candidate);
  }
  return realpath('/bin/sh');
}

async function hostTool(name: string): Promise<string> {
  for (const dir of TOOL_DIRS) {
    const candidate = path.join(dir, name);
    if (await isFile(candidate)) return realpath(candidate);
  }
  throw new Error(`${name} not found in ${TOOL_DIRS.join(' or ')} (coreutils)`);
}

function addEtc(fs: Rootfs): void {
  for (const [at, text] of Object.entries(ETC_FILES)) fs.data(at, text);
}

/** The app under ENGINE_APP_DIR; returns the native addons (ELF .node files) it ships. */
async function addApp(fs: Rootfs, appDir: string): Promise<string[]> {
  const into = (source: string) => path.posix.join(ENGINE_APP_DIR, path.relative(appDir, source).split(path.sep).join('/'));
  await fs.hostFile(into(path.join(appDir, 'package.json')), path.join(appDir, 'package.json'));
  if (!(await isFile(path.join(appDir, 'dist/cli/main.js')))) throw new Error(`${appDir}/dist/cli/main.js is missing: run npm run build first`);
  const trees = [path.join(appDir, 'dist'), path.join(appDir, 'proto'), ...productionPackageDirs(appDir, readManifestFile)];
  const addons: string[] = [];
  for (const tree of trees) {
    fs.dir(into(tree));
    for await (const item of walkTree(tree)) {
      if (item.kind === 'dir') fs.dir(into(item.path));
      else if (item.kind === 'symlink') fs.symlink(into(item.path), await readlink(item.path));
      else {
        await fs.hostFile(into(item.path), item.path);
        if (item.path.endsWith('.node') && (await isElf(item.path))) addons.push(item.path);
      }
    }
  }
  return addons;
}

type TreeItem = { kind: 'dir' | 'file' | 'symlink'; path: string };

/**
 * Everything under `root` except its own node_modules (dependencies are added one by one) and
 * native prebuilds for other platforms, which this Node can never load (node-pty ships 58 MiB
 * of Windows and macOS ones; its Linux addon is the one built at install, in build/Release).
 */
async function* walkTree(root: string, top = root): AsyncGenerator<TreeItem> {
  const names = await readdir(root).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  for (const name of names.sort()) {
    const full = path.join(root, name);
    if (root === top && name === 'node_modules') continue;
    if (path.basename(root) === 'prebuilds' && isOtherPlatform(name)) continue;
    const s = await lstat(full);
    if (s.isSymbolicLink()) yield { kind: 'symlink', path: full };
    else if (s.isDirectory()) {
      yield { kind: 'dir', path: full };
      yield* walkTree(full, top);
    } else if (s.isFile()) yield { kind: 'file', path: full };
  }
}

/** A prebuilds/ folder name (<platform>-<arch>[+<arch>…], e.g. win32-x64) that is not this platform's. */
function isOtherPlatform(name: string): boolean {
  const [platform = '', archs = ''] = name.split('-');
  const platforms = ['aix', 'android', 'darwin', 'freebsd', 'linux', 'openbsd', 'sunos', 'win32'];
  return platforms.includes(platform) && (platform !== process.platform || !archs.split('+').includes(process.arch));
}

async function* walkFiles(root: string): AsyncGenerator<string> {
  for await (const item of walkTree(root)) if (item.kind !== 'dir') yield item.path;
}

async function isFile(file: string): Promise<boolean> {
  return stat(file).then((s) => s.isFile(), () => false);
}

async function isElf(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(4);
    await handle.read(head, 0, 4, 0);
    return head.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  } finally {
    await handle.close();
  }
}

// ---- the build --------------------------------------------------------------------------------

function dockerfile(version: string): string {
  return [
    'FROM scratch',
    'COPY rootfs/ /',
    'ENV PATH=/usr/local/bin:/usr/bin:/bin',
    `USER ${NOBODY}:${NOBODY}`,
    'WORKDIR /tmp',
    `LABEL org.opencontainers.image.title=${JSON.stringify(ENGINE_IMAGE_TITLE)} org.opencontainers.image.version=${JSON.stringify(version)}`,
    `ENTRYPOINT ${JSON.stringify([ENGINE_NODE, `${ENGINE_APP_DIR}/dist/cli/main.js`])}`,
    'CMD ["engine"]',
    '',
  ].join('\n');
}

function contextBytes(entries: RootfsEntry[]): number {
  return entries.reduce((sum, e) => sum + (e.kind === 'file' ? e.size : e.kind === 'data' ? e.data.length : 0), 0);
}

function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}

/** The build context: the Dockerfile, then rootfs/… in order, every entry root's and world-readable. */
async function writeContext(pack: tar.Pack, recipe: string, entries: RootfsEntry[]): Promise<void> {
  const owner = { uid: 0, gid: 0, uname: 'root', gname: 'root', mtime: MTIME };
  await addBuffer(pack, { ...owner, name: 'Dockerfile', mode: 0o644 }, Buffer.from(recipe));
  await addBuffer(pack, { ...owner, name: 'rootfs', type: 'directory', mode: 0o755 });
  for (const entry of entries) {
    const name = `rootfs${entry.path}`;
    if (entry.kind === 'dir') await addBuffer(pack, { ...owner, name, type: 'directory', mode: entry.mode });
    else if (entry.kind === 'symlink') await addBuffer(pack, { ...owner, name, type: 'symlink', linkname: entry.target, mode: 0o777 });
    else if (entry.kind === 'data') await addBuffer(pack, { ...owner, name, mode: entry.mode }, entry.data);
    else await addFile(pack, { ...owner, name, mode: entry.mode, size: entry.size }, entry.source);
  }
  pack.finalize();
}

type TarHeader = Partial<tar.Header> & { name: string };

function addBuffer(pack: tar.Pack, header: TarHeader, data?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error | null) => (err ? reject(err) : resolve());
    if (data) pack.entry(header, data, done);
    // An entry without a body (a directory, a symlink) is complete once its header is written.
    else pack.entry(header, done);
  });
}

/** One host file streamed into the tar: only a chunk of it is in memory at a time. */
function addFile(pack: tar.Pack, header: TarHeader, source: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const entry = pack.entry(header, (err) => (err ? reject(err) : resolve()));
    const input = createReadStream(source);
    input.once('error', (err) => {
      entry.destroy(err);
      reject(err);
    });
    // A pack destroyed mid-file (the build failed) must not leave the file open.
    entry.once('close', () => input.destroy());
    input.pipe(entry);
  });
}

interface BuildEvent {
  stream?: string;
  status?: string;
  error?: string;
  errorDetail?: { message?: string };
  aux?: { ID?: string };
}

/** Streams the daemon's build output as lines; resolves with the image id, rejects with its error. */
function followBuild(docker: Dockerode, output: NodeJS.ReadableStream, progress: (line: string) => void): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    let id: string | undefined;
    let failure: string | undefined;
    const onEvent = (event: BuildEvent) => {
      if (event.error !== undefined || event.errorDetail?.message !== undefined) failure ??= event.errorDetail?.message ?? event.error;
      if (event.aux?.ID) id = event.aux.ID;
      const text = event.stream ?? event.status ?? event.error;
      for (const line of (text ?? '').split('\n')) if (line.trim()) progress(line.trimEnd());
    };
    docker.modem.followProgress(
      output,
      (err: Error | null) => {
        if (err) reject(err);
        else if (failure !== undefined) reject(new Error(`image build failed: ${failure}`));
        else resolve(id);
      },
      onEvent,
    );
  });
}
