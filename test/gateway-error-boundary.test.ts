// The gateway's error boundary: an exception thrown inside a phase of one request (a bug) ends
// that request with a 500 (gRPC: INTERNAL) that is logged and counted, and the gateway serves
// the next request as before — it neither crashes nor leaves the request unfinished.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostOf, startGatewayEnv, tokenFor, type GatewayEnv } from './helpers/gateway-env.js';
import { httpsRequest } from './helpers/https-client.js';
import { startRecordingUpstream, type RecordingUpstream } from './helpers/recording-upstream.js';

let env: GatewayEnv;
let upstream: RecordingUpstream;

beforeAll(async () => {
  env = await startGatewayEnv();
  upstream = await startRecordingUpstream('a');
  const id = await env.deploy('boundary');
  await env.addReplica(id, upstream.address);
  await env.waitForReplicas('boundary', 1);
});

afterAll(async () => {
  await env?.close();
  await upstream?.close();
});

const call = () =>
  httpsRequest({ port: env.port, host: hostOf('boundary'), ca: env.ca.certPem, path: '/v1/models', headers: { authorization: `Bearer ${tokenFor('boundary')}`, 'x-request-id': 'req-boundary-1' } });

describe('an exception inside a phase', () => {
  it('answers that request 500, counts it, and the next request is served', async () => {
    const table = env.gateway.table;
    const lookup = table.lookup.bind(table);
    let thrown = 0;
    // A bug in the route phase, once.
    table.lookup = (host) => {
      if (thrown === 0) {
        thrown++;
        throw new Error('a bug in a phase');
      }
      return lookup(host);
    };
    try {
      const failed = await call();
      expect(thrown).toBe(1);
      expect(failed.status).toBe(500);
      expect(JSON.parse(failed.body).error.code).toBe('internal');
      expect(upstream.seen).toHaveLength(0);
      const metrics = await env.registry.metrics();
      expect(metrics).toMatch(/infergate_gateway_internal_errors_total\{deployment=""\} 1/);

      const served = await call();
      expect(served.status).toBe(200);
      expect(upstream.seen).toHaveLength(1);
    } finally {
      table.lookup = lookup;
    }
  });
});
