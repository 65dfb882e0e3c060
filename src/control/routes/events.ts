// Owns GET /deployments/{family}/{id}/events: what the controller and the autoscaler recorded
// of a deployment — scale decisions with their figures, rollout steps, replicas started,
// ready, restarted, failing, image pulls — the newest ones, oldest first, from the store (so
// every control process answers the same, and a restart loses none). Whoever may read the
// deployment may read its events.

import type { Family } from '../../domain/records.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse, EventsResponse, IdParams } from '../schemas.js';

export function registerEventRoutes(app: ControlApp, ctx: ControlContext, family: Family): void {
  app.get(
    `/deployments/${family}/:id/events`,
    { schema: { tags: [`${family} deployments`], params: IdParams, response: { 200: EventsResponse, 404: ErrorResponse } } },
    async (request) => {
      const d = await ctx.deployments.get(family, request.params.id, request.project);
      return { items: await ctx.deps.store.listEvents(d.id) };
    },
  );
}
