import { describe, expect, it } from 'vitest';
import { DEFAULT_IMAGE_MAP } from '../../domain/image-map.js';
import type { ReplicaRequest } from '../runtime.js';
import { replicaRequest } from '../../../test/helpers/replica-request.js';
import { containerHardening, containerName, planContainer, publishedPort, registryOf, type ContainerInputs } from './container-spec.js';

const request = (o: Partial<ReplicaRequest> = {}): ReplicaRequest =>
  replicaRequest({ name: 'chat-r2-7', deploymentId: 3, revision: 2, image: '127.0.0.1:5000/team/engine', tag: 'v1', env: { MODE: 'fast' }, ...o });

const inputs = (o: Partial<ContainerInputs> = {}): ContainerInputs => ({
  scope: 'abc123',
  network: 'infergate-abc123',
  images: DEFAULT_IMAGE_MAP,
  engineImage: 'infergate/engine:0.1.0',
  simulateEngines: true,
  limits: { nanoCpus: 2e9, memoryBytes: 4 * 1024 ** 3, pidsLimit: 4096 },
  gpuHostConfig: {},
  configHostPath: null,
  cacheHostPath: null,
  ...o,
});

const hostConfig = (body: Record<string, unknown>) => body.HostConfig as Record<string, unknown>;

describe('planContainer', () => {
  it("runs the user's image with its own entrypoint when the command is empty", () => {
    const plan = planContainer(request(), inputs());
    expect(plan.image).toBe('127.0.0.1:5000/team/engine:v1');
    expect(plan.simulated).toBe(false);
    expect(plan.body).not.toHaveProperty('Entrypoint');
    expect(plan.body).not.toHaveProperty('Cmd');
  });

  it('a command replaces the entrypoint and clears the image CMD', () => {
    const plan = planContainer(request({ command: ['/bin/server', '--port', '8000'] }), inputs());
    expect(plan.body.Entrypoint).toEqual(['/bin/server', '--port', '8000']);
    expect(plan.body.Cmd).toEqual([]);
  });

  it('hardens the container: never privileged, NET_RAW, SETUID, SETGID, MKNOD, FSETID and SETFCAP dropped, no-new-privileges, pids, memory and CPU limits, no restart policy of its own', () => {
    const hc = hostConfig(planContainer(request(), inputs()).body);
    expect(hc).toMatchObject({
      Privileged: false,
      CapDrop: ['NET_RAW', 'SETUID', 'SETGID', 'MKNOD', 'FSETID', 'SETFCAP'],
      SecurityOpt: ['no-new-privileges:true'],
      PidsLimit: 4096,
      Memory: 4 * 1024 ** 3,
      NanoCpus: 2e9,
      RestartPolicy: { Name: 'no' },
      NetworkMode: 'infergate-abc123',
    });
    expect(hc).not.toHaveProperty('CapAdd');
    expect(hc.Mounts).toEqual([]);
  });

  it("keeps only the capabilities an admin's deployment names, never NET_RAW, and adds none", () => {
    const hc = hostConfig(planContainer(request({ containerCapabilities: ['SETUID', 'SETGID'] }), inputs()).body);
    expect(hc.CapDrop).toEqual(['NET_RAW', 'MKNOD', 'FSETID', 'SETFCAP']);
    expect(hc).not.toHaveProperty('CapAdd');
    const all = hostConfig(planContainer(request({ containerCapabilities: ['SETUID', 'SETGID', 'MKNOD', 'FSETID', 'SETFCAP'] }), inputs()).body);
    expect(all.CapDrop).toEqual(['NET_RAW']);
    // One place for every container of the runtime (orchestrated ones too): the same fields.
    expect(containerHardening()).toEqual({ Privileged: false, CapDrop: ['NET_RAW', 'SETUID', 'SETGID', 'MKNOD', 'FSETID', 'SETFCAP'], SecurityOpt: ['no-new-privileges:true'] });
  });

  it('publishes the container port (and a separate metrics port) on 127.0.0.1 only, on a port Docker picks', () => {
    const plan = planContainer(request({ metricsPort: 9100, metricsPath: '/metrics' }), inputs());
    expect(hostConfig(plan.body).PortBindings).toEqual({
      '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }],
      '9100/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }],
    });
    expect(plan.ports).toEqual({ serve: '8000/tcp', metrics: '9100/tcp' });
    expect(plan.body.Env).toContain('METRICS_PORT=9100');
  });

  it("passes the deployment's environment plus PORT, HOST and the replica id, and nothing of the service's", () => {
    const env = planContainer(request(), inputs()).body.Env as string[];
    expect(env).toEqual(expect.arrayContaining(['MODE=fast', 'PORT=8000', 'HOST=0.0.0.0', 'INFERGATE_REPLICA_ID=chat-r2-7']));
    expect(env.some((e) => e.startsWith('PATH=') || e.startsWith('INFERGATE_ADMIN'))).toBe(false);
  });

  it('mounts only the config file (read-only) and the model cache', () => {
    const plan = planContainer(
      request({ configFile: { filename: 'app.yaml', mount_path: '/etc/app', content: 'x' }, modelCaching: true }),
      inputs({ configHostPath: '/data/replicas/chat-r2-7/config/app.yaml', cacheHostPath: '/data/model-cache/3' }),
    );
    expect(hostConfig(plan.body).Mounts).toEqual([
      { Type: 'bind', Source: '/data/replicas/chat-r2-7/config/app.yaml', Target: '/etc/app/app.yaml', ReadOnly: true },
      { Type: 'bind', Source: '/data/model-cache/3', Target: '/model-cache', ReadOnly: false },
    ]);
    expect(plan.body.Env).toEqual(expect.arrayContaining(['INFERGATE_CONFIG_FILE=/etc/app/app.yaml', 'INFERGATE_MODEL_CACHE_DIR=/model-cache']));
  });

  it('labels the container with its scope, deployment, revision, component and replica', () => {
    expect(planContainer(request(), inputs()).body.Labels).toEqual({
      'io.infergate.scope': 'abc123',
      'io.infergate.deployment-id': '3',
      'io.infergate.revision': '2',
      'io.infergate.component': 'Replica',
      'io.infergate.replica': 'chat-r2-7',
      'io.infergate.simulated': 'false',
    });
  });

  it('a known engine image on a host without GPUs runs the reference engine image, and says so', () => {
    const plan = planContainer(request({ image: 'vllm/vllm-openai', tag: 'v0.8.0', command: ['vllm', 'serve', 'org/model', '--port', '8000'] }), inputs());
    expect(plan.simulated).toBe(true);
    expect(plan.image).toBe('infergate/engine:0.1.0');
    expect(plan.body.Cmd).toEqual(expect.arrayContaining(['engine', '--flavor', 'openai', '--model', 'org/model']));
    expect(plan.body).not.toHaveProperty('Entrypoint');
    expect(plan.notes.join('\n')).toMatch(/no GPU on this host: the reference engine stands in for vllm\/vllm-openai:v0.8.0/);
  });

  it('a known engine image on a GPU host runs for real, with its GPUs', () => {
    const gpus = { DeviceRequests: [{ Driver: 'nvidia', DeviceIDs: ['0'], Capabilities: [['gpu']] }] };
    const plan = planContainer(request({ image: 'vllm/vllm-openai', tag: 'v0.8.0' }), inputs({ simulateEngines: false, gpuHostConfig: gpus }));
    expect(plan.simulated).toBe(false);
    expect(plan.image).toBe('vllm/vllm-openai:v0.8.0');
    expect(hostConfig(plan.body).DeviceRequests).toEqual(gpus.DeviceRequests);
  });

  it('the reference engine image itself is always the simulator', () => {
    const plan = planContainer(request({ image: 'infergate/reference-engine', tag: 'v2', protocol: 'grpc' }), inputs({ simulateEngines: false }));
    expect(plan.simulated).toBe(true);
    expect(plan.body.Cmd).toEqual(['engine', '--flavor', 'v2']);
  });
});

describe('names and addresses', () => {
  it('a registry is the first component only when it looks like a host', () => {
    expect(registryOf('127.0.0.1:5000/team/engine')).toBe('127.0.0.1:5000');
    expect(registryOf('nvcr.io/nim/meta/llama')).toBe('nvcr.io');
    expect(registryOf('localhost/x')).toBe('localhost');
    expect(registryOf('vllm/vllm-openai')).toBeNull();
    expect(registryOf('ubuntu')).toBeNull();
  });

  it("a container's name carries the service's scope, so two services on one daemon never collide", () => {
    expect(containerName('abc123', 'chat-r1-1')).toBe('infergate-abc123-chat-r1-1');
  });

  it('reads the published port on 127.0.0.1', () => {
    expect(publishedPort({ '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '32769' }] }, '8000/tcp')).toBe(32769);
    expect(publishedPort({ '8000/tcp': null }, '8000/tcp')).toBeNull();
    expect(publishedPort(undefined, '8000/tcp')).toBeNull();
  });
});
