// The tty.v1 client frames: channel 0 keystrokes, channel 1 resizes, everything else ignored.

import { describe, expect, it } from 'vitest';
import { parseTtyFrame } from './terminal-tty.js';

describe('infergate.tty.v1 client frames', () => {
  it('reads channel 0 as keystrokes and channel 1 as a resize', () => {
    expect(parseTtyFrame('0ls -l\r')).toEqual({ kind: 'stdin', data: 'ls -l\r' });
    expect(parseTtyFrame('0\x03')).toEqual({ kind: 'stdin', data: '\x03' });
    expect(parseTtyFrame('01{"cols":1}')).toEqual({ kind: 'stdin', data: '1{"cols":1}' });
    expect(parseTtyFrame('1{"cols":120,"rows":40}')).toEqual({ kind: 'resize', size: { cols: 120, rows: 40 } });
    expect(parseTtyFrame('1{"cols":1000,"rows":1}')).toEqual({ kind: 'resize', size: { cols: 1000, rows: 1 } });
  });

  it('ignores what is malformed: unknown channels, bad JSON, sizes out of 1–1000 or not integers', () => {
    for (const bad of ['', '0', '2abc', 'ls', '1', '1{', '1null', '1[]', '1{"cols":80}', '1{"cols":0,"rows":24}', '1{"cols":80,"rows":1001}', '1{"cols":80.5,"rows":24}', '1{"cols":"80","rows":24}']) {
      expect(parseTtyFrame(bad), bad).toEqual({ kind: 'ignored' });
    }
  });
});
