// The WebSocket credential entry: its decoding (unpadded base64url only, one entry) and the
// subprotocol the server answers with (never the entry itself).

import { describe, expect, it } from 'vitest';
import { bearerFromProtocols, offeredProtocols, selectProtocol } from './websocket-auth.js';

const entry = (key: string) => `base64url.bearer.infergate.${Buffer.from(key).toString('base64url')}`;

describe('the key as a WebSocket subprotocol entry', () => {
  it('splits the offered list, repeated headers included', () => {
    expect(offeredProtocols(' a , b,,c ')).toEqual(['a', 'b', 'c']);
    expect(offeredProtocols(['a, b', 'c'])).toEqual(['a', 'b', 'c']);
    expect(offeredProtocols(undefined)).toEqual([]);
  });

  it('decodes unpadded base64url to the key, whatever the key length', () => {
    for (const key of ['igk_abc', 'igk_abcd', 'igk_abcde', 'igk_Zx-_09.long-key-0123456789']) {
      expect(bearerFromProtocols(`infergate.tty.v1, ${entry(key)}`)).toEqual({ kind: 'key', key });
    }
    expect(bearerFromProtocols('infergate.tty.v1')).toEqual({ kind: 'none' });
  });

  it('refuses padding, standard base64, impossible lengths, empty keys and two entries', () => {
    for (const bad of [
      'base64url.bearer.infergate.aWdrX2E=',
      'base64url.bearer.infergate.aWdr+2E',
      'base64url.bearer.infergate.aWdr/2E',
      'base64url.bearer.infergate.AAAAA',
      'base64url.bearer.infergate.',
      `${entry('igk_a')}, ${entry('igk_b')}`,
      `base64url.bearer.infergate.${Buffer.from('two words').toString('base64url')}`,
    ]) {
      expect(bearerFromProtocols(bad).kind, bad).toBe('malformed');
    }
  });

  it('never selects the credential entry; prefers infergate.tty.v1, else the first other offer', () => {
    expect(selectProtocol(new Set([entry('igk_a'), 'infergate.tty.v1']))).toBe('infergate.tty.v1');
    expect(selectProtocol(new Set([entry('igk_a'), 'other', 'infergate.tty.v1']))).toBe('infergate.tty.v1');
    expect(selectProtocol(new Set([entry('igk_a'), 'other']))).toBe('other');
    expect(selectProtocol(new Set([entry('igk_a')]))).toBe(false);
  });
});
