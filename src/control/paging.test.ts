// Pages and continue tokens: ids in order after the token's, the token only while more
// remain, and every token that was not made for this list refused naming `continue`.

import { describe, expect, it } from 'vitest';
import { PlatformError } from '../core/errors.js';
import { decodeContinue, encodeContinue, pageOf } from './paging.js';

const ids = [2, 3, 5, 8, 13, 21, 34];

const refusal = (fn: () => unknown): PlatformError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof PlatformError) return err;
    throw err;
  }
  throw new Error('not refused');
};

describe('pageOf', () => {
  it('answers everything without a limit, and no token', () => {
    expect(pageOf(ids, {}, 'x')).toEqual({ ids });
  });

  it('walks the ids in pages, with a token and the count behind each page but the last', () => {
    const first = pageOf(ids, { limit: 3 }, 'x');
    expect(first).toMatchObject({ ids: [2, 3, 5], remaining_item_count: 4 });
    const second = pageOf(ids, { limit: 3, continue: first.continue! }, 'x');
    expect(second).toMatchObject({ ids: [8, 13, 21], remaining_item_count: 1 });
    const last = pageOf(ids, { limit: 3, continue: second.continue! }, 'x');
    expect(last).toEqual({ ids: [34] });
  });

  it('gives no token when the page ends exactly at the last id', () => {
    expect(pageOf(ids, { limit: 7 }, 'x')).toEqual({ ids });
  });

  it('continues after the token’s id even when that id is gone, and shows ids added at the end once', () => {
    const first = pageOf(ids, { limit: 2 }, 'x'); // [2, 3]
    const after = pageOf([2, 5, 8, 40], { limit: 10, continue: first.continue! }, 'x');
    expect(after).toEqual({ ids: [5, 8, 40] });
  });

  it('with a token and no limit answers everything after it', () => {
    expect(pageOf(ids, { continue: encodeContinue('x', 8) }, 'x')).toEqual({ ids: [13, 21, 34] });
  });
});

describe('continue tokens', () => {
  it('are opaque base64url and come back to the id they were made with', () => {
    const token = encodeContinue('deployments/general', 1234);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(token).not.toContain('1234');
    expect(decodeContinue('deployments/general', token)).toBe(1234);
  });

  it('are refused, naming continue, when edited, cut, made up or made for another list', () => {
    const token = encodeContinue('deployments/general', 42);
    const forged = Buffer.from(Buffer.from(token, 'base64url').toString().replace('.42.', '.43.')).toString('base64url');
    const bad = [
      forged,
      token.slice(0, -2),
      'not a token',
      'AAAA',
      Buffer.from('v1.deployments/general.42').toString('base64url'),
      encodeContinue('vault/tokens', 42),
      encodeContinue('deployments/orchestrated', 42),
    ];
    for (const candidate of bad) {
      const err = refusal(() => decodeContinue('deployments/general', candidate));
      expect(err.code, candidate).toBe('invalid_field');
      expect(err.field).toBe('continue');
      expect(err.status).toBe(400);
    }
  });
});
