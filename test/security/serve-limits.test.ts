// Security suite — the limits as `infergate serve` wires them from its flags, on both
// listeners of one process: the control API's own connection caps (a flood of it from one
// address leaves other clients served) and its request-header timeout (408 in the error
// shape), each counted per listener in the metrics; the gateway's handshake timeout.

import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { PLATFORM_ADMIN_KEY, usePlatform, type Platform } from '../helpers/platform.js';

let platform: Platform;
usePlatform('serve-limits', ['--request-headers-timeout', '1', '--tls-handshake-timeout', '1', '--api-max-connections-per-client', '5'], (p) => (platform = p));

async function metric(labels: RegExp): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${platform.ports.metrics}/metrics`)).text();
  const line = text.split('\n').find((l) => labels.test(l));
  return line ? Number(line.split(' ').pop()) : 0;
}

function silentUntilClosed(port: number, write = ''): Promise<{ text: string; ms: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1', () => socket.write(write));
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ text, ms: Date.now() - started }));
  });
}

describe('limits wired by serve', () => {
  it('the control API answers 408 in the error shape to headers that never finish, and counts it for the api listener', async () => {
    const { text, ms } = await silentUntilClosed(platform.ports.api, 'GET /clusters HTTP/1.1\r\nHost: x\r\n');
    expect(text.startsWith('HTTP/1.1 408 ')).toBe(true);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { code: 'request_timeout' } });
    expect(ms).toBeLessThan(5000);
    expect(await metric(/^infergate_connections_timed_out_total\{listener="api",reason="header_timeout"\}/)).toBeGreaterThan(0);
  });

  it('the gateway closes a connection that sends no ClientHello after --tls-handshake-timeout', async () => {
    const { ms } = await silentUntilClosed(platform.ports.gateway);
    expect(ms).toBeLessThan(3000);
    expect(await metric(/^infergate_connections_timed_out_total\{listener="gateway",reason="handshake_timeout"\}/)).toBe(1);
  });

  it('the control API caps connections per client address: a flood from one leaves another served', async () => {
    const flood = Array.from({ length: 30 }, () => {
      const s = net.connect({ host: '127.0.0.1', port: platform.ports.api, localAddress: '127.0.0.2' });
      s.on('error', () => undefined);
      return s;
    });
    try {
      await expect.poll(() => metric(/^infergate_connections_refused_total\{listener="api",reason="client_cap"\}/), { timeout: 3000 }).toBeGreaterThanOrEqual(25);
      const res = await fetch(`${platform.apiUrl}/clusters`, { headers: { authorization: `Bearer ${PLATFORM_ADMIN_KEY}` } });
      expect(res.status).toBe(200);
    } finally {
      for (const s of flood) s.destroy();
    }
  });
});
