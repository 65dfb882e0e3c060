// The official openai SDK as the client, through the gateway over TLS with the platform CA:
// a chat completion and a streamed one with include_usage, with a bearer token and with the
// deployment's client certificate (and a dummy API key, as the spec allows); token usage
// read from both into the metrics; and HTTP/2 clients served on the same port.

import http2 from 'node:http2';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChatUpstream, type ChatUpstream } from './helpers/chat-upstream.js';
import { hostOf, startGatewayEnv, tokenFor, type GatewayEnv } from './helpers/gateway-env.js';
import { downloadPem, gatewayFetch } from './helpers/tls-clients.js';

let env: GatewayEnv;
let upstream: ChatUpstream;
let mtlsDeploymentId: number;
let certificateId: number;

beforeAll(async () => {
  env = await startGatewayEnv();
  upstream = await startChatUpstream({ name: 'replica-a', chunks: 6, promptTokens: 11 });
  const bearerId = await env.deploy('oa-bearer');
  await env.addReplica(bearerId, upstream.address);
  await env.waitForReplicas('oa-bearer', 1);

  const created = await env.api.call('POST', '/deployments/general', {
    ...(await import('./helpers/spec-fixtures.js')).generalBody('oa-mtls', 'unused'),
    endpoint_bearer_token: undefined,
    private_endpoint: true,
  });
  expect(created.status).toBe(201);
  mtlsDeploymentId = created.body.id;
  certificateId = created.body.client_certificate_id;
  expect(typeof certificateId).toBe('number');
  await env.addReplica(mtlsDeploymentId, upstream.address);
  await env.waitForReplicas('oa-mtls', 1);
});

afterAll(async () => {
  await env?.close();
  await upstream?.close();
});

function client(name: string, apiKey: string, pem?: string): OpenAI {
  return new OpenAI({
    apiKey,
    baseURL: `https://${hostOf(name)}:${env.port}/v1`,
    fetch: gatewayFetch({ ca: env.ca.certPem, pem }),
    maxRetries: 0,
  });
}

async function streamed(c: OpenAI) {
  const stream = await c.chat.completions.create({
    model: 'sim',
    messages: [{ role: 'user', content: 'hello' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  let fingerprint: string | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
    fingerprint = chunk.system_fingerprint ?? fingerprint;
  }
  return { text, usage, fingerprint };
}

async function metricValue(name: string, labels: string): Promise<number> {
  const text = await env.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('openai SDK through the gateway', () => {
  it('gets a chat completion with the bearer token', async () => {
    const res = await client('oa-bearer', tokenFor('oa-bearer')).chat.completions.create({
      model: 'sim',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(res.choices[0]?.message.content).toBe('t0 t1 t2 t3 t4 t5');
    expect(res.system_fingerprint).toBe('replica-a');
    expect(res.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 6 });
    expect(upstream.seen.at(-1)?.headers.authorization).toBeUndefined();
  });

  it('streams a chat completion with include_usage and the bearer token', async () => {
    const { text, usage, fingerprint } = await streamed(client('oa-bearer', tokenFor('oa-bearer')));
    expect(text).toBe('t0 t1 t2 t3 t4 t5 ');
    expect(usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 6 });
    expect(fingerprint).toBe('replica-a');
  });

  it('does both with the client certificate and a dummy API key', async () => {
    const pem = await downloadPem(env.api, certificateId);
    const c = client('oa-mtls', 'unused-dummy-key', pem);
    const res = await c.chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'hello' }] });
    expect(res.system_fingerprint).toBe('replica-a');
    const { usage } = await streamed(c);
    expect(usage?.completion_tokens).toBe(6);
    expect(upstream.seen.at(-1)?.headers.authorization).toBeUndefined();
    // Without the certificate the dummy key is just a wrong token.
    await expect(client('oa-mtls', 'unused-dummy-key').models.list()).rejects.toMatchObject({ status: 401 });
  });

  it('counts prompt and completion tokens from plain and streamed responses', async () => {
    // oa-bearer: one plain and one streamed response, 11 + 6 tokens each.
    expect(await metricValue('infergate_tokens_total', 'deployment="oa-bearer",kind="prompt"')).toBe(22);
    expect(await metricValue('infergate_tokens_total', 'deployment="oa-bearer",kind="completion"')).toBe(12);
    expect(await metricValue('infergate_requests_total', 'deployment="oa-bearer",status="200",protocol="http"')).toBe(2);
    expect(await metricValue('infergate_auth_failures_total', 'deployment="oa-mtls",reason="invalid_token"')).toBe(1);
  });

  it('serves HTTP/2 clients on the same port (ALPN h2)', async () => {
    const session = http2.connect(`https://${hostOf('oa-bearer')}:${env.port}`, {
      ca: env.ca.certPem,
      lookup: (await import('./helpers/tls-clients.js')).loopbackLookup,
    });
    try {
      const { status, body, alpn } = await new Promise<{ status: number; body: string; alpn: string | false }>((resolve, reject) => {
        const req = session.request({
          ':method': 'POST',
          ':path': '/v1/chat/completions',
          authorization: `Bearer ${tokenFor('oa-bearer')}`,
          'content-type': 'application/json',
        });
        let status = 0;
        let body = '';
        req.on('response', (h) => (status = Number(h[':status'])));
        req.setEncoding('utf8');
        req.on('data', (c: string) => (body += c));
        req.on('end', () => resolve({ status, body, alpn: session.alpnProtocol ?? false }));
        req.on('error', reject);
        req.end(JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hi' }] }));
      });
      expect(alpn).toBe('h2');
      expect(status).toBe(200);
      expect(JSON.parse(body).system_fingerprint).toBe('replica-a');
      const seen = upstream.seen.at(-1)!;
      expect(seen.headers.host).toBe(hostOf('oa-bearer'));
      expect(seen.headers.authorization).toBeUndefined();
    } finally {
      session.close();
    }
  });
});
