// Owns the Activity tab: the signal the deployment scales on and its target, then in-flight and
// held requests, the signal's figure against its target, desired and ready replicas over the
// last 15 minutes, so a user watches the autoscaler decide — the figures come from where the
// autoscaler runs, in 5-second steps, refreshed every 5 seconds, the step in progress left out
// (autoscaler-now.ts) — and under them the deployment's events, newest first: the decisions
// with their figures and the signal that drove them, rollout steps, replicas restarting or
// failing, image pulls.

import type { ActivityAnswer, Deployment, DeploymentEvent, Items } from '../api/types';
import { usePoll } from '../hooks';
import { Chart } from '../components/chart';
import { autoscalerNow, scaledWhat, settledPoints } from '../components/autoscaler-now';
import { describeTarget } from '../../../src/domain/autoscaling-signal';
import { METRIC_SHORT, unitOf } from '../forms/signal';

export function ActivityTab({ d }: { d: Deployment }) {
  return (
    <div>
      <AutoscalerCharts d={d} />
      <EventsTable d={d} />
    </div>
  );
}

function AutoscalerCharts({ d }: { d: Deployment }) {
  const activity = usePoll<ActivityAnswer>(`/deployments/${d.family}/${d.id}/activity`, 5000);
  const a = activity.data;
  if (activity.error) {
    return (
      <div className="notice" role="note">
        {activity.error.message}
      </div>
    );
  }
  if (!a) return <p className="subtle">Loading…</p>;
  if (a.component === null) {
    return (
      <div className="notice" role="note">
        This deployment's pools have fixed sizes: the autoscaler does not move them. Component health is on the Overview tab.
      </div>
    );
  }
  const points = settledPoints(a);
  const x = points.map((p) => Date.parse(p.t) / 1000);
  const what = scaledWhat(a);
  const now = autoscalerNow(a);
  const end = Math.max(Date.now() / 1000, x.at(-1) ?? 0);
  const span: [number, number] = [end - a.window_seconds, end];
  // An older server's answer has no metric: it scaled on concurrency.
  const metric = a.metric ?? 'concurrency';
  const target = a.target ?? null;
  const signalName = `${METRIC_SHORT[metric]} (${unitOf(metric)})`;
  return (
    <div>
      <p data-testid="activity-signal">
        Scales on {target === null ? `${metric}: no target (fixed size)` : describeTarget(metric, target)}.
      </p>
      <p role="status" data-testid="activity-now">
        {now ? `Now: the autoscaler ${now}.` : points.length > 0 ? 'The autoscaler has not decided yet.' : 'No activity recorded yet: figures appear within a few seconds.'}
      </p>
      <Chart
        title="Requests in flight (last 15 minutes)"
        x={x}
        xRange={span}
        series={[
          { label: 'In flight (mean)', color: '#3b5bdb', values: points.map((p) => p.in_flight) },
          { label: 'In flight (peak)', color: '#748ffc', values: points.map((p) => p.in_flight_max) },
          { label: 'Held (scale from zero)', color: '#e67700', values: points.map((p) => p.held) },
        ]}
      />
      <Chart
        title={`Autoscaling signal: ${METRIC_SHORT[metric].toLowerCase()} (last 15 minutes)`}
        x={x}
        xRange={span}
        series={[
          { label: signalName, color: '#c2255c', values: points.map((p) => p.signal ?? null) },
          ...(target === null ? [] : [{ label: `Target (${target})`, color: '#868e96', values: points.map(() => target) }]),
        ]}
      />
      <Chart
        title={`${what[0]!.toUpperCase()}${what.slice(1)}s (last 15 minutes)`}
        x={x}
        xRange={span}
        series={[
          { label: 'Desired', color: '#862e9c', stepped: true, values: points.map((p) => p.desired) },
          { label: 'Ready', color: '#2b8a3e', stepped: true, values: points.map((p) => p.ready) },
        ]}
      />
      <details>
        <summary>Show as a table</summary>
        <table aria-label="Activity">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col" className="num">In flight</th>
              <th scope="col" className="num">Peak</th>
              <th scope="col" className="num">Held</th>
              <th scope="col" className="num">{METRIC_SHORT[metric]}</th>
              <th scope="col" className="num">Desired</th>
              <th scope="col" className="num">Ready</th>
            </tr>
          </thead>
          <tbody>
            {[...points].reverse().map((p) => (
              <tr key={p.t}>
                <td>{new Date(p.t).toLocaleTimeString()}</td>
                <td className="num">{p.in_flight}</td>
                <td className="num">{p.in_flight_max}</td>
                <td className="num">{p.held}</td>
                <td className="num">{p.signal === null || p.signal === undefined ? '—' : Number(p.signal.toFixed(2))}</td>
                <td className="num">{p.desired ?? '—'}</td>
                <td className="num">{p.ready}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}

/** How long ago, kubectl's way: one unit, rounded down (45s, 12m, 3h, 5d). */
function age(iso: string, now: number): string {
  const seconds = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

function EventsTable({ d }: { d: Deployment }) {
  const events = usePoll<Items<DeploymentEvent>>(`/deployments/${d.family}/${d.id}/events`, 5000);
  const now = Date.now();
  const items = [...(events.data?.items ?? [])].reverse();
  return (
    <section aria-labelledby="events-heading">
      <h2 id="events-heading">Events</h2>
      {events.error ? (
        <div className="notice" role="note">
          {events.error.message}
        </div>
      ) : !events.data ? (
        <p className="subtle">Loading…</p>
      ) : items.length === 0 ? (
        <p className="subtle">No events yet: scale decisions, rollout steps, replica restarts and image pulls appear here.</p>
      ) : (
        <div className="table-wrap">
          <table aria-label="Events">
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Reason</th>
                <th scope="col">Age</th>
                <th scope="col">Message</th>
              </tr>
            </thead>
            <tbody>
              {items.map((e) => (
                <tr key={`${e.first_time}-${e.reason}-${e.message}`} data-type={e.type}>
                  <td>
                    <span className={e.type === 'warning' ? 'status status-failing' : 'status status-ready'}>{e.type === 'warning' ? 'Warning' : 'Normal'}</span>
                  </td>
                  <td>{e.reason}</td>
                  <td title={e.count > 1 ? `${e.count} times since ${new Date(e.first_time).toLocaleString()}` : new Date(e.time).toLocaleString()}>
                    {age(e.time, now)}
                    {e.count > 1 ? ` (×${e.count} over ${age(e.first_time, now)})` : ''}
                  </td>
                  <td>{e.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
