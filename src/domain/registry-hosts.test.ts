import { describe, expect, it } from 'vitest';
import { DEFAULT_IMAGE_MAP } from './image-map.js';
import {
  addressKind,
  canonicalAddress,
  credentialHostProblem,
  normaliseRegistryHost,
  parseRegistryList,
  pulledFromRegistry,
  registryHostOf,
  registryHostProblem,
  registryMove,
  registryOf,
  registryRefusal,
  type RegistryFacts,
} from './registry-hosts.js';

describe('the registry host of an image', () => {
  it.each([
    ['127.0.0.1:5000/team/engine', '127.0.0.1:5000', '127.0.0.1:5000'],
    ['nvcr.io/nim/meta/llama', 'nvcr.io', 'nvcr.io'],
    ['localhost/x', 'localhost', 'localhost'],
    ['Registry.Example.COM:5000/x', 'Registry.Example.COM:5000', 'registry.example.com:5000'],
    ['[::1]:5000/x', '[::1]:5000', '[::1]:5000'],
    // Docker Hub under every name, and its short names, is one host.
    ['vllm/vllm-openai', null, 'docker.io'],
    ['ubuntu', null, 'docker.io'],
    ['docker.io/library/ubuntu', 'docker.io', 'docker.io'],
    ['index.docker.io/library/ubuntu', 'index.docker.io', 'docker.io'],
    ['registry-1.docker.io/vllm/vllm-openai', 'registry-1.docker.io', 'docker.io'],
    // A first component without a dot or a port is a Docker Hub namespace, not a registry.
    ['myregistry/team/engine', null, 'docker.io'],
  ])('%s: registry part %s, host %s', (image, part, host) => {
    expect(registryOf(image)).toBe(part);
    expect(registryHostOf(image)).toBe(host);
  });

  it('normalises Docker Hub names and case', () => {
    expect(normaliseRegistryHost('INDEX.DOCKER.IO')).toBe('docker.io');
    expect(normaliseRegistryHost('Nvcr.io')).toBe('nvcr.io');
  });

  it("is pulled for every image but infergate's own engine and Frontend", () => {
    expect(pulledFromRegistry(DEFAULT_IMAGE_MAP, 'infergate/reference-engine', 'openai')).toBe(false);
    expect(pulledFromRegistry(DEFAULT_IMAGE_MAP, 'infergate/frontend', 'latest')).toBe(false);
    expect(pulledFromRegistry(DEFAULT_IMAGE_MAP, 'vllm/vllm-openai', 'latest')).toBe(true);
    expect(pulledFromRegistry(DEFAULT_IMAGE_MAP, '127.0.0.1:5000/team/engine', 'v1')).toBe(true);
  });
});

describe('the form of a registry host', () => {
  it.each(['nvcr.io', 'registry.example.com:5000', '127.0.0.1:5000', 'localhost', 'localhost:5000', '[::1]:5000', '[fe80::1]', 'docker.io', 'my-host:80'])('%s is one', (host) => {
    expect(registryHostProblem(host)).toBeUndefined();
  });

  it.each([
    ['', /registry is required/],
    ['https://nvcr.io', /without a scheme or a path/],
    ['nvcr.io/nim', /without a scheme or a path/],
    ['user@nvcr.io', /without a scheme or a path/],
    ['has space.io', /without a scheme or a path/],
    ['nvcr.io:0', /no valid port/],
    ['nvcr.io:70000', /no valid port/],
    ['nvcr.io:http', /no valid port/],
    ['[::zz]:5000', /not an IPv6 address/],
    ['-bad.example.com', /host\[:port\]/],
    // Numbers a resolver reads as an address (127.0.0.1) are refused unless a dotted quad.
    ['127.1:5000', /four decimal numbers/],
    ['2130706433:5000', /four decimal numbers/],
    ['0x7f.0.0.1', /four decimal numbers/],
    ['256.1.1.1', /four decimal numbers/],
    // Docker would read a bare name as a Docker Hub namespace.
    ['myregistry', /Docker Hub namespace/],
  ])('%s is refused', (host, message) => {
    expect(registryHostProblem(host)).toMatch(message);
  });

  it('names the field it checks', () => {
    expect(registryHostProblem('a b', '--registries entry "a b"')).toMatch(/^--registries entry "a b" must be/);
  });
});

describe('addresses', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['::ffff:169.254.1.1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.1.2.3', 'other'],
    ['172.17.0.1', 'other'],
    ['fec0::1', 'other'],
    ['2001:db8::1', 'other'],
    ['registry.example.com', 'other'],
  ])('%s is %s', (address, kind) => {
    expect(addressKind(address)).toBe(kind);
  });

  it('compares addresses in one spelling', () => {
    expect(canonicalAddress('::FFFF:10.0.0.5')).toBe('10.0.0.5');
    expect(canonicalAddress('fe80:0:0::1')).toBe(canonicalAddress('fe80::1'));
    expect(canonicalAddress('10.0.0.5')).toBe('10.0.0.5');
  });
});

describe('--registries', () => {
  it('reads entries, normalised, with * for any public host; empty is empty', () => {
    expect(parseRegistryList('')).toEqual({ list: [] });
    expect(parseRegistryList(' 127.0.0.1:5000 , Index.Docker.IO,*,127.0.0.1:5000')).toEqual({ list: ['127.0.0.1:5000', 'docker.io', '*'] });
  });

  it('refuses an entry that is not a host, naming it', () => {
    expect(parseRegistryList('nvcr.io,http://x.example')).toEqual({ problem: expect.stringMatching(/^--registries entry "http:\/\/x\.example" must be .* or \* for any host/) });
  });
});

describe('which hosts the daemon may be sent to', () => {
  const own = { addresses: new Set(['127.0.0.1', '10.0.0.5', '::1']), ports: new Set([443, 8080, 9464]) };
  const facts = (resolved: string[] = []): RegistryFacts => ({ resolved, own });

  it.each([
    // host, listed, resolved, refused (a pattern) or allowed (undefined)
    ['nvcr.io', [], ['203.0.113.7'], undefined],
    ['docker.io', [], [], undefined],
    ['registry.example.com:5000', ['*'], ['198.51.100.1'], undefined],
    // Loopback, link-local and unspecified hosts, by address, by name, or by what the name resolves to.
    ['127.0.0.1:19555', [], [], /is this host \(loopback\).*--registries/],
    ['127.9.9.9:5000', [], [], /loopback/],
    ['[::1]:5000', [], [], /loopback/],
    ['localhost:5000', [], [], /loopback/],
    ['0.0.0.0:5000', [], [], /loopback/],
    ['169.254.169.254', [], [], /link-local/],
    ['[fe80::1]:5000', [], [], /link-local/],
    ['localtest.example:5000', [], ['127.0.0.1'], /loopback/],
    ['rebind.example:5000', ['*'], ['203.0.113.9', '169.254.169.254'], /link-local/],
    // Listed exactly: taken, loopback included; another port or spelling is not the same host.
    ['127.0.0.1:19555', ['127.0.0.1:19555'], [], undefined],
    ['127.0.0.1:19556', ['127.0.0.1:19555', '*'], [], /loopback/],
    ['localhost:19555', ['127.0.0.1:19555'], [], /not one this service pulls from \(--registries: 127\.0\.0\.1:19555\)/],
    // A list without * takes nothing else, Docker Hub included.
    ['nvcr.io', ['127.0.0.1:5000'], ['203.0.113.7'], /not one this service pulls from/],
    ['docker.io', ['127.0.0.1:5000'], [], /not one this service pulls from/],
    ['docker.io', ['127.0.0.1:5000', 'docker.io'], [], undefined],
    ['index.docker.io', ['docker.io'], [], undefined],
    // This service's own listeners: never, even when listed; no port means 443 and 80.
    ['127.0.0.1:9464', ['127.0.0.1:9464'], [], /this service's own listener \(port 9464/],
    ['10.0.0.5:8080', ['*'], [], /own listener \(port 8080/],
    ['10.0.0.5', ['*'], [], /own listener \(port 443/],
    ['gateway.example', ['*'], ['10.0.0.5'], /own listener \(port 443/],
    ['10.0.0.5:5000', ['*'], [], undefined],
    // An image's registry part that is not a host is refused too.
    ['127.1:9464', ['*'], [], /four decimal numbers/],
  ] as const)('%s with --registries %j (resolving to %j)', (host, listed, resolved, refused) => {
    const answer = registryRefusal(host, listed, facts([...resolved]));
    if (refused === undefined) expect(answer).toBeUndefined();
    else expect(answer).toMatch(refused);
  });
});

describe('vault credentials and the host they are bound to', () => {
  const team = { id: 3, name: 'team', registry: 'registry.example.com:5000' };

  it('may be used only for an image pulled from that host', () => {
    expect(credentialHostProblem(team, 'registry.example.com:5000/team/engine')).toBeUndefined();
    expect(credentialHostProblem(team, 'Registry.Example.com:5000/team/engine')).toBeUndefined();
    expect(credentialHostProblem(team, '127.0.0.1:19555/corp/engine')).toMatch(
      /^registry_credential_id 3 \("team"\) is for the registry registry\.example\.com:5000, and image 127\.0\.0\.1:19555\/corp\/engine is pulled from 127\.0\.0\.1:19555/,
    );
    expect(credentialHostProblem({ id: 4, name: 'hub', registry: 'docker.io' }, 'vllm/vllm-openai')).toBeUndefined();
  });

  it('one bound to no host is not used until an admin binds it', () => {
    expect(credentialHostProblem({ id: 5, name: 'old', registry: null }, 'registry.example.com:5000/x')).toMatch(/bound to no registry host.*an admin must bind it \(PATCH \/vault\/registry-credentials\/5/);
  });
});

describe('a clone or PATCH that moves the image to another registry host', () => {
  const own = { registry_username: 'bob', has_registry_password: true, registry_credential_id: null };
  const vault = { registry_username: null, has_registry_password: false, registry_credential_id: 7 };
  const none = { registry_username: null, has_registry_password: false, registry_credential_id: null };

  it('keeps the credentials when the host stays', () => {
    expect(registryMove('a.example/x', 'a.example/y', own, { image: 'a.example/y' })).toEqual({ moved: null });
    expect(registryMove('ubuntu', 'docker.io/library/ubuntu', own, {})).toEqual({ moved: null });
  });

  it('drops them, and asks for new ones or null when the request names none', () => {
    const move = registryMove('a.example/x', 'b.example/x', own, { image: 'b.example/x' });
    expect(move).toMatchObject({ moved: { from: 'a.example', to: 'b.example' }, dropped: ['registry_username', 'registry_password'] });
    if (move.moved === null) throw new Error('moved');
    expect(move.problems.map((p) => p.field)).toEqual(['registry_username', 'registry_password']);
    expect(move.problems[0]?.message).toBe(
      "the image moves from the registry a.example to b.example, and the credentials of a.example (registry_username and registry_password) are not sent to b.example: give b.example's (registry_credential_id, or registry_username and registry_password), or set registry_username and registry_password to null to pull without",
    );
    const fromVault = registryMove('a.example/x', '127.0.0.1:9/x', vault, {});
    expect(fromVault.moved === null ? [] : fromVault.problems.map((p) => p.field)).toEqual(['registry_credential_id']);
  });

  it('drops them without a word when the request gives credentials again or null', () => {
    for (const body of [{ registry_username: null, registry_password: null }, { registry_credential_id: 2 }, { registry_username: 'b', registry_password: 'p' }]) {
      expect(registryMove('a.example/x', 'b.example/x', own, body)).toMatchObject({ dropped: ['registry_username', 'registry_password'], problems: [] });
    }
  });

  it('has nothing to drop when nothing was held', () => {
    expect(registryMove('a.example/x', 'b.example/x', none, {})).toMatchObject({ dropped: [], problems: [] });
  });
});
