// Owns the Usage tab: per-hour charts and totals of requests, errors, prompt and completion
// tokens and GPU-seconds over a chosen time range, with the same figures as a table, and the
// revisions side by side when more than one has usage in the range (usage-revisions.tsx).

import { useMemo, useState } from 'react';
import type { Deployment, UsageAnswer } from '../api/types';
import { usePoll } from '../hooks';
import { Chart } from '../components/chart';
import { EmptyState } from '../components/empty-state';
import { UsageByRevision } from './usage-revisions';

const RANGES: Array<{ label: string; hours: number }> = [
  { label: 'Last 24 hours', hours: 24 },
  { label: 'Last 7 days', hours: 24 * 7 },
  { label: 'Last 30 days', hours: 24 * 30 },
];

const fmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

export function UsageTab({ d }: { d: Deployment }) {
  const [hours, setHours] = useState(24);
  // The range's start moves with each refresh; rounded to the minute so the URL is stable.
  const from = useMemo(() => new Date(Math.floor((Date.now() - hours * 3600_000) / 60_000) * 60_000).toISOString(), [hours]);
  const usage = usePoll<UsageAnswer>(`/deployments/${d.family}/${d.id}/usage?from=${encodeURIComponent(from)}`, 10_000);
  const u = usage.data;
  const x = (u?.hours ?? []).map((h) => Date.parse(h.hour) / 1000);
  // The whole chosen range, however few hours have figures; the last bar is the current hour.
  const span: [number, number] = [Date.parse(from) / 1000, Date.now() / 1000 + 3600];
  const col = (pick: (h: UsageAnswer['hours'][number]) => number) => (u?.hours ?? []).map(pick);

  return (
    <div>
      <div className="logs-toolbar">
        <div className="field">
          <label htmlFor="usage-range">Time range</label>
          <select id="usage-range" value={hours} onChange={(e) => setHours(Number(e.target.value))}>
            {RANGES.map((r) => (
              <option key={r.hours} value={r.hours}>
                {r.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      {usage.error && (
        <div className="form-error" role="alert">
          {usage.error.message}
        </div>
      )}
      {u && (
        <>
          <div className="totals" aria-label="Totals">
            <Total label="Requests" value={u.totals.requests} />
            <Total label="Errors" value={u.totals.errors} />
            <Total label="Prompt tokens" value={u.totals.prompt_tokens} />
            <Total label="Completion tokens" value={u.totals.completion_tokens} />
            <Total label="GPU-seconds" value={u.totals.gpu_seconds} />
            {u.totals.rate_limited > 0 && <Total label="Rate limited" value={u.totals.rate_limited} />}
          </div>
          {u.hours.length === 0 ? (
            <EmptyState
              title="No requests in this range"
              action={
                <a className="button" href={`#/deployments/${d.family}/${d.id}`}>
                  How to call it (Overview)
                </a>
              }
            >
              Usage counts the requests the endpoint serves. Call it with the ready-to-run curl or OpenAI SDK snippet on the Overview tab, and its figures appear here.
            </EmptyState>
          ) : (
            <>
              <Chart xRange={span} title="Requests and errors per hour" x={x} series={[{ label: 'Requests', color: '#3b5bdb', bars: true, values: col((h) => h.requests) }, { label: 'Errors', color: '#d9480f', bars: true, values: col((h) => h.errors) }]} />
              <Chart xRange={span} title="Tokens per hour" x={x} series={[{ label: 'Prompt tokens', color: '#2b8a3e', values: col((h) => h.prompt_tokens) }, { label: 'Completion tokens', color: '#862e9c', values: col((h) => h.completion_tokens) }]} />
              <Chart xRange={span} title="GPU-seconds per hour" x={x} series={[{ label: 'GPU-seconds', color: '#e67700', bars: true, values: col((h) => h.gpu_seconds) }]} />
              <UsageByRevision u={u} newest={d.revision} xRange={span} />
              <details>
                <summary>Show as a table</summary>
                <table aria-label="Usage per hour">
                  <thead>
                    <tr>
                      <th scope="col">Hour</th>
                      <th scope="col" className="num">Requests</th>
                      <th scope="col" className="num">Errors</th>
                      <th scope="col" className="num">Prompt tokens</th>
                      <th scope="col" className="num">Completion tokens</th>
                      <th scope="col" className="num">GPU-seconds</th>
                    </tr>
                  </thead>
                  <tbody>
                    {u.hours.map((h) => (
                      <tr key={h.hour}>
                        <td>{new Date(h.hour).toLocaleString()}</td>
                        <td className="num">{h.requests}</td>
                        <td className="num">{h.errors}</td>
                        <td className="num">{h.prompt_tokens}</td>
                        <td className="num">{h.completion_tokens}</td>
                        <td className="num">{fmt.format(h.gpu_seconds)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </details>
            </>
          )}
        </>
      )}
    </div>
  );
}

function Total({ label, value }: { label: string; value: number }) {
  const id = `total-${label.toLowerCase().replace(/[^a-z]+/g, '-')}`;
  return (
    <div className="total" role="group" aria-labelledby={id}>
      <div className="label" id={id}>
        {label}
      </div>
      <div className="value" data-testid={id}>
        {fmt.format(value)}
      </div>
    </div>
  );
}
