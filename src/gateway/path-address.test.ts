// Table tests of the path address: which Host headers may carry one, how the target splits
// into a name and the replica's path, and the encoded, dotted and doubled shapes refused.

import { describe, expect, it } from 'vitest';
import { hostName, isPathHost, parsePathAddress } from './path-address.js';

describe('isPathHost', () => {
  it.each([
    ['localhost', true],
    ['LOCALHOST:8443', true],
    ['127.0.0.1', true],
    ['127.0.0.1:8443', true],
    ['10.1.2.3:443', true],
    ['[::1]:8443', true],
    ['[::1]', true],
    ['[2001:db8::7]:443', true],
    ['endpoints.test', true],
    ['Endpoints.Test:8443', true],
    // A deployment's host, another domain's, or a name under the domain: never.
    ['chat.endpoints.test', false],
    ['chat.endpoints.test:8443', false],
    ['example.com', false],
    ['localhost.example.com', false],
    ['127.0.0.1.nip.io', false],
    ['test', false],
  ])('%s → %s (domain endpoints.test)', (host, expected) => {
    expect(isPathHost(host, 'endpoints.test')).toBe(expected);
  });

  it('strips the port and the IPv6 brackets, and lowercases', () => {
    expect(hostName('[::1]:8443')).toBe('::1');
    expect(hostName('LocalHost:443')).toBe('localhost');
    expect(hostName('::1')).toBe('::1');
  });
});

describe('parsePathAddress', () => {
  it.each([
    ['/endpoints/chat/v1/chat/completions', 'chat', '/v1/chat/completions'],
    ['/endpoints/chat/v1/models?limit=2', 'chat', '/v1/models?limit=2'],
    ['/endpoints/chat', 'chat', '/'],
    ['/endpoints/chat/', 'chat', '/'],
    ['/endpoints/chat?x=1', 'chat', '/?x=1'],
    ['/endpoints/a-2/v1', 'a-2', '/v1'],
    // The rest is forwarded as sent: a doubled slash after the name stays the replica's to read.
    ['/endpoints/chat//v1/models', 'chat', '//v1/models'],
    // A query is not a path: dots there are data.
    ['/endpoints/chat/v1?next=../x', 'chat', '/v1?next=../x'],
  ])('%s → %s, %s', (target, name, path) => {
    expect(parsePathAddress(target)).toEqual({ ok: true, name, project: 'default', path });
  });

  it.each([
    ['/endpoints/chat.team-a/v1/chat/completions', 'chat', 'team-a', '/v1/chat/completions'],
    ['/endpoints/chat.team-a', 'chat', 'team-a', '/'],
    ['/endpoints/chat.team-a?x=1', 'chat', 'team-a', '/?x=1'],
    // The default project may be named: the same deployment as `/endpoints/chat/`.
    ['/endpoints/chat.default/v1/models', 'chat', 'default', '/v1/models'],
    // A tag's label in another project.
    ['/endpoints/canary-chat.team-a/v1', 'canary-chat', 'team-a', '/v1'],
  ])('%s → %s of project %s, %s', (target, name, project, path) => {
    expect(parsePathAddress(target)).toEqual({ ok: true, name, project, path });
  });

  it.each(['/v1/models', '/', '/endpointsx/chat/v1', '/Endpoints/chat/v1', '//endpoints/chat/v1', '/x/../endpoints/chat/v1'])('%s is no path address', (target) => {
    expect(parsePathAddress(target)).toBeNull();
  });

  it.each([
    ['/endpoints', /name the endpoint/],
    ['/endpoints/', /name the endpoint/],
    ['/endpoints//chat/v1', /name the endpoint/],
    // Never decoded: %63hat is not chat, and %2f never splits a name.
    ['/endpoints/%63hat/v1/models', /"%63hat" is not an endpoint name/],
    ['/endpoints/a%2fb/v1', /is not an endpoint name/],
    ['/endpoints/Chat/v1', /"Chat" is not an endpoint name/],
    // A project after the name, once: no empty part, no second dot, no capitals, never encoded.
    ['/endpoints/chat./v1', /"chat\." is not an endpoint name/],
    ['/endpoints/.team-a/v1', /is not an endpoint name/],
    ['/endpoints/chat.team-a.x/v1', /is not an endpoint name/],
    ['/endpoints/chat..team-a/v1', /is not an endpoint name/],
    ['/endpoints/chat.Team-A/v1', /is not an endpoint name/],
    ['/endpoints/chat%2eteam-a/v1', /is not an endpoint name/],
    ['/endpoints/../chat/v1', /"\.\." is not an endpoint name/],
    ['/endpoints/./chat/v1', /is not an endpoint name/],
    ['/endpoints/chat\\..\\other/v1', /is not an endpoint name/],
    // Dot segments after the name, however spelt: a hop that resolves them reaches another deployment.
    ['/endpoints/a/../b/v1/models', /"\." or "\.\." segment/],
    ['/endpoints/a/./v1/models', /segment/],
    ['/endpoints/a/%2e%2E/b/v1', /segment/],
    ['/endpoints/a/.%2e/b/v1', /segment/],
    ['/endpoints/a/v1/..', /segment/],
    ['/endpoints/a/v1\\..\\..\\b', /segment/],
    ['/endpoints/a/v1%2f..%2fb', /segment/],
    ['/endpoints/a/v1%5C..%5Cb', /segment/],
  ])('%s is refused', (target, message) => {
    const r = parsePathAddress(target);
    expect(r?.ok).toBe(false);
    expect(r && !r.ok ? r.message : '').toMatch(message);
  });

  it('quotes at most 64 characters of what was sent', () => {
    const r = parsePathAddress(`/endpoints/${'X'.repeat(5000)}/v1`);
    expect(r && !r.ok ? r.message.length : Infinity).toBeLessThan(300);
  });
});
