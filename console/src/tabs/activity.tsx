// Owns the Activity tab: in-flight and held requests, desired and ready replicas over the
// last 15 minutes, so a user watches the autoscaler decide. The figures come from where the
// autoscaler runs, in 5-second steps, refreshed every 5 seconds.

import type { ActivityAnswer, Deployment } from '../api/types';
import { usePoll } from '../hooks';
import { Chart } from '../components/chart';

export function ActivityTab({ d }: { d: Deployment }) {
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
  const x = a.points.map((p) => Date.parse(p.t) / 1000);
  const what = a.component === 'Replica' ? 'replica' : `${a.component} replica`;
  const last = a.points.at(-1);
  const end = Math.max(Date.now() / 1000, x.at(-1) ?? 0);
  const span: [number, number] = [end - a.window_seconds, end];
  return (
    <div>
      <p role="status" data-testid="activity-now">
        {last
          ? `Now: ${last.in_flight} in flight (peak ${last.in_flight_max}), ${last.held} held; the autoscaler wants ${last.desired ?? '—'} ${what}${last.desired === 1 ? '' : 's'}, ${last.ready} ready.`
          : 'No activity recorded yet: figures appear within a few seconds.'}
      </p>
      <Chart
        title="Requests in flight (last 15 minutes)"
        x={x}
        xRange={span}
        series={[
          { label: 'In flight (mean)', color: '#3b5bdb', values: a.points.map((p) => p.in_flight) },
          { label: 'In flight (peak)', color: '#748ffc', values: a.points.map((p) => p.in_flight_max) },
          { label: 'Held (scale from zero)', color: '#e67700', values: a.points.map((p) => p.held) },
        ]}
      />
      <Chart
        title={`${what[0]!.toUpperCase()}${what.slice(1)}s (last 15 minutes)`}
        x={x}
        xRange={span}
        series={[
          { label: 'Desired', color: '#862e9c', stepped: true, values: a.points.map((p) => p.desired) },
          { label: 'Ready', color: '#2b8a3e', stepped: true, values: a.points.map((p) => p.ready) },
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
              <th scope="col" className="num">Desired</th>
              <th scope="col" className="num">Ready</th>
            </tr>
          </thead>
          <tbody>
            {[...a.points].reverse().map((p) => (
              <tr key={p.t}>
                <td>{new Date(p.t).toLocaleTimeString()}</td>
                <td className="num">{p.in_flight}</td>
                <td className="num">{p.in_flight_max}</td>
                <td className="num">{p.held}</td>
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
