// The container suites' fixtures, proven against the real daemon: the reference engine image
// builds and serves the OpenAI API from a container on a port Docker picks, runs as nobody
// (65534) as `docker exec` shows, and the private registry refuses wrong credentials and serves
// an image pushed with the right ones. Skipped loudly without a daemon (an error under CI=true).

import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerClient } from '../src/runtime/docker/client.js';
import { dockerGate, ensureEngineImage, pullImage, pushImage, removeContainersWithLabel, removeImage, startRegistry, type Registry } from './helpers/docker.js';

const LABEL = 'io.infergate.test';
const RUN = `docker-fixtures-${process.pid}-${randomBytes(4).toString('hex')}`;

describe.skipIf(!(await dockerGate()))('docker fixtures', () => {
  const docker = dockerClient();
  const images: string[] = [];
  let engineRef = '';
  let registry: Registry | undefined;

  beforeAll(async () => {
    engineRef = await ensureEngineImage();
  }, 600_000);

  afterAll(async () => {
    await removeContainersWithLabel(docker, LABEL, RUN);
    for (const ref of images) await removeImage(docker, ref);
    await registry?.stop();
  });

  it('runs the reference engine: /v1/models on a published port, as uid 65534', async () => {
    const container = await docker.createContainer({
      Image: engineRef,
      // The runtime's shape: the image's entrypoint stays, Cmd replaces its default ["engine"].
      Cmd: ['engine', '--flavor', 'openai', '--model', 'x'],
      Env: ['PORT=8000'],
      Labels: { [LABEL]: RUN },
      ExposedPorts: { '8000/tcp': {} },
      HostConfig: { PortBindings: { '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } },
    });
    await container.start();
    let port: number | undefined;
    await expect.poll(async () => (port = await publishedPort(container, '8000/tcp')), { message: 'a host port published for 8000/tcp' }).toBeTruthy();
    // Each attempt is bounded: until the engine listens, the published port accepts and then
    // drops the connection, and Node 20's fetch (undici 6) waits forever on such a socket.
    const modelIds = () =>
      fetch(`http://127.0.0.1:${port}/v1/models`, { signal: AbortSignal.timeout(2_000) }).then(
        async (r) => (r.ok ? ((await r.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id) : []),
        () => [],
      );
    await expect.poll(modelIds, { timeout: 30_000, message: `GET /v1/models on 127.0.0.1:${port}` }).toEqual(['x']);

    const id = await execOutput(docker, container, ['id']);
    expect(id.stdout).toMatch(/^uid=65534\b/);
    expect(id.exitCode).toBe(0);
  });

  it('runs a registry that refuses wrong credentials and serves a pushed image with the right ones', async () => {
    registry = await startRegistry({ users: { alice: 'right-password' } });
    const target = `${registry.host}/infergate/engine:${RUN}`;
    images.push(target);
    const right = { username: 'alice', password: 'right-password' };
    await pushImage(docker, engineRef, target, right);
    // Untagged locally, so that the pulls below ask the registry for it.
    await removeImage(docker, target);

    await expect(pullImage(docker, target, { username: 'alice', password: 'wrong' })).rejects.toThrow(/unauthorized|authentication required|no basic auth/i);
    await pullImage(docker, target, right);
    const [pulled, engine] = await Promise.all([docker.getImage(target).inspect(), docker.getImage(engineRef).inspect()]);
    expect(pulled.Id).toBe(engine.Id);
  });
});

/** The host port Docker chose for a container port, once the container runs. */
async function publishedPort(container: Dockerode.Container, key: string): Promise<number | undefined> {
  const info = await container.inspect();
  const binding = info.NetworkSettings.Ports?.[key]?.find((b) => b.HostIp === '127.0.0.1');
  const port = Number(binding?.HostPort);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

/** Runs a command in the container (no TTY) and collects its output and exit code. */
async function execOutput(docker: Dockerode, container: Dockerode.Container, cmd: string[]): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: string[] = [];
  const err: string[] = [];
  stdout.on('data', (c: Buffer) => out.push(c.toString()));
  stderr.on('data', (c: Buffer) => err.push(c.toString()));
  docker.modem.demuxStream(stream, stdout, stderr);
  await new Promise<void>((resolve, reject) => {
    stream.once('end', () => resolve());
    stream.once('close', () => resolve());
    stream.once('error', reject);
  });
  let exitCode: number | null = null;
  await expect
    .poll(
      async () => {
        const info = await exec.inspect();
        exitCode = info.ExitCode;
        return info.Running;
      },
      { message: `exec ${cmd.join(' ')} finishing` },
    )
    .toBe(false);
  return { stdout: out.join(''), stderr: err.join(''), exitCode };
}
