// Owns reading one log line for the Logs tab, as a pure function: a line holding a JSON object
// (pino, bunyan, zap, Python's structured loggers) becomes a level, a time, a message and the
// remaining fields as compact key=value text; any other line stays text, with at most a level
// read from a leading word ("INFO ", "[error]", "WARNING:") for the level filter. Nothing here
// produces markup: the tab renders every part as text. No imports: the root tsconfig (NodeNext)
// type-checks the unit test that imports this.

export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

export const LEVELS: readonly Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

export interface ParsedLine {
  /** `json`: the line was a JSON object; `text`: anything else, shown as it is. */
  kind: 'json' | 'text';
  /** The severity, normalised; null when the line gives none (or one not understood). */
  level: Level | null;
  /** What the line calls its level, for the badge: "INFO", or an unknown string as given ("NOTICE"). */
  levelLabel: string | null;
  /** The line's own time in epoch milliseconds; null when it has none that can be read. */
  time: number | null;
  /** The message (`msg`/`message`), or the whole line for text. */
  message: string;
  /** The other fields of a JSON line, in their order, values as compact text. */
  fields: Array<{ key: string; value: string }>;
  /** Fields left out of `fields` beyond FIELD_LIMIT. */
  moreFields: number;
}

/** Lines longer than this are not parsed: shown as text (the runtime cuts lines at 16 KiB anyway). */
export const PARSE_LIMIT = 64 * 1024;
/** A field's value is cut to this many characters; the raw line keeps all of it. */
export const VALUE_LIMIT = 160;
/** At most this many fields are listed per line. */
export const FIELD_LIMIT = 30;

const LEVEL_KEYS = ['level', 'lvl', 'severity', 'levelname'];
const TIME_KEYS = ['time', 'timestamp', 'ts', '@timestamp'];
const MESSAGE_KEYS = ['msg', 'message'];
/** pino's process fields, which pino-pretty leaves out too: the replica column already says where a line came from. */
const QUIET_KEYS = new Set(['pid', 'hostname', 'v']);

const LEVEL_WORDS: Record<string, Level> = {
  trace: 'trace',
  debug: 'debug',
  dbg: 'debug',
  info: 'info',
  information: 'info',
  notice: 'info',
  warn: 'warn',
  warning: 'warn',
  error: 'error',
  err: 'error',
  fatal: 'fatal',
  critical: 'fatal',
  crit: 'fatal',
  panic: 'fatal',
  emerg: 'fatal',
  emergency: 'fatal',
  alert: 'fatal',
};

/** pino's numbers (10 trace … 60 fatal); between two, the lower; below 10 trace, above 60 fatal. */
export function levelFromNumber(n: number): Level {
  if (!Number.isFinite(n) || n < 20) return 'trace';
  if (n < 30) return 'debug';
  if (n < 40) return 'info';
  if (n < 50) return 'warn';
  if (n < 60) return 'error';
  return 'fatal';
}

function readLevel(value: unknown): { level: Level | null; label: string } | null {
  if (typeof value === 'number') {
    const level = levelFromNumber(value);
    return { level, label: level.toUpperCase() };
  }
  if (typeof value !== 'string' || value.trim() === '') return null;
  const word = value.trim();
  const level = LEVEL_WORDS[word.toLowerCase()] ?? null;
  // A level not understood is still shown, as the line wrote it (cut: it is a badge).
  return { level, label: level ? level.toUpperCase() : word.slice(0, 12).toUpperCase() };
}

/** Epoch seconds (zap, Python) read as such: anything below 1e11 cannot be milliseconds of a real date. */
function readTime(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value < 1e11 ? Math.round(value * 1000) : Math.round(value);
  if (typeof value === 'string' && value.trim() !== '') {
    const t = value.trim();
    if (/^\d+(\.\d+)?$/.test(t)) return readTime(Number(t));
    const ms = Date.parse(t);
    return Number.isNaN(ms) ? null : ms;
  }
  return null;
}

const cut = (s: string, limit: number): string => (s.length > limit ? `${s.slice(0, limit)}…` : s);

/** pino serialises errors as {type, message, stack}: "Error: message" says it; the stack is in the raw line. */
function errorText(value: Record<string, unknown>): string | null {
  if (typeof value.message !== 'string' || (typeof value.type !== 'string' && typeof value.stack !== 'string')) return null;
  return `${typeof value.type === 'string' ? value.type : 'Error'}: ${value.message}`;
}

/** A value as key=value shows it: bare when it reads unambiguously, quoted when it holds spaces or quotes, JSON for the rest. */
export function compactValue(value: unknown): string {
  if (typeof value === 'string') return cut(value === '' || /[\s"=]/.test(value) ? JSON.stringify(value) : value, VALUE_LIMIT);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (typeof value === 'object') {
    const err = Array.isArray(value) ? null : errorText(value as Record<string, unknown>);
    if (err !== null) return cut(JSON.stringify(err), VALUE_LIMIT);
    return cut(JSON.stringify(value), VALUE_LIMIT);
  }
  return String(value);
}

/** A message that is not a string (a number, an object) is still the message, as compact text. */
function messageText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

const pick = (obj: Record<string, unknown>, keys: readonly string[]): string | undefined => keys.find((k) => Object.hasOwn(obj, k));

/** A leading level word of a text line: "INFO 11-25 …" (vLLM), "INFO:     Started" (uvicorn), "[error] …", "level=warn …". */
const LEADING_LEVEL = /^\s*(?:level=)?[[(<]?([A-Za-z]{3,11})[\])>]?(?=[\s:|]|$)/;

function textLine(line: string): ParsedLine {
  const word = LEADING_LEVEL.exec(line.slice(0, 40))?.[1];
  const level = word ? (LEVEL_WORDS[word.toLowerCase()] ?? null) : null;
  return { kind: 'text', level, levelLabel: null, time: null, message: line, fields: [], moreFields: 0 };
}

export function parseLogLine(line: string): ParsedLine {
  const trimmed = line.trim();
  if (!trimmed.startsWith('{') || !trimmed.endsWith('}') || line.length > PARSE_LIMIT) return textLine(line);
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return textLine(line);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return textLine(line);
  const obj = value as Record<string, unknown>;

  const levelKey = pick(obj, LEVEL_KEYS);
  const level = levelKey === undefined ? null : readLevel(obj[levelKey]);
  const timeKey = pick(obj, TIME_KEYS);
  const time = timeKey === undefined ? null : readTime(obj[timeKey]);
  const messageKey = pick(obj, MESSAGE_KEYS);

  // A key whose value was not understood stays among the fields, so nothing of the line is hidden.
  const used = new Set<string>();
  if (levelKey !== undefined && level !== null) used.add(levelKey);
  if (timeKey !== undefined && time !== null) used.add(timeKey);
  if (messageKey !== undefined) used.add(messageKey);
  const rest = Object.keys(obj).filter((k) => !used.has(k) && !QUIET_KEYS.has(k));
  return {
    kind: 'json',
    level: level?.level ?? null,
    levelLabel: level?.label ?? null,
    time,
    message: messageKey === undefined ? '' : messageText(obj[messageKey]),
    fields: rest.slice(0, FIELD_LIMIT).map((key) => ({ key, value: compactValue(obj[key]) })),
    moreFields: Math.max(0, rest.length - FIELD_LIMIT),
  };
}

/**
 * The level a line counts as for the level filter: its own, else — for a line that gives
 * none — a warning when written to stderr and info otherwise.
 */
export function effectiveLevel(parsed: ParsedLine, stream: string): Level {
  return parsed.level ?? (stream === 'stderr' ? 'warn' : 'info');
}

export const atLeast = (level: Level, min: Level): boolean => LEVELS.indexOf(level) >= LEVELS.indexOf(min);

/** A clock time as a log reader wants it: local hours to milliseconds (the title carries the full date). */
export function clockTime(ms: number): string {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return '';
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/** The line pretty-printed when it is JSON (for the expanded view), else as it is. */
export function prettyRaw(line: string): string {
  if (line.length > PARSE_LIMIT) return line;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null ? JSON.stringify(value, null, 2) : line;
  } catch {
    return line;
  }
}
