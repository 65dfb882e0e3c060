// Owns the conversation with the identity provider (OpenID Connect, through openid-client):
// discovery of its endpoints (lazily, retried until it answers), the authorization code flow
// with PKCE, state and nonce, the device authorization grant polled one step at a time,
// refresh, and reading who a person is from the ID token and the userinfo endpoint (the
// configured group claim among it). This service is a confidential client: it authenticates
// to the provider with its client secret.

import * as oidc from 'openid-client';


export interface OidcSettings {
  /** The issuer URL (https; http only on a loopback host, for development and tests). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The claim that lists a person's groups (ID token or userinfo). */
  groupsClaim: string;
  /** Scopes asked for; `openid` is always among them. */
  scopes: string[];
}

/** Who the provider says signed in. */
export interface IdpIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
  groups: string[];
  /** The provider's refresh token, when it gave one (kept sealed: groups are read again on refresh). */
  refreshToken: string | null;
}

/** What the browser carries from /auth/login to /auth/callback (sealed in a cookie). */
export interface LoginChecks {
  state: string;
  nonce: string;
  verifier: string;
}

export interface DeviceStart {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string | null;
  expires_in: number;
  interval: number;
}

/** One poll of the device grant: done, or the RFC 8628 answer to pass on. */
export type DevicePoll = { done: IdpIdentity } | { pending: 'authorization_pending' | 'slow_down' | 'expired_token' | 'access_denied'; message: string };

/** The provider refused (a bad code, a refresh token it no longer honours, a user it disabled). */
export class IdpRefusal extends Error {
  override name = 'IdpRefusal';
  constructor(
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

/** The provider could not be reached or answered something that is not OpenID Connect. */
export class IdpUnavailable extends Error {
  override name = 'IdpUnavailable';
}

export class OidcClient {
  private config: Promise<oidc.Configuration> | null = null;

  constructor(readonly settings: OidcSettings) {}

  /** The provider's metadata; a failed discovery is tried again on the next call. */
  private configuration(): Promise<oidc.Configuration> {
    if (this.config) return this.config;
    const url = new URL(this.settings.issuer);
    const insecure = url.protocol === 'http:';
    const pending = oidc
      .discovery(url, this.settings.clientId, undefined, oidc.ClientSecretBasic(this.settings.clientSecret), {
        ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
        timeout: 10,
      })
      .catch((err: unknown) => {
        this.config = null;
        throw new IdpUnavailable(`the identity provider at ${this.settings.issuer} does not answer its discovery document: ${(err as Error).message}`);
      });
    this.config = pending;
    return pending;
  }

  /** Fetches the metadata now (start-up), so a misconfigured issuer shows in the log at once. */
  async discover(): Promise<void> {
    await this.configuration();
  }

  private scope(): string {
    return [...new Set(['openid', ...this.settings.scopes])].join(' ');
  }

  /** Where to send the browser, and what the callback must find again. */
  async beginLogin(redirectUri: string): Promise<{ url: string; checks: LoginChecks }> {
    const config = await this.configuration();
    const checks: LoginChecks = { state: oidc.randomState(), nonce: oidc.randomNonce(), verifier: oidc.randomPKCECodeVerifier() };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.scope(),
      response_type: 'code',
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(checks.verifier),
      code_challenge_method: 'S256',
      // offline_access is granted only with consent at some providers (it yields the refresh token).
      ...(this.settings.scopes.includes('offline_access') ? { prompt: 'consent' } : {}),
    });
    return { url: url.href, checks };
  }

  /** The callback: the code exchanged (PKCE, state and nonce checked), the ID token validated. */
  async finishLogin(callbackUrl: URL, redirectUri: string, checks: LoginChecks): Promise<IdpIdentity> {
    const config = await this.configuration();
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: checks.verifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      }, { redirect_uri: redirectUri });
      return await this.identityOf(config, tokens, null);
    } catch (err) {
      throw refusalOf(err);
    }
  }

  async startDevice(): Promise<DeviceStart> {
    const config = await this.configuration();
    try {
      const d = await oidc.initiateDeviceAuthorization(config, { scope: this.scope() });
      return {
        device_code: d.device_code,
        user_code: d.user_code,
        verification_uri: d.verification_uri,
        verification_uri_complete: d.verification_uri_complete ?? null,
        expires_in: d.expires_in,
        interval: d.interval ?? 5,
      };
    } catch (err) {
      throw refusalOf(err);
    }
  }

  /** One poll of the token endpoint for a device code (the client paces the polls). */
  async pollDevice(deviceCode: string): Promise<DevicePoll> {
    const config = await this.configuration();
    try {
      const tokens = await oidc.genericGrantRequest(config, 'urn:ietf:params:oauth:grant-type:device_code', { device_code: deviceCode });
      return { done: await this.identityOf(config, tokens, null) };
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal instanceof IdpRefusal && (refusal.error === 'authorization_pending' || refusal.error === 'slow_down' || refusal.error === 'expired_token' || refusal.error === 'access_denied')) {
        return { pending: refusal.error, message: refusal.message };
      }
      throw refusal;
    }
  }

  /** Refreshes at the provider: who the person is now (their groups read again), or IdpRefusal. */
  async refresh(refreshToken: string, subject: string): Promise<IdpIdentity> {
    const config = await this.configuration();
    try {
      const tokens = await oidc.refreshTokenGrant(config, refreshToken, { scope: this.scope() });
      const identity = await this.identityOf(config, tokens, subject);
      // A provider that does not rotate refresh tokens keeps honouring the old one.
      return { ...identity, refreshToken: identity.refreshToken ?? refreshToken };
    } catch (err) {
      throw refusalOf(err);
    }
  }

  /**
   * The person of a token response: the ID token's claims (its signature, audience, expiry
   * and nonce were checked by openid-client), completed by the userinfo endpoint, where many
   * providers put email and groups for the code flow. `subject`: who a refresh must be about.
   */
  private async identityOf(config: oidc.Configuration, tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers, subject: string | null): Promise<IdpIdentity> {
    const idClaims = tokens.claims();
    const sub = idClaims?.sub ?? subject;
    if (!sub) throw new IdpRefusal('invalid_token', 'the identity provider gave no ID token');
    if (subject !== null && sub !== subject) throw new IdpRefusal('invalid_token', 'the identity provider answered for another subject');
    let claims: Record<string, unknown> = { ...(idClaims ?? {}) };
    if (config.serverMetadata().userinfo_endpoint && tokens.access_token) {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, sub);
      claims = { ...claims, ...info };
    }
    return {
      issuer: config.serverMetadata().issuer,
      subject: sub,
      email: typeof claims.email === 'string' ? claims.email.toLowerCase() : null,
      name: typeof claims.name === 'string' ? claims.name : null,
      groups: groupsOf(claims[this.settings.groupsClaim]),
      refreshToken: tokens.refresh_token ?? null,
    };
  }
}

/** A group claim as providers send it: a list of names, or one name. */
function groupsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((g): g is string => typeof g === 'string');
  return [];
}

function refusalOf(err: unknown): Error {
  if (err instanceof IdpRefusal || err instanceof IdpUnavailable) return err;
  if (err instanceof oidc.ResponseBodyError || err instanceof oidc.AuthorizationResponseError) {
    return new IdpRefusal(err.error, err.error_description ?? err.error);
  }
  if (err instanceof oidc.ClientError) return new IdpRefusal('invalid_response', err.message);
  return new IdpUnavailable(`the identity provider could not be reached: ${(err as Error).message}`);
}
