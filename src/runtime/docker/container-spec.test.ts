import { describe, expect, it } from 'vitest';
import { DEFAULT_IMAGE_MAP } from '../../domain/image-map.js';
import type { ReplicaRequest } from '../runtime.js';
import { replicaRequest } from '../../../test/helpers/replica-request.js';
import { containerHardening, containerImage, containerName, hardenedHostConfig, HOLDER_LIMITS, holderName, planContainer, planHolder, publishedPort, registryOf, type ContainerInputs } from './container-spec.js';

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
  pod: null,
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

describe('members of an orchestrated deployment\'s pod', () => {
  const workersDir = '/data/orchestrated/3';
  const frontend = (o: Partial<ReplicaRequest> = {}) =>
    request({
      name: 'orch-r2-frontend-5',
      component: 'Frontend',
      image: 'infergate/frontend',
      tag: 'latest',
      env: {},
      gpus: 0,
      command: ['--mode', 'aggregated', '--model', 'org/m', '--workers-file', `${workersDir}/workers-r2.json`],
      readOnlyPaths: [workersDir],
      ...o,
    });
  const worker = (o: Partial<ReplicaRequest> = {}) =>
    request({ name: 'orch-r2-prefill-6', component: 'Prefill', image: 'infergate/reference-engine', tag: 'openai', command: ['--model', 'org/m', '--kv-role', 'prefill', '--port', '9999'], ...o });
  const pod = { holder: 'f00dfeed'.repeat(8), port: 8001 };

  it('the Frontend runs infergate frontend from the reference engine image, never pulled, on its port in the pod', () => {
    const plan = planContainer(frontend(), inputs({ pod, simulateEngines: false }));
    expect(plan).toMatchObject({ image: 'infergate/engine:0.1.0', simulated: false, engineImage: true });
    expect(plan.body.Cmd).toEqual(['frontend', '--mode', 'aggregated', '--model', 'org/m', '--workers-file', `${workersDir}/workers-r2.json`, '--host', '0.0.0.0', '--port', '8001']);
    expect(plan.body).not.toHaveProperty('Entrypoint');
    expect(plan.body.Env).toEqual(expect.arrayContaining(['PORT=8001', 'HOST=0.0.0.0', 'INFERGATE_REPLICA_ID=orch-r2-frontend-5']));
    expect(containerImage(frontend(), inputs())).toEqual({ image: 'infergate/engine:0.1.0', simulated: false, engineImage: true });
  });

  it("shares the holder's network namespace: nothing published, no hostname of its own, the pod port labelled", () => {
    const plan = planContainer(frontend(), inputs({ pod }));
    const hc = hostConfig(plan.body);
    expect(hc.NetworkMode).toBe(`container:${pod.holder}`);
    expect(hc).not.toHaveProperty('PortBindings');
    expect(plan.body).not.toHaveProperty('ExposedPorts');
    expect(plan.body).not.toHaveProperty('Hostname');
    expect(plan.body.Labels).toMatchObject({ 'io.infergate.component': 'Frontend', 'io.infergate.replica': 'orch-r2-frontend-5', 'io.infergate.pod-port': '8001' });
  });

  it('the Frontend reads its workers file directory, read-only at the same path, and nothing else of the host', () => {
    expect(hostConfig(planContainer(frontend(), inputs({ pod })).body).Mounts).toEqual([{ Type: 'bind', Source: workersDir, Target: workersDir, ReadOnly: true }]);
  });

  it('is hardened exactly as a general replica is', () => {
    const limits = { nanoCpus: 2e9, memoryBytes: 4 * 1024 ** 3, pidsLimit: 4096 };
    const member = hostConfig(planContainer(worker(), inputs({ pod, limits })).body);
    const general = hostConfig(planContainer(request(), inputs({ limits })).body);
    for (const hc of [member, general]) expect(hc).toMatchObject({ ...hardenedHostConfig(limits), RestartPolicy: { Name: 'no' } });
    expect(member).not.toHaveProperty('CapAdd');
    expect(member.Privileged).toBe(false);
  });

  it("a worker's port in the pod comes last, after the deployment's own flags; its token file is found from /", () => {
    const plan = planContainer(
      worker({ command: ['--model', 'org/m', '--hub-token-file', './secrets/model-hub-token', '--port', '9999'], configFile: { filename: 'model-hub-token', mount_path: '/secrets', content: 't' } }),
      inputs({ pod, configHostPath: '/data/replicas/orch-r2-prefill-6/config/model-hub-token' }),
    );
    const cmd = plan.body.Cmd as string[];
    expect(cmd.slice(0, 3)).toEqual(['engine', '--flavor', 'openai']);
    expect(cmd.slice(-4)).toEqual(['--host', '0.0.0.0', '--port', '8001']);
    expect(plan.body.WorkingDir).toBe('/');
    expect(hostConfig(plan.body).Mounts).toEqual([{ Type: 'bind', Source: '/data/replicas/orch-r2-prefill-6/config/model-hub-token', Target: '/secrets/model-hub-token', ReadOnly: true }]);
  });
});

describe('the pod holder', () => {
  const body = planHolder(7, { scope: 'abc123', network: 'infergate-abc123', engineImage: 'infergate/engine:0.1.0' });

  it('runs an idle Node process from the reference engine image, on the service network, with nothing published', () => {
    expect(body.Image).toBe('infergate/engine:0.1.0');
    expect(body.Entrypoint).toEqual(['/usr/local/bin/node', '-e', expect.stringContaining('setInterval')]);
    expect(body.Cmd).toEqual([]);
    expect(hostConfig(body).NetworkMode).toBe('infergate-abc123');
    expect(body).not.toHaveProperty('ExposedPorts');
    expect(hostConfig(body)).not.toHaveProperty('PortBindings');
    expect(hostConfig(body).Mounts).toEqual([]);
  });

  it('is hardened like every container, with an idle process\'s limits, and labelled with the scope and deployment', () => {
    expect(hostConfig(body)).toMatchObject({ ...hardenedHostConfig(HOLDER_LIMITS), RestartPolicy: { Name: 'no' } });
    expect(body.Labels).toEqual({ 'io.infergate.scope': 'abc123', 'io.infergate.deployment-id': '7', 'io.infergate.pod': '7' });
    expect(holderName('abc123', 7)).toBe('infergate-abc123-pod-7');
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
