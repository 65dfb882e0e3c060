// Unit tests of the routing table over a real file store: a route per deployment host (any case,
// with or without a port), only the ready replicas of the routed component, the same replica
// array kept while the set is unchanged (the balancer's caches depend on it), a bound token
// left out when its hash is a service-account key's, and the lookup by exact name (with the
// deployment's protocol) that path addresses use; the client certificates a deployment accepts
// (its bound one and every unrevoked one issued for it, while it takes certificates) with each
// credential's cap on X-Priority, and its flow control (the defaults when it sets none); the
// split of traffic between revisions (each revision's ready replicas, arrays kept while their
// sets are unchanged; none without a split, where the replicas array is as before), tag routes
// by host and by path name reaching only their revision, and a deployment's own host winning
// over a tag host.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_FLOW_CONTROL, type CertificateRecord, type ReplicaRecord } from '../domain/records.js';
import type { TrafficTarget } from '../domain/traffic.js';
import { FileStore } from '../store/file-store.js';
import { modify } from '../store/store.js';
import { deploymentRecord, tokenRecord } from '../store/store.contract.js';
import { RoutingTable, type Route, type TableChange } from './routing-table.js';

let dir: string;
let store: FileStore;
let table: RoutingTable;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'infergate-routing-'));
  store = new FileStore({ dir });
  await store.open();
});

afterEach(async () => {
  table?.stop();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** Resolves with the table after its next rebuild. */
const nextRebuild = (t: RoutingTable) => new Promise<ReadonlyMap<string, Route>>((resolve) => t.onChange(resolve));

const replica = (deploymentId: number, component: string, state: ReplicaRecord['state'], port: number, revision = 1) => (id: number): ReplicaRecord => ({
  id,
  deployment_id: deploymentId,
  revision,
  component,
  name: `r-${id}`,
  address: `127.0.0.1:${port}`,
  state,
  restarts: 0,
  pid: null,
  metrics_target: null,
  updated_at: new Date(0).toISOString(),
});

describe('RoutingTable', () => {
  it('routes a host to the ready replicas of its component, keeping the array while the set is unchanged', async () => {
    const token = await store.create('token', (id) => tokenRecord(id, 'chat-endpoint', 'hash-of-chat'));
    const d = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), auth: { token_id: token.value.id, client_certificate_id: null, private_endpoint: false } }));
    await store.create('replica', replica(d.value.id, 'Replica', 'ready', 4002));
    await store.create('replica', replica(d.value.id, 'Replica', 'starting', 4003));
    await store.create('replica', replica(d.value.id, 'Replica', 'ready', 4001));
    // Ready without an address (a runtime that said ready before it knew its port): never routed.
    await store.create('replica', (id) => ({ ...replica(d.value.id, 'Replica', 'ready', 4004)(id), address: '' }));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();

    const route = table.lookup('CHAT.endpoints.test:8443');
    expect(route).toMatchObject({ name: 'chat', component: 'Replica', tokenHash: 'hash-of-chat', paused: false });
    expect(route?.replicas.map((r) => r.address)).toEqual(['127.0.0.1:4002', '127.0.0.1:4001']);
    expect(table.lookup('other.endpoints.test')).toBeUndefined();
    expect(table.lookup(undefined)).toBeUndefined();

    // An unrelated change rebuilds the table; the replica array is the same object.
    const rebuilt = nextRebuild(table);
    await store.create('token', (id) => tokenRecord(id, 'unrelated', 'hash-unrelated'));
    const next = (await rebuilt).get('chat.endpoints.test');
    expect(next?.replicas).toBe(route?.replicas);

    // A replica turning ready changes the set: a new array.
    const again = nextRebuild(table);
    const starting = (await store.list('replica')).find((r) => r.value.state === 'starting')!;
    await modify(store, 'replica', starting.value.id, (r) => ({ ...r, state: 'ready' }));
    const after = (await again).get('chat.endpoints.test');
    expect(after?.replicas).not.toBe(route?.replicas);
    expect(after?.replicas).toHaveLength(3);
  });

  it('gives each replica the metrics URL its spec names (metrics_port and metrics_path), and none otherwise', async () => {
    const d = await store.create('deployment', (id) => deploymentRecord(id, 'triton'));
    await store.create('replica', (id) => ({ ...replica(d.value.id, 'Replica', 'ready', 4101)(id), metrics_target: { address: '127.0.0.1:4102', path: '/metrics' } }));
    await store.create('replica', replica(d.value.id, 'Replica', 'ready', 4103));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();
    expect(table.lookup('triton.endpoints.test')?.replicas.map((r) => r.metrics)).toEqual(['http://127.0.0.1:4102/metrics', undefined]);
  });

  it('leaves out a bound token whose hash is a service-account key, and routes orchestrated hosts to the Frontend', async () => {
    const token = await store.create('token', (id) => tokenRecord(id, 'leaked', 'hash-of-a-platform-key'));
    await store.create('service_account', (id) => ({ id, name: 'ops', role: 'admin' as const, key_hash: 'hash-of-a-platform-key', hint: '…abcd', created_at: new Date(0).toISOString() }));
    const general = deploymentRecord(0, 'leaky');
    await store.create('deployment', (id) => ({ ...general, id, auth: { token_id: token.value.id, client_certificate_id: null, private_endpoint: false } }));
    await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'orch'), family: 'orchestrated' as const, spec: { ...general.spec, family: 'orchestrated' } as unknown as typeof general.spec }));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();
    expect(table.lookup('leaky.endpoints.test')?.tokenHash).toBeNull();
    expect(table.lookup('orch.endpoints.test')?.component).toBe('Frontend');
  });

  it('finds a deployment by its exact name for path addresses, with its protocol, and forgets it when deleted', async () => {
    const base = deploymentRecord(0, 'x');
    const chat = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat') }));
    await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'rpc'), spec: { ...base.spec, protocol: 'grpc' as const } }));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();
    expect(table.domain).toBe('endpoints.test');
    expect(table.lookupName('chat')).toBe(table.lookup('chat.endpoints.test'));
    expect(table.lookupName('chat')).toMatchObject({ host: 'chat.endpoints.test', protocol: 'http' });
    expect(table.lookupName('rpc')).toMatchObject({ host: 'rpc.endpoints.test', protocol: 'grpc' });
    // Names are exact: no case folding, no host, no decoding.
    for (const other of ['CHAT', 'chat.endpoints.test', '%63hat', 'cha']) expect(table.lookupName(other)).toBeUndefined();

    const rebuilt = nextRebuild(table);
    await store.delete('deployment', chat.value.id);
    await rebuilt;
    expect(table.lookupName('chat')).toBeUndefined();
  });

  it('accepts the bound certificate and every unrevoked one issued for the deployment, each with its cap; the token carries its cap', async () => {
    const cert = (name: string, fingerprint: string, deploymentId: number | null, o: Partial<CertificateRecord> = {}) => (id: number): CertificateRecord => ({
      id,
      name,
      deployment_id: deploymentId,
      serial: `0${id}`,
      fingerprint_sha256: fingerprint,
      certificate_pem: '',
      sealed_key: '',
      not_after: new Date(0).toISOString(),
      revoked_at: null,
      created_at: new Date(0).toISOString(),
      ...o,
    });
    const token = await store.create('token', (id) => ({ ...tokenRecord(id, 'capped', 'hash-capped'), max_priority: 'standard' as const }));
    const bound = await store.create('certificate', cert('bound', 'AA:BB', null, { max_priority: 'sheddable' }));
    const d = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'mtls'), auth: { token_id: token.value.id, client_certificate_id: bound.value.id, private_endpoint: true } }));
    await store.create('certificate', cert('second', 'cc:dd', d.value.id));
    const revoked = await store.create('certificate', cert('revoked', 'ee:ff', d.value.id, { revoked_at: new Date(0).toISOString() }));
    await store.create('certificate', cert('elsewhere', '11:22', d.value.id + 100));
    // Issued for a deployment that takes no certificates (token only): not accepted there.
    const tokenOnly = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'plain'), auth: { token_id: token.value.id, client_certificate_id: null, private_endpoint: false } }));
    await store.create('certificate', cert('unused', '33:44', tokenOnly.value.id));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();

    const route = table.lookup('mtls.endpoints.test');
    expect(route?.clientCertificates).toEqual(new Map([['aabb', 'sheddable'], ['ccdd', null]]));
    expect(route).toMatchObject({ tokenHash: 'hash-capped', tokenMaxPriority: 'standard' });
    expect(table.lookup('plain.endpoints.test')?.clientCertificates.size).toBe(0);
    expect(revoked.value.revoked_at).not.toBeNull();

    // A cap changed, the bound one revoked: the next table says so; the other still passes.
    const rebuilt = nextRebuild(table);
    await modify(store, 'certificate', bound.value.id, (c) => ({ ...c, revoked_at: new Date(1).toISOString() }));
    await rebuilt;
    const again = nextRebuild(table);
    await modify(store, 'token', token.value.id, (t) => ({ ...t, max_priority: null }));
    await again;
    expect(table.lookup('mtls.endpoints.test')?.clientCertificates).toEqual(new Map([['ccdd', null]]));
    expect(table.lookup('mtls.endpoints.test')?.tokenMaxPriority).toBeNull();
  });

  it('gives the deployment its flow control, or the defaults when it sets none', async () => {
    const own = { max_queue: 3, max_wait_seconds: { critical: 9, standard: 2, sheddable: 0 } };
    const base = deploymentRecord(0, 'x');
    await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'queued'), limits: { max_request_body_bytes: null, rate_limit: null, flow_control: own } }));
    await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'older'), limits: { max_request_body_bytes: null, rate_limit: null } }));
    await store.create('deployment', (id) => ({ ...base, id, name: 'bare' }));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();
    expect(table.lookup('queued.endpoints.test')?.flowControl).toEqual(own);
    expect(table.lookup('older.endpoints.test')?.flowControl).toEqual(DEFAULT_FLOW_CONTROL);
    expect(table.lookup('bare.endpoints.test')?.flowControl).toEqual(DEFAULT_FLOW_CONTROL);
  });

  it('splits traffic between revisions with their ready replicas, and gives each tag a route to its revision only', async () => {
    const traffic: TrafficTarget[] = [
      { revision: 1, latest: false, percent: 90, tag: null },
      { revision: null, latest: true, percent: 10, tag: 'canary' },
    ];
    const d = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), revision: 2, traffic }));
    const one = await store.create('replica', replica(d.value.id, 'Replica', 'ready', 4001, 1));
    const two = await store.create('replica', replica(d.value.id, 'Replica', 'ready', 4002, 2));
    await store.create('replica', replica(d.value.id, 'Replica', 'starting', 4003, 2));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();

    const route = table.lookup('chat.endpoints.test')!;
    expect(route.tag).toBeNull();
    expect(route.replicas.map((r) => [r.id, r.revision])).toEqual([
      [one.value.id, 1],
      [two.value.id, 2],
    ]);
    expect(route.trafficRevisions).toEqual([1, 2]);
    expect(route.split?.key).toBe('1:90,2:10');
    expect(route.split?.revisions.map((r) => [r.revision, r.percent, r.replicas.map((x) => x.id)])).toEqual([
      [1, 90, [one.value.id]],
      [2, 10, [two.value.id]],
    ]);

    // The tag: by host (any case, any port) and by path name, the same route; only revision 2.
    const tag = table.lookup('Canary-Chat.endpoints.test:443')!;
    expect(tag).toBe(table.lookupName('canary-chat'));
    expect(tag).toMatchObject({ deploymentId: d.value.id, name: 'chat', host: 'canary-chat.endpoints.test', split: null, tag: { name: 'canary', revision: 2 } });
    expect(tag.replicas.map((r) => r.id)).toEqual([two.value.id]);
    expect(tag.replicas).toBe(route.split!.revisions[1]!.replicas);
    // One route per deployment in routes(); the tag's host is served too (its certificate by SNI).
    expect([...table.routes()].map((r) => r.host)).toEqual(['chat.endpoints.test']);
    expect([...table.tagRoutes()]).toEqual([tag]);
    // …each in the default project's two spellings.
    expect(table.hosts()).toEqual(new Set(['chat.endpoints.test', 'chat.default.endpoints.test', 'canary-chat.endpoints.test', 'canary-chat.default.endpoints.test']));
    expect(table.lookupDeployment(d.value.id)).toBe(route);

    // A replica of revision 2 turns ready: revision 2's arrays change, revision 1's is kept.
    const rebuilt = nextRebuild(table);
    const starting = (await store.list('replica')).find((r) => r.value.state === 'starting')!;
    await modify(store, 'replica', starting.value.id, (r) => ({ ...r, state: 'ready' }));
    await rebuilt;
    const after = table.lookup('chat.endpoints.test')!;
    expect(after.split!.revisions[0]!.replicas).toBe(route.split!.revisions[0]!.replicas);
    expect(after.split!.revisions[1]!.replicas).not.toBe(route.split!.revisions[1]!.replicas);
    expect(after.split!.revisions[1]!.replicas).toHaveLength(2);
    expect(table.lookup('canary-chat.endpoints.test')!.replicas).toHaveLength(2);

    // An unrelated change: every array is the same object, the tag's included.
    const tagReplicas = table.lookup('canary-chat.endpoints.test')!.replicas;
    const again = nextRebuild(table);
    await store.create('token', (id) => tokenRecord(id, 'unrelated', 'hash-unrelated'));
    await again;
    const same = table.lookup('chat.endpoints.test')!;
    expect(same.replicas).toBe(after.replicas);
    expect(same.split!.revisions[1]!.replicas).toBe(after.split!.revisions[1]!.replicas);
    expect(table.lookup('canary-chat.endpoints.test')!.replicas).toBe(tagReplicas);

    // Promoted to 100 %: no split, every ready replica a candidate (the old one until it drains), the tag gone.
    const promoted = nextRebuild(table);
    await modify(store, 'deployment', d.value.id, (x) => ({ ...x, traffic: [{ revision: null, latest: true, percent: 100, tag: null }] }));
    await promoted;
    const whole = table.lookup('chat.endpoints.test')!;
    expect(whole.split).toBeNull();
    expect(whole.replicas).toHaveLength(3);
    expect(table.lookup('canary-chat.endpoints.test')).toBeUndefined();
    expect(table.lookupName('canary-chat')).toBeUndefined();
    expect(table.hosts()).toEqual(new Set(['chat.endpoints.test', 'chat.default.endpoints.test']));
  });

  it('has no split when traffic names one revision, keeping the replicas array; a tag at 100 % is a route of its own', async () => {
    const d = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'solo'), revision: 2, traffic: [{ revision: null, latest: true, percent: 100, tag: 'live' }] }));
    await store.create('replica', replica(d.value.id, 'Replica', 'ready', 4001, 1));
    await store.create('replica', replica(d.value.id, 'Replica', 'ready', 4002, 2));
    const bare = await store.create('deployment', (id) => deploymentRecord(id, 'bare'));
    await store.create('replica', replica(bare.value.id, 'Replica', 'ready', 4010, 1));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();
    const solo = table.lookup('solo.endpoints.test')!;
    // A rolling update from 1 to 2: both revisions' ready replicas are candidates, as before.
    expect(solo.split).toBeNull();
    expect(solo.replicas.map((r) => r.revision)).toEqual([1, 2]);
    expect(table.lookup('live-solo.endpoints.test')!.replicas.map((r) => r.revision)).toEqual([2]);
    const plain = table.lookup('bare.endpoints.test')!;
    expect(plain).toMatchObject({ split: null, tag: null, trafficRevisions: [1] });
    const rebuilt = nextRebuild(table);
    await store.create('token', (id) => tokenRecord(id, 'unrelated', 'hash-unrelated'));
    await rebuilt;
    expect(table.lookup('bare.endpoints.test')!.replicas).toBe(plain.replicas);
    expect(table.lookup('solo.endpoints.test')!.replicas).toBe(solo.replicas);
  });

  it('lets a deployment\'s own host and name win over a tag host of the same name', async () => {
    // Validation refuses this; records written around it must still not hijack the endpoint.
    const d = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), traffic: [{ revision: 1, latest: false, percent: 100, tag: 'beta' }] }));
    const owner = await store.create('deployment', (id) => deploymentRecord(id, 'beta-chat'));
    await store.create('replica', replica(d.value.id, 'Replica', 'ready', 4001, 1));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();
    expect(table.lookup('beta-chat.endpoints.test')).toMatchObject({ deploymentId: owner.value.id, tag: null });
    expect(table.lookupName('beta-chat')).toMatchObject({ deploymentId: owner.value.id, tag: null });
    expect([...table.tagRoutes()]).toEqual([]);
  });
});

describe('RoutingTable with projects', () => {
  it('serves two projects\' deployments of one name, each only at its own addresses', async () => {
    const traffic: TrafficTarget[] = [
      { revision: 1, latest: false, percent: 90, tag: null },
      { revision: null, latest: true, percent: 10, tag: 'canary' },
    ];
    const mine = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), revision: 2, traffic }));
    // A record written before projects (no `project`) and one that names `default` read alike.
    const theirs = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), project: 'team-a', revision: 2, traffic }));
    const other = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'embed'), project: 'default' }));
    await store.create('replica', replica(mine.value.id, 'Replica', 'ready', 4001, 2));
    await store.create('replica', replica(theirs.value.id, 'Replica', 'ready', 4002, 2));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();

    const a = table.lookup('chat.endpoints.test')!;
    const b = table.lookup('chat.team-a.endpoints.test')!;
    expect(a).toMatchObject({ deploymentId: mine.value.id, name: 'chat', project: 'default', host: 'chat.endpoints.test' });
    expect(b).toMatchObject({ deploymentId: theirs.value.id, name: 'chat.team-a', project: 'team-a', host: 'chat.team-a.endpoints.test' });
    expect(a.replicas.map((r) => r.address)).toEqual(['127.0.0.1:4001']);
    expect(b.replicas.map((r) => r.address)).toEqual(['127.0.0.1:4002']);
    // The default project's second spelling, any case and port; path names by project.
    expect(table.lookup('Chat.Default.endpoints.test:8443')).toBe(a);
    expect(table.lookup('embed.default.endpoints.test')).toMatchObject({ deploymentId: other.value.id });
    expect(table.lookupName('chat')).toBe(a);
    expect(table.lookupName('chat', 'default')).toBe(a);
    expect(table.lookupName('chat', 'team-a')).toBe(b);
    expect(table.lookupName('embed', 'team-a')).toBeUndefined();
    expect(table.lookup('embed.team-a.endpoints.test')).toBeUndefined();
    // Nothing else reaches team-a's: no alias of another project, no deeper name.
    expect(table.lookup('chat.team-a.default.endpoints.test')).toBeUndefined();
    expect(table.lookup('x.chat.default.endpoints.test')).toBeUndefined();
    expect(table.lookup('team-a.endpoints.test')).toBeUndefined();

    // Tags: per project too.
    const tagA = table.lookup('canary-chat.endpoints.test')!;
    const tagB = table.lookup('canary-chat.team-a.endpoints.test')!;
    expect(tagA).toMatchObject({ deploymentId: mine.value.id, tag: { name: 'canary', revision: 2 } });
    expect(tagB).toMatchObject({ deploymentId: theirs.value.id, host: 'canary-chat.team-a.endpoints.test', tag: { name: 'canary', revision: 2 } });
    expect(table.lookup('canary-chat.default.endpoints.test')).toBe(tagA);
    expect(table.lookupName('canary-chat', 'team-a')).toBe(tagB);
    expect(table.lookupName('canary-chat', 'default')).toBe(tagA);
    expect(table.hosts()).toEqual(
      new Set([
        'chat.endpoints.test',
        'chat.default.endpoints.test',
        'canary-chat.endpoints.test',
        'canary-chat.default.endpoints.test',
        'embed.endpoints.test',
        'embed.default.endpoints.test',
        'chat.team-a.endpoints.test',
        'canary-chat.team-a.endpoints.test',
      ]),
    );

    // Deleting one project's chat leaves the other's; the change names the hosts that left.
    const changed = new Promise<TableChange>((resolve) => table.onChange((_, change) => resolve(change)));
    await store.delete('deployment', theirs.value.id);
    const change = await changed;
    expect([...change.hostsRemoved].sort()).toEqual(['canary-chat.team-a.endpoints.test', 'chat.team-a.endpoints.test']);
    expect(table.lookup('chat.team-a.endpoints.test')).toBeUndefined();
    expect(table.lookupName('chat', 'team-a')).toBeUndefined();
    expect(table.lookup('chat.endpoints.test')).toMatchObject({ deploymentId: mine.value.id });
    expect(table.lookupName('canary-chat')).toMatchObject({ deploymentId: mine.value.id });

    // A default-project deployment that comes: both its spellings are announced.
    const added = new Promise<TableChange>((resolve) => table.onChange((_, change) => resolve(change)));
    await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'rerank') }));
    expect([...(await added).hostsAdded].sort()).toEqual(['rerank.default.endpoints.test', 'rerank.endpoints.test']);
  });

  it('lets a tag contend only within its project', async () => {
    // team-a's `beta-chat` does not shadow default's tag `beta` of `chat`, nor the reverse.
    const d = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), traffic: [{ revision: 1, latest: false, percent: 100, tag: 'beta' }] }));
    const foreign = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'beta-chat'), project: 'team-a' }));
    const sameProject = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'chat'), project: 'team-b', traffic: [{ revision: 1, latest: false, percent: 100, tag: 'beta' }] }));
    const owner = await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'beta-chat'), project: 'team-b' }));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();
    expect(table.lookup('beta-chat.endpoints.test')).toMatchObject({ deploymentId: d.value.id, tag: { name: 'beta' } });
    expect(table.lookup('beta-chat.team-a.endpoints.test')).toMatchObject({ deploymentId: foreign.value.id, tag: null });
    // Within team-b the deployment's own name wins, as in the default project.
    expect(table.lookup('beta-chat.team-b.endpoints.test')).toMatchObject({ deploymentId: owner.value.id, tag: null });
    expect(table.lookupName('beta-chat', 'team-b')).toMatchObject({ deploymentId: owner.value.id });
    expect(table.lookupName('chat', 'team-b')).toMatchObject({ deploymentId: sameProject.value.id });
  });
});

/** Everything a table serves, as plain data: own and tag routes by host, and the hosts. */
function served(t: RoutingTable) {
  const byHost = (a: Route, b: Route) => a.host.localeCompare(b.host);
  return { own: [...t.routes()].sort(byHost), tags: [...t.tagRoutes()].sort(byHost), hosts: [...t.hosts()].sort() };
}

describe('RoutingTable following the change feed', () => {
  it('after every kind of change, serves exactly what a table read whole from the store serves', async () => {
    const cert = (name: string, deploymentId: number | null, fingerprint: string) => (id: number): CertificateRecord => ({
      id,
      name,
      deployment_id: deploymentId,
      serial: `0${id}`,
      fingerprint_sha256: fingerprint,
      certificate_pem: '',
      sealed_key: '',
      not_after: new Date(0).toISOString(),
      revoked_at: null,
      created_at: new Date(0).toISOString(),
    });
    const withTags = (tags: Array<[number | null, number, string | null]>): TrafficTarget[] =>
      tags.map(([revision, percent, tag]) => ({ revision, latest: revision === null, percent, tag }));
    table = new RoutingTable(store, 'endpoints.test');
    await table.start();
    // What the listeners were told, applied step by step, must add up to what the table serves.
    const hosts = new Set<string>();
    const rebuilt = new Set<number>();
    table.onChange((_, change) => {
      for (const h of change.hostsAdded) hosts.add(h);
      for (const h of change.hostsRemoved) hosts.delete(h);
      for (const id of change.deployments.keys()) rebuilt.add(id);
    });
    const steps: Array<[string, () => Promise<unknown>, () => void]> = [];
    const ids: Record<string, number> = {};
    const step = (what: string, run: () => Promise<unknown>, check: () => void = () => {}) => steps.push([what, run, check]);
    step('a token and two deployments', async () => {
      ids.token = (await store.create('token', (id) => tokenRecord(id, 't1', 'hash-t1'))).value.id;
      ids.a = (await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'a'), auth: { token_id: ids.token!, client_certificate_id: null, private_endpoint: false } }))).value.id;
      ids.b = (await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'b'), auth: { token_id: ids.token!, client_certificate_id: null, private_endpoint: false } }))).value.id;
    });
    step('replicas: ready, starting, without an address', async () => {
      ids.ra = (await store.create('replica', replica(ids.a!, 'Replica', 'ready', 5001))).value.id;
      ids.rs = (await store.create('replica', replica(ids.a!, 'Replica', 'starting', 5002))).value.id;
      await store.create('replica', (id) => ({ ...replica(ids.b!, 'Replica', 'ready', 5003)(id), address: '' }));
      ids.rb = (await store.create('replica', replica(ids.b!, 'Replica', 'ready', 5004))).value.id;
    });
    step('a starting replica turns ready', () => modify(store, 'replica', ids.rs!, (r) => ({ ...r, state: 'ready' })));
    step('a service account holds the token\'s hash', async () => {
      ids.sa = (await store.create('service_account', (id) => ({ id, name: 'ops', role: 'admin' as const, key_hash: 'hash-t1', hint: '', created_at: new Date(0).toISOString() }))).value.id;
    });
    step('a bound certificate and one issued for the deployment', async () => {
      ids.c1 = (await store.create('certificate', cert('bound', null, 'AA:01'))).value.id;
      await store.create('certificate', cert('issued', ids.a!, 'aa:02'));
      await modify(store, 'deployment', ids.a!, (d) => ({ ...d, auth: { ...d.auth, client_certificate_id: ids.c1!, private_endpoint: true } }));
    });
    step('the bound certificate revoked', () => modify(store, 'certificate', ids.c1!, (c) => ({ ...c, revoked_at: new Date(1).toISOString() })));
    step('a split with a tag', async () => {
      await modify(store, 'deployment', ids.a!, (d) => ({ ...d, revision: 2, traffic: withTags([[1, 80, null], [null, 20, 'beta']]) }));
      await store.create('replica', replica(ids.a!, 'Replica', 'ready', 5005, 2));
    });
    step(
      'a deployment named as the tag host takes it',
      async () => {
        ids.owner = (await store.create('deployment', (id) => deploymentRecord(id, 'beta-a'))).value.id;
      },
      () => expect(table.lookupName('beta-a')).toMatchObject({ deploymentId: ids.owner, tag: null }),
    );
    step(
      'two tags claim one host: the first deployment wins',
      async () => {
        ids.p = (await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'p'), traffic: withTags([[null, 100, 'q-r']]) }))).value.id;
        ids.rp = (await store.create('deployment', (id) => ({ ...deploymentRecord(id, 'r-p'), traffic: withTags([[null, 100, 'q']]) }))).value.id;
      },
      () => expect(table.lookup('q-r-p.endpoints.test')?.name).toBe('p'),
    );
    step('the first claimant goes: the second wins', () => store.delete('deployment', ids.p!));
    step(
      'the endpoint named as the tag host goes: the tag serves it again',
      () => store.delete('deployment', ids.owner!),
      () => expect(table.lookup('beta-a.endpoints.test')).toMatchObject({ deploymentId: ids.a, tag: { name: 'beta', revision: 2 } }),
    );
    step('a replica drains, another is deleted', async () => {
      await modify(store, 'replica', ids.ra!, (r) => ({ ...r, state: 'draining' }));
      await store.delete('replica', ids.rb!);
    });
    step('the service account goes: the token opens b again', () => store.delete('service_account', ids.sa!));
    step('the token changes its cap, then is deleted', async () => {
      await modify(store, 'token', ids.token!, (t) => ({ ...t, max_priority: 'standard' as const }));
      await store.delete('token', ids.token!);
    });
    step('a deployment renamed, paused, its limits changed', () =>
      modify(store, 'deployment', ids.b!, (d) => ({ ...d, name: 'b2', paused: true, limits: { max_request_body_bytes: 10, rate_limit: null, flow_control: { max_queue: 2, max_wait_seconds: { critical: 1, standard: 1, sheddable: 0 } } } })),
    );
    step('a deployment with replicas and tags deleted', () => store.delete('deployment', ids.a!));

    for (const [what, run, check] of steps) {
      rebuilt.clear();
      await run();
      await table.settled();
      check();
      const whole = new RoutingTable(store, 'endpoints.test');
      await whole.start();
      whole.stop();
      expect(served(table), what).toEqual(served(whole));
      expect([...hosts].sort(), what).toEqual(served(whole).hosts);
      const routed = [...table.routes()].flatMap((r) => r.replicas);
      expect([...table.replicaIds()].sort(), what).toEqual(routed.map((r) => r.id).sort());
      expect([...table.addresses()].sort(), what).toEqual(routed.map((r) => r.address).sort());
      expect([...table.servingRoutes()].map((r) => r.deploymentId).sort(), what).toEqual([...table.routes()].filter((r) => r.replicas.length > 0).map((r) => r.deploymentId).sort());
      expect(rebuilt.size, what).toBeGreaterThan(0);
    }
    expect(table.lookup('b2.endpoints.test')?.paused).toBe(true);
    expect(table.lookup('q-r-p.endpoints.test')?.name).toBe('r-p');
  });
});
