import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { beyondLoopback, formatAddress, isLoopback, listeningAddresses, parseListening } from './listening-sockets.js';

describe('parseListening', () => {
  it('reads listening sockets of /proc/net/tcp and tcp6, skipping the other states', () => {
    const tcp = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0',
      '   1: 00000000:01BB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 100 0 0 10 0',
      '   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 100 0 0 10 0',
    ].join('\n');
    expect([...parseListening(tcp, 4)]).toEqual([
      ['1111', { address: '127.0.0.1', port: 8080 }],
      ['2222', { address: '0.0.0.0', port: 443 }],
    ]);
    const tcp6 = [
      '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0',
      '   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5555 1 0000000000000000 100 0 0 10 0',
      '   2: 0000000000000000FFFF00000100007F:0051 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6666 1 0000000000000000 100 0 0 10 0',
    ].join('\n');
    expect([...parseListening(tcp6, 6)].map(([, a]) => formatAddress(a))).toEqual(['[::1]:8080', '[::]:80', '[::ffff:127.0.0.1]:81']);
  });

  it('tells loopback addresses from the others', () => {
    expect(['127.0.0.1', '127.3.2.1', '::1', '::ffff:127.0.0.1'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '::', '10.0.0.5', '::ffff:10.0.0.5'].some(isLoopback)).toBe(false);
  });
});

describe('listeningAddresses', () => {
  const servers: net.Server[] = [];
  afterAll(() => {
    for (const s of servers) s.close();
  });
  const listen = (host: string) =>
    new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, host, () => resolve((server.address() as net.AddressInfo).port));
      servers.push(server);
    });

  it("finds what this process listens on, by its sockets' inodes, and which of it is beyond loopback", async () => {
    const local = await listen('127.0.0.1');
    const wide = await listen('0.0.0.0');
    const found = listeningAddresses([process.pid]);
    expect(found).toContainEqual({ address: '127.0.0.1', port: local });
    expect(found).toContainEqual({ address: '0.0.0.0', port: wide });
    expect(beyondLoopback(found).map((a) => a.port)).toContain(wide);
    expect(beyondLoopback(found).map((a) => a.port)).not.toContain(local);
  });
});
