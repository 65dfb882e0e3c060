// Test helper: a real OpenID Provider (panva's oidc-provider) on a free loopback port, with
// people whose groups a test sets and changes (the `groups` claim, through the `groups`
// scope, in userinfo as most providers give it for the code flow), the device authorization
// grant and PKCE on, and its own login and consent pages (devInteractions: any password).
// The client (this service) is registered once the control API's callback URL is known.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestPerson {
  email: string;
  name: string;
  groups: string[];
  /** A disabled person is unknown to the provider: sign-in and refresh fail. */
  disabled?: boolean;
}

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Registers this service as a client with its redirect URI and starts answering. */
  start(redirectUri: string): void;
  people: Map<string, TestPerson>;
  close(): Promise<void>;
}

export const IDP_SCOPES = 'openid email profile groups offline_access';

export async function startTestIdp(people: Record<string, TestPerson>): Promise<TestIdp> {
  const accounts = new Map(Object.entries(people));
  let handler: ((req: http.IncomingMessage, res: http.ServerResponse) => void) | null = null;
  const server = http.createServer((req, res) => {
    if (handler) return handler(req, res);
    res.statusCode = 503;
    res.end('not started');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'infergate-test';
  const clientSecret = `secret-${Math.random().toString(36).slice(2)}-0123456789abcdef`;

  return {
    issuer,
    clientId,
    clientSecret,
    people: accounts,
    start(redirectUri: string) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [redirectUri],
            grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        async findAccount(_ctx, id) {
          const person = accounts.get(id);
          if (!person || person.disabled) return undefined;
          return {
            accountId: id,
            async claims() {
              // Read at every userinfo call: a group removed here is gone at the next refresh.
              const now = accounts.get(id);
              return { sub: id, email: now?.email, email_verified: true, name: now?.name, groups: [...(now?.groups ?? [])] };
            },
          };
        },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
        scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
        features: { devInteractions: { enabled: true }, deviceFlow: { enabled: true }, userinfo: { enabled: true } },
        pkce: { required: () => true },
        cookies: { keys: ['test-idp-cookie-key-0123456789abcdef'] },
        ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, RefreshToken: 86_400, DeviceCode: 600 },
        // A refresh token for offline_access, whether it came through the code flow or the device grant.
        issueRefreshToken: async (_ctx, client, code) => client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
      });
      // Polls every second (RFC 8628's default is 5 s when the provider says nothing): tests stay short.
      provider.use(async (ctx, next) => {
        await next();
        const body = ctx.body as { device_code?: string; interval?: number } | undefined;
        if (ctx.path === '/device/auth' && body && typeof body === 'object' && body.device_code) body.interval = 1;
      });
      const callback = provider.callback();
      handler = (req, res) => void callback(req, res);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
