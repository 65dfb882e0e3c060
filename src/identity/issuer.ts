// Owns the rule for the identity provider's address, apart from the OpenID Connect client so
// that reading the configuration does not load it: https, or plain http on this host only
// (development and tests), since tokens and the client secret travel to it.

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Why the issuer URL cannot be used, or null when it can. */
export function issuerProblem(issuer: string): string | null {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return `"${issuer}" is not a URL`;
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return `must be an https:// URL (plain http only on a loopback host), not "${issuer}"`;
}
