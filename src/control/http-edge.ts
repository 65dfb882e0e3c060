// Owns the control API's HTTP edge beneath its routes: the answers to requests that never
// reach a route — what Node's parser refuses (headers too large, bad bytes, a request not
// received in time) and fastify's framework errors (a URL that is not valid percent-encoding)
// — in the one error shape, and `Expect: 100-continue`, which is answered only once the
// request has been authenticated, so an unauthenticated client is never invited to send
// its body.

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { PlatformError } from '../core/errors.js';

/** Node's parser codes for a header block over the size limit. */
const HEADER_OVERFLOW = 'HPE_HEADER_OVERFLOW';
const CHUNK_EXTENSIONS_OVERFLOW = 'HPE_CHUNK_EXTENSIONS_OVERFLOW';
const REQUEST_TIMEOUT = 'ERR_HTTP_REQUEST_TIMEOUT';

interface ClientError extends Error {
  code?: string;
  /** The parser's reason, e.g. "Invalid header value char". */
  reason?: string;
}

/**
 * Node keeps the response being written on a connection in `_httpMessage`; once its headers
 * are out, an error response would corrupt the stream, so the socket is just closed (as
 * Node's own default handler does).
 */
type HttpSocket = Duplex & { _httpMessage?: ServerResponse | null };

/** What a request Node's parser refused is answered with. */
export function clientErrorAnswer(err: ClientError, maxHeaderSize = http.maxHeaderSize): PlatformError {
  switch (err.code) {
    case HEADER_OVERFLOW:
      return new PlatformError(
        'headers_too_large',
        `the request's headers are larger than this server accepts (${Math.floor(maxHeaderSize / 1024)} KiB in all); send fewer or shorter headers`,
      );
    case CHUNK_EXTENSIONS_OVERFLOW:
      return new PlatformError('payload_too_large', 'the chunk extensions of the request body are larger than this server accepts');
    case REQUEST_TIMEOUT:
      return new PlatformError('request_timeout', 'the request was not received in time; send the headers and body without pausing');
    default: {
      const why = err.reason ?? err.message;
      return new PlatformError('invalid_request', `malformed HTTP request${err.code ? ` (${err.code})` : ''}: ${why}`);
    }
  }
}

function rawResponse(error: PlatformError): string {
  const body = JSON.stringify(error.toBody());
  return [
    `HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status] ?? ''}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * fastify's `clientErrorHandler`: Node's answer (and fastify's default) has no error body in
 * our shape. The connection is closed afterwards: the parser cannot resynchronise on it.
 */
export function answerClientError(err: ClientError, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return; // the peer is gone: nobody to answer
  const inFlight = (socket as HttpSocket)._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const server = (socket as Duplex & { server?: { maxHeaderSize?: number } }).server;
    socket.write(rawResponse(clientErrorAnswer(err, server?.maxHeaderSize ?? http.maxHeaderSize)));
  }
  socket.destroy();
}

/** fastify's `frameworkErrors`: errors raised before routing, answered in the error shape. */
export function answerFrameworkError(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  let error: PlatformError;
  if (err.code === 'FST_ERR_BAD_URL') error = new PlatformError('invalid_request', 'the URL is not valid: a percent-encoded sequence in its path does not decode');
  else if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') error = new PlatformError('invalid_request', 'a path segment is longer than this API accepts (100 characters)');
  else error = new PlatformError('internal', 'internal error; the server log has the details');
  void reply.status(error.status).send(error.toBody());
}

function expectsContinue(req: IncomingMessage): boolean {
  return /^\s*100-continue\s*$/i.test(req.headers.expect ?? '');
}

/**
 * With a 'checkContinue' listener Node no longer answers `Expect: 100-continue` by itself;
 * the request then goes through fastify as any other, and `continueAfterAuthentication`
 * sends the 100 once the credential has been checked. Any other expectation Node would
 * answer 417 with an empty body; it is ignored instead (RFC 9110 §10.1.1 allows that), so
 * the request gets the answer it would get without it, in the error shape when it fails.
 */
export function handleExpectations(server: http.Server | HttpsServer): void {
  const asRequest = (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res);
  server.on('checkContinue', asRequest);
  server.on('checkExpectation', asRequest);
}

/** Called once a request is authenticated (or needs no credential). */
export function continueAfterAuthentication(req: IncomingMessage, res: ServerResponse): void {
  if (expectsContinue(req) && !res.headersSent) res.writeContinue();
}

/**
 * A refusal of a request whose client still waits for `100 Continue`: its body will never
 * come, so the connection closes after the answer instead of waiting to skip that body.
 */
export function closeIfBodyWithheld(req: IncomingMessage, reply: FastifyReply): void {
  if (expectsContinue(req)) void reply.header('connection', 'close');
}
