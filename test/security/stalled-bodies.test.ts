// Security suite — stalled request bodies are not load, end to end: `infergate serve` with
// real replicas and a short autoscaler window. Twenty connections that send their headers
// and a few bytes of body, then nothing, must not scale a deployment (the probe's finding:
// they scaled a min-0/max-5 deployment to five replicas in 9 s); each is answered 408 after
// the body idle timeout, and a real client is served meanwhile. The same for a gRPC call
// that never sends its first message.

import http2 from 'node:http2';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_DOMAIN, engineBody, usePlatform, type Platform } from '../helpers/platform.js';

let platform: Platform;
const BODY_IDLE_S = 6;
usePlatform('stalled', ['--autoscale-stable-window', '4', '--autoscale-panic-window', '2', '--body-idle-timeout', String(BODY_IDLE_S)], (p) => (platform = p));

const TOKEN = 'tok-stalled-0123456789';
const HOST = `stall.${ENDPOINT_DOMAIN}`;

function stalledRequest(): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: platform.ports.gateway, servername: HOST, ca: platform.ca, ALPNProtocols: ['http/1.1'] }, () => {
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: ${HOST}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"model":"m",`,
      );
    });
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}

describe('stalled bodies', () => {
  it('twenty stalled bodies do not scale a min-1/max-5 deployment; each gets 408; a real client is served meanwhile', async () => {
    const create = await platform.call('POST', '/deployments/general', engineBody('stall', TOKEN, { min_replicas: 1, max_replicas: 5, max_concurrency: 1, cooldown_period: 0 }));
    expect(create.status, JSON.stringify(create.body)).toBe(201);
    const id = create.body.id as number;
    await platform.waitFor(id, (d) => d.status === 'ready', 30_000, 'ready');

    const stalled = Array.from({ length: 20 }, stalledRequest);
    let maxDesired = 0;
    const deadline = Date.now() + (BODY_IDLE_S - 1) * 1000;
    const client = platform.client('stall', TOKEN);
    let served = 0;
    while (Date.now() < deadline) {
      const d = await platform.deployment(id);
      maxDesired = Math.max(maxDesired, d.components.Replica.desired);
      const answer = await client.chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
      if (answer.choices.length === 1) served++;
      await new Promise((r) => setTimeout(r, 250));
    }
    const answers = await Promise.all(stalled);
    for (const raw of answers) {
      expect(raw.startsWith('HTTP/1.1 408 ')).toBe(true);
      expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { code: 'request_timeout' } });
    }
    expect(maxDesired).toBe(1);
    expect(served).toBeGreaterThan(5);
    const final = await platform.deployment(id);
    expect(final.components.Replica.desired).toBe(1);
  }, 60_000);

  it('a gRPC call that never sends its first message ends with DEADLINE_EXCEEDED after the body idle timeout', async () => {
    const create = await platform.call('POST', '/deployments/general', engineBody('stall-grpc', TOKEN.replace('stalled', 'grpc'), { tag: 'v2', protocol: 'grpc' }));
    expect(create.status, JSON.stringify(create.body)).toBe(201);
    await platform.waitFor(create.body.id, (d) => d.status === 'ready', 30_000, 'ready');
    const session = http2.connect(`https://127.0.0.1:${platform.ports.gateway}`, { ca: platform.ca, servername: `stall-grpc.${ENDPOINT_DOMAIN}` });
    const started = Date.now();
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/inference.GRPCInferenceService/ModelInfer',
        ':authority': `stall-grpc.${ENDPOINT_DOMAIN}`,
        'content-type': 'application/grpc',
        te: 'trailers',
        authorization: `Bearer ${TOKEN.replace('stalled', 'grpc')}`,
      });
      stream.on('response', (h) => resolve(h));
      stream.on('error', reject);
    });
    session.close();
    expect(trailers['grpc-status']).toBe('4');
    expect(Date.now() - started).toBeGreaterThanOrEqual(BODY_IDLE_S * 1000 - 500);
  }, 60_000);
});
