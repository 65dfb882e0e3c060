// Owns the Overview's side-by-side view of the revisions that run together (a canary beside the
// revision it may replace): one column per revision — its share, ready/desired replicas, and
// what the gateways measured of it over the last five minutes (requests, errors, TTFT p50/p99,
// tokens/s) from GET …/revision-metrics, polled every 5 s while the Overview is shown. Shown
// only while more than one revision runs or takes a share. A 409 means this API process keeps
// no such figures (it runs without the autoscaler): it says so instead of showing zeros.

import type { Deployment, RevisionMetricsAnswer } from '../api/types';
import { usePoll } from '../hooks';
import { sharesOf } from '../forms/traffic';

const WINDOW_SECONDS = 300;
const POLL_MS = 5000;

type Metrics = RevisionMetricsAnswer['revisions'][number];

const ms = (v: number | null | undefined): string => (v === null || v === undefined ? '—' : `${Math.round(v)} ms`);
/** Tokens per second: a canary's few tokens over five minutes still read as more than nothing. */
const rate = (v: number): string => (v === 0 ? '0' : v < 1 ? String(Number(v.toPrecision(2))) : v >= 100 ? v.toFixed(0) : v.toFixed(1));

/** Whether the deployment runs (or sends traffic to) more than one revision. */
export function comparesRevisions(d: Pick<Deployment, 'revision_replicas' | 'traffic' | 'traffic_is_default' | 'revision'>): boolean {
  return (d.revision_replicas ?? []).length > 1 || sharesOf(d).filter((s) => s.percent > 0).length > 1;
}

export function RevisionCompare({ d }: { d: Deployment }) {
  const shown = comparesRevisions(d);
  const metrics = usePoll<RevisionMetricsAnswer>(shown ? `/deployments/${d.family}/${d.id}/revision-metrics?window_seconds=${WINDOW_SECONDS}` : null, POLL_MS);
  if (!shown) return null;

  const running = d.revision_replicas ?? [];
  const shares = sharesOf(d);
  const measured = metrics.data?.revisions ?? [];
  const numbers = new Set<number>([...running.map((r) => r.revision), ...shares.map((s) => s.revision), ...measured.filter((m) => m.requests > 0).map((m) => m.revision)]);
  const revisions = [...numbers].sort((a, b) => a - b);
  const column = (revision: number) => {
    const run = running.find((r) => r.revision === revision);
    const share = shares.find((s) => s.revision === revision);
    const m: Metrics | undefined = measured.find((x) => x.revision === revision);
    return {
      revision,
      percent: run?.percent ?? share?.percent ?? m?.percent ?? 0,
      tags: run?.tags ?? share?.tags ?? [],
      replicas: run ? `${run.ready}/${run.desired}` : 'none',
      m,
    };
  };
  const columns = revisions.map(column);
  const unavailable = metrics.error?.status === 409;
  const have = metrics.data !== null && !metrics.error;
  const figure = (f: (m: Metrics) => string) => (c: (typeof columns)[number]) => (have ? (c.m ? f(c.m) : f({ revision: c.revision, percent: c.percent, requests: 0, errors: 0, ttft_p50_ms: null, ttft_p99_ms: null, tokens_per_second: 0 })) : '—');

  const rows: Array<{ label: string; cell: (c: (typeof columns)[number]) => string; key: string }> = [
    { key: 'percent', label: 'Traffic', cell: (c) => `${c.percent} %` },
    { key: 'replicas', label: 'Replicas ready/desired', cell: (c) => c.replicas },
    { key: 'requests', label: 'Requests', cell: figure((m) => String(m.requests)) },
    { key: 'errors', label: 'Errors (5xx)', cell: figure((m) => (m.requests > 0 ? `${m.errors} (${((100 * m.errors) / m.requests).toFixed(1)} %)` : String(m.errors))) },
    { key: 'ttft_p50', label: 'TTFT p50', cell: figure((m) => ms(m.ttft_p50_ms)) },
    { key: 'ttft_p99', label: 'TTFT p99', cell: figure((m) => ms(m.ttft_p99_ms)) },
    { key: 'tokens', label: 'Tokens/s', cell: figure((m) => rate(m.tokens_per_second)) },
  ];

  return (
    <section aria-labelledby="compare-heading">
      <h2 id="compare-heading">Revisions side by side</h2>
      <p className="subtle">
        Each revision runs and autoscales its own replicas. Requests, errors and time to first token are what the gateways measured over the last {WINDOW_SECONDS / 60}{' '}
        minutes; refreshed every {POLL_MS / 1000} s.
      </p>
      {unavailable ? (
        <div className="notice" role="note">
          This API process does not keep requests, errors and TTFT per revision: they are kept where the autoscaler runs, and it runs in another process. Traffic and
          replicas are shown below; open the console on that process to compare the rest ({metrics.error?.message}).
        </div>
      ) : metrics.error ? (
        <div className="notice" role="note">
          Per-revision figures could not be read: {metrics.error.message}
        </div>
      ) : null}
      <div className="table-wrap">
        <table aria-label="Revisions side by side" className="compare">
          <thead>
            <tr>
              <th scope="col">
                <span className="visually-hidden">Figure</span>
              </th>
              {columns.map((c) => (
                <th scope="col" key={c.revision} className="num" data-revision={c.revision}>
                  Revision {c.revision}
                  {c.revision === d.revision ? ' (newest)' : ''}
                  {c.tags.length > 0 ? <span className="subtle"> · {c.tags.join(', ')}</span> : null}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.key} data-figure={row.key}>
                <th scope="row">{row.label}</th>
                {columns.map((c) => (
                  <td key={c.revision} className="num">
                    {row.cell(c)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
