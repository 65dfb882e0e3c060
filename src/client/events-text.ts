// Owns the `Events:` section of `infergate describe`, kubectl describe's way: TYPE, REASON,
// AGE (with "(x4 over 3m)" for repeats folded into one) and MESSAGE, oldest first so the
// newest is last, nearest the prompt; and reading them from the API (a server from before
// events answers 404: the section then says so).

import type { ApiClient } from './api.js';
import { age } from './age.js';
import { routeOf, type Deployment } from './deployments.js';
import { ApiRefusal } from './errors.js';
import type { DeploymentEventView as DeploymentEvent } from '../domain/api-views.js';

export type { DeploymentEvent };

/** The deployment's events, oldest first; null when this server keeps none (no events route). */
export async function readEvents(client: ApiClient, d: Pick<Deployment, 'family' | 'id'>): Promise<DeploymentEvent[] | null> {
  try {
    return (await client.get<{ items: DeploymentEvent[] }>(`${routeOf(d)}/events`)).items;
  } catch (err) {
    if (err instanceof ApiRefusal && err.status === 404) return null;
    throw err;
  }
}

export function eventLines(events: readonly DeploymentEvent[] | null, now: number = Date.now()): string[] {
  if (events === null) return ['Events:      not kept by this server'];
  if (events.length === 0) return ['Events:      <none>'];
  const rows = events.map((e) => [
    e.type === 'warning' ? 'Warning' : 'Normal',
    e.reason,
    e.count > 1 ? `${age(e.time, now)} (x${e.count} over ${age(e.first_time, now)})` : age(e.time, now),
    e.message,
  ]);
  const header = ['TYPE', 'REASON', 'AGE', 'MESSAGE'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `  ${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}`.trimEnd();
  return ['Events:', line(header), ...rows.map(line)];
}
