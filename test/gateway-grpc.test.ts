// gRPC through the gateway, generic over services: a grpc-js client over TLS with a bearer
// token in metadata reaches grpc-js servers (a raw-bytes test service, no proto) registered
// as replicas. Unary and streaming calls, metadata and trailers intact, Authorization kept at
// the gateway, the replica's own error status passed on, UNAUTHENTICATED without the token,
// UNAVAILABLE with no replica, affinity by the x-session-id metadata key, a client cancel or
// deadline reaching the replica, and a dead replica skipped, counted as retries, then ejected.

import * as grpc from '@grpc/grpc-js';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { hostOf, startGatewayEnv, tokenFor, waitFor, type GatewayEnv } from './helpers/gateway-env.js';

const passthrough = { requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b };
const SERVICE: grpc.ServiceDefinition = {
  Echo: { path: '/test.Echo/Echo', requestStream: false, responseStream: false, ...passthrough },
  Count: { path: '/test.Echo/Count', requestStream: false, responseStream: true, ...passthrough },
  Slow: { path: '/test.Echo/Slow', requestStream: false, responseStream: true, ...passthrough },
  Fail: { path: '/test.Echo/Fail', requestStream: false, responseStream: false, ...passthrough },
  Delayed: { path: '/test.Echo/Delayed', requestStream: false, responseStream: false, ...passthrough },
};
/** The gateway's connect timer in this suite: short, so a call answered later than it shows what it times. */
const CONNECT_MS = 300;

interface Upstream {
  name: string;
  address: string;
  seen: grpc.Metadata[];
  cancelled: number;
  server: grpc.Server;
}

async function startUpstream(name: string): Promise<Upstream> {
  const server = new grpc.Server();
  const u: Upstream = { name, address: '', seen: [], cancelled: 0, server };
  server.addService(SERVICE, {
    Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      u.seen.push(call.metadata);
      const trailer = new grpc.Metadata();
      trailer.set('x-served-by', name);
      cb(null, Buffer.concat([Buffer.from(`${name}:`), call.request]), trailer);
    },
    Count: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const n = Number(call.request.toString());
      for (let i = 0; i < n; i++) call.write(Buffer.from(String(i)));
      call.end();
    },
    Slow: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      let i = 0;
      let done = false;
      const timer = setInterval(() => {
        if (i === 50) {
          done = true;
          clearInterval(timer);
          return call.end();
        }
        call.write(Buffer.from(String(i++)));
      }, 40);
      // grpc-js 1.14 emits 'cancelled' on every close, a finished call's too: count only early ones.
      call.on('cancelled', () => {
        clearInterval(timer);
        if (!done) u.cancelled++;
      });
    },
    Fail: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb({ code: grpc.status.NOT_FOUND, details: 'no such thing here' }),
    // Answers after the milliseconds it is sent, as a model that takes that long would.
    Delayed: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const timer = setTimeout(() => cb(null, Buffer.from(`${name}:late`)), Number(call.request.toString()));
      call.on('cancelled', () => clearTimeout(timer));
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  u.address = `127.0.0.1:${port}`;
  return u;
}

let env: GatewayEnv;
const upstreams: Upstream[] = [];
const Client = grpc.makeGenericClientConstructor(SERVICE, 'test.Echo');

beforeAll(async () => {
  env = await startGatewayEnv({
    ejection: { threshold: 3, baseMs: 60_000, maxMs: 60_000 },
    timeouts: { ...DEFAULTS.gateway.upstream, connectMs: CONNECT_MS },
  });
  upstreams.push(await startUpstream('a'), await startUpstream('b'));
  const id = await env.deploy('rpc', { protocol: 'grpc', session_affinity: true });
  for (const u of upstreams) await env.addReplica(id, u.address);
  await env.waitForReplicas('rpc', 2);
  await env.deploy('rpc-empty', { protocol: 'grpc' });
  const small = await env.deploy('rpc-small', { protocol: 'grpc', max_request_body_bytes: 1024 });
  await env.addReplica(small, upstreams[0]!.address);
  await env.waitForReplicas('rpc-small', 1);
});

afterAll(async () => {
  await env?.close();
  for (const u of upstreams) u.server.forceShutdown();
});

function client(name: string): InstanceType<typeof Client> {
  return new Client(`127.0.0.1:${env.port}`, grpc.credentials.createSsl(Buffer.from(env.ca.certPem)), {
    'grpc.ssl_target_name_override': hostOf(name),
    'grpc.default_authority': hostOf(name),
  });
}

function metadata(name: string, extra: Record<string, string> = {}): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('authorization', `Bearer ${tokenFor(name)}`);
  for (const [k, v] of Object.entries(extra)) m.set(k, v);
  return m;
}

type Unary = (req: Buffer, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void) => grpc.ClientUnaryCall;

function unary(c: InstanceType<typeof Client>, method: 'Echo' | 'Fail' | 'Delayed', body: string, md: grpc.Metadata, opts: grpc.CallOptions = {}) {
  return new Promise<{ err: grpc.ServiceError | null; res?: Buffer; trailers?: grpc.Metadata }>((resolve) => {
    let trailers: grpc.Metadata | undefined;
    const call = (c[method] as unknown as Unary).call(c, Buffer.from(body), md, opts, (err, res) => setImmediate(() => resolve({ err, res, trailers })));
    call.on('status', (s: grpc.StatusObject) => (trailers = s.metadata));
  });
}

describe('gRPC through the gateway', () => {
  it('forwards a unary call with metadata and trailers intact, keeping Authorization at the gateway', async () => {
    const c = client('rpc');
    const { err, res, trailers } = await unary(c, 'Echo', 'hello', metadata('rpc', { 'x-custom': 'yes' }));
    expect(err).toBeNull();
    expect(res?.toString()).toMatch(/^[ab]:hello$/);
    expect(trailers?.get('x-served-by')).toEqual([res!.toString().slice(0, 1)]);
    const seen = upstreams.flatMap((u) => u.seen).at(-1)!;
    expect(seen.get('x-custom')).toEqual(['yes']);
    expect(seen.get('authorization')).toEqual([]);
    c.close();
  });

  it('waits for a call the replica answers later than the connect timer (which times the connection only)', async () => {
    const c = client('rpc');
    const late = CONNECT_MS * 4;
    const started = Date.now();
    const { err, res } = await unary(c, 'Delayed', String(late), metadata('rpc'));
    expect(err).toBeNull();
    expect(res?.toString()).toMatch(/^[ab]:late$/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(late);
    c.close();
  });

  it('ends a call whose message is over the limit with RESOURCE_EXHAUSTED, its message readable as written', async () => {
    const c = client('rpc-small');
    const { err } = await unary(c, 'Echo', 'x'.repeat(4096), metadata('rpc-small'));
    expect(err?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    // Percent-encoded the way grpc-js decodes it: no %3B or %3A left for the client to show.
    expect(err?.details).toMatch(/larger than this endpoint accepts \(1024 bytes; the deployment's max_request_body_bytes\)/);
    c.close();
  });

  it('streams server messages through', async () => {
    const c = client('rpc');
    const got: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const call = (c.Count as unknown as (req: Buffer, md: grpc.Metadata) => grpc.ClientReadableStream<Buffer>).call(c, Buffer.from('25'), metadata('rpc'));
      call.on('data', (b: Buffer) => got.push(b.toString()));
      call.on('end', resolve);
      call.on('error', reject);
    });
    expect(got).toEqual(Array.from({ length: 25 }, (_, i) => String(i)));
    c.close();
  });

  it("passes the replica's error status on, and refuses without a token (16) or without a replica (14)", async () => {
    const c = client('rpc');
    expect((await unary(c, 'Fail', 'x', metadata('rpc'))).err).toMatchObject({ code: grpc.status.NOT_FOUND, details: 'no such thing here' });
    expect((await unary(c, 'Echo', 'x', new grpc.Metadata())).err?.code).toBe(grpc.status.UNAUTHENTICATED);
    const empty = client('rpc-empty');
    expect((await unary(empty, 'Echo', 'x', metadata('rpc-empty'))).err?.code).toBe(grpc.status.UNAVAILABLE);
    c.close();
    empty.close();
  });

  it('keeps a session on one replica by the x-session-id metadata key', async () => {
    const c = client('rpc');
    const served = new Set<string>();
    for (let i = 0; i < 12; i++) served.add((await unary(c, 'Echo', 'x', metadata('rpc', { 'x-session-id': 'session-7' }))).res!.toString().slice(0, 1));
    expect(served.size).toBe(1);
    c.close();
  });

  it('a client cancel and a deadline reach the replica', async () => {
    const c = client('rpc');
    const before = upstreams.reduce((n, u) => n + u.cancelled, 0);
    const call = (c.Slow as unknown as (req: Buffer, md: grpc.Metadata) => grpc.ClientReadableStream<Buffer>).call(c, Buffer.from(''), metadata('rpc'));
    call.on('error', () => {});
    await new Promise<void>((resolve) => call.once('data', () => resolve()));
    call.cancel();
    await waitFor(() => upstreams.reduce((n, u) => n + u.cancelled, 0) === before + 1, 3000, 'the cancel reaching the replica');

    const timed = (c.Slow as unknown as (req: Buffer, md: grpc.Metadata, o: grpc.CallOptions) => grpc.ClientReadableStream<Buffer>).call(c, Buffer.from(''), metadata('rpc'), { deadline: Date.now() + 300 });
    const err = await new Promise<grpc.ServiceError>((resolve) => {
      timed.on('data', () => {});
      timed.on('error', resolve);
    });
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await waitFor(() => upstreams.reduce((n, u) => n + u.cancelled, 0) === before + 2, 3000, 'the deadline reaching the replica');
    c.close();
  });

  it("ends a call with DEADLINE_EXCEEDED when the replica's first message is later than the deployment's first_response_timeout_seconds, and holds it against no replica", async () => {
    const id = await env.deploy('rpc-timed', { protocol: 'grpc', first_response_timeout_seconds: 1 });
    await env.addReplica(id, upstreams[0]!.address);
    await env.waitForReplicas('rpc-timed', 1);
    const c = client('rpc-timed');
    const late = await unary(c, 'Delayed', '2500', metadata('rpc-timed'));
    expect(late.err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(late.err?.details).toContain('first message timer');
    const soon = await unary(c, 'Delayed', '100', metadata('rpc-timed'));
    expect(soon.err).toBeNull();
    c.close();
    const metrics = await env.registry.metrics();
    expect(metrics).not.toMatch(/infergate_replica_ejections_total\{deployment="rpc-timed"\} [1-9]/);
    expect(metrics).not.toMatch(/infergate_upstream_retries_total\{deployment="rpc-timed"\} [1-9]/);
  });

  it('skips a dead replica, counts the retries, then ejects it; the first byte is timed', async () => {
    const id = await env.deploy('rpc-dead', { protocol: 'grpc' });
    const dead = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port)); // nothing listens there any more
      });
    });
    await env.addReplica(id, `127.0.0.1:${dead}`);
    await env.addReplica(id, upstreams[0]!.address);
    await env.waitForReplicas('rpc-dead', 2);
    const c = client('rpc-dead');
    for (let i = 0; i < 30; i++) {
      const { err, res } = await unary(c, 'Echo', `n${i}`, metadata('rpc-dead'));
      expect(err).toBeNull();
      expect(res?.toString()).toBe(`a:n${i}`);
    }
    c.close();
    const metrics = await env.registry.metrics();
    // Three refused connections eject it; no call after that tries it again.
    expect(Number(/infergate_upstream_retries_total\{deployment="rpc-dead"\} (\d+)/.exec(metrics)?.[1])).toBe(3);
    expect(metrics).toMatch(/infergate_replica_ejections_total\{deployment="rpc-dead"\} 1/);
    expect(Number(/infergate_time_to_first_byte_seconds_count\{deployment="rpc-dead",protocol="grpc"\} (\d+)/.exec(metrics)?.[1])).toBe(30);
  });
});
