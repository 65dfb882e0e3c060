// Table test of the AGE column's format: one unit, rounded down, kubectl's way.

import { describe, expect, it } from 'vitest';
import { age } from './age.js';

const NOW = Date.parse('2026-11-25T12:00:00.000Z');
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString();

describe('age', () => {
  const cases: [string, string | null | undefined, string][] = [
    ['a moment ago', ago(0), '0s'],
    ['45 seconds', ago(45), '45s'],
    ['59.9 seconds, rounded down', new Date(NOW - 59_900).toISOString(), '59s'],
    ['one minute', ago(60), '1m'],
    ['12 minutes and a half', ago(12 * 60 + 30), '12m'],
    ['59 minutes', ago(59 * 60 + 59), '59m'],
    ['3 hours', ago(3 * 3600 + 1200), '3h'],
    ['23 hours', ago(23 * 3600 + 3599), '23h'],
    ['5 days', ago(5 * 86400 + 7200), '5d'],
    ['400 days', ago(400 * 86400), '400d'],
    ['a few seconds ahead of this clock (server clock ahead)', ago(-3), '0s'],
    ['no time', null, '-'],
    ['an unreadable time', 'yesterday', '-'],
  ];
  for (const [what, since, expected] of cases) {
    it(`${what}: ${expected}`, () => expect(age(since, NOW)).toBe(expected));
  }
});
