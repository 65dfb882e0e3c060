// The path address end to end: a real `infergate serve` on the default domain
// (endpoints.localhost) and a free gateway port, its reference-engine replicas real processes.
// The OpenAI JS SDK (v6: global fetch) is given only what a user copies — the view's
// endpoint_path_url + '/v1', the token and the platform CA (as its documented fetchOptions
// dispatcher) — and resolves `localhost` as any client does, no custom DNS or fetch: a
// completion and a streamed one. Around it: the prefix is stripped before the replica, a
// deployment's own host never routes by path (a.<domain>/endpoints/b/ stays a's), encoded and
// dotted names are refused, the credential, rate limit and metrics are the deployment's
// whichever address is used, gRPC stays host-only, and the default certificate answers
// `localhost` (SNI) and a bare IP (no SNI) with localhost and 127.0.0.1 among its names.

import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import OpenAI from 'openai';
import { Agent } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { httpsRequest } from './helpers/https-client.js';
import { ENDPOINT_DOMAIN, FAST_ENGINE, engineBody, usePlatform, type Platform } from './helpers/platform.js';
import { bearer, modelInfer, v2ClientTls } from './helpers/v2-client.js';

let platform: Platform;
usePlatform('path-endpoints', [], (p) => (platform = p));

const TOKENS = { chat: 'tok-path-chat-0123456789', other: 'tok-path-other-0123456789', limited: 'tok-path-limited-0123456789', triton: 'tok-path-triton-0123456789' };
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the deployment view as JSON
const views: Record<string, any> = {};

beforeAll(async () => {
  const create = async (name: keyof typeof TOKENS, body: Record<string, unknown>) => {
    const created = await platform.call('POST', '/deployments/general', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as number;
  };
  const ids = {
    chat: await create('chat', engineBody('chat', TOKENS.chat, { command: [...FAST_ENGINE, '--served-model-name', 'chat-model'] })),
    // 1 KiB bodies at most; `limited` one request per 100 s: both must hold by path too.
    other: await create('other', engineBody('other', TOKENS.other, { command: [...FAST_ENGINE, '--served-model-name', 'other-model'], max_request_body_bytes: 1024 })),
    limited: await create('limited', engineBody('limited', TOKENS.limited, { rate_limit: { requests_per_second: 0.01 } })),
    triton: await create('triton', {
      ...engineBody('triton', TOKENS.triton),
      tag: 'v2',
      container_port: 8001,
      protocol: 'grpc',
      health_check_path: undefined,
      command: ['--startup-ms', '300', '--model', 'sim-v2'],
    }),
  };
  for (const [name, id] of Object.entries(ids)) views[name] = await platform.waitFor(id, (d) => d.status === 'ready', 60_000, `${name} ready`);
}, 90_000);

/** An HTTPS request to the gateway on 127.0.0.1 with this Host (and SNI, unless an IP). */
const request = (host: string, p: string, token: string | null, o: { method?: string; body?: string } = {}) =>
  httpsRequest({
    port: platform.ports.gateway,
    host,
    servername: /^[\d.]+$/.test(host) ? null : host,
    ca: platform.ca,
    path: p,
    method: o.method,
    body: o.body,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(o.body ? { 'content-type': 'application/json' } : {}) },
  });

const errorOf = (body: string): { code: string; message: string } => (JSON.parse(body) as { error: { code: string; message: string } }).error;

describe('the path address', () => {
  it('is in the deployment view beside the host address; null for a gRPC deployment', () => {
    const port = platform.ports.gateway;
    expect(views.chat.endpoint_url).toBe(`chat.${ENDPOINT_DOMAIN}:${port}`);
    expect(views.chat.endpoint_path_url).toBe(`https://localhost:${port}/endpoints/chat`);
    expect(views.triton.endpoint_path_url).toBeNull();
  });

  it('serves the OpenAI SDK given only the base URL, the token and the CA: a completion and a streamed one', async () => {
    const client = new OpenAI({
      baseURL: `${views.chat.endpoint_path_url as string}/v1`,
      apiKey: TOKENS.chat,
      // undici 7's Agent serves Node 20's fetch; its type differs from the undici-types one the SDK names.
      fetchOptions: { dispatcher: new Agent({ connect: { ca: platform.ca } }) } as unknown as OpenAI['fetchOptions'],
    });
    const completion = await client.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hello by path' }], max_tokens: 6 });
    // The chat deployment's replica answered (its served model name), on /v1/chat/completions.
    expect(completion.model).toBe('chat-model');
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);

    const stream = await client.chat.completions.create({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'stream by path' }],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBe(5);

    // The replica saw /v1/models, not /endpoints/chat/v1/models; the list names chat's model.
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain('chat-model');
  });

  it('answers on 127.0.0.1 (no SNI), localhost and the bare domain, stripping the prefix', async () => {
    for (const host of ['127.0.0.1', 'localhost', ENDPOINT_DOMAIN]) {
      const res = await request(host, '/endpoints/other/v1/models', TOKENS.other);
      expect(res.status, `${host}: ${res.body}`).toBe(200);
      expect(res.body).toContain('other-model');
    }
    // No path after the name: the replica is sent `/`, where the engine says what it is.
    const root = await request('localhost', '/endpoints/other', TOKENS.other);
    expect(root.status).toBe(200);
    expect(JSON.parse(root.body)).toMatchObject({ engine: 'infergate reference engine', model: 'other-model' });
  });

  it("never reaches another deployment: a deployment's own host keeps the path, and encoded or dotted names are refused", async () => {
    // chat's host with other's path: chat answers (its credential, its replica), the path untouched.
    const crossed = await request(`chat.${ENDPOINT_DOMAIN}`, '/endpoints/other/v1/models', TOKENS.other);
    expect(crossed.status).toBe(401);
    expect(crossed.headers['www-authenticate']).toBe(`Bearer realm="chat.${ENDPOINT_DOMAIN}", error="invalid_token"`);
    const untouched = await request(`chat.${ENDPOINT_DOMAIN}`, '/endpoints/other/v1/models', TOKENS.chat);
    expect(untouched.status).toBe(404);
    expect(errorOf(untouched.body).message).toContain('no route for GET /endpoints/other/v1/models');
    // An unknown host under the domain is no path host.
    const unknown = await request(`nobody.${ENDPOINT_DOMAIN}`, '/endpoints/other/v1/models', TOKENS.other);
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown.body).message).toBe(`no endpoint is served at nobody.${ENDPOINT_DOMAIN}`);

    for (const [p, message] of [
      ['/endpoints/%63hat/v1/models', /"%63hat" is not an endpoint name/],
      ['/endpoints/other/../chat/v1/models', /segment/],
      ['/endpoints/other/%2e%2e/chat/v1/models', /segment/],
      ['/endpoints//chat/v1/models', /name the endpoint/],
    ] as const) {
      const res = await request('localhost', p, TOKENS.chat);
      expect(res.status, p).toBe(400);
      expect(errorOf(res.body)).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(message) });
    }
    const outside = await request('localhost', '/v1/models', TOKENS.chat);
    expect(outside.status).toBe(404);
    expect(errorOf(outside.body).message).toMatch(/outside \/endpoints\/: call https:\/\/localhost\/endpoints\/<name>\//);
    const missing = await request('localhost', '/endpoints/nobody/v1/models', TOKENS.chat);
    expect(errorOf(missing.body).message).toBe('no endpoint is named nobody (/endpoints/nobody/)');
  });

  it("keys the credential, the rate limit, the body limit and the metrics on the deployment, whichever address", async () => {
    // other's token opens chat by neither address; the realm is chat's host for both.
    const wrong = await request('localhost', '/endpoints/chat/v1/models', TOKENS.other);
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe(`Bearer realm="chat.${ENDPOINT_DOMAIN}", error="invalid_token"`);
    const none = await request('localhost', '/endpoints/chat/v1/models', null);
    expect(none.status).toBe(401);

    // One request per 100 s: spent by host, refused by path.
    expect((await request(`limited.${ENDPOINT_DOMAIN}`, '/v1/models', TOKENS.limited)).status).toBe(200);
    const limited = await request('localhost', '/endpoints/limited/v1/models', TOKENS.limited);
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    const oversized = await request('localhost', '/endpoints/other/v1/chat/completions', TOKENS.other, { method: 'POST', body: JSON.stringify({ pad: 'x'.repeat(4096) }) });
    expect(oversized.status).toBe(413);

    const metrics = await (await fetch(`http://127.0.0.1:${platform.ports.metrics}/metrics`)).text();
    const count = (labels: RegExp) =>
      metrics
        .split('\n')
        .filter((l) => l.startsWith('infergate_requests_total{') && labels.test(l))
        .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
    expect(count(/deployment="chat".*status="200"/)).toBeGreaterThanOrEqual(3);
    expect(count(/deployment="limited".*status="429"/)).toBe(1);
    expect(count(/deployment="other".*status="413"/)).toBe(1);
  });

  it('leaves gRPC to the host address: a call to localhost is NOT_FOUND saying where to call, an HTTP request by path to a gRPC deployment is refused', async () => {
    const byPath = v2ClientTls(platform.ports.gateway, 'localhost', platform.ca);
    await expect(modelInfer(byPath, 'sim-v2', 'hello', 3, bearer(TOKENS.triton))).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
      details: `gRPC endpoints are addressed by host only: call <name>.${ENDPOINT_DOMAIN} (<name>.<project>.${ENDPOINT_DOMAIN} outside the default project), not localhost`,
    });
    byPath.close();
    const byHost = v2ClientTls(platform.ports.gateway, `triton.${ENDPOINT_DOMAIN}`, platform.ca);
    expect((await modelInfer(byHost, 'sim-v2', 'hello', 3, bearer(TOKENS.triton))).text.length).toBeGreaterThan(0);
    byHost.close();
    const http = await request('localhost', '/endpoints/triton/v2/health/ready', TOKENS.triton);
    expect(http.status).toBe(404);
    expect(errorOf(http.body).message).toBe(`deployment triton serves gRPC, which is addressed by host only: triton.${ENDPOINT_DOMAIN}`);
  });
});

describe('the default certificate', () => {
  /** The certificate the gateway presents for this SNI (null: none sent), verified against the CA. */
  const presented = (servername: string | null) =>
    new Promise<X509Certificate>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: platform.ports.gateway, ca: platform.ca, ...(servername ? { servername } : {}), ALPNProtocols: ['http/1.1'] }, () => {
        const cert = socket.getPeerX509Certificate();
        socket.destroy();
        if (!cert) reject(new Error('no certificate'));
        else resolve(cert);
      });
      socket.once('error', reject);
    });

  it('is on disk with localhost and 127.0.0.1 among its names, beside *.<domain>', async () => {
    const onDisk = new X509Certificate(await readFile(path.join(platform.certsDir, 'gateway', `${ENDPOINT_DOMAIN}.crt`), 'utf8'));
    expect(onDisk.subjectAltName).toContain('DNS:localhost');
    expect(onDisk.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(onDisk.subjectAltName).toContain(`DNS:*.${ENDPOINT_DOMAIN}`);
    expect(onDisk.subjectAltName).toContain(`DNS:${ENDPOINT_DOMAIN}`);
  });

  it('answers SNI localhost and a handshake without SNI (an IP), never with a per-endpoint certificate', async () => {
    const onDisk = new X509Certificate(await readFile(path.join(platform.certsDir, 'gateway', `${ENDPOINT_DOMAIN}.crt`), 'utf8'));
    // The per-endpoint certificate exists for chat's host (so the SNI machinery is live)…
    await expect.poll(async () => (await presented(`chat.${ENDPOINT_DOMAIN}`)).subjectAltName, { timeout: 10_000 }).toBe(`DNS:chat.${ENDPOINT_DOMAIN}`);
    // …and localhost or an IP get the platform certificate, which covers them.
    for (const servername of ['localhost', null]) {
      const cert = await presented(servername);
      expect(cert.fingerprint256, String(servername)).toBe(onDisk.fingerprint256);
      expect(cert.checkHost('localhost')).toBe('localhost');
      expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    }
  });
});
