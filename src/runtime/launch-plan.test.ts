import { describe, expect, it } from 'vitest';
import { DEFAULT_IMAGE_MAP } from '../domain/image-map.js';
import { pickInherited, planLaunch, type PlanInputs } from './launch-plan.js';
import type { ReplicaRequest } from './runtime.js';
import { replicaRequest } from '../../test/helpers/replica-request.js';

const request = (o: Partial<ReplicaRequest> = {}): ReplicaRequest =>
  replicaRequest({ command: ['--startup-ms', '100'], env: { MY_VAR: 'x' }, ...o });

const inputs = (o: Partial<PlanInputs> = {}): PlanInputs => ({
  port: 41000,
  host: '127.0.0.1',
  metricsPort: null,
  root: '/data/replicas/web-r1-3',
  configPath: null,
  cacheDir: null,
  selfCommand: ['node', 'main.js'],
  images: DEFAULT_IMAGE_MAP,
  inherited: { PATH: '/usr/bin' },
  ...o,
});

describe('planLaunch', () => {
  it('runs the reference engine in the tag\'s flavor with the deployment\'s command as its flags', () => {
    const plan = planLaunch(request(), inputs());
    expect(plan.argv).toEqual(['node', 'main.js', 'engine', '--flavor', 'openai', '--startup-ms', '100', '--host', '127.0.0.1']);
    expect(plan.env).toEqual({ PATH: '/usr/bin', MY_VAR: 'x', PORT: '41000', HOST: '127.0.0.1', INFERGATE_REPLICA_ID: 'web-r1-3', INFERGATE_REPLICA_ROOT: '/data/replicas/web-r1-3' });
    expect(plan.probe).toEqual({ kind: 'http', path: '/health' });
  });

  it('simulates a preset image, taking the model from its command and naming what it does not model', () => {
    const plan = planLaunch(request({ image: 'vllm/vllm-openai', tag: 'v0.9', command: ['vllm', 'serve', 'org/m', '--max-model-len', '4096'] }), inputs());
    expect(plan.argv).toEqual(['node', 'main.js', 'engine', '--flavor', 'openai', '--model', 'org/m', '--host', '127.0.0.1']);
    expect(plan.notes.join('\n')).toContain('--max-model-len 4096');
  });

  it('runs an unknown image\'s command on the host with $PORT and $HOST filled in', () => {
    const plan = planLaunch(request({ image: 'me/llama-server', command: ['llama-server', '--port', '${PORT}', '--host', '$HOST', '--listen=${HOST}:$PORT'] }), inputs());
    expect(plan.argv).toEqual(['llama-server', '--port', '41000', '--host', '127.0.0.1', '--listen=127.0.0.1:41000']);
    expect(plan.env).toMatchObject({ PORT: '41000', HOST: '127.0.0.1' });
  });

  it("tells the engine and the Frontend to listen on loopback, after the deployment's own flags so a --host there cannot widen it", () => {
    const engine = planLaunch(request({ command: ['--host', '0.0.0.0'] }), inputs());
    expect(engine.argv.slice(-4)).toEqual(['--host', '0.0.0.0', '--host', '127.0.0.1']);
    const frontend = planLaunch(request({ image: 'infergate/frontend', command: ['--mode', 'aggregated'] }), inputs());
    expect(frontend.argv.slice(-2)).toEqual(['--host', '127.0.0.1']);
  });

  it('in a pod, tells the engine, the Frontend and a host command to listen on every address of the pod\'s own namespace', () => {
    const pod = inputs({ host: '0.0.0.0' });
    const engine = planLaunch(request({ command: ['--host', '127.0.0.1'] }), pod);
    expect(engine.argv.slice(-4)).toEqual(['--host', '127.0.0.1', '--host', '0.0.0.0']);
    expect(engine.env.HOST).toBe('0.0.0.0');
    const frontend = planLaunch(request({ image: 'infergate/frontend', command: ['--mode', 'aggregated'] }), pod);
    expect(frontend.argv.slice(-2)).toEqual(['--host', '0.0.0.0']);
    const host = planLaunch(request({ image: 'me/llama-server', command: ['llama-server', '--host', '$HOST', '--port', '$PORT'] }), pod);
    expect(host.argv).toEqual(['llama-server', '--host', '0.0.0.0', '--port', '41000']);
    expect(host.notes.join('\n')).toContain("HOST=0.0.0.0 (the replica's own network namespace, which only this host reaches)");
  });

  it('gRPC replicas are probed by TCP connect; a separate metrics port, the config file and the model cache reach the process', () => {
    const plan = planLaunch(
      request({ protocol: 'grpc', metricsPort: 9100, metricsPath: '/m' }),
      inputs({ metricsPort: 42000, configPath: '/data/replicas/web-r1-3/etc/app.yaml', cacheDir: '/data/model-cache' }),
    );
    expect(plan.probe).toEqual({ kind: 'tcp' });
    expect(plan.argv).toContain('--metrics-port');
    expect(plan.env).toMatchObject({ METRICS_PORT: '42000', INFERGATE_CONFIG_FILE: '/data/replicas/web-r1-3/etc/app.yaml', INFERGATE_MODEL_CACHE_DIR: '/data/model-cache' });
  });

  it('replicas inherit PATH and the like, never the service\'s secrets', () => {
    const inherited = pickInherited({ PATH: '/bin', HOME: '/root', INFERGATE_ADMIN_KEY: 'secret', INFERGATE_SECRET_KEY: 'k', REDIS_URL: 'redis://x' });
    expect(inherited).toEqual({ PATH: '/bin', HOME: '/root' });
  });
});

describe('planLaunch and the variables a deployment may not set', () => {
  it('drops code-loading variables for a simulated image (a record from before the API refused them), naming them in the log', () => {
    const plan = planLaunch(request({ env: { NODE_OPTIONS: '--require ./cfg/x.cjs', LD_PRELOAD: '/x.so', KEEP: '1' } }), inputs());
    expect(plan.env).not.toHaveProperty('NODE_OPTIONS');
    expect(plan.env).not.toHaveProperty('LD_PRELOAD');
    expect(plan.env.KEEP).toBe('1');
    expect(plan.notes.join('\n')).toMatch(/not passed to this replica \(NODE_OPTIONS, LD_PRELOAD\)/);
  });

  it("keeps them for a host command, where they act on the deployment's own command inside its sandbox", () => {
    const plan = planLaunch(request({ image: 'me/server', command: ['/bin/server'], env: { LD_PRELOAD: '/x.so', NODE_OPTIONS: '--max-old-space-size=64' } }), inputs());
    expect(plan.env).toMatchObject({ LD_PRELOAD: '/x.so', NODE_OPTIONS: '--max-old-space-size=64' });
  });

  it('never lets a deployment set the runtime\'s own INFERGATE_ variables', () => {
    const plan = planLaunch(request({ image: 'me/server', command: ['/bin/server'], env: { INFERGATE_MODEL_CACHE_DIR: '/', INFERGATE_OTHER: 'x' } }), inputs());
    expect(plan.env).not.toHaveProperty('INFERGATE_MODEL_CACHE_DIR');
    expect(plan.env).not.toHaveProperty('INFERGATE_OTHER');
  });
});
