// Owns GET /deployments/{family}/{id}/usage: the deployment's usage per clock hour — requests,
// errors (5xx), prompt and completion tokens, requests refused by the rate limit, GPU-seconds (replica lifetime × GPUs of its
// hardware instance) and replica-seconds by component, and the same figures by revision — and
// the totals, optionally limited to `from`/`to` (ISO 8601). Exact counts, written by the
// gateways and the controller.

import { Type } from '../../core/typebox.js';
import { PlatformError } from '../../core/errors.js';
import type { Family, RevisionUsage, UsageRecord } from '../../domain/records.js';
import { hourOf } from '../../store/usage-ledger.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse, IdParams, UsageResponse } from '../schemas.js';

export const UsageQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ description: 'ISO 8601; the hour containing it is the first' })),
    to: Type.Optional(Type.String({ description: 'ISO 8601; the hour containing it is the last' })),
  },
  { additionalProperties: false },
);

export type Figures = Omit<UsageRecord, 'id' | 'deployment_id' | 'hour' | 'updated_at' | 'rate_limited' | 'revisions' | 'flushed'> & {
  rate_limited: number;
  revisions: Record<string, RevisionUsage>;
};

const round3 = (v: number) => Math.round(v * 1000) / 1000;

export function figures(u: Figures | UsageRecord): Figures {
  return {
    requests: u.requests,
    errors: u.errors,
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    rate_limited: u.rate_limited ?? 0,
    gpu_seconds: round3(u.gpu_seconds),
    replica_seconds: Object.fromEntries(Object.entries(u.replica_seconds).map(([c, v]) => [c, round3(v)])),
    revisions: Object.fromEntries(Object.entries(u.revisions ?? {}).map(([r, v]) => [r, { ...v, gpu_seconds: round3(v.gpu_seconds) }])),
  };
}

export function parseTime(field: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new PlatformError('invalid_field', `${field} must be an ISO 8601 time, such as 2026-11-23T16:00:00Z`, { field });
  return hourOf(ms);
}

export function registerUsageRoutes(app: ControlApp, ctx: ControlContext, family: Family): void {
  app.get(
    `/deployments/${family}/:id/usage`,
    { schema: { tags: [`${family} deployments`], params: IdParams, querystring: UsageQuery, response: { 200: UsageResponse, 400: ErrorResponse, 404: ErrorResponse } } },
    async (request) => {
      const d = await ctx.deployments.get(family, request.params.id, request.project);
      const from = parseTime('from', request.query.from);
      const to = parseTime('to', request.query.to);
      const hours = (await ctx.deps.store.list('usage'))
        .map((u) => u.value)
        .filter((u) => u.deployment_id === d.id && (from === null || u.hour >= from) && (to === null || u.hour <= to))
        .sort((a, b) => a.hour.localeCompare(b.hour));
      const totals = sumUsage(hours);
      return { deployment_id: d.id, hours: hours.map((u) => ({ hour: u.hour, ...figures(u) })), totals: figures(totals) };
    },
  );
}

/** The sum of hours of usage (unrounded; `figures` rounds it for an answer). */
export function sumUsage(hours: Iterable<UsageRecord>): Figures {
  const totals: Figures = { requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, rate_limited: 0, gpu_seconds: 0, replica_seconds: {}, revisions: {} };
  for (const u of hours) {
    totals.requests += u.requests;
    totals.errors += u.errors;
    totals.prompt_tokens += u.prompt_tokens;
    totals.completion_tokens += u.completion_tokens;
    totals.rate_limited += u.rate_limited ?? 0;
    totals.gpu_seconds += u.gpu_seconds;
    for (const [c, v] of Object.entries(u.replica_seconds)) totals.replica_seconds[c] = (totals.replica_seconds[c] ?? 0) + v;
    for (const [r, v] of Object.entries(u.revisions ?? {})) {
      const t = (totals.revisions[r] ??= { requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, gpu_seconds: 0 });
      t.requests += v.requests;
      t.errors += v.errors;
      t.prompt_tokens += v.prompt_tokens;
      t.completion_tokens += v.completion_tokens;
      t.gpu_seconds += v.gpu_seconds;
    }
  }
  return totals;
}
