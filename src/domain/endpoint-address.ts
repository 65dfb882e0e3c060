// Owns the addresses of an endpoint, as the gateway routes them and the API and the banner
// print them: by host, `https://<name>.<domain>/…` (every protocol), and by path,
// `https://<path host>/endpoints/<name>/…` (HTTP only), for clients whose resolver has no
// wildcard: getaddrinfo does not resolve `<name>.endpoints.localhost`, so Python's and Node's
// SDKs fail on the host address of the default set-up while `localhost` always resolves.
//
// A deployment of another project than `default` is addressed with its project after its
// name: host `<name>.<project>.<domain>`, path `/endpoints/<name>.<project>/`. Deployment and
// project names are DNS labels (never a dot), so both spellings are unambiguous, and two
// projects may each have a deployment named `chat`. The default project's deployments keep
// the addresses they had before projects existed, and answer at `<name>.default.<domain>`
// and `/endpoints/<name>.default/` too.

import { DEFAULT_PROJECT } from './access.js';

/** The path address's prefix; the gateway strips `/endpoints/<name>` before forwarding. */
export const ENDPOINTS_PATH_PREFIX = '/endpoints';

/**
 * The deployment's name as its addresses spell it: `<name>` in the default project,
 * `<name>.<project>` in any other (the host's labels before the domain, the path's segment).
 */
export function addressName(name: string, project: string = DEFAULT_PROJECT): string {
  return project === DEFAULT_PROJECT ? name : `${name}.${project}`;
}

/**
 * The (name, project) an address spells (`chat`, `chat.default`, `chat.team-a`); null when
 * it has more than one dot or an empty part. Nothing else is checked: an unknown name is
 * simply not in the routing table.
 */
export function parseAddressName(spelt: string): { name: string; project: string } | null {
  const dot = spelt.indexOf('.');
  if (dot === -1) return spelt === '' ? null : { name: spelt, project: DEFAULT_PROJECT };
  const name = spelt.slice(0, dot);
  const project = spelt.slice(dot + 1);
  if (name === '' || project === '' || project.includes('.')) return null;
  return { name, project };
}

/** The canonical spelling of an address name: `chat.default` is `chat`. */
export function canonicalAddressName(spelt: string): string | null {
  const parsed = parseAddressName(spelt);
  return parsed === null ? null : addressName(parsed.name, parsed.project);
}

/** The host that routes to one deployment: `<name>.<domain>`, or `<name>.<project>.<domain>`. */
export function endpointHost(name: string, domain: string, project: string = DEFAULT_PROJECT): string {
  return `${addressName(name, project)}.${domain}`;
}

/**
 * The other host a canonical endpoint host (a deployment's or a tag's, as endpointHost spells
 * it) is also served at: `<label>.default.<domain>` for a default-project host; null for a
 * host of another project, which has one spelling only.
 */
export function defaultProjectAlias(host: string, domain: string): string | null {
  const suffix = `.${domain.toLowerCase()}`;
  const lower = host.toLowerCase();
  if (!lower.endsWith(suffix)) return null;
  const label = lower.slice(0, -suffix.length);
  return label === '' || label.includes('.') ? null : `${label}.${DEFAULT_PROJECT}${suffix}`;
}

/**
 * The canonical host of an endpoint host a client sent (lowercase, no port): the default
 * project's second spelling `<label>.default.<domain>` becomes `<label>.<domain>`; any other
 * host is returned as it is.
 */
export function canonicalEndpointHost(host: string, domain: string): string {
  const suffix = `.${DEFAULT_PROJECT}.${domain.toLowerCase()}`;
  if (!host.endsWith(suffix)) return host;
  const label = host.slice(0, -suffix.length);
  return label === '' || label.includes('.') ? host : `${label}.${domain.toLowerCase()}`;
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
