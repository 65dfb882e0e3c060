// Owns the translation of every failure the control API can meet — our PlatformError,
// store conflicts, fastify's schema, JSON and body-size errors — into the one error body
// `{"error": {"code", "message", "field"?}}`, so clients parse a single shape.

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { PlatformError } from '../core/errors.js';
import { ConflictError, NotFoundError, StoreUnavailableError, VersionConflictError } from '../store/store.js';

interface SchemaIssue {
  instancePath?: string;
  schemaPath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** `/worker_pools/prefill/replicas` → `worker_pools.prefill.replicas`. */
function fieldOf(issue: SchemaIssue): string {
  const base = (issue.instancePath ?? '').split('/').filter(Boolean).join('.');
  const extra = issue.params?.additionalProperty ?? issue.params?.missingProperty;
  if (typeof extra === 'string') return base ? `${base}.${extra}` : extra;
  return base;
}

/**
 * An enum's values in words. Nullable fields are an anyOf of the type and null (schemas.ts),
 * so an enum met inside an anyOf also takes null.
 */
function oneOf(issue: SchemaIssue): string {
  const values = (issue.params?.allowedValues as unknown[]).map(String);
  const nullable = (issue.schemaPath ?? '').includes('/anyOf/');
  return `one of ${values.join(', ')}${nullable ? ', or null' : ''}`;
}

function fromSchemaIssues(issues: SchemaIssue[], part: string): PlatformError {
  const first = issues[0] ?? {};
  const field = fieldOf(first);
  let message: string;
  if (first.keyword === 'additionalProperties') message = `unknown field "${field}"`;
  else if (first.keyword === 'required') message = `${field} is required`;
  else if (first.keyword === 'enum' && Array.isArray(first.params?.allowedValues)) message = `${field || part} must be ${oneOf(first)}`;
  else message = `${field || part} ${first.message ?? 'is invalid'}`;
  if (part !== 'body') return new PlatformError('invalid_request', `${part} ${message}`, { field });
  return new PlatformError('invalid_field', message, { field });
}

export const STORE_UNAVAILABLE = 'the store (Redis) is unreachable; try again shortly';

export function toPlatformError(err: unknown): PlatformError {
  if (err instanceof PlatformError) return err;
  if (err instanceof ConflictError) return new PlatformError('conflict', err.message);
  if (err instanceof VersionConflictError) {
    return new PlatformError('conflict', `${err.message}; read it again and retry`);
  }
  if (err instanceof NotFoundError) return new PlatformError('not_found', err.message);
  // The cause (Redis's address, the socket error) is for the server log, not for clients.
  if (err instanceof StoreUnavailableError) return new PlatformError('unavailable', STORE_UNAVAILABLE);
  const fe = err as FastifyError & { validation?: SchemaIssue[]; validationContext?: string };
  if (Array.isArray(fe.validation)) return fromSchemaIssues(fe.validation, fe.validationContext ?? 'body');
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new PlatformError('payload_too_large', 'request body is larger than 1 MiB');
  }
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new PlatformError('invalid_request', 'send the body as application/json');
  }
  if (fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return new PlatformError('invalid_request', 'the body is empty; send a JSON object');
  }
  if (fe.statusCode === 400 || err instanceof SyntaxError) {
    return new PlatformError('invalid_request', `the body is not valid JSON: ${fe.message}`);
  }
  return new PlatformError('internal', 'internal error; the server log has the details');
}

export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const platform = toPlatformError(err);
  if (platform.code === 'internal') request.log.error({ err }, 'unhandled error');
  // One line per refused request at debug: the store monitor logs the outage itself, once.
  else if (err instanceof StoreUnavailableError) request.log.debug({ err }, 'store unreachable');
  if (platform.code === 'unauthenticated') void reply.header('www-authenticate', 'Bearer realm="infergate"');
  void reply.status(platform.status).send(platform.toBody());
}
