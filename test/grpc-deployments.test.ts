// A general gRPC deployment of the reference engine's v2 flavor (TCP readiness), reached with
// a grpc-js client built from proto/ over TLS through the gateway, the bearer token in
// metadata: ModelInfer returns text, ModelStreamInfer streams tokens ending with Triton's
// final flag, no token is UNAUTHENTICATED, and a client cancel reaches the replica.

import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_DOMAIN, usePlatform, type Platform } from './helpers/platform.js';
import { bearer, inferRequest, modelInfer, modelStreamInfer, v2ClientTls, type V2Client } from './helpers/v2-client.js';

let platform: Platform;

usePlatform('grpc', [], (p) => (platform = p));

const TOKEN = 'tok-grpc-0123456789';

/** A general gRPC deployment of the reference engine's v2 flavor, ready, and a client of it through the gateway. */
async function readyV2(name: string, model: string, engineArgs: string[]): Promise<{ id: number; client: V2Client }> {
  const created = await platform.call('POST', '/deployments/general', {
    name,
    cluster_id: 1,
    hardware_instance_id: 1,
    image: 'infergate/reference-engine',
    tag: 'v2',
    container_port: 8001,
    protocol: 'grpc',
    command: ['--startup-ms', '300', ...engineArgs, '--model', model],
    endpoint_bearer_token: TOKEN,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.id as number;
  await platform.waitFor(id, (d) => d.status === 'ready', 30_000, `${name} ready`);
  return { id, client: v2ClientTls(platform.ports.gateway, `${name}.${ENDPOINT_DOMAIN}`, platform.ca) };
}

describe('a general gRPC deployment (reference engine, v2 flavor)', () => {
  it('answers ModelInfer and ModelStreamInfer through the gateway; UNAUTHENTICATED without the token; a cancel reaches the replica', async () => {
    const { id, client } = await readyV2('triton', 'sim-v2', ['--ttft-ms', '10', '--itl-ms', '30']);

    const unary = await modelInfer(client, 'sim-v2', 'hello over grpc', 6, bearer(TOKEN));
    expect(unary.text.split(' ').filter(Boolean).length).toBeGreaterThan(0);
    expect(unary.replica).toMatch(/^triton-r1-\d+$/);

    const stream = await modelStreamInfer(client, 'sim-v2', 'stream it', 5, bearer(TOKEN));
    expect(stream.tokens.length).toBeGreaterThanOrEqual(5);
    expect(stream.finals.at(-1)).toBe(true);
    expect(stream.finals.slice(0, -1).every((f) => !f)).toBe(true);

    await expect(modelInfer(client, 'sim-v2', 'no token', 3, bearer(null))).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });

    // A cancel mid-stream: the engine logs it and frees the sequence.
    const call = (client.ModelStreamInfer as (m: grpc.Metadata) => grpc.ClientDuplexStream<unknown, unknown>).call(client, bearer(TOKEN));
    call.on('error', () => {});
    call.write(inferRequest('sim-v2', 'a long one', 200));
    await new Promise<void>((resolve) => call.once('data', () => resolve()));
    call.cancel();
    await expect
      .poll(async () => ((await platform.call('GET', `/deployments/general/${id}/logs?tail=200`)).body.lines as { line: string }[]).some((l) => l.line.includes('cancelled by the client')), { timeout: 5000 })
      .toBe(true);
    client.close();
  });
});

describe('a gRPC model that takes longer than the gateway connect timer (5 s) to answer', () => {
  it('answers a ModelInfer taking 8 s through the gateway', async () => {
    const { client } = await readyV2('slow-v2', 'slow-v2', ['--ttft-ms', '8000', '--itl-ms', '1']);
    const started = Date.now();
    const answer = await modelInfer(client, 'slow-v2', 'take your time', 2, bearer(TOKEN));
    expect(Date.now() - started).toBeGreaterThanOrEqual(8000);
    expect(answer.text.split(' ').filter(Boolean).length).toBeGreaterThan(0);
    client.close();
  }, 60_000);
});
