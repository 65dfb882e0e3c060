// Owns GET /deployments/{family}/{id}/events: what the controller and the autoscaler recorded
// of a deployment — scale decisions with their figures, rollout steps, replicas started,
// ready, restarted, failing, image pulls — the newest ones, oldest first, from the store (so
// every control process answers the same, and a restart loses none). Whoever may read the
// deployment may read its events.

import { Type } from 'typebox';
import type { Family } from '../../domain/records.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse, IdParams } from '../schemas.js';

export const DeploymentEventResponse = Type.Object(
  {
    time: Type.String({ description: 'when it last happened (ISO 8601)' }),
    first_time: Type.String({ description: 'when it first happened: time, unless repeats were folded into it' }),
    type: Type.String({ enum: ['normal', 'warning'], description: 'warning: something someone may have to act on' }),
    reason: Type.String({ description: 'one CamelCase word: ScaledUp, ScaledDown, ScaledToZero, RolloutStarted, RolloutStep, RolloutCompleted, RolloutFailed, RolledBack, ReplicaStarted, ReplicaReady, ReplicaRestarted, ReplicaFailing, ImagePulling, ImagePulled, PullFailed' }),
    message: Type.String(),
    count: Type.Integer({ minimum: 1, description: 'how many times it happened: identical events close together are folded into one' }),
  },
  { additionalProperties: false },
);

export const EventsResponse = Type.Object(
  { items: Type.Array(DeploymentEventResponse, { description: 'oldest first (by when each last happened); the newest 100 are kept' }) },
  { additionalProperties: false },
);

export function registerEventRoutes(app: ControlApp, ctx: ControlContext, family: Family): void {
  app.get(
    `/deployments/${family}/:id/events`,
    { schema: { tags: [`${family} deployments`], params: IdParams, response: { 200: EventsResponse, 404: ErrorResponse } } },
    async (request) => {
      const d = await ctx.deployments.get(family, request.params.id);
      return { items: await ctx.deps.store.listEvents(d.id) };
    },
  );
}
