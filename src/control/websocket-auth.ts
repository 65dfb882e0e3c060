// Owns how a browser's WebSocket carries the platform credential and which subprotocol the
// server answers with. Browsers cannot set Authorization on a WebSocket, so the key travels as
// one entry of Sec-WebSocket-Protocol, `base64url.bearer.infergate.<base64url(key)>` (the
// convention of Kubernetes' API server). That entry is a credential, not a protocol: it is never
// selected, so the key is never echoed back in the handshake's response.

import type { IncomingMessage } from 'node:http';

export const BEARER_PROTOCOL_PREFIX = 'base64url.bearer.infergate.';
/** The terminal with a pseudo-terminal (routes/terminal.ts). */
export const TTY_PROTOCOL = 'infergate.tty.v1';

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The entries of a Sec-WebSocket-Protocol header (one string or, repeated, several). */
export function offeredProtocols(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const joined = Array.isArray(header) ? header.join(',') : header;
  return joined
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

export type BearerProtocol = { kind: 'none' } | { kind: 'key'; key: string } | { kind: 'malformed'; reason: string };

/**
 * The key a browser put in its offered subprotocols. Only unpadded base64url is accepted,
 * and only one such entry: two would leave it open which key the request is made with.
 */
export function bearerFromProtocols(header: string | string[] | undefined): BearerProtocol {
  const entries = offeredProtocols(header).filter((p) => p.startsWith(BEARER_PROTOCOL_PREFIX));
  if (entries.length === 0) return { kind: 'none' };
  if (entries.length > 1) return { kind: 'malformed', reason: `offer one ${BEARER_PROTOCOL_PREFIX}<key> entry, not ${entries.length}` };
  const encoded = (entries[0] as string).slice(BEARER_PROTOCOL_PREFIX.length);
  // A length of 1 mod 4 is no whole number of bytes in base64.
  if (!BASE64URL.test(encoded) || encoded.length % 4 === 1) {
    return { kind: 'malformed', reason: `the ${BEARER_PROTOCOL_PREFIX}<key> entry must be the key in base64url without padding` };
  }
  const key = Buffer.from(encoded, 'base64url').toString('utf8');
  if (key === '' || /[\s\u0000-\u001f\u007f\ufffd]/.test(key)) {
    return { kind: 'malformed', reason: `the ${BEARER_PROTOCOL_PREFIX}<key> entry does not decode to a key` };
  }
  return { kind: 'key', key };
}

/**
 * ws's `handleProtocols`: the terminal's own protocol when offered, else the first other
 * offer (what ws does by default), never a credential entry; false answers with none.
 */
export function selectProtocol(protocols: Set<string>, _request?: IncomingMessage): string | false {
  if (protocols.has(TTY_PROTOCOL)) return TTY_PROTOCOL;
  for (const p of protocols) if (!p.startsWith(BEARER_PROTOCOL_PREFIX)) return p;
  return false;
}
