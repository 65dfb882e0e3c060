import { describe, expect, it } from 'vitest';
import { capsWarning, openFileLimit } from './file-limit.js';

describe('open-file limit', () => {
  it('reads a number (or null) from /proc/self/limits', () => {
    const limit = openFileLimit();
    expect(limit === null || (Number.isInteger(limit) && limit > 0)).toBe(true);
  });

  it('warns when the caps do not fit, naming the flags', () => {
    expect(capsWarning(65_536, [8192, 512])).toBeNull();
    expect(capsWarning(1024, [8192, 512])).toMatch(/open-file limit is 1024.*--max-connections/);
    expect(capsWarning(1_000_000, [0, 512])).toMatch(/uncapped/);
    expect(capsWarning(null, [0])).toBeNull();
  });
});
