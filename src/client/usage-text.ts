// Owns how `infergate usage` prints the usage view as tables: one row per hour and the total,
// then, when more than one revision has usage in the window (a canary beside the stable one),
// the same figures per revision side by side. A server that does not count revisions sends
// none, and only the first table is printed.

import type { RevisionUsageView, UsageFiguresView as ServerFigures } from '../domain/api-views.js';
import { table, type Column, type Out } from './output.js';

export type { RevisionUsageView };

/** The server's figures (domain/api-views.ts); `revisions` is absent from a server that does not count them. */
export type UsageFiguresView = Omit<ServerFigures, 'revisions'> & Partial<Pick<ServerFigures, 'revisions'>>;

export interface UsageView {
  hours: (UsageFiguresView & { hour: string })[];
  totals: UsageFiguresView;
}

const seconds = (v: number | undefined): string => String(Math.round(v ?? 0));

function figureColumns<T extends Partial<RevisionUsageView>>(): Column<T>[] {
  return [
    { header: 'REQUESTS', value: (r) => String(r.requests ?? 0) },
    { header: 'ERRORS', value: (r) => String(r.errors ?? 0) },
    { header: 'PROMPT', value: (r) => String(r.prompt_tokens ?? 0) },
    { header: 'COMPLETION', value: (r) => String(r.completion_tokens ?? 0) },
    { header: 'GPU-SECONDS', value: (r) => seconds(r.gpu_seconds) },
  ];
}

/** The revisions with usage in the window, in revision order. */
export function revisionRows(usage: UsageView): (RevisionUsageView & { revision: number })[] {
  return Object.entries(usage.totals.revisions ?? {})
    .map(([revision, figures]) => ({ revision: Number(revision), ...figures }))
    .filter((r) => r.requests > 0 || r.gpu_seconds > 0)
    .sort((a, b) => a.revision - b.revision);
}

/** The text `infergate usage -o table` prints. */
export function usageText(usage: UsageView, out: Out): string {
  const hours: Column<UsageFiguresView & { hour: string }>[] = [{ header: 'HOUR', value: (r) => r.hour }, ...figureColumns()];
  let text = table([...usage.hours, { ...usage.totals, hour: 'total' }], hours, out);
  const revisions = revisionRows(usage);
  if (revisions.length > 1) {
    const columns: Column<(typeof revisions)[number]>[] = [{ header: 'REVISION', value: (r) => String(r.revision) }, ...figureColumns()];
    text += '\n' + table(revisions, columns, out);
    const served = revisions.reduce((sum, r) => sum + r.requests, 0);
    // The difference is what no replica served: refused, or held and given up.
    if (served < usage.totals.requests) text += `${usage.totals.requests - served} requests reached no replica (refused or given up): they count in the total only\n`;
  }
  return text;
}
