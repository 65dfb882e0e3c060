// Owns the rules of the endpoint limits both families share: the request body size limit, the
// wait for a replica's first response, the per-credential rate limit (requests per second,
// tokens per minute) and flow control (the queue past saturation: its size and each priority
// class's longest wait). They are gateway policy, not replica spec, so they never make a revision.

import { PRIORITIES, type Priority } from '../priority.js';
import { DEFAULT_FLOW_CONTROL, type EndpointLimits, type FlowControl, type RateLimit } from '../records.js';
import { isObject, kindOf, type Obj, type Req } from './shape.js';
import {
  bodyLimitProblem,
  firstResponseTimeoutProblem,
  maxQueueProblem,
  maxWaitProblem,
  requestsPerSecondProblem,
  tokensPerMinuteProblem,
} from './field-rules.js';

export { BODY_LIMIT_MAX, BODY_LIMIT_MIN, FIRST_RESPONSE_MAX_SECONDS, MAX_QUEUE_MAX, MAX_WAIT_MAX_SECONDS } from './field-rules.js';
const RATE_KEYS = ['requests_per_second', 'tokens_per_minute'] as const;
const FLOW_KEYS = ['max_queue', 'max_wait_seconds'] as const;

function checkBodyLimit(req: Req): number | null {
  const bytes = req.int('max_request_body_bytes');
  if (bytes === undefined) return null;
  const problem = bodyLimitProblem(bytes);
  if (problem) req.add('max_request_body_bytes', problem);
  return bytes;
}

function checkFirstResponseTimeout(req: Req): number | null {
  const seconds = req.int('first_response_timeout_seconds');
  if (seconds === undefined) return null;
  const problem = firstResponseTimeoutProblem(seconds);
  if (problem) req.add('first_response_timeout_seconds', problem);
  return seconds;
}

function checkRate(req: Req, raw: Record<string, unknown>, key: (typeof RATE_KEYS)[number]): number | null {
  const field = `rate_limit.${key}`;
  const v = raw[key];
  if (v === undefined || v === null) return null;
  const problem = key === 'requests_per_second' ? requestsPerSecondProblem(v) : tokensPerMinuteProblem(v);
  if (problem) {
    req.add(field, problem);
    return null;
  }
  // No problem means a number in range.
  return v as number;
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

function checkMaxWait(req: Req, raw: unknown): Record<Priority, number> {
  const waits: Record<Priority, number> = { ...DEFAULT_FLOW_CONTROL.max_wait_seconds };
  if (raw === undefined || raw === null) return waits;
  if (!isObject(raw)) {
    req.add('flow_control.max_wait_seconds', `flow_control.max_wait_seconds must be an object {critical, standard, sheddable} of seconds, got ${kindOf(raw)}`);
    return waits;
  }
  for (const key of Object.keys(raw)) {
    if (!(PRIORITIES as readonly string[]).includes(key)) {
      req.add(
        `flow_control.max_wait_seconds.${key}`,
        `unknown field "flow_control.max_wait_seconds.${key}": the priority classes are ${PRIORITIES.join(', ')}`,
      );
    }
  }
  for (const cls of PRIORITIES) {
    const v = raw[cls];
    if (v === undefined || v === null) continue;
    const problem = maxWaitProblem(cls, v, DEFAULT_FLOW_CONTROL.max_wait_seconds[cls]);
    if (problem) req.add(`flow_control.max_wait_seconds.${cls}`, problem);
    else waits[cls] = v as number;
  }
  return waits;
}

/**
 * flow_control absent or null: the defaults, stored as null. An object: its keys over the
 * defaults, so what is stored is always complete and a PATCH replaces the whole object.
 */
function checkFlowControl(req: Req): FlowControl | null {
  const raw = req.obj('flow_control');
  if (raw === undefined) return null;
  for (const key of Object.keys(raw)) {
    if (!(FLOW_KEYS as readonly string[]).includes(key)) {
      req.add(`flow_control.${key}`, `unknown field "flow_control.${key}": flow_control has max_queue and max_wait_seconds`);
    }
  }
  let maxQueue = DEFAULT_FLOW_CONTROL.max_queue;
  const queue = raw.max_queue;
  if (queue !== undefined && queue !== null) {
    const problem = maxQueueProblem(queue, DEFAULT_FLOW_CONTROL.max_queue);
    if (problem) req.add('flow_control.max_queue', problem);
    else maxQueue = queue as number;
  }
  return { max_queue: maxQueue, max_wait_seconds: checkMaxWait(req, raw.max_wait_seconds) };
}

/**
 * What the gateway applies for a flow_control value as a request gives it: the defaults for
 * null or absent, the given keys over the defaults for an object; undefined when the value is
 * not of that shape (the API would refuse it). For comparing a file with a deployment
 * (`infergate apply`) by effect rather than by spelling.
 */
export function effectiveFlowControl(value: unknown): FlowControl | undefined {
  if (value === undefined || value === null) return structuredClone(DEFAULT_FLOW_CONTROL);
  if (!isObject(value)) return undefined;
  const waits: unknown = value.max_wait_seconds ?? {};
  if (!isObject(waits)) return undefined;
  // A misspelt key must reach the API and be refused there, not compare equal to the defaults.
  const known = (o: Obj, keys: readonly string[]) => Object.keys(o).every((k) => keys.includes(k));
  if (!known(value, FLOW_KEYS) || !known(waits, PRIORITIES)) return undefined;
  const pick = (v: unknown, fallback: number) => (v === undefined || v === null ? fallback : v);
  const out = {
    max_queue: pick(value.max_queue, DEFAULT_FLOW_CONTROL.max_queue),
    max_wait_seconds: Object.fromEntries(PRIORITIES.map((p) => [p, pick((waits as Obj)[p], DEFAULT_FLOW_CONTROL.max_wait_seconds[p])])),
  };
  return out as FlowControl;
}

export function checkLimits(req: Req): EndpointLimits {
  return {
    max_request_body_bytes: checkBodyLimit(req),
    first_response_timeout_seconds: checkFirstResponseTimeout(req),
    rate_limit: checkRateLimit(req),
    flow_control: checkFlowControl(req),
  };
}
