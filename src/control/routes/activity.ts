// Owns GET /deployments/{family}/{id}/activity: the last 15 minutes of the deployment's
// in-flight and held requests, of the signal it scales on and of its desired and ready
// replicas, in 5-second steps — the autoscaler deciding, for the console's Activity tab. The figures live in memory where the
// autoscaler runs (beside a gateway, whose measurements it reads); a control process without
// one answers 409 saying so.

import { Type } from 'typebox';
import { PlatformError } from '../../core/errors.js';
import { AUTOSCALING_METRICS } from '../../domain/autoscaling-signal.js';
import type { ActivitySource } from '../../domain/ports.js';
import type { Family } from '../../domain/records.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse, IdParams } from '../schemas.js';

const ActivityPoint = Type.Object(
  {
    t: Type.String({ description: 'start of the 5-second step (ISO 8601)' }),
    in_flight: Type.Number({ description: "mean of the gateway's per-second concurrency in the step, 2 decimals" }),
    in_flight_max: Type.Number({ description: 'the highest per-second concurrency in the step' }),
    held: Type.Integer({ description: 'most requests held at once for a replica (scale from zero)' }),
    desired: Type.Union([Type.Integer(), Type.Null()], { description: "the autoscaler's figure at the step's end; null while it has not decided (paused, just created)" }),
    ready: Type.Integer({ description: 'ready replicas of the scaled component at the step\'s end' }),
    signal: Type.Union([Type.Number(), Type.Null()], {
      description:
        "the autoscaling metric's figure the autoscaler last read in the step, over its stable window, in the target's unit: in-flight requests per ready replica (concurrency), waiting requests per replica (queue_depth), percent of KV cache in use (kv_cache), p90 ms (ttft); in a split, the highest of its revisions'; null when it read none",
    }),
  },
  { additionalProperties: false },
);

export const ActivityResponse = Type.Object(
  {
    step_seconds: Type.Integer(),
    window_seconds: Type.Integer(),
    component: Type.Union([Type.String(), Type.Null()], { description: 'Replica or Worker; null when the pools have fixed sizes (disaggregated), with no points' }),
    metric: Type.Enum([...AUTOSCALING_METRICS], { description: 'the signal the deployment scales on (autoscaling_metric)' }),
    target: Type.Union([Type.Number(), Type.Null()], { description: "the metric's target (target_concurrency for concurrency, else autoscaling_target); null: a fixed size" }),
    points: Type.Array(ActivityPoint, { description: 'oldest first; the last is the step in progress' }),
  },
  { additionalProperties: false },
);

export function registerActivityRoutes(app: ControlApp, ctx: ControlContext, family: Family): void {
  app.get(
    `/deployments/${family}/:id/activity`,
    { schema: { tags: [`${family} deployments`], params: IdParams, response: { 200: ActivityResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request) => {
      const d = await ctx.deployments.get(family, request.params.id);
      if (!ctx.deps.activity) {
        throw new PlatformError(
          'conflict',
          'activity is recorded by the autoscaler, which runs in the process that runs both the controller and a gateway (infergate serve with --role all); this process runs none: ask that process',
        );
      }
      return ctx.deps.activity.view(d);
    },
  );
}
