// Test helper: Docker for the container suites. dockerGate() says whether a daemon answers
// (suites are skipped loudly without one, and the run fails under CI=true); ensureEngineImage()
// builds the reference engine image once per run — reused while dist/ is unchanged, and safe
// when several vitest workers ask at once; startRegistry() runs a private registry (Debian's
// docker-registry) with htpasswd users on a free loopback port; pushImage(), pullImage() and
// the removers talk to the Engine API through dockerode, never the docker CLI.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import bcrypt from 'bcryptjs';
import type Dockerode from 'dockerode';
import { stringify } from 'yaml';
import { packageVersion } from '../../src/cli/version.js';
import { dockerAnswers, dockerClient } from '../../src/runtime/docker/client.js';
import { buildEngineImage, ENGINE_CONTENT_LABEL, engineContentDigest, engineImageRef } from '../../src/runtime/docker/engine-image.js';
import { ensureDistBuilt } from './dist-build.js';
import { freePort } from './ports.js';
import { stopChild } from './child-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const REGISTRY_BINARY = process.env.DOCKER_REGISTRY_PATH ?? '/usr/bin/docker-registry';

let gate: Promise<boolean> | undefined;

/** Whether the container suites can run here; under CI=true a missing daemon is an error. */
export function dockerGate(): Promise<boolean> {
  gate ??= dockerAnswers(dockerClient()).then((answer) => {
    if (answer.ok) return true;
    if (process.env.CI === 'true') throw new Error(`the container suites need a running dockerd under CI=true: ${answer.reason}`);
    process.stderr.write(`\n!!! WARNING: no Docker daemon (${answer.reason}) — container suites are SKIPPED\n\n`);
    return false;
  });
  return gate;
}

// ---- the engine image -------------------------------------------------------------------------

let engineImage: Promise<string> | undefined;

/**
 * The reference engine image for this checkout (infergate/engine:<version>), built at most once
 * per run: an image whose content label matches dist/, proto/, package.json and the lock file
 * is reused, across runs too. dist/ is recompiled first when a source file is newer, so a
 * container suite after an edit tests the edit.
 */
export function ensureEngineImage(): Promise<string> {
  engineImage ??= (async () => {
    const ref = engineImageRef(packageVersion());
    const docker = dockerClient();
    return withLock(lockPathFor(ref), async () => {
      await ensureDistBuilt();
      const digest = await engineContentDigest(ROOT);
      const existing = await inspectImage(docker, ref);
      if (existing?.Config.Labels?.[ENGINE_CONTENT_LABEL] === digest) return ref;
      process.stderr.write(`building ${ref} for the container suites\n`);
      const lines: string[] = [];
      const built = await buildEngineImage(docker, { appDir: ROOT, ref, onProgress: (line) => lines.push(line) }).catch((err: Error) => {
        throw new Error(`${err.message}\n${lines.slice(-20).join('\n')}`);
      });
      // The image the tag moved away from is left untagged; it goes unless something still uses it.
      if (existing && existing.Id !== built.id) await docker.getImage(existing.Id).remove().catch(() => undefined);
      return ref;
    });
  })();
  return engineImage;
}

async function inspectImage(docker: Dockerode, ref: string): Promise<Dockerode.ImageInspectInfo | undefined> {
  try {
    return await docker.getImage(ref).inspect();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return undefined;
    throw err;
  }
}

function lockPathFor(ref: string): string {
  return path.join(os.tmpdir(), `infergate-image-${ref.replace(/[^A-Za-z0-9_.-]/g, '_')}.lock`);
}

/**
 * Runs `fn` holding a lock file made with O_EXCL: vitest runs suites in several processes, and
 * two of them building (and compiling dist/) at once would race. A lock whose holder is gone
 * (its pid no longer runs) is broken.
 */
async function withLock<T>(lockPath: string, fn: () => Promise<T>, waitMs = 10 * 60_000): Promise<T> {
  await mkdir(path.dirname(lockPath), { recursive: true });
  const taken = async (): Promise<boolean> => {
    try {
      await writeFile(lockPath, String(process.pid), { flag: 'wx' });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      await breakStaleLock(lockPath);
      return false;
    }
  };
  // Loaded here, not with the module: the benchmarks use this module's registry helpers outside vitest.
  const { vi } = await import('vitest');
  await vi.waitFor(
    async () => {
      if (!(await taken())) throw new Error(`${lockPath} still held after ${waitMs} ms`);
    },
    { timeout: waitMs, interval: 200 },
  );
  try {
    return await fn();
  } finally {
    await unlink(lockPath).catch(() => undefined);
  }
}

async function breakStaleLock(lockPath: string): Promise<void> {
  const holder = await readFile(lockPath, 'utf8').catch(() => undefined);
  if (holder === undefined) return;
  const pid = Number(holder);
  // An empty file is a holder between creating and writing it, unless that was long ago.
  const stale = holder === '' ? Date.now() - (await stat(lockPath).then((s) => s.mtimeMs, () => Date.now())) > 10_000 : !Number.isInteger(pid) || !isRunning(pid);
  if (!stale) return;
  // Only the lock that was read: another waiter may have broken it and taken a new one since.
  if ((await readFile(lockPath, 'utf8').catch(() => undefined)) === holder) await unlink(lockPath).catch(() => undefined);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// ---- a private registry -----------------------------------------------------------------------

export interface Registry {
  /** host:port, as an image reference spells it. */
  host: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Debian's docker-registry (the CNCF distribution registry) on 127.0.0.1:<free port>, storing in
 * a temp dir, with htpasswd (bcrypt) users. Docker allows plain HTTP to registries on
 * 127.0.0.0/8, so no certificate is needed. `address` listens elsewhere (the Swarm test
 * ground's bridge); a daemon then pulls from it only with --insecure-registry.
 */
export async function startRegistry(opts: { users: Record<string, string>; address?: string }): Promise<Registry> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-registry-'));
  let child: ChildProcess | undefined;
  try {
    const port = await freePort();
    const host = `${opts.address ?? '127.0.0.1'}:${port}`;
    const htpasswd = path.join(dir, 'htpasswd');
    const lines = await Promise.all(Object.entries(opts.users).map(async ([user, password]) => `${user}:${await bcrypt.hash(password, 8)}`));
    await writeFile(htpasswd, lines.join('\n') + '\n');
    const config = path.join(dir, 'config.yml');
    await writeFile(config, registryConfig(dir, host, htpasswd));
    // REGISTRY_* variables override the config file; none of the caller's may leak in.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REGISTRY_')));
    child = spawn(REGISTRY_BINARY, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'], env });
    const started = child;
    await waitForRegistry(started, host);
    const stop = async () => {
      await stopChild(started);
      await rm(dir, { recursive: true, force: true });
    };
    return { host, pid: started.pid!, stop };
  } catch (err) {
    if (child) await stopChild(child);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

function registryConfig(dir: string, host: string, htpasswd: string): string {
  return stringify({
    version: 0.1,
    // info: its "listening on" line is what startRegistry waits for.
    log: { level: 'info', accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: path.join(dir, 'data') }, delete: { enabled: true } },
    http: { addr: host, secret: randomBytes(16).toString('hex') },
    auth: { htpasswd: { realm: 'infergate-test', path: htpasswd } },
  });
}

/**
 * Until the registry says it listens on `host` (its own log line, at info level), then checks
 * that GET /v2/ asks for credentials; rejects if the process ends first or takes over 15 s.
 */
async function waitForRegistry(child: ChildProcess, host: string): Promise<void> {
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${REGISTRY_BINARY} did not say it listens on ${host} within 15 s: ${stderr.trim()}`)), 15_000);
    // Drained always: a registry blocked on a full stderr pipe stops answering.
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-8192);
      if (stderr.includes(`listening on ${host}`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('error', (err) => reject(new Error(`cannot start ${REGISTRY_BINARY}: ${err.message}`)));
    child.once('exit', (code, signal) => reject(new Error(`${REGISTRY_BINARY} exited (${signal ?? code}) before listening: ${stderr.trim()}`)));
  });
  const status = await fetch(`http://${host}/v2/`).then((r) => r.status);
  if (status !== 401) throw new Error(`registry on ${host} answers ${status} on /v2/, not 401: its htpasswd auth is not on`);
}

// ---- images and containers through the Engine API ---------------------------------------------

export interface RegistryAuth {
  username: string;
  password: string;
}

/** repo and tag of a reference; the tag is after the last colon that follows the last slash. */
export function splitRef(ref: string): { repo: string; tag: string } {
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  return colon > slash ? { repo: ref.slice(0, colon), tag: ref.slice(colon + 1) } : { repo: ref, tag: 'latest' };
}

function registryOf(ref: string): string {
  return ref.split('/')[0] ?? ref;
}

/** Tags sourceRef as targetRef and pushes it with credentials; rejects on the daemon's error. */
export async function pushImage(docker: Dockerode, sourceRef: string, targetRef: string, auth: RegistryAuth): Promise<void> {
  const { repo, tag } = splitRef(targetRef);
  await docker.getImage(sourceRef).tag({ repo, tag });
  const output = await docker.getImage(repo).push({ tag, authconfig: { ...auth, serveraddress: registryOf(targetRef) } });
  await followOrReject(docker, output, `push ${targetRef}`);
}

/** Pulls ref with credentials; rejects with the daemon's error (e.g. unauthorized). */
export async function pullImage(docker: Dockerode, ref: string, auth: RegistryAuth): Promise<void> {
  // The credentials go as the auth argument (the X-Registry-Auth header): as an option they
  // would also be written into the request's query string.
  const output = await new Promise<NodeJS.ReadableStream>((resolve, reject) => {
    docker.pull(ref, {}, (err: unknown, stream?: NodeJS.ReadableStream) => (err || !stream ? reject(err instanceof Error ? err : new Error(`pull ${ref}: no stream`)) : resolve(stream)), {
      ...auth,
      serveraddress: registryOf(ref),
    });
  });
  await followOrReject(docker, output, `pull ${ref}`);
}

interface ProgressEvent {
  error?: string;
  errorDetail?: { message?: string };
}

function followOrReject(docker: Dockerode, output: NodeJS.ReadableStream, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let failure: string | undefined;
    docker.modem.followProgress(
      output,
      (err: Error | null) => (err ? reject(err) : failure !== undefined ? reject(new Error(`${what}: ${failure}`)) : resolve()),
      (event: ProgressEvent) => {
        if (event.error !== undefined || event.errorDetail?.message !== undefined) failure ??= event.errorDetail?.message ?? event.error;
      },
    );
  });
}

function isGone(err: unknown): boolean {
  return (err as { statusCode?: number }).statusCode === 404;
}

/** Removes an image by reference (only that tag when others name the same image); gone is fine. */
export async function removeImage(docker: Dockerode, ref: string): Promise<void> {
  await docker
    .getImage(ref)
    .remove({ force: true })
    .catch((err: unknown) => {
      if (!isGone(err)) throw err;
    });
}

/** Removes (killing first) every container labelled key=value; returns how many. */
export async function removeContainersWithLabel(docker: Dockerode, key: string, value: string): Promise<number> {
  const containers = await docker.listContainers({ all: true, filters: { label: [`${key}=${value}`] } });
  for (const c of containers) {
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch((err: unknown) => {
        // 409: a removal already under way (the daemon finishes it).
        if (!isGone(err) && (err as { statusCode?: number }).statusCode !== 409) throw err;
      });
  }
  return containers.length;
}
