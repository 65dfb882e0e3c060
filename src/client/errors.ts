// Owns how the command-line client fails: each failure a person can act on has its own class
// and exit code — 1 the API refused (its message, and the field it names), 2 the command was
// used wrongly, 3 the API could not be reached — and is printed as one line (two with a field).

export const EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3 } as const;

export abstract class ClientError extends Error {
  abstract readonly exitCode: number;
}

/** The control API answered with an error body. */
export class ApiRefusal extends ClientError {
  override name = 'ApiRefusal';
  readonly exitCode = EXIT.refused;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | null,
  ) {
    super(message);
  }
}

/** The command line or a file given to it is wrong; nothing was sent. */
export class UsageError extends ClientError {
  override name = 'UsageError';
  readonly exitCode = EXIT.usage;
}

/** No answer from the control API (connection refused, DNS, TLS, timeout). */
export class Unreachable extends ClientError {
  override name = 'Unreachable';
  readonly exitCode = EXIT.unreachable;
}

/** A wait that ran out, or a deployment that failed while waited for. */
export class WaitFailed extends ClientError {
  override name = 'WaitFailed';
  readonly exitCode = EXIT.refused;
}

/** The lines to print for a failure. */
export function describeFailure(err: ClientError): string[] {
  if (err instanceof ApiRefusal) {
    return [`error: ${err.message} (${err.status} ${err.code})`, ...(err.field ? [`field: ${err.field}`] : [])];
  }
  return [`error: ${err.message}`];
}
