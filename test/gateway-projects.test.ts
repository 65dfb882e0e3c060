// Two projects each with a deployment named `chat`, through the gateway over real TLS on
// loopback: the default project's at `chat.<domain>` and `/endpoints/chat/` as before (and at
// `chat.default.<domain>`, `/endpoints/chat.default/`), team-a's at `chat.team-a.<domain>` and
// `/endpoints/chat.team-a/`, each answered by its own replica and opened by its own token
// only. Host names of two labels get a certificate a client verifies on its first handshake
// (the `*.<domain>` wildcard does not name them). Metrics and usage records tell the two apart.

import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/core/secrets.js';
import { TOKEN_HASH_INDEX } from '../src/control/deployment-service.js';
import { DOMAIN, startGatewayEnv, tokenFor, waitFor, type GatewayEnv } from './helpers/gateway-env.js';
import { httpsRequest } from './helpers/https-client.js';

let env: GatewayEnv;
const upstreams: http.Server[] = [];
const TEAM_TOKEN = 'tok_team-a-chat_0123456789abcdef';
let defaultId: number;
let teamId: number;

/** A replica that says whose it is and which path it was sent. */
async function replicaServer(who: string): Promise<string> {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ who, path: req.url }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstreams.push(server);
  return `127.0.0.1:${(server.address() as { port: number }).port}`;
}

beforeAll(async () => {
  env = await startGatewayEnv({ withUsage: true });
  // The default project's chat as the API makes it today; team-a's written straight into the store.
  defaultId = await env.deploy('chat');
  const record = (await env.api.store.get('deployment', defaultId))!.value;
  const token = await env.api.store.create('token', (id) => ({ id, project: 'team-a', name: 'team-a-chat-endpoint', hash: sha256Hex(TEAM_TOKEN), max_priority: null, created_at: new Date().toISOString() }), {
    unique: [{ index: TOKEN_HASH_INDEX, key: sha256Hex(TEAM_TOKEN) }],
  });
  const team = await env.api.store.create('deployment', (id) => ({ ...record, id, project: 'team-a', auth: { ...record.auth, token_id: token.value.id } }), {
    unique: [{ index: 'deployment-name', key: 'team-a/chat' }],
  });
  teamId = team.value.id;
  await env.addReplica(defaultId, await replicaServer('default'));
  await env.addReplica(teamId, await replicaServer('team-a'));
  await waitFor(() => env.gateway.table.lookup(`chat.team-a.${DOMAIN}`)?.replicas.length === 1 && env.gateway.table.lookup(`chat.${DOMAIN}`)?.replicas.length === 1, 2000, 'both chats routed');
}, 30_000);

afterAll(async () => {
  await env?.close();
  for (const s of upstreams) s.close();
});

/** A request as a client sends it: SNI and Host the name, the platform CA the only anchor, the name verified. */
const call = (host: string, path: string, token: string | null, sni: string | null = host) =>
  httpsRequest({ port: env.port, host, servername: sni, ca: env.ca.certPem, path, headers: token === null ? {} : { authorization: `Bearer ${token}` } });

const answer = (body: string) => JSON.parse(body) as { who: string; path: string };

describe('two projects with a deployment named chat', () => {
  it('serves each at its host address, the path untouched, with its own token only', async () => {
    const mine = await call(`chat.${DOMAIN}`, '/v1/models', tokenFor('chat'));
    expect(mine.status, mine.body).toBe(200);
    expect(answer(mine.body)).toEqual({ who: 'default', path: '/v1/models' });

    const theirs = await call(`chat.team-a.${DOMAIN}`, '/v1/models', TEAM_TOKEN);
    expect(theirs.status, theirs.body).toBe(200);
    expect(answer(theirs.body)).toEqual({ who: 'team-a', path: '/v1/models' });

    // One project's token never opens the other's chat.
    expect((await call(`chat.${DOMAIN}`, '/v1/models', TEAM_TOKEN)).status).toBe(401);
    expect((await call(`chat.team-a.${DOMAIN}`, '/v1/models', tokenFor('chat'))).status).toBe(401);
  });

  it('serves the default project\'s chat at its second spelling too, with a certificate naming it', async () => {
    const res = await call(`chat.default.${DOMAIN}`, '/v1/models', tokenFor('chat'));
    expect(res.status, res.body).toBe(200);
    expect(answer(res.body).who).toBe('default');
  });

  it('serves each at its path address, the prefix stripped', async () => {
    for (const host of ['localhost', '127.0.0.1', DOMAIN]) {
      const sni = /^[\d.]+$/.test(host) ? null : host;
      const mine = await call(host, '/endpoints/chat/v1/models?x=1', tokenFor('chat'), sni);
      expect(mine.status, `${host}: ${mine.body}`).toBe(200);
      expect(answer(mine.body)).toEqual({ who: 'default', path: '/v1/models?x=1' });
      const explicit = await call(host, '/endpoints/chat.default/v1/models', tokenFor('chat'), sni);
      expect(answer(explicit.body)).toEqual({ who: 'default', path: '/v1/models' });
      const theirs = await call(host, '/endpoints/chat.team-a/v1/models', TEAM_TOKEN, sni);
      expect(theirs.status, `${host}: ${theirs.body}`).toBe(200);
      expect(answer(theirs.body)).toEqual({ who: 'team-a', path: '/v1/models' });
    }
    expect((await call('localhost', '/endpoints/chat.team-a/v1/models', tokenFor('chat'))).status).toBe(401);
  });

  it('serves nothing at another project\'s spelling of either, and says which name it looked for', async () => {
    const missing = await call('localhost', '/endpoints/chat.team-b/v1/models', TEAM_TOKEN);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).error.message).toMatch(/no endpoint is named chat in project team-b \(\/endpoints\/chat\.team-b\/\)/);
    // No certificate names an unknown host: the client is refused it unless it skips the check.
    await expect(call(`chat.team-b.${DOMAIN}`, '/v1/models', TEAM_TOKEN)).rejects.toThrow(/altnames|does not match/i);
    const unknown = await httpsRequest({ port: env.port, host: `chat.team-b.${DOMAIN}`, ca: env.ca.certPem, path: '/', checkIdentity: false });
    expect(unknown.status).toBe(404);
  });

  it('counts each in metrics and usage under its own project', async () => {
    const text = await env.registry.metrics();
    expect(text).toMatch(/infergate_requests_total\{[^}]*deployment="chat"[^}]*\} [1-9]/);
    expect(text).toMatch(/infergate_requests_total\{[^}]*deployment="chat\.team-a"[^}]*\} [1-9]/);
    await env.usage!.flush();
    const usage = (await env.api.store.list('usage')).map((u) => u.value);
    expect(usage.find((u) => u.deployment_id === teamId)).toMatchObject({ project: 'team-a' });
    expect(usage.find((u) => u.deployment_id === defaultId)).toMatchObject({ project: 'default' });
    // Every authenticated request above, each under the deployment it reached: team-a's by host
    // once and by path on three hosts; default's by both host spellings and two path spellings on three.
    expect(usage.find((u) => u.deployment_id === teamId)!.requests).toBe(4);
    expect(usage.find((u) => u.deployment_id === defaultId)!.requests).toBe(8);
  });
});
