// Owns the two addresses of an endpoint, as the gateway routes them and the API and the
// banner print them: by host, `https://<name>.<domain>/…` (every protocol), and by path,
// `https://<path host>/endpoints/<name>/…` (HTTP only), for clients whose resolver has no
// wildcard: getaddrinfo does not resolve `<name>.endpoints.localhost`, so Python's and Node's
// SDKs fail on the host address of the default set-up while `localhost` always resolves.

/** The path address's prefix; the gateway strips `/endpoints/<name>` before forwarding. */
export const ENDPOINTS_PATH_PREFIX = '/endpoints';

/** The host that routes to one deployment. */
export function endpointHost(name: string, domain: string): string {
  return `${name}.${domain}`;
}

/**
 * The host a path address is printed with: `localhost` for a domain under `.localhost`
 * (RFC 6761: loopback, and resolvable by every resolver as a name of its own), else the
 * bare domain, which needs one DNS record rather than a wildcard.
 */
export function pathAddressHost(domain: string): string {
  const lower = domain.toLowerCase();
  return lower === 'localhost' || lower.endsWith('.localhost') ? 'localhost' : domain;
}

/** `host` or `host:port`, the port left out when it is HTTPS's own. */
export function withPort(host: string, port: number): string {
  return port === 443 ? host : `${host}:${port}`;
}
