// The request log's view of a request: path and parameter names kept, every value replaced,
// and no header at all (a browser's WebSocket carries its key in Sec-WebSocket-Protocol).

import { describe, expect, it } from 'vitest';
import type { FastifyRequest } from 'fastify';
import { redactQuery, requestLogView } from './request-log.js';

describe('redactQuery', () => {
  it.each([
    ['/deployments/general/1/logs?tail=10&follow=true', '/deployments/general/1/logs?tail=[redacted]&follow=[redacted]'],
    ['/deployments/general', '/deployments/general'],
    ['/x?flag', '/x?flag'],
    ['/x?a=1&a=2&b=', '/x?a=[redacted]&a=[redacted]&b=[redacted]'],
    ['/x?token=a=b=c', '/x?token=[redacted]'],
    ['/x?', '/x?'],
  ])('%s → %s', (url, logged) => {
    expect(redactQuery(url)).toBe(logged);
  });
});

describe('requestLogView', () => {
  it('names no header, so neither Authorization nor a key in Sec-WebSocket-Protocol is logged', () => {
    const key = 'igk_secret-key-0123456789';
    const request = {
      method: 'GET',
      url: '/deployments/general/1/terminal?cols=80',
      host: '127.0.0.1:8080',
      ip: '127.0.0.1',
      socket: { remotePort: 5555 },
      headers: { authorization: `Bearer ${key}`, 'sec-websocket-protocol': `infergate.tty.v1, base64url.bearer.infergate.${Buffer.from(key).toString('base64url')}` },
    } as unknown as FastifyRequest;
    const logged = JSON.stringify(requestLogView(request));
    expect(logged).not.toContain(key);
    expect(logged).not.toContain(Buffer.from(key).toString('base64url'));
    expect(logged).not.toContain('bearer');
    expect(JSON.parse(logged)).toEqual({ method: 'GET', url: '/deployments/general/1/terminal?cols=[redacted]', host: '127.0.0.1:8080', remoteAddress: '127.0.0.1', remotePort: 5555 });
  });
});
