// Unit tests of the endpoint addresses a deployment view carries: the host address as before,
// and the path address's base URL — on localhost for a `.localhost` domain, on the bare domain
// otherwise, the port only when it is not 443, none for gRPC; and the traffic views: tag URLs
// with the gateway's port, and each running revision's ready and desired replicas.

import { describe, expect, it } from 'vitest';
import type { DeploymentRecord, ReplicaRecord } from '../domain/records.js';
import { generalSpec, orchestratedSpec } from '../../test/helpers/spec-fixtures.js';
import { endpointPathUrl, endpointUrl, renderDeployment, revisionReplicas, trafficView } from './render.js';

describe('endpoint addresses', () => {
  it.each([
    ['endpoints.localhost', 8443, 'http', 'https://localhost:8443/endpoints/chat'],
    ['endpoints.localhost', 443, 'http', 'https://localhost/endpoints/chat'],
    ['localhost', 8443, 'http', 'https://localhost:8443/endpoints/chat'],
    ['Infer.Localhost', 443, 'http', 'https://localhost/endpoints/chat'],
    ['infer.example.com', 443, 'http', 'https://infer.example.com/endpoints/chat'],
    ['infer.example.com', 8443, 'http', 'https://infer.example.com:8443/endpoints/chat'],
    ['localhost.example.com', 443, 'http', 'https://localhost.example.com/endpoints/chat'],
    ['endpoints.localhost', 8443, 'grpc', null],
  ] as const)('%s:%s (%s) → %s', (domain, port, protocol, expected) => {
    expect(endpointPathUrl('chat', { domain, port }, protocol)).toBe(expected);
  });

  it('keeps the host address as it was', () => {
    expect(endpointUrl('chat', { domain: 'endpoints.localhost', port: 8443 })).toBe('chat.endpoints.localhost:8443');
    expect(endpointUrl('chat', { domain: 'endpoints.localhost', port: 443 })).toBe('chat.endpoints.localhost');
    expect(endpointUrl('chat', { domain: 'endpoints.localhost', port: 443 }, 'default')).toBe('chat.endpoints.localhost');
  });

  it('puts another project after the name, in the host and in the path', () => {
    expect(endpointUrl('chat', { domain: 'endpoints.localhost', port: 8443 }, 'team-a')).toBe('chat.team-a.endpoints.localhost:8443');
    expect(endpointPathUrl('chat', { domain: 'endpoints.localhost', port: 8443 }, 'http', 'team-a')).toBe('https://localhost:8443/endpoints/chat.team-a');
    expect(endpointPathUrl('chat', { domain: 'infer.example.com', port: 443 }, 'http', 'default')).toBe('https://infer.example.com/endpoints/chat');
    expect(endpointPathUrl('rpc', { domain: 'infer.example.com', port: 443 }, 'grpc', 'team-a')).toBeNull();
  });
});

describe('traffic views', () => {
  const NOW = '2026-01-01T00:00:00.000Z';
  const deployment = (over: Partial<DeploymentRecord> = {}): DeploymentRecord => ({
    id: 7,
    family: 'general',
    name: 'chat',
    cluster_id: 1,
    spec: generalSpec(),
    scaling: { min_replicas: 1, max_replicas: 3, target_concurrency: 2, cooldown_period: 300, pools: null },
    auth: { token_id: 1, client_certificate_id: null, private_endpoint: false },
    revision: 2,
    revisions: [1, 2].map((revision) => ({ revision, created_at: NOW, reason: 'update' as const, source_revision: null, status: 'ready' as const, spec: generalSpec() })),
    paused: false,
    status: 'ready',
    created_at: NOW,
    updated_at: NOW,
    ...over,
  });
  const replica = (id: number, revision: number, state: ReplicaRecord['state'], component = 'Replica'): ReplicaRecord => ({
    id, deployment_id: 7, revision, component, name: `chat-r${revision}-${id}`, address: '', state, restarts: 0, pid: null, metrics_target: null, updated_at: NOW,
  });
  const SPLIT = [
    { revision: 1, latest: false, percent: 90, tag: null },
    { revision: null, latest: true, percent: 10, tag: 'canary' },
  ];

  it('resolves latest and gives each tag its URL, with the port when it is not 443', () => {
    expect(trafficView(deployment({ traffic: SPLIT }), { domain: 'endpoints.localhost', port: 8443 })).toEqual([
      { revision: 1, latest: false, percent: 90, tag: null, url: null },
      { revision: 2, latest: true, percent: 10, tag: 'canary', url: 'https://canary-chat.endpoints.localhost:8443' },
    ]);
    expect(trafficView(deployment(), { domain: 'example.com', port: 443 })).toEqual([{ revision: 2, latest: true, percent: 100, tag: null, url: null }]);
  });

  it('gives the tags of another project\'s deployment their host under the project', () => {
    expect(trafficView(deployment({ traffic: SPLIT, project: 'team-a' }), { domain: 'example.com', port: 443 })[1]).toMatchObject({ tag: 'canary', url: 'https://canary-chat.team-a.example.com' });
  });

  it('renders a deployment\'s addresses by its project; a record without one is the default project\'s', () => {
    const at = { domain: 'endpoints.localhost', port: 8443 };
    expect(renderDeployment(deployment({ project: 'team-a' }), [], at)).toMatchObject({
      endpoint_url: 'chat.team-a.endpoints.localhost:8443',
      endpoint_path_url: 'https://localhost:8443/endpoints/chat.team-a',
    });
    expect(renderDeployment(deployment(), [], at)).toMatchObject({ endpoint_url: 'chat.endpoints.localhost:8443', endpoint_path_url: 'https://localhost:8443/endpoints/chat' });
  });

  it('counts the ready replicas of the routed component per revision, desired from revision_desired or desired_replicas', () => {
    const replicas = [replica(1, 1, 'ready'), replica(2, 1, 'ready'), replica(3, 2, 'starting'), replica(4, 2, 'ready'), replica(5, 2, 'draining')];
    const split = deployment({ traffic: SPLIT, revision_desired: { '1': { Replica: 2 }, '2': { Replica: 1 } } });
    expect(revisionReplicas(split, replicas)).toEqual([
      { revision: 1, percent: 90, tags: [], ready: 2, desired: 2 },
      { revision: 2, percent: 10, tags: ['canary'], ready: 1, desired: 1 },
    ]);
    expect(revisionReplicas(deployment({ desired_replicas: { Replica: 3 } }), replicas)).toEqual([{ revision: 2, percent: 100, tags: [], ready: 1, desired: 3 }]);
    expect(revisionReplicas(deployment({ traffic: SPLIT, paused: true, revision_desired: { '1': { Replica: 2 } } }), [])[0]).toMatchObject({ desired: 0 });
    // Orchestrated: the Frontend, which the gateway routes to.
    const orchestrated = deployment({ family: 'orchestrated', spec: orchestratedSpec({ hardware_instance_id: 1 }) });
    expect(revisionReplicas(orchestrated, [replica(6, 2, 'ready', 'Frontend'), replica(7, 2, 'ready', 'Worker')])).toEqual([{ revision: 2, percent: 100, tags: [], ready: 1, desired: 1 }]);
  });
});
