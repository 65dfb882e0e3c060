// Owns endpoint protection and the two free-form string maps. Auth: the bearer token (never a
// service-account key), the client certificate and the rule that no endpoint is public. env
// and annotations: key syntax and string values; env values are also screened for endpoint
// credentials (PEM keys and substrings of the own token included), which is why they sit with
// auth (a token copied into env would leak to everything that runs in the replica). Every
// other field's credentials are credential-screen.ts's.

import { credentialKind } from './credential-screen.js';
import type { DeploymentDraft, Options, ValidationContext } from './types.js';
import { kindOf, type Obj, type Req } from './shape.js';

const TOKEN_MIN = 8;
const TOKEN_MAX = 512;

const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ANNOTATION_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
const PEM_PRIVATE_KEY = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;
const PLATFORM_KEY_AS_TOKEN =
  'endpoint_bearer_token is a service-account key, a platform credential for the control API, and cannot protect an endpoint ' +
  '(every client of the endpoint would hold your platform key); create an endpoint token with POST /vault/tokens or choose ' +
  'a new value, and keep service-account keys for the control API';

function checkToken(req: Req, ctx: ValidationContext): string | undefined {
  const token = req.str('endpoint_bearer_token');
  if (token === undefined) return undefined;
  // First: whatever its syntax, a platform key must hear why it is refused (never echoed).
  if (ctx.platformKeyHashes.has(ctx.hashToken(token))) {
    req.reject('endpoint_bearer_token', PLATFORM_KEY_AS_TOKEN);
  } else if (token.length < TOKEN_MIN || token.length > TOKEN_MAX) {
    req.reject('endpoint_bearer_token', `endpoint_bearer_token must be ${TOKEN_MIN} to ${TOKEN_MAX} characters long`);
  } else if (!TOKEN68.test(token)) {
    req.reject(
      'endpoint_bearer_token',
      'endpoint_bearer_token may contain only letters, digits and - . _ ~ + / (then optional trailing =), the RFC 6750 token68 characters',
    );
  }
  return token;
}

function checkCertificate(req: Req, ctx: ValidationContext, opts: Options): number | null {
  const id = req.int('client_certificate_id');
  if (id === undefined) return null;
  if (opts.checkCertificate && !ctx.certificateIds.has(id)) {
    req.add(
      'client_certificate_id',
      `client certificate ${id} does not exist or is revoked; GET /certificates lists them, or set private_endpoint: true to issue one`,
    );
  }
  return id;
}

/**
 * A vault token bound by id: how a client that did not keep the value (the console, a script
 * choosing from GET /vault/tokens) reuses one; the value never has to leave the vault again.
 */
function checkTokenId(req: Req, ctx: ValidationContext): number | undefined {
  const id = req.int('endpoint_token_id');
  if (id === undefined) return undefined;
  if (req.given('endpoint_bearer_token')) {
    req.add('endpoint_token_id', 'give endpoint_bearer_token (a value) or endpoint_token_id (a vault token), not both');
  } else if (!ctx.tokenIds.has(id)) {
    req.add('endpoint_token_id', `vault token ${id} does not exist; GET /vault/tokens lists them, or give endpoint_bearer_token`);
  }
  return id;
}

export function checkAuth(req: Req, ctx: ValidationContext, opts: Options): DeploymentDraft['auth'] {
  const tokenValue = checkToken(req, ctx);
  const boundId = checkTokenId(req, ctx);
  // A token given by value or by id replaces the binding; null clears it; absent keeps the inherited one.
  const tokenId = boundId ?? (req.has('endpoint_bearer_token') || req.has('endpoint_token_id') ? null : (opts.inherited?.token_id ?? null));
  const certificate = checkCertificate(req, ctx, opts);
  const privateEndpoint = req.bool('private_endpoint') ?? false;
  const anyGiven = req.given('endpoint_bearer_token') || req.given('endpoint_token_id') || req.given('client_certificate_id');
  if (!anyGiven && tokenId === null && !privateEndpoint) {
    if (opts.releasedCertificate !== null) {
      req.add(
        'private_endpoint',
        `private_endpoint: false would unbind client certificate ${opts.releasedCertificate} and leave the endpoint with no credential; ` +
          'every endpoint must be protected (public endpoints are not supported): bind a bearer token first ' +
          '(endpoint_bearer_token, in this request or an earlier one), then turn private_endpoint off',
      );
    } else {
      req.add(
        'endpoint_bearer_token',
        'every endpoint must be protected; public endpoints are not supported: give endpoint_bearer_token (or endpoint_token_id), ' +
          'set private_endpoint: true (a client certificate is issued), or give client_certificate_id',
      );
    }
  }
  return {
    token_value: tokenValue ?? null,
    token_id: tokenId,
    client_certificate_id: certificate,
    private_endpoint: privateEndpoint,
  };
}

/** What is wrong with an environment value that holds a credential, or null. Never the value itself. */
function credentialIn(field: string, value: string, ownToken: string | undefined, ctx: ValidationContext): string | null {
  const kind = credentialKind(value, ctx);
  if (kind === 'platform_key') {
    return (
      `${field} holds a service-account key, a platform credential for the control API; a replica's environment is readable ` +
      'by everything that runs in the replica, so it must never hold one: remove it (and rotate the key if it has been shared)'
    );
  }
  const endpointCredential = (why: string) =>
    `endpoint credentials must not be placed in environment variables: ${why}; ` +
    'protect the endpoint with endpoint_bearer_token or a client certificate instead';
  if (PEM_PRIVATE_KEY.test(value)) return endpointCredential('it holds a PEM private key');
  if (ownToken !== undefined && ownToken.length >= TOKEN_MIN && value.includes(ownToken)) {
    return endpointCredential("it holds this deployment's endpoint bearer token");
  }
  if (kind === 'endpoint_token') return endpointCredential('it holds an endpoint bearer token from the vault');
  return null;
}

export function checkEnv(req: Req, ctx: ValidationContext, ownToken: string | undefined): Record<string, string> {
  const env = req.obj('env') ?? {};
  for (const [name, value] of Object.entries(env)) {
    const field = `env.${name}`;
    if (!ENV_NAME.test(name)) {
      req.add(
        field,
        `environment variable name "${name}" is invalid: names use letters, digits and underscores and begin with a letter or underscore`,
      );
    }
    if (typeof value !== 'string') {
      req.add(field, `${field} must be a string, got ${kindOf(value)}`);
      continue;
    }
    const problem = credentialIn(field, value, ownToken, ctx);
    if (problem) req.add(field, problem);
  }
  return stringEntries(env);
}

export function checkAnnotations(req: Req): Record<string, string> {
  const annotations = req.obj('annotations') ?? {};
  for (const [key, value] of Object.entries(annotations)) {
    const field = `annotations.${key}`;
    if (!ANNOTATION_KEY.test(key)) {
      req.add(
        field,
        `annotation key "${key}" is invalid: an optional DNS prefix and '/', then up to 63 letters, digits, ` +
          "'-', '_' or '.', beginning and ending with a letter or digit",
      );
    }
    if (typeof value !== 'string') req.add(field, `${field} must be a string, got ${kindOf(value)}`);
  }
  return stringEntries(annotations);
}

const stringEntries = (o: Obj): Record<string, string> =>
  Object.fromEntries(Object.entries(o).filter((e): e is [string, string] => typeof e[1] === 'string'));
