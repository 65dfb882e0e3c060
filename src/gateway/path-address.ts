// Owns reading a request as a path address, `/endpoints/<name>[.<project>]/<rest>`: which
// Host headers may carry one (localhost, any IP literal, the bare endpoint domain — never a
// deployment's own host) and how the target splits into the deployment's name, its project
// (absent: `default`) and the path its replica sees. The split is on the target exactly as
// sent: the name is not percent-decoded (names and projects are lowercase letters, digits and
// hyphens, so they never need encoding, and decoding would give one deployment two
// spellings) and a dot segment anywhere is refused, since a hop that
// resolves `/endpoints/a/../b/` would call another deployment than the one the gateway read
// (`\` and an encoded `/` count as separators there, as some parsers take them for one).

import net from 'node:net';
import { ENDPOINTS_PATH_PREFIX, parseAddressName } from '../domain/endpoint-address.js';

/**
 * The shape of an address name: a deployment's name (or a tag's label), then `.<project>`
 * unless it is the default project's (validation allows less: names start with a letter).
 */
const NAME = /^[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63})?$/;
/** `.` or `..`, percent-encoded or not. */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;
/**
 * What some hop may take for a segment separator: `/`, and `\` (WHATWG URL parsers read it
 * as one in https URLs), either percent-encoded too.
 */
const SEPARATOR = /\/|\\|%2f|%5c/i;
/** Refusal messages quote at most this much of what the client sent. */
const QUOTE_MAX = 64;

/** A Host header's name: no port, no IPv6 brackets, lowercase. */
export function hostName(hostHeader: string): string {
  let host = hostHeader.toLowerCase();
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end === -1 ? host : host.slice(1, end);
  }
  const colon = host.indexOf(':');
  // One colon is a port; more is an IPv6 literal sent without brackets (kept whole).
  if (colon !== -1 && colon === host.lastIndexOf(':')) host = host.slice(0, colon);
  return host;
}

/** Whether a request to this Host may name its deployment in the path. */
export function isPathHost(hostHeader: string, domain: string): boolean {
  const host = hostName(hostHeader);
  return host === 'localhost' || host === domain.toLowerCase() || net.isIP(host) !== 0;
}

export type PathAddress =
  | {
      ok: true;
      /** The deployment's name (or a tag's label `<tag>-<name>`), without its project. */
      name: string;
      /** The project the address names: `default` when it names none. */
      project: string;
      /** What the replica is sent: `/` at least, the query kept. */
      path: string;
    }
  | { ok: false; message: string };

const quote = (s: string): string => JSON.stringify(s.length > QUOTE_MAX ? `${s.slice(0, QUOTE_MAX)}…` : s);

/**
 * The deployment a path-addressed target names and the rest of the target; null when the
 * target is not under `/endpoints` at all.
 */
export function parsePathAddress(target: string): PathAddress | null {
  const query = target.indexOf('?');
  const pathname = query === -1 ? target : target.slice(0, query);
  const search = query === -1 ? '' : target.slice(query);
  if (pathname !== ENDPOINTS_PATH_PREFIX && !pathname.startsWith(`${ENDPOINTS_PATH_PREFIX}/`)) return null;
  const after = pathname.slice(ENDPOINTS_PATH_PREFIX.length + 1);
  const slash = after.indexOf('/');
  const name = slash === -1 ? after : after.slice(0, slash);
  const rest = slash === -1 ? '/' : after.slice(slash);
  if (name === '') {
    return { ok: false, message: `name the endpoint in the path: ${ENDPOINTS_PATH_PREFIX}/<name>/…` };
  }
  const parsed = NAME.test(name) ? parseAddressName(name) : null;
  if (parsed === null) {
    return {
      ok: false,
      message: `${quote(name)} is not an endpoint name: in ${ENDPOINTS_PATH_PREFIX}/<name>/ (${ENDPOINTS_PATH_PREFIX}/<name>.<project>/ outside the default project) names and projects are lowercase letters, digits and hyphens, as they are (never percent-encoded)`,
    };
  }
  if (rest.split(SEPARATOR).some((segment) => DOT_SEGMENT.test(segment))) {
    return { ok: false, message: `the path ${quote(pathname)} has a "." or ".." segment; a path address is refused with one rather than resolved` };
  }
  return { ok: true, name: parsed.name, project: parsed.project, path: `${rest}${search}` };
}
