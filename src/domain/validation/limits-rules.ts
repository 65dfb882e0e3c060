// Owns the rules of the endpoint limits both families share: the request body size limit, the
// wait for a replica's first response, and the per-credential rate limit (requests per second,
// tokens per minute). They are gateway policy, not replica spec, so they never make a revision.

import type { EndpointLimits, RateLimit } from '../records.js';
import { kindOf, type Req } from './shape.js';

export const BODY_LIMIT_MIN = 1024;
export const BODY_LIMIT_MAX = 64 * 1024 ** 3;
// The gateway's own --upstream-headers-timeout and --grpc-first-message-timeout stop at a day too.
export const FIRST_RESPONSE_MAX_SECONDS = 86_400;
const RPS_MAX = 1_000_000;
const TPM_MAX = 1_000_000_000_000;
const RATE_KEYS = ['requests_per_second', 'tokens_per_minute'] as const;

function checkBodyLimit(req: Req): number | null {
  const bytes = req.int('max_request_body_bytes');
  if (bytes === undefined) return null;
  if (bytes < BODY_LIMIT_MIN || bytes > BODY_LIMIT_MAX) {
    req.add(
      'max_request_body_bytes',
      `max_request_body_bytes must be between ${BODY_LIMIT_MIN} (1 KiB) and ${BODY_LIMIT_MAX} (64 GiB); omit it (or null) for the server's default`,
    );
  }
  return bytes;
}

function checkFirstResponseTimeout(req: Req): number | null {
  const seconds = req.int('first_response_timeout_seconds');
  if (seconds === undefined) return null;
  if (seconds < 1 || seconds > FIRST_RESPONSE_MAX_SECONDS) {
    req.add(
      'first_response_timeout_seconds',
      `first_response_timeout_seconds must be a whole number of seconds from 1 to ${FIRST_RESPONSE_MAX_SECONDS} (a day), got ${seconds}; omit it (or null) for the gateway's default`,
    );
  }
  return seconds;
}

function checkRate(req: Req, raw: Record<string, unknown>, key: (typeof RATE_KEYS)[number]): number | null {
  const field = `rate_limit.${key}`;
  const v = raw[key];
  if (v === undefined || v === null) return null;
  if (key === 'requests_per_second') {
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > RPS_MAX) {
      req.add(field, `${field} must be a number above 0 and at most ${RPS_MAX} (fractions allowed: 0.5 is one request every 2 s), got ${kindOf(v)}${typeof v === 'number' ? ` ${v}` : ''}`);
      return null;
    }
    return v;
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1 || v > TPM_MAX) {
    req.add(field, `${field} must be a whole number from 1 to ${TPM_MAX}, got ${kindOf(v)}${typeof v === 'number' ? ` ${v}` : ''}`);
    return null;
  }
  return v;
}

function checkRateLimit(req: Req): RateLimit | null {
  const raw = req.obj('rate_limit');
  if (raw === undefined) return null;
  for (const key of Object.keys(raw)) {
    if (!(RATE_KEYS as readonly string[]).includes(key)) {
      req.add(`rate_limit.${key}`, `unknown field "rate_limit.${key}": rate_limit has requests_per_second and tokens_per_minute`);
    }
  }
  const limit = { requests_per_second: checkRate(req, raw, 'requests_per_second'), tokens_per_minute: checkRate(req, raw, 'tokens_per_minute') };
  // {} or both null is no limit at all: stored as null so the record says so plainly.
  return limit.requests_per_second === null && limit.tokens_per_minute === null ? null : limit;
}

export function checkLimits(req: Req): EndpointLimits {
  return {
    max_request_body_bytes: checkBodyLimit(req),
    first_response_timeout_seconds: checkFirstResponseTimeout(req),
    rate_limit: checkRateLimit(req),
  };
}
