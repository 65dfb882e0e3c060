// Owns endpoint protection and the free-form string maps. Auth: the bearer token (never a
// service-account key), the client certificate and the rule that no endpoint is public. env,
// secret_env and annotations: key syntax and string values; environment values (plain and
// secret) are also screened for endpoint credentials (PEM keys and substrings of the own token
// included), which is why they sit with auth (a token copied into the environment would leak
// to everything that runs in the replica). Secret variables: names that are always secret are
// moved out of env, and a name is never both plain and secret once the request is applied.
// Every other field's credentials are credential-screen.ts's.

import { isAlwaysSecret } from '../secret-env.js';
import { credentialKind } from './credential-screen.js';
import { annotationKeyProblem, envBothProblem, envNameProblem, TOKEN_MIN, tokenProblem } from './field-rules.js';
import type { DeploymentDraft, Options, ValidationContext } from './types.js';
import { kindOf, type Obj, type Req } from './shape.js';

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
  } else {
    const problem = tokenProblem(token);
    if (problem) req.reject('endpoint_bearer_token', problem);
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

/**
 * The one rule for an environment variable's name, for `env.<NAME>` and `secret_env.<NAME>`
 * alike (`field` is the one reported): the syntax, then the names a deployment may not set
 * (env-names.ts) — the runtime's own, and, where the image runs infergate's simulated engine
 * (`simulated`), those that make it load code. False when the name is refused.
 */
export function checkEnvName(req: Req, field: string, name: string, simulated: boolean): boolean {
  const problem = envNameProblem(name, simulated);
  if (problem === undefined) return true;
  req.add(field, problem);
  return false;
}

/** What a request makes of the replica's environment. */
export interface EnvDraft {
  /** Plain variables, stored and shown as they are (names that are always secret taken out). */
  env: Record<string, string>;
  /**
   * Changes to the secret variables: a value to seal (set or replace) or null (remove). A
   * name absent keeps what is stored: a client cannot resend what it cannot read.
   */
  secretEnv: Record<string, string | null>;
}

/** `env`: names, string values, no credential; names that are always secret are returned apart. */
function checkPlainEnv(req: Req, ctx: ValidationContext, ownToken: string | undefined, simulated: boolean): { plain: Record<string, string>; moved: Record<string, string> } {
  const plain: Record<string, string> = {};
  const moved: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.obj('env') ?? {})) {
    const field = `env.${name}`;
    checkEnvName(req, field, name, simulated);
    if (typeof value !== 'string') {
      req.add(field, `${field} must be a string, got ${kindOf(value)}`);
      continue;
    }
    const problem = credentialIn(field, value, ownToken, ctx);
    if (problem) req.add(field, problem);
    // A recipe that puts a registry key in env (the vendor container's) still gets it sealed.
    if (isAlwaysSecret(name)) moved[name] = value;
    else plain[name] = value;
  }
  return { plain, moved };
}

/** `secret_env`: the same names and screening as env; a value sets or replaces, null removes. */
function checkSecretValues(req: Req, ctx: ValidationContext, ownToken: string | undefined, simulated: boolean): Record<string, string | null> {
  const changes: Record<string, string | null> = {};
  for (const [name, value] of Object.entries(req.obj('secret_env') ?? {})) {
    const field = `secret_env.${name}`;
    if (value === null) {
      changes[name] = null;
      continue;
    }
    // Removing one is always allowed, whatever its name: it only takes something away.
    checkEnvName(req, field, name, simulated);
    if (typeof value !== 'string') {
      req.add(field, `${field} must be a string (set or replace the variable) or null (remove it), got ${kindOf(value)}`);
      continue;
    }
    const problem = credentialIn(field, value, ownToken, ctx);
    if (problem) req.add(field, problem);
    changes[name] = value;
  }
  return changes;
}

/**
 * env and secret_env together. Once the request is applied a name is plain or secret, never
 * both: the stored secret set (PATCH, clone) counts, minus what this request removes.
 * `simulated`: the image runs infergate's own engine (env-names.ts), which also holds for the
 * stored secret names a PATCH keeps (say, one set while the image ran its own command).
 */
export function checkEnvironment(req: Req, ctx: ValidationContext, ownToken: string | undefined, opts: Options, simulated: boolean): EnvDraft {
  const { plain, moved } = checkPlainEnv(req, ctx, ownToken, simulated);
  const changes = checkSecretValues(req, ctx, ownToken, simulated);
  for (const name of Object.keys(opts.inherited?.secrets.env ?? {})) {
    if (!Object.hasOwn(changes, name)) checkEnvName(req, `secret_env.${name}`, name, simulated);
  }
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) continue;
    if (Object.hasOwn(moved, name)) {
      req.add(
        `secret_env.${name}`,
        `${name} is given in both env and secret_env; give it once, in secret_env (${name} is always a secret variable, so in env it is moved there anyway)`,
      );
    } else if (Object.hasOwn(plain, name)) {
      req.add(`secret_env.${name}`, envBothProblem(name));
    }
  }
  const stored = opts.inherited?.secrets.env ?? {};
  for (const name of Object.keys(plain)) {
    if (!Object.hasOwn(stored, name) || Object.hasOwn(changes, name)) continue;
    req.add(
      `env.${name}`,
      `${name} is a secret variable of this deployment (listed in secret_env); a variable cannot be both: to change its value give it in secret_env, ` +
        `or to make it plain remove the secret in the same request with "secret_env": {"${name}": null}`,
    );
  }
  // On create there is nothing to remove: null only means "not set".
  const secretEnv = Object.fromEntries(Object.entries({ ...changes, ...moved }).filter(([, value]) => value !== null || opts.inherited !== null));
  return { env: plain, secretEnv };
}

export function checkAnnotations(req: Req): Record<string, string> {
  const annotations = req.obj('annotations') ?? {};
  for (const [key, value] of Object.entries(annotations)) {
    const field = `annotations.${key}`;
    const problem = annotationKeyProblem(key);
    if (problem) req.add(field, problem);
    if (typeof value !== 'string') req.add(field, `${field} must be a string, got ${kindOf(value)}`);
  }
  return stringEntries(annotations);
}

const stringEntries = (o: Obj): Record<string, string> =>
  Object.fromEntries(Object.entries(o).filter((e): e is [string, string] => typeof e[1] === 'string'));
