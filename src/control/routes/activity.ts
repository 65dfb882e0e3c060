// Owns GET /deployments/{family}/{id}/activity: the last 15 minutes of the deployment's
// in-flight and held requests, of the signal it scales on and of its desired and ready
// replicas, in 5-second steps — the autoscaler deciding, for the console's Activity tab. The figures live in memory where the
// autoscaler runs (beside a gateway, whose measurements it reads); a control process without
// one answers 409 saying so.

import { PlatformError } from '../../core/errors.js';
import type { ActivitySource } from '../../domain/ports.js';
import type { Family } from '../../domain/records.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ActivityResponse, ErrorResponse, IdParams } from '../schemas.js';

export function registerActivityRoutes(app: ControlApp, ctx: ControlContext, family: Family): void {
  app.get(
    `/deployments/${family}/:id/activity`,
    { schema: { tags: [`${family} deployments`], params: IdParams, response: { 200: ActivityResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request) => {
      const d = await ctx.deployments.get(family, request.params.id, request.project);
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
