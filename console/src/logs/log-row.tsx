// Owns how one log line looks in the Logs tab: its time, the replica that wrote it, then for a
// structured line a level badge (a word and a colour), the message and the other fields as
// dimmed key=value, with a "raw" button that unfolds the line as it was written (pretty-printed
// JSON); a line that is not JSON, or every line in raw mode, is shown exactly as written. All
// of it is text: React escapes whatever the line holds.

import { memo } from 'react';
import type { LogLine } from '../api/types';
import { clockTime, prettyRaw, type ParsedLine } from './parse-line';

export interface LogEntry {
  /** Arrival order: the row's key, stable while older lines drop out of the window. */
  seq: number;
  raw: LogLine;
  parsed: ParsedLine;
}

function When({ entry, raw }: { entry: LogEntry; raw: boolean }) {
  const received = Date.parse(entry.raw.time);
  // The line's own time when it gives one; the time the runtime read it otherwise (and in raw mode).
  const ms = !raw && entry.parsed.time !== null ? entry.parsed.time : received;
  const iso = Number.isNaN(ms) ? entry.raw.time : new Date(ms).toISOString();
  return (
    <span className="ts" title={iso}>
      {clockTime(ms) || entry.raw.time}
    </span>
  );
}

export const LogRow = memo(function LogRow({ entry, raw, expanded, onToggle }: { entry: LogEntry; raw: boolean; expanded: boolean; onToggle: (seq: number) => void }) {
  const { parsed } = entry;
  const structured = parsed.kind === 'json' && !raw;
  // The replica column says it already (pino's base fields carry it on every line of the engine).
  const fields = parsed.fields.filter((f) => !(f.key === 'replica' && f.value === entry.raw.replica));
  return (
    <div className={`log-line ${entry.raw.stream}${structured ? ' structured' : ''}`} data-kind={parsed.kind} data-level={parsed.level ?? undefined}>
      <When entry={entry} raw={raw} />
      <span className="replica">{entry.raw.replica}</span>
      {structured ? (
        <>
          <span className={`level level-${parsed.level ?? 'other'}`}>{parsed.levelLabel ?? ''}</span>
          <span className="body">
            <span className="msg">{parsed.message}</span>
            {fields.map((f) => (
              <span className="kv" key={f.key}>
                {' '}
                <span className="k">{f.key}</span>={f.value}
              </span>
            ))}
            {parsed.moreFields > 0 && <span className="kv"> +{parsed.moreFields} more</span>}{' '}
            <button type="button" className="raw-toggle" aria-expanded={expanded} aria-label={expanded ? 'Hide the raw line' : 'Show the raw line'} onClick={() => onToggle(entry.seq)}>
              raw
            </button>
            {expanded && <span className="raw-line">{prettyRaw(entry.raw.line.trim())}</span>}
          </span>
        </>
      ) : (
        <>
          {!raw && <span className="level" />}
          <span className="body text">{entry.raw.line}</span>
        </>
      )}
    </div>
  );
});
