// Owns the Audit page of the current project (owners and the admin): the audit log newest
// first — who, their role, the action and its target, the result and status, when and from
// where — filtered by actor, action, result and time, fifty entries a page with Older and
// Newest to move through it. Anyone else is told why it is not theirs.

import { useEffect, useState, type FormEvent } from 'react';
import { ACTION_WORDS, type Action } from '../../../src/domain/access';
import type { AuditRecord } from '../../../src/domain/records';
import { api, ApiError } from '../api/client';
import { useAccess } from '../access';
import { FormError } from '../components/form';

const PAGE = 50;

interface Filters {
  actor: string;
  action: string;
  result: string;
  since: string;
}

const EMPTY: Filters = { actor: '', action: '', result: '', since: '' };

interface AuditPage {
  items: AuditRecord[];
  continue?: string;
  remaining_item_count?: number;
}

function target(t: AuditRecord['target']): string {
  if (t === null) return '—';
  return `${t.kind}${t.id !== null ? ` ${t.id}` : ''}${t.name !== null ? ` (${t.name})` : ''}`;
}

export function AuditPage() {
  const access = useAccess();
  const project = access.project;
  const allowed = access.may('audit.read');
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  /** The continue tokens of the pages before this one: Older pushes, Newest clears. */
  const [cursor, setCursor] = useState<string | null>(null);
  const [page, setPage] = useState<AuditPage | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!allowed) return;
    const aborter = new AbortController();
    const q = new URLSearchParams({ project, limit: String(PAGE) });
    if (filters.actor.trim()) q.set('actor', filters.actor.trim());
    if (filters.action) q.set('action', filters.action);
    if (filters.result) q.set('result', filters.result);
    if (filters.since) q.set('since', new Date(filters.since).toISOString());
    if (cursor) q.set('continue', cursor);
    api.get<AuditPage>(`/audit?${q}`, aborter.signal).then(
      (p) => {
        setPage(p);
        setError(null);
      },
      (err: unknown) => {
        if ((err as Error).name !== 'AbortError') setError(err instanceof ApiError ? err.message : String(err));
      },
    );
    return () => aborter.abort();
  }, [allowed, project, filters, cursor]);

  if (!allowed) {
    return (
      <section>
        <h1>Audit log</h1>
        <p className="notice" role="note" data-refused="audit.read">
          {access.reason('audit.read')}.
        </p>
      </section>
    );
  }

  const apply = (e: FormEvent) => {
    e.preventDefault();
    setCursor(null);
    setFilters(draft);
  };

  return (
    <section>
      <h1>Audit log</h1>
      <p className="subtle">
        Every change in <strong>{project}</strong> and every refused call, newest first. Entries are never edited; the newest 10,000 of the project are kept.
      </p>
      <form className="panel filters" onSubmit={apply} aria-label="Filter the audit log">
        <div className="grid2">
          <div className="field">
            <label htmlFor="audit-actor">Actor</label>
            <input id="audit-actor" type="text" value={draft.actor} onChange={(e) => setDraft({ ...draft, actor: e.target.value })} placeholder="account name or e-mail address" />
          </div>
          <div className="field">
            <label htmlFor="audit-action">Action</label>
            <select id="audit-action" value={draft.action} onChange={(e) => setDraft({ ...draft, action: e.target.value })}>
              <option value="">any</option>
              {(Object.keys(ACTION_WORDS) as Action[]).map((a) => (
                <option key={a} value={a}>
                  {a}: {ACTION_WORDS[a]}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="audit-result">Result</label>
            <select id="audit-result" value={draft.result} onChange={(e) => setDraft({ ...draft, result: e.target.value })}>
              <option value="">any</option>
              <option value="allowed">allowed</option>
              <option value="refused">refused</option>
              <option value="failed">failed</option>
            </select>
          </div>
          <div className="field">
            <label htmlFor="audit-since">Since</label>
            <input id="audit-since" type="datetime-local" value={draft.since} onChange={(e) => setDraft({ ...draft, since: e.target.value })} />
          </div>
        </div>
        <button className="button primary" type="submit">
          Filter
        </button>
      </form>
      <FormError message={error} />
      {page === null ? (
        !error && <p className="subtle">Loading…</p>
      ) : page.items.length === 0 ? (
        <p className="subtle">No entries{filters === EMPTY ? ' yet' : ' match these filters'}.</p>
      ) : (
        <div className="table-wrap">
          <table aria-label={`Audit log of ${project}`}>
            <thead>
              <tr>
                {['Time', 'Actor', 'Role', 'Action', 'Target', 'Result', 'Status', 'From'].map((h) => (
                  <th scope="col" key={h}>
                    {h}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {page.items.map((e) => (
                <tr key={e.id} data-audit={e.request_id} data-result={e.result}>
                  <td title={e.time}>{new Date(e.time).toLocaleString()}</td>
                  <td>{e.actor.kind === 'anonymous' ? 'anonymous' : (e.actor.name ?? `${e.actor.kind} ${e.actor.id ?? ''}`)}</td>
                  <td>{e.role ?? '—'}</td>
                  <td title={e.route ?? undefined}>{e.action}</td>
                  <td>{target(e.target)}</td>
                  <td>{e.result}</td>
                  <td>{e.status}</td>
                  <td title={`request ${e.request_id}`}>{e.source_address}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="form-actions">
        <button type="button" className="button" disabled={cursor === null} onClick={() => setCursor(null)}>
          Newest
        </button>
        <button type="button" className="button" disabled={!page?.continue} onClick={() => setCursor(page?.continue ?? null)}>
          Older{page?.remaining_item_count ? ` (${page.remaining_item_count} more)` : ''}
        </button>
      </div>
    </section>
  );
}
