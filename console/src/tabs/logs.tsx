// Owns the Logs tab: revision, component and replica selectors; live follow (Server-Sent Events
// read through fetch, so the credential stays in a header); a filter; download of what is
// shown. Lines are rendered as text, whatever they contain. A revision deployed without
// logging says so.

import { useEffect, useMemo, useRef, useState } from 'react';
import { api, ApiError, openStream, saveBlob } from '../api/client';
import type { Deployment, Items, LogLine, LogsAnswer, Replica } from '../api/types';
import { usePoll } from '../hooks';

const KEEP = 5000;

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

export function LogsTab({ d }: { d: Deployment }) {
  const [revision, setRevision] = useState(d.revision);
  const [component, setComponent] = useState('');
  const [replica, setReplica] = useState('');
  const [follow, setFollow] = useState(true);
  const [filter, setFilter] = useState('');
  const [lines, setLines] = useState<LogLine[]>([]);
  const [note, setNote] = useState<string | null>(null);
  const [state, setState] = useState<'loading' | 'following' | 'idle' | 'error'>('loading');
  const view = useRef<HTMLPreElement>(null);
  const stick = useRef(true);
  const replicas = usePoll<Items<Replica>>(`/deployments/${d.family}/${d.id}/replicas`, 5000);
  const base = `/deployments/${d.family}/${d.id}/logs`;

  useEffect(() => {
    const aborter = new AbortController();
    setLines([]);
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
          setLines(first.lines);
          setState('idle');
          return;
        }
        const reader = await openStream(`${base}?${query({ ...params, tail: 500, follow: true })}`, aborter.signal);
        setState('following');
        await readEvents(reader, (data) => {
          try {
            const entry = JSON.parse(data) as LogLine;
            setLines((prev) => (prev.length >= KEEP ? [...prev.slice(prev.length - KEEP + 1), entry] : [...prev, entry]));
          } catch {
            // not a log entry
          }
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
    return f ? lines.filter((l) => l.line.toLowerCase().includes(f) || l.replica.toLowerCase().includes(f)) : lines;
  }, [lines, filter]);

  useEffect(() => {
    const el = view.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [shown]);

  const components = Object.keys(d.components);
  const replicaNames = (replicas.data?.items ?? []).filter((r) => r.revision === revision && (!component || r.component === component)).map((r) => r.name);
  if (replica && !replicaNames.includes(replica)) replicaNames.push(replica);

  const downloadShown = () => {
    const text = shown.map((l) => `${l.time} ${l.replica} ${l.stream} ${l.line}`).join('\n') + '\n';
    saveBlob(new Blob([text], { type: 'text/plain' }), `${d.name}-r${revision}${component ? `-${component}` : ''}${replica ? `-${replica}` : ''}.log`);
  };

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
          <input id="log-filter" type="text" value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="text to find" />
        </div>
        <div className="field check">
          <input id="log-follow" type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} />
          <label htmlFor="log-follow">Follow</label>
        </div>
        <button type="button" className="button" onClick={downloadShown} disabled={shown.length === 0}>
          Download
        </button>
      </div>
      <p className="subtle" role="status">
        {state === 'loading' ? 'Loading…' : state === 'following' ? `Following revision ${revision}: new lines appear as they are written.` : `${shown.length} line${shown.length === 1 ? '' : 's'}${filter ? ' match' : ''}.`}
      </p>
      {note && <div className={state === 'error' ? 'form-error' : 'notice'} role={state === 'error' ? 'alert' : 'note'}>{note}</div>}
      <pre
        className="log-view"
        ref={view}
        tabIndex={0}
        aria-label="Log lines"
        data-testid="log-view"
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 30;
        }}
      >
        {shown.map((l, i) => (
          <div key={i} className={`log-line ${l.stream}`}>
            <span className="ts">{l.time.slice(11, 23)}</span>
            <span className="replica">{l.replica}</span>
            {l.line}
          </div>
        ))}
      </pre>
    </div>
  );
}
