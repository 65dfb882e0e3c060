// Unit tests of the Logs tab's line reader (console/src/logs/parse-line.ts): structured lines
// (pino's numeric levels, string levels, times as epoch ms, epoch seconds or ISO strings,
// msg or message) become a level, a time, a message and compact fields; anything else stays
// text. They sit here because the test runner looks in src/ and test/ only.

import { describe, expect, it } from 'vitest';
import {
  atLeast,
  clockTime,
  compactValue,
  effectiveLevel,
  FIELD_LIMIT,
  levelFromNumber,
  PARSE_LIMIT,
  parseLogLine,
  prettyRaw,
  VALUE_LIMIT,
} from '../../console/src/logs/parse-line.js';

describe('parseLogLine', () => {
  it('reads a pino line: numeric level, epoch-ms time, msg, the other fields in order without pid and hostname', () => {
    const line = JSON.stringify({ level: 30, time: 1795642751140, pid: 17316, hostname: 'h', service: 'infergate-engine', method: 'POST', path: '/v1/chat/completions', status: 200, completed: true, msg: 'POST /v1/chat/completions 200' });
    expect(parseLogLine(line)).toEqual({
      kind: 'json',
      level: 'info',
      levelLabel: 'INFO',
      time: 1795642751140,
      message: 'POST /v1/chat/completions 200',
      fields: [
        { key: 'service', value: 'infergate-engine' },
        { key: 'method', value: 'POST' },
        { key: 'path', value: '/v1/chat/completions' },
        { key: 'status', value: '200' },
        { key: 'completed', value: 'true' },
      ],
      moreFields: 0,
    });
  });

  it('maps pino numbers to levels, between two numbers the lower', () => {
    expect([10, 20, 30, 40, 50, 60].map(levelFromNumber)).toEqual(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);
    expect([0, 35, 45, 70, Number.NaN].map(levelFromNumber)).toEqual(['trace', 'info', 'warn', 'fatal', 'trace']);
  });

  it('reads string levels in any case, with their synonyms; an unknown one is kept as its label', () => {
    const level = (l: unknown) => {
      const p = parseLogLine(JSON.stringify({ level: l, msg: 'x' }));
      return [p.level, p.levelLabel];
    };
    expect(level('info')).toEqual(['info', 'INFO']);
    expect(level('WARNING')).toEqual(['warn', 'WARN']);
    expect(level('Error')).toEqual(['error', 'ERROR']);
    expect(level('critical')).toEqual(['fatal', 'FATAL']);
    expect(level('verbose')).toEqual([null, 'VERBOSE']);
    expect(level('')).toEqual([null, null]);
    // Other spellings of the key: severity (GCP), levelname (Python).
    expect(parseLogLine('{"severity":"WARNING","message":"m"}').level).toBe('warn');
    expect(parseLogLine('{"levelname":"DEBUG","message":"m"}').level).toBe('debug');
  });

  it('reads the time as epoch ms, epoch seconds (zap) or an ISO string, under time, timestamp, ts or @timestamp', () => {
    const iso = '2026-11-25T21:39:11.140Z';
    const ms = Date.parse(iso);
    expect(parseLogLine(JSON.stringify({ time: ms, msg: 'a' })).time).toBe(ms);
    expect(parseLogLine(JSON.stringify({ ts: ms / 1000, msg: 'a' })).time).toBe(ms);
    expect(parseLogLine(JSON.stringify({ timestamp: iso, msg: 'a' })).time).toBe(ms);
    expect(parseLogLine(JSON.stringify({ '@timestamp': iso, msg: 'a' })).time).toBe(ms);
    expect(parseLogLine(JSON.stringify({ time: String(ms), msg: 'a' })).time).toBe(ms);
  });

  it('keeps a time or level it cannot read among the fields, so nothing is hidden', () => {
    const p = parseLogLine(JSON.stringify({ level: true, time: 'yesterday', msg: 'x' }));
    expect([p.level, p.time]).toEqual([null, null]);
    expect(p.fields).toEqual([
      { key: 'level', value: 'true' },
      { key: 'time', value: 'yesterday' },
    ]);
  });

  it('takes message when there is no msg, and shows a non-string message as text', () => {
    expect(parseLogLine('{"message":"from python"}').message).toBe('from python');
    expect(parseLogLine('{"msg":42}').message).toBe('42');
    expect(parseLogLine('{"msg":{"a":1}}').message).toBe('{"a":1}');
    expect(parseLogLine('{"msg":null}').message).toBe('null');
  });

  it('reads a JSON object with none of the usual keys as fields only', () => {
    expect(parseLogLine('{"a":1,"b":"two words"}')).toMatchObject({ kind: 'json', level: null, time: null, message: '', fields: [{ key: 'a', value: '1' }, { key: 'b', value: '"two words"' }] });
    expect(parseLogLine('{}')).toMatchObject({ kind: 'json', message: '', fields: [] });
  });

  it('leaves every other line as text: plain words, invalid JSON, arrays, scalars, a cut JSON line', () => {
    for (const line of ['started process 17316 on port 33277', '{"level":30,', '{not json}', '[1,2,3]', '"a string"', '42', 'null', '', '{"level":30,"msg":"cut"…']) {
      const p = parseLogLine(line);
      expect(p).toEqual({ kind: 'text', level: null, levelLabel: null, time: null, message: line, fields: [], moreFields: 0 });
    }
  });

  it('keeps markup as text: the parser never interprets it', () => {
    const xss = '<img src=x onerror=alert(1)>';
    expect(parseLogLine(xss).message).toBe(xss);
    expect(parseLogLine(JSON.stringify({ level: 50, msg: xss, note: xss })).message).toBe(xss);
  });

  it('reads a leading level word of a text line for the filter, without making it a JSON line', () => {
    expect(parseLogLine('INFO 11-25 21:39:05 api_server.py:123] vLLM API server').level).toBe('info');
    expect(parseLogLine('INFO:     Uvicorn running on http://0.0.0.0:8000').level).toBe('info');
    expect(parseLogLine('[error] upstream closed').level).toBe('error');
    expect(parseLogLine('WARNING: low memory').level).toBe('warn');
    expect(parseLogLine('level=warn msg="slow"').level).toBe('warn');
    expect(parseLogLine('panic: runtime error').level).toBe('fatal');
    expect(parseLogLine('Informative text').level).toBeNull();
    expect(parseLogLine('readiness probe passed: ready').level).toBeNull();
    expect(parseLogLine('INFO 11-25 x').kind).toBe('text');
  });

  it('does not parse a huge line, and cuts long field values and long field lists', () => {
    const huge = JSON.stringify({ level: 30, msg: 'x', blob: 'a'.repeat(PARSE_LIMIT) });
    expect(parseLogLine(huge)).toMatchObject({ kind: 'text', message: huge });
    const long = parseLogLine(JSON.stringify({ msg: 'x', blob: 'b'.repeat(1000) }));
    expect(long.fields[0]?.value).toBe(`${'b'.repeat(VALUE_LIMIT)}…`);
    const wide = parseLogLine(JSON.stringify(Object.fromEntries(Array.from({ length: FIELD_LIMIT + 5 }, (_, i) => [`k${i}`, i]))));
    expect([wide.fields.length, wide.moreFields]).toEqual([FIELD_LIMIT, 5]);
  });

  it('tolerates whitespace around a JSON line and keeps its message', () => {
    expect(parseLogLine('  {"level":"info","msg":"padded"}  ')).toMatchObject({ kind: 'json', level: 'info', message: 'padded' });
  });
});

describe('compactValue', () => {
  it('shows simple strings bare, strings with spaces, quotes or = quoted, objects as JSON and errors by type and message', () => {
    expect(compactValue('chat-r1-1')).toBe('chat-r1-1');
    expect(compactValue('two words')).toBe('"two words"');
    expect(compactValue('a=b')).toBe('"a=b"');
    expect(compactValue('')).toBe('""');
    expect(compactValue(null)).toBe('null');
    expect(compactValue([1, 'a'])).toBe('[1,"a"]');
    expect(compactValue({ nested: { x: 1 } })).toBe('{"nested":{"x":1}}');
    expect(compactValue({ type: 'TypeError', message: 'x is undefined', stack: 'TypeError: x is undefined\n    at f' })).toBe('"TypeError: x is undefined"');
  });
});

describe('levels, time and raw text', () => {
  it('counts a line with no level as info, or a warning on stderr', () => {
    expect(effectiveLevel(parseLogLine('plain'), 'stdout')).toBe('info');
    expect(effectiveLevel(parseLogLine('plain'), 'stderr')).toBe('warn');
    expect(effectiveLevel(parseLogLine('{"level":50,"msg":"x"}'), 'stdout')).toBe('error');
    expect(atLeast('error', 'warn')).toBe(true);
    expect(atLeast('info', 'warn')).toBe(false);
  });

  it('formats a clock time to the millisecond', () => {
    const ms = new Date(2026, 10, 25, 9, 5, 7, 42).getTime();
    expect(clockTime(ms)).toBe('09:05:07.042');
    expect(clockTime(Number.NaN)).toBe('');
  });

  it('pretty-prints a JSON line and leaves text alone', () => {
    expect(prettyRaw('{"a":1}')).toBe('{\n  "a": 1\n}');
    expect(prettyRaw('plain {')).toBe('plain {');
  });
});
