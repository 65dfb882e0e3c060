// Owns the Logs tab: revision, component and replica selectors; live follow (Server-Sent Events
// read through fetch, so the credential stays in a header); a text filter and a level filter;
// lines read as logs (logs/parse-line: a structured line as level, time, message and fields,
// any other as written, the raw line a click away or for every line at once); download of the
// raw lines shown. The pane fills the window below the toolbar. Lines are rendered as text,
// whatever they contain. A revision deployed without logging says so.

import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type RefObject } from 'react';
import { api, ApiError, openStream, saveBlob } from '../api/client';
import type { Deployment, Items, LogLine, LogsAnswer, Replica } from '../api/types';
import { usePoll } from '../hooks';
import { LogRow, type LogEntry } from '../logs/log-row';
import { atLeast, effectiveLevel, parseLogLine, type Level } from '../logs/parse-line';

const KEEP = 5000;
/** Space kept under the pane (main's bottom padding), and the least height it takes on a short window. */
const BOTTOM_GAP = 20;
const MIN_HEIGHT = 240;

const LEVEL_CHOICES: Array<{ value: '' | Level; label: string }> = [
  { value: '', label: 'All levels' },
  { value: 'debug', label: 'Debug and above' },
  { value: 'info', label: 'Info and above' },
  { value: 'warn', label: 'Warnings and errors' },
  { value: 'error', label: 'Errors only' },
];

function query(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  return q.toString();
}

/** Splits an SSE byte stream into `data:` payloads. */
async function readEvents(reader: ReadableStreamDefaultReader<Uint8Array>, onData: (data: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) onData(data);
    }
  }
}

/** Sizes the pane to the window: from where it starts on the page down to the window's bottom. */
function useFillHeight(ref: RefObject<HTMLElement | null>, deps: readonly unknown[]): void {
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const fit = () => {
      const top = el.getBoundingClientRect().top + window.scrollY;
      el.style.height = `${Math.max(MIN_HEIGHT, window.innerHeight - top - BOTTOM_GAP)}px`;
    };
    fit();
    window.addEventListener('resize', fit);
    return () => window.removeEventListener('resize', fit);
    // Whatever above the pane changes height (a note, the toolbar wrapping) moves its top.
  }, deps);
}

export function LogsTab({ d }: { d: Deployment }) {
  const [revision, setRevision] = useState(d.revision);
  const [component, setComponent] = useState('');
  const [replica, setReplica] = useState('');
  const [follow, setFollow] = useState(true);
  const [filter, setFilter] = useState('');
  const [minLevel, setMinLevel] = useState<'' | Level>('');
  const [raw, setRaw] = useState(false);
  const [entries, setEntries] = useState<LogEntry[]>([]);
  const [expanded, setExpanded] = useState<ReadonlySet<number>>(new Set());
  const [note, setNote] = useState<string | null>(null);
  const [state, setState] = useState<'loading' | 'following' | 'idle' | 'error'>('loading');
  const view = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const seq = useRef(0);
  const replicas = usePoll<Items<Replica>>(`/deployments/${d.family}/${d.id}/replicas`, 5000);
  const base = `/deployments/${d.family}/${d.id}/logs`;

  useEffect(() => {
    const aborter = new AbortController();
    const entry = (line: LogLine): LogEntry => ({ seq: ++seq.current, raw: line, parsed: parseLogLine(line.line) });
    setEntries([]);
    setExpanded(new Set());
    setNote(null);
    setState('loading');
    const params = { revision, component, replica };
    void (async () => {
      try {
        const first = await api.get<LogsAnswer>(`${base}?${query({ ...params, tail: follow ? 0 : 1000 })}`, aborter.signal);
        if (!first.logging) {
          setNote(first.message ?? `Revision ${revision} has no logs: it was deployed with logging off.`);
          setState('idle');
          return;
        }
        if (!follow) {
          setEntries(first.lines.map(entry));
          setState('idle');
          return;
        }
        const reader = await openStream(`${base}?${query({ ...params, tail: 500, follow: true })}`, aborter.signal);
        setState('following');
        await readEvents(reader, (data) => {
          let line: LogLine;
          try {
            line = JSON.parse(data) as LogLine;
          } catch {
            return; // not a log entry
          }
          if (typeof line.line !== 'string') return;
          const next = entry(line);
          setEntries((prev) => (prev.length >= KEEP ? [...prev.slice(prev.length - KEEP + 1), next] : [...prev, next]));
        });
        if (!aborter.signal.aborted) setState('idle');
      } catch (err) {
        if ((err as Error).name === 'AbortError') return;
        setNote(err instanceof ApiError ? err.message : String(err));
        setState('error');
      }
    })();
    return () => aborter.abort();
  }, [base, revision, component, replica, follow]);

  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    return entries.filter(
      (e) =>
        (minLevel === '' || atLeast(effectiveLevel(e.parsed, e.raw.stream), minLevel)) &&
        (f === '' || e.raw.line.toLowerCase().includes(f) || e.raw.replica.toLowerCase().includes(f) || e.parsed.message.toLowerCase().includes(f)),
    );
  }, [entries, filter, minLevel]);

  useEffect(() => {
    const el = view.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [shown]);

  useFillHeight(view, [note, state]);

  const toggle = useCallback((n: number) => {
    setExpanded((prev) => {
      const next = new Set(prev);
      if (!next.delete(n)) next.add(n);
      return next;
    });
  }, []);

  const components = Object.keys(d.components);
  const replicaNames = (replicas.data?.items ?? []).filter((r) => r.revision === revision && (!component || r.component === component)).map((r) => r.name);
  if (replica && !replicaNames.includes(replica)) replicaNames.push(replica);

  // The download holds the lines as written, whatever the view shows of them.
  const downloadShown = () => {
    const text = shown.map((e) => `${e.raw.time} ${e.raw.replica} ${e.raw.stream} ${e.raw.line}`).join('\n') + '\n';
    saveBlob(new Blob([text], { type: 'text/plain' }), `${d.name}-r${revision}${component ? `-${component}` : ''}${replica ? `-${replica}` : ''}.log`);
  };

  const filtered = filter.trim() !== '' || minLevel !== '';
  const count = `${shown.length} line${shown.length === 1 ? '' : 's'}${filtered ? ` of ${entries.length} match` : ''}.`;
  return (
    <div>
      <div className="logs-toolbar">
        <div className="field">
          <label htmlFor="log-revision">Revision</label>
          <select id="log-revision" value={revision} onChange={(e) => setRevision(Number(e.target.value))}>
            {[...d.revisions].reverse().map((r) => (
              <option key={r.revision} value={r.revision}>
                {r.revision} ({r.status})
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="log-component">Component</label>
          <select id="log-component" value={component} onChange={(e) => { setComponent(e.target.value); setReplica(''); }}>
            <option value="">All components</option>
            {components.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="log-replica">Replica</label>
          <select id="log-replica" value={replica} onChange={(e) => setReplica(e.target.value)}>
            <option value="">All replicas</option>
            {replicaNames.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="log-filter">Filter</label>
          <input id="log-filter" type="search" value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="e.g. error or /v1/chat" spellCheck={false} />
        </div>
        <div className="field">
          <label htmlFor="log-level">Level</label>
          <select id="log-level" value={minLevel} onChange={(e) => setMinLevel(e.target.value as '' | Level)}>
            {LEVEL_CHOICES.map((c) => (
              <option key={c.value} value={c.value}>
                {c.label}
              </option>
            ))}
          </select>
        </div>
        <div className="field check">
          <input id="log-follow" type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} />
          <label htmlFor="log-follow">Follow</label>
        </div>
        <div className="field check">
          <input id="log-raw" type="checkbox" checked={raw} onChange={(e) => setRaw(e.target.checked)} />
          <label htmlFor="log-raw">Raw lines</label>
        </div>
        <button type="button" className="button" onClick={downloadShown} disabled={shown.length === 0}>
          Download
        </button>
      </div>
      <p className="subtle" role="status">
        {state === 'loading'
          ? 'Loading…'
          : state === 'following'
            ? `Following revision ${revision}: new lines appear as they are written.${filtered ? ` ${count}` : ''}`
            : count}
      </p>
      {note && <div className={state === 'error' ? 'form-error' : 'notice'} role={state === 'error' ? 'alert' : 'note'}>{note}</div>}
      <div
        className={`log-view${raw ? ' raw' : ''}`}
        ref={view}
        role="log"
        aria-live="off"
        tabIndex={0}
        aria-label="Log lines"
        data-testid="log-view"
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 30;
        }}
      >
        {shown.map((e) => (
          <LogRow key={e.seq} entry={e} raw={raw} expanded={expanded.has(e.seq)} onToggle={toggle} />
        ))}
        {shown.length === 0 && state !== 'loading' && !note && (
          <p className="log-empty">
            {entries.length > 0
              ? 'No line matches the filter.'
              : state === 'following'
                ? 'No lines yet: they appear here as the replicas write them.'
                : `Revision ${revision} has no lines${replica ? ` from ${replica}` : ''}.`}
          </p>
        )}
      </div>
    </div>
  );
}
