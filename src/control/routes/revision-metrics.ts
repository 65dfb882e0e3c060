// Owns GET /deployments/{family}/{id}/revision-metrics: what the gateways measured of each
// revision over the last `window_seconds` (requests, 5xx errors, time to first token p50 and
// p99, completion tokens per second), beside each revision's current share of traffic, so a
// canary can be compared with the revision it may replace. The figures live in memory where
// the autoscaler runs; a control process without one answers 409 saying so, like /activity.

import { Type } from '../../core/typebox.js';
import { PlatformError } from '../../core/errors.js';
import type { RevisionMetrics } from '../../domain/ports.js';
import type { Family } from '../../domain/records.js';
import { STATS_STEP_MS, STATS_STEPS } from '../../domain/revision-stats.js';
import { resolveTraffic } from '../../domain/traffic.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse, IdParams, RevisionMetricsResponse } from '../schemas.js';

export const WINDOW_MIN_SECONDS = 10;
/** The gateways keep five minutes of 5-second steps per revision. */
export const WINDOW_MAX_SECONDS = (STATS_STEP_MS * STATS_STEPS) / 1000;
const WINDOW_DEFAULT_SECONDS = WINDOW_MAX_SECONDS;

const RevisionMetricsQuery = Type.Object(
  {
    window_seconds: Type.Optional(
      Type.Integer({ description: `the window to sum over, ${WINDOW_MIN_SECONDS} to ${WINDOW_MAX_SECONDS} seconds; default ${WINDOW_DEFAULT_SECONDS}` }),
    ),
  },
  { additionalProperties: false },
);

const NO_FIGURES = { requests: 0, errors: 0, ttft_p50_ms: null, ttft_p99_ms: null, tokens_per_second: 0 };

export function registerRevisionMetricsRoutes(app: ControlApp, ctx: ControlContext, family: Family): void {
  app.get(
    `/deployments/${family}/:id/revision-metrics`,
    {
      schema: {
        tags: [`${family} deployments`],
        params: IdParams,
        querystring: RevisionMetricsQuery,
        response: { 200: RevisionMetricsResponse, 400: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse },
      },
    },
    async (request) => {
      const d = await ctx.deployments.get(family, request.params.id, request.project);
      const windowSeconds = request.query.window_seconds ?? WINDOW_DEFAULT_SECONDS;
      if (windowSeconds < WINDOW_MIN_SECONDS || windowSeconds > WINDOW_MAX_SECONDS) {
        throw new PlatformError(
          'invalid_request',
          `window_seconds must be from ${WINDOW_MIN_SECONDS} to ${WINDOW_MAX_SECONDS} (the gateways keep the last five minutes per revision), got ${windowSeconds}`,
          { field: 'window_seconds' },
        );
      }
      const source = ctx.deps.revisionMetrics;
      if (!source) {
        throw new PlatformError(
          'conflict',
          'per-revision metrics are kept where the autoscaler runs (infergate serve with the control role, beside the gateways reporting to it); this process runs none: ask that process',
        );
      }
      const shares = resolveTraffic(d);
      const measured = new Map<number, RevisionMetrics>(source.revisions(d.id, windowSeconds).map((m) => [m.revision, m]));
      const numbers = [...new Set([...measured.keys(), ...shares.map((s) => s.revision)])].sort((a, b) => a - b);
      const revisions = numbers.map((revision) => ({
        ...NO_FIGURES,
        ...measured.get(revision),
        revision,
        percent: shares.find((s) => s.revision === revision)?.percent ?? 0,
      }));
      return { window_seconds: windowSeconds, revisions };
    },
  );
}
