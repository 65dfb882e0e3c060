// Test helper: a control API and a gateway over one store, as `infergate serve` composes
// them, on real ports: the gateway speaks TLS with a platform CA made in a temp dir, its
// metrics go to a registry the test can read. Replicas are registered the way the runtime
// records them (observed state in the store), pointing at servers the test starts.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway/gateway.js';
import { loadOrCreateCa, type CertificateAuthority } from '../../src/pki/ca.js';
import { loadOrIssueGatewayCertificate } from '../../src/pki/server-certs.js';
import { UsageLedger } from '../../src/store/usage-ledger.js';
import { generalBody, startControl, type TestControl } from './control.js';
import { waitFor } from './wait.js';

export const DOMAIN = 'endpoints.test';

/** The bearer token `deploy()` binds to a deployment unless overridden. */
export const tokenFor = (name: string): string => `tok_${name}_0123456789abcdef0123`;
export const hostOf = (name: string): string => `${name}.${DOMAIN}`;

export interface GatewayEnv {
  api: TestControl;
  gateway: Gateway;
  port: number;
  ca: CertificateAuthority;
  registry: Registry;
  /** The gateway's usage ledger, with `withUsage`. */
  usage?: UsageLedger;
  /** Creates a general deployment through the API and returns its id. */
  deploy(name: string, overrides?: Record<string, unknown>): Promise<number>;
  /** Registers a ready replica of a deployment at an address; returns the replica id. */
  /** A ready replica record at `address` (of revision 1 unless said): the gateway routes to it. */
  addReplica(deploymentId: number, address: string, component?: string, revision?: number): Promise<number>;
  removeReplica(id: number): Promise<void>;
  /** Resolves once the gateway's table routes `name` to `count` replicas. */
  waitForReplicas(name: string, count: number): Promise<void>;
  close(): Promise<void>;
}

export { waitFor };

export async function startGatewayEnv(
  opts: Partial<Pick<GatewayOptions, 'ejection' | 'timeouts' | 'loadFactor' | 'connections' | 'clientTimeouts' | 'body' | 'authFailures' | 'tracing'>> & { withUsage?: boolean } = {},
): Promise<GatewayEnv> {
  const certsDir = await mkdtemp(path.join(os.tmpdir(), 'infergate-gw-certs-'));
  const ca = await loadOrCreateCa(certsDir);
  const api = await startControl({ ca }); // one platform CA, as serve shares its certs dir
  const cert = await loadOrIssueGatewayCertificate(ca, certsDir, DOMAIN);
  const registry = new Registry();
  const { withUsage, ...gatewayOpts } = opts;
  // A usage ledger flushed on demand (usage.flush()) when the test reads the usage view.
  const usage = withUsage ? new UsageLedger(api.store, 60_000) : undefined;
  const gateway = createGateway({ store: api.store, domain: DOMAIN, ...cert, ca, registry, logger: pino({ level: 'silent' }), usage, ...gatewayOpts });
  await gateway.start();
  await new Promise<void>((resolve) => gateway.server.listen(0, '127.0.0.1', resolve));
  const port = (gateway.server.address() as { port: number }).port;

  const env: GatewayEnv = {
    api,
    gateway,
    port,
    ca,
    registry,
    usage,
    async deploy(name, overrides = {}) {
      const res = await api.call('POST', '/deployments/general', { ...generalBody(name, tokenFor(name)), ...overrides });
      if (res.status !== 201) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`);
      await waitFor(() => gateway.table.lookup(`${name}.${DOMAIN}`) !== undefined, 2000, `route for ${name}`);
      return res.body.id as number;
    },
    async addReplica(deploymentId, address, component = 'Replica', revision = 1) {
      const created = await api.store.create('replica', (id) => ({
        id,
        deployment_id: deploymentId,
        revision,
        component,
        name: `test-replica-${id}`,
        address,
        state: 'ready' as const,
        restarts: 0,
        pid: null,
        metrics_target: null,
        updated_at: new Date().toISOString(),
      }));
      return created.value.id;
    },
    async removeReplica(id) {
      await api.store.delete('replica', id);
    },
    async waitForReplicas(name, count) {
      await waitFor(() => gateway.table.lookup(`${name}.${DOMAIN}`)?.replicas.length === count, 2000, `${count} replicas of ${name}`);
    },
    async close() {
      await gateway.close();
      await usage?.stop();
      await api.close();
      await rm(certsDir, { recursive: true, force: true });
    },
  };
  return env;
}
