// Test helper: puts an image a Docker daemon holds into a registry without the daemon pushing
// it. The daemon's `docker save` output is read entry by entry and each layer goes to the
// registry as it is (an uncompressed tar blob; a daemon's pull detects that a layer is not
// gzipped), then a schema 2 manifest names them. A push would gzip every layer first: for the
// 177 MB engine image that is 5 s of the host daemon's CPU, and the host daemon would also need
// --insecure-registry for a registry off loopback, which a test cannot set.

import { createHash } from 'node:crypto';
import http from 'node:http';
import { Transform, type Readable } from 'node:stream';
import tar from 'tar-stream';
import type { RegistryAuth } from './docker.js';

const MANIFEST_V2 = 'application/vnd.docker.distribution.manifest.v2+json';
const CONFIG_V1 = 'application/vnd.docker.container.image.v1+json';
const LAYER_TAR = 'application/vnd.docker.image.rootfs.diff.tar';

export interface UploadTarget {
  /** host:port of a registry speaking plain HTTP. */
  registry: string;
  repo: string;
  tag: string;
  auth: RegistryAuth;
}

interface Blob {
  digest: string;
  size: number;
}

/** `docker save`'s manifest.json: one entry per image saved. */
interface SavedManifest {
  Config: string;
  Layers: string[];
}

/** Uploads the image a `docker save` stream of `sourceRef` holds to the target; resolves with the manifest's digest. */
export async function uploadImage(saved: Readable, sourceRef: string, target: UploadTarget): Promise<string> {
  const extract = tar.extract();
  saved.on('error', (err: Error) => extract.destroy(err));
  saved.pipe(extract);
  const blobs = new Map<string, Blob>();
  let manifests: SavedManifest[] | undefined;
  for await (const entry of extract) {
    const { name, type } = entry.header;
    // A streamx stream: it pipes into a Node one and iterates like one, which is all this uses.
    const stream = entry as unknown as Readable;
    if (name === 'manifest.json') {
      manifests = JSON.parse((await readAll(stream)).toString('utf8')) as SavedManifest[];
    } else if (type === 'file' && isBlobEntry(name)) {
      blobs.set(name, await uploadBlob(target, stream));
    } else {
      stream.resume();
    }
  }
  const saveEntry = manifests?.[0];
  if (!saveEntry) throw new Error(`docker save ${sourceRef}: no manifest.json in the stream`);
  const blobOf = (name: string): Blob => {
    const blob = blobs.get(name);
    if (!blob) throw new Error(`docker save ${sourceRef}: ${name} is named by manifest.json but was not in the stream`);
    return blob;
  };
  const config = blobOf(saveEntry.Config);
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: MANIFEST_V2,
    config: { mediaType: CONFIG_V1, size: config.size, digest: config.digest },
    layers: saveEntry.Layers.map((name) => ({ mediaType: LAYER_TAR, ...sizeAndDigest(blobOf(name)) })),
  });
  const put = await call(target, 'PUT', `/v2/${target.repo}/manifests/${target.tag}`, { 'content-type': MANIFEST_V2 }, Buffer.from(manifest));
  expectStatus(put, 201, `PUT manifest ${target.repo}:${target.tag}`);
  return put.headers['docker-content-digest'] as string;
}

function sizeAndDigest(blob: Blob): Blob {
  return { size: blob.size, digest: blob.digest };
}

/** Layers (`<id>/layer.tar`, or `blobs/sha256/<hex>` in the OCI layout of newer daemons) and the image config (`<hex>.json`). */
function isBlobEntry(name: string): boolean {
  return name.endsWith('/layer.tar') || /^[0-9a-f]{64}\.json$/.test(name) || name.startsWith('blobs/sha256/');
}

/** One blob, streamed: POST opens an upload, PATCH sends the bytes (hashed on the way), PUT closes it with the digest. */
async function uploadBlob(target: UploadTarget, entry: Readable): Promise<Blob> {
  const opened = await call(target, 'POST', `/v2/${target.repo}/blobs/uploads/`, {}, undefined);
  expectStatus(opened, 202, 'open a blob upload');
  const hash = createHash('sha256');
  let size = 0;
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  entry.on('error', (err: Error) => hashing.destroy(err));
  entry.pipe(hashing);
  const patched = await call(target, 'PATCH', location(opened), { 'content-type': 'application/octet-stream' }, hashing);
  expectStatus(patched, 202, 'send a blob');
  const digest = `sha256:${hash.digest('hex')}`;
  const closing = new URL(location(patched), `http://${target.registry}`);
  closing.searchParams.set('digest', digest);
  const closed = await call(target, 'PUT', closing.pathname + closing.search, {}, undefined);
  expectStatus(closed, 201, `close the blob upload of ${digest}`);
  return { digest, size };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

function location(answer: Answer): string {
  const loc = answer.headers.location;
  if (!loc) throw new Error(`the registry gave no Location (status ${answer.status})`);
  const url = new URL(loc, 'http://registry');
  return url.pathname + url.search;
}

function expectStatus(answer: Answer, status: number, what: string): void {
  if (answer.status !== status) throw new Error(`${what}: the registry answered ${answer.status}: ${answer.text.slice(0, 500)}`);
}

function call(target: UploadTarget, method: string, pathAndQuery: string, headers: Record<string, string>, body: Buffer | Readable | undefined): Promise<Answer> {
  const [hostname, port] = target.registry.split(':');
  const authorization = `Basic ${Buffer.from(`${target.auth.username}:${target.auth.password}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = http.request({ hostname, port: Number(port), method, path: pathAndQuery, headers: { ...headers, authorization, ...(Buffer.isBuffer(body) ? { 'content-length': body.length } : body ? {} : { 'content-length': 0 }) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body === undefined) req.end();
    else if (Buffer.isBuffer(body)) req.end(body);
    else {
      body.on('error', (err: Error) => req.destroy(err));
      body.pipe(req);
    }
  });
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
