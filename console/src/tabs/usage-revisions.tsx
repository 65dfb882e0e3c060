// Owns the Usage tab's comparison of revisions: when more than one revision has usage in the
// chosen range (a canary beside the revision it may replace), their requests, errors, prompt
// and completion tokens and GPU-seconds side by side, one column per revision, and a chart of
// each revision's requests per hour. Requests that reached no replica (refused, or held and
// given up) belong to no revision: the note under the table says how many.

import type { RevisionUsageFigures, UsageAnswer } from '../api/types';
import { Chart } from '../components/chart';

const fmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
const COLORS = ['#3b5bdb', '#e67700', '#2b8a3e', '#862e9c', '#c2255c', '#0b7285'];

/** The revisions with usage in the answer's range, in revision order. */
export function revisionsWithUsage(u: UsageAnswer): Array<{ revision: number; figures: RevisionUsageFigures }> {
  return Object.entries(u.totals.revisions ?? {})
    .map(([revision, figures]) => ({ revision: Number(revision), figures }))
    .filter((r) => r.figures.requests > 0 || r.figures.gpu_seconds > 0)
    .sort((a, b) => a.revision - b.revision);
}

const errorsText = (f: RevisionUsageFigures): string => (f.requests > 0 && f.errors > 0 ? `${f.errors} (${((100 * f.errors) / f.requests).toFixed(1)} %)` : String(f.errors));

const ROWS: Array<{ key: string; label: string; cell: (f: RevisionUsageFigures) => string }> = [
  { key: 'requests', label: 'Requests', cell: (f) => String(f.requests) },
  { key: 'errors', label: 'Errors (5xx)', cell: errorsText },
  { key: 'prompt_tokens', label: 'Prompt tokens', cell: (f) => String(f.prompt_tokens) },
  { key: 'completion_tokens', label: 'Completion tokens', cell: (f) => String(f.completion_tokens) },
  { key: 'gpu_seconds', label: 'GPU-seconds', cell: (f) => fmt.format(f.gpu_seconds) },
];

export function UsageByRevision({ u, newest, xRange }: { u: UsageAnswer; newest: number; xRange: [number, number] }) {
  const revisions = revisionsWithUsage(u);
  if (revisions.length < 2) return null;
  const served = revisions.reduce((sum, r) => sum + r.figures.requests, 0);
  const x = u.hours.map((h) => Date.parse(h.hour) / 1000);
  return (
    <section aria-labelledby="usage-revisions-heading">
      <h2 id="usage-revisions-heading">By revision</h2>
      <p className="subtle">Each request counts under the revision of the replica that served it, and GPU-seconds under the revision each replica ran.</p>
      <div className="table-wrap">
        <table aria-label="Usage by revision" className="compare">
          <thead>
            <tr>
              <th scope="col">
                <span className="visually-hidden">Figure</span>
              </th>
              {revisions.map((r) => (
                <th scope="col" key={r.revision} className="num" data-revision={r.revision}>
                  Revision {r.revision}
                  {r.revision === newest ? ' (newest)' : ''}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {ROWS.map((row) => (
              <tr key={row.key} data-figure={row.key}>
                <th scope="row">{row.label}</th>
                {revisions.map((r) => (
                  <td key={r.revision} className="num">
                    {row.cell(r.figures)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {served < u.totals.requests && (
        <p className="subtle" data-testid="usage-no-revision">
          {u.totals.requests - served} requests reached no replica (refused by a limit, or held and given up): they count in the totals only.
        </p>
      )}
      <Chart
        xRange={xRange}
        title="Requests per hour by revision"
        x={x}
        series={revisions.map((r, i) => ({
          label: `Revision ${r.revision}`,
          color: COLORS[i % COLORS.length]!,
          values: u.hours.map((h) => h.revisions?.[String(r.revision)]?.requests ?? 0),
        }))}
      />
    </section>
  );
}
