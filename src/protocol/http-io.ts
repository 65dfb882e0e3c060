// Owns the engine's small HTTP helpers on top of node:http: reading a bounded JSON body and
// writing JSON and the OpenAI error envelope (all four keys present: message, type,
// param, code).

import type http from 'node:http';

export const MAX_BODY_BYTES = 4 << 20;

/** A request body the engine refuses; status and message go back to the client. */
export class BodyError extends Error {
  override name = 'BodyError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Reads the body and parses it as JSON; 413 past MAX_BODY_BYTES, 400 when it is not JSON. */
export async function readJsonBody(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BodyError(413, `request body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new BodyError(400, 'request body is empty; expected a JSON object');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new BodyError(400, `request body is not valid JSON: ${(err as Error).message}`);
  }
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function openAIError(message: string, type: string, param: string | null = null, code: string | null = null): OpenAIErrorBody {
  return { error: { message, type, param, code } };
}

/** The two error types OpenAI's spec uses: the client's fault or ours. */
export function openAIErrorType(status: number): string {
  return status < 500 ? 'invalid_request_error' : 'server_error';
}

export function sendOpenAIError(
  res: http.ServerResponse,
  status: number,
  message: string,
  opts: { param?: string | null; code?: string | null; headers?: http.OutgoingHttpHeaders } = {},
): void {
  sendJson(res, status, openAIError(message, openAIErrorType(status), opts.param ?? null, opts.code ?? null), opts.headers);
}

/** True once the client is gone or the response was ended: nothing more may be written. */
export function closed(res: http.ServerResponse): boolean {
  return res.destroyed || res.writableEnded;
}
