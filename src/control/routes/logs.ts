// Owns GET /deployments/{family}/{id}/logs: a revision's replica logs (stdout, stderr and the
// runtime's own lines) filtered by component and replica, the last `tail` lines, and with
// `follow=true` a Server-Sent Events stream of every line written after the call. A revision
// deployed with enable_logging false has no logs (spec), and the answer says so.

import { Type } from '../../core/typebox.js';
import { PlatformError } from '../../core/errors.js';
import type { Family } from '../../domain/records.js';
import type { LogEntry, LogFilter } from '../../domain/ports.js';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse, Id, IdParams, LogsResponse } from '../schemas.js';

const LogsQuery = Type.Object(
  {
    revision: Type.Optional(Id('default: the current revision')),
    component: Type.Optional(Type.String({ description: 'Replica (general); Frontend, Worker, Prefill or Decode (orchestrated)' })),
    replica: Type.Optional(Type.String({ description: 'a replica name, e.g. chat-r1-7' })),
    tail: Type.Integer({ minimum: 0, maximum: 10000, default: 100 }),
    follow: Type.Boolean({ default: false, description: 'stream new lines as Server-Sent Events' }),
  },
  { additionalProperties: false },
);

const HEARTBEAT_MS = 15_000;

export function registerLogRoutes(app: ControlApp, ctx: ControlContext, family: Family): void {
  const logs = ctx.deps.logs;
  app.get(
    `/deployments/${family}/:id/logs`,
    { schema: { tags: [`${family} deployments`], params: IdParams, querystring: LogsQuery, response: { 200: LogsResponse, 400: ErrorResponse, 404: ErrorResponse } } },
    async (request, reply) => {
      const d = await ctx.deployments.get(family, request.params.id, request.project);
      const q = request.query;
      const revision = q.revision ?? d.revision;
      const r = d.revisions.find((x) => x.revision === revision);
      if (!r) throw new PlatformError('not_found', `deployment ${d.name} has no revision ${revision}`);
      if (!r.spec.enable_logging || logs === null) {
        return {
          deployment_id: d.id,
          revision,
          logging: false,
          message: `revision ${revision} of ${d.name} has no logs: it was deployed with enable_logging false`,
          lines: [],
        };
      }
      const filter: LogFilter = { revision, component: q.component, replica: q.replica };
      const lines = q.tail === 0 ? [] : await logs.tail(d.id, filter, q.tail);
      if (!q.follow) return { deployment_id: d.id, revision, logging: true, lines };

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      // A comment first, so clients see the response (headers included) before any log line.
      res.write(`: following ${d.name} revision ${revision}\n\n`);
      const send = (entry: LogEntry) => res.write(`data: ${JSON.stringify(entry)}\n\n`);
      for (const entry of lines) send(entry);
      const aborter = new AbortController();
      const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
      request.raw.socket.once('close', () => aborter.abort());
      res.once('close', () => aborter.abort());
      try {
        await logs.follow(d.id, filter, send, aborter.signal);
      } finally {
        clearInterval(heartbeat);
        res.end();
      }
    },
  );
}
