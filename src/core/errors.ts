// Owns the platform's error vocabulary: stable codes, their HTTP status, and the JSON body
// `{"error": {"code", "message", "field"?}}` that every API surface sends.

export type ErrorCode =
  | 'invalid_request'
  | 'invalid_field'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'request_timeout'
  | 'rate_limited'
  | 'headers_too_large'
  | 'quota_exceeded'
  | 'hardware_unavailable'
  | 'unavailable'
  | 'internal';

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  invalid_field: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  request_timeout: 408,
  rate_limited: 429,
  headers_too_large: 431,
  quota_exceeded: 422,
  hardware_unavailable: 422,
  unavailable: 503,
  internal: 500,
};

export interface ErrorBody {
  error: { code: ErrorCode; message: string; field?: string; details?: FieldProblem[] };
}

/** One rule broken by one field; validation returns a list of these. */
export interface FieldProblem {
  field: string;
  message: string;
  /** Defaults to invalid_field; quota and hardware rules use their own codes. */
  code?: ErrorCode;
}

/** An error a caller can act on. The message says what to do next. */
export class PlatformError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly details: FieldProblem[] | undefined;

  constructor(code: ErrorCode, message: string, opts: { field?: string; details?: FieldProblem[] } = {}) {
    super(message);
    this.name = 'PlatformError';
    this.code = code;
    this.field = opts.field;
    this.details = opts.details;
  }

  get status(): number {
    return STATUS[this.code];
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (this.field !== undefined) error.field = this.field;
    if (this.details !== undefined && this.details.length > 1) error.details = this.details;
    return { error };
  }

  /** The first problem becomes the error; all of them travel in `details`. */
  static fromProblems(problems: FieldProblem[]): PlatformError {
    const first = problems[0];
    if (!first) return new PlatformError('invalid_request', 'invalid request');
    return new PlatformError(first.code ?? 'invalid_field', first.message, { field: first.field, details: problems });
  }
}

export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

export const notFound = (what: string, id: number | string): PlatformError =>
  new PlatformError('not_found', `${what} ${id} does not exist`);
