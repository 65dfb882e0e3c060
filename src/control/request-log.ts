// Owns what the control API's request log says about a request: method, path, host and peer,
// and of the query string only the parameter names. Query values can carry anything a client
// chose to put there (names, filters, a token pasted by mistake), and logs travel further
// than the API does, so every value is replaced. No header is logged: Authorization holds the
// key, and so does Sec-WebSocket-Protocol when a browser opens a WebSocket.

import type { FastifyRequest } from 'fastify';

export const REDACTED = '[redacted]';

/** `/a/b?tail=10&follow` → `/a/b?tail=[redacted]&follow`: the path and names stay, values go. */
export function redactQuery(url: string): string {
  const mark = url.indexOf('?');
  if (mark < 0) return url;
  const names = url
    .slice(mark + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      return eq < 0 ? pair : `${pair.slice(0, eq)}=${REDACTED}`;
    });
  return `${url.slice(0, mark)}?${names.join('&')}`;
}

export interface RequestLogView {
  method: string;
  url: string;
  host: string;
  remoteAddress: string;
  remotePort: number | undefined;
}

/** The `req` serializer of fastify's "incoming request" lines (fastify's own, minus query values). */
export function requestLogView(request: FastifyRequest): RequestLogView {
  return {
    method: request.method,
    url: redactQuery(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
