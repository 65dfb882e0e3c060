// Owns the hooks that write the audit log (audit-log.ts) for the control API: an entry for
// every audited call, written before its answer leaves (onSend), so a crash after a 2xx never
// loses its entry; a terminal's WebSocket as it opens; and which 404s the rules answered.

import type { FastifyRequest } from 'fastify';
import { AUDITED_READS, entryOf, hiddenByPolicy, type AuditLog, type NewAuditEntry } from './audit-log.js';
import type { ControlApp } from './context.js';
import { HiddenByPolicy } from './principal.js';

/**
 * Writes an entry for every audited call before its answer leaves. An entry that cannot be
 * written (the store is down) is logged in full — it holds no secret — and the answer goes on:
 * the call itself has already happened.
 */
export function recordAudit(app: ControlApp, audit: AuditLog): void {
  app.addHook('onError', async (request, _reply, error) => {
    if (error instanceof HiddenByPolicy) hiddenByPolicy.add(request);
  });
  const write = async (request: FastifyRequest, entry: NewAuditEntry | null): Promise<void> => {
    if (entry === null) return;
    try {
      await audit.append(entry);
    } catch (err) {
      request.log.error({ err, audit: entry }, 'audit log: the entry of this call could not be written');
    }
  };
  app.addHook('onSend', async (request, reply, payload) => {
    await write(request, entryOf(request, { status: reply.statusCode, payload, contentType: reply.getHeader('content-type') }, audit.now()));
    return payload;
  });
  // A WebSocket (the terminal) that passed the rules is taken over by its handler and never
  // sends an answer: its entry is written as it opens, with the 101 it is about to get.
  app.addHook('preHandler', async (request) => {
    const rule = request.routeOptions.config.rule;
    if (process.env.NO_WS_AUDIT || !request.ws || rule === undefined || !AUDITED_READS.has(rule)) return;
    await write(request, entryOf(request, { status: 101 }, audit.now()));
  });
}

