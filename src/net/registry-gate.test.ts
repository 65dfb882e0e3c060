import { describe, expect, it } from 'vitest';
import { HostRegistryGate } from './registry-gate.js';

describe('the registry gate', () => {
  it('knows the ports this service listens on as they bind: an own address with one is refused from then on', async () => {
    const gate = new HostRegistryGate({ listed: [], resolve: () => Promise.resolve([]), addresses: () => ['10.0.0.5', 'fe80::1%eth0'] });
    expect(await gate.refusal('10.0.0.5:7000')).toBeUndefined();
    gate.addOwnPort(7000);
    expect(await gate.refusal('10.0.0.5:7000')).toMatch(/this service's own listener \(port 7000/);
    // Port 0 (not bound yet) is no port.
    gate.addOwnPort(0);
    expect(await gate.refusal('10.0.0.5:1')).toBeUndefined();
  });

  it('asks the resolver for names only, and judges a name by every address it resolves to', async () => {
    const asked: string[] = [];
    const gate = new HostRegistryGate({
      listed: ['*'],
      ports: [9464],
      resolve: (name) => {
        asked.push(name);
        return Promise.resolve(name === 'metadata.attacker.example' ? ['203.0.113.1', '169.254.169.254'] : name === 'self.example' ? ['10.0.0.5'] : ['203.0.113.1']);
      },
      addresses: () => ['10.0.0.5'],
    });
    expect(await gate.refusal('registry.example.com')).toBeUndefined();
    expect(await gate.refusal('metadata.attacker.example')).toMatch(/link-local/);
    expect(await gate.refusal('self.example:9464')).toMatch(/own listener/);
    for (const host of ['127.0.0.1:5000', '[::1]:5000', 'localhost:5000', 'docker.io', 'index.docker.io', '127.1:5000']) await gate.refusal(host);
    expect(asked).toEqual(['registry.example.com', 'metadata.attacker.example', 'self.example']);
  });

  it('takes a host listed exactly, loopback included, and nothing else when the list has no *', async () => {
    const gate = new HostRegistryGate({ listed: ['127.0.0.1:5000'], resolve: () => Promise.resolve(['203.0.113.1']), addresses: () => [] });
    expect(await gate.refusal('127.0.0.1:5000')).toBeUndefined();
    expect(await gate.refusal('nvcr.io')).toMatch(/not one this service pulls from \(--registries: 127\.0\.0\.1:5000\)/);
  });
});
