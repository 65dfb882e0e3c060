// Test helper: a gateway Route (src/gateway/routing-table.ts) with every field set to a plain
// default — one ready replica-less HTTP deployment, no credentials, no limits, the default flow
// control — so a unit test names only the fields it is about.

import { DEFAULT_FLOW_CONTROL } from '../../src/domain/records.js';
import type { Route } from '../../src/gateway/routing-table.js';

export function testRoute(o: Partial<Route> = {}): Route {
  return {
    deploymentId: 7,
    name: 'demo',
    project: 'default',
    host: 'demo.test',
    protocol: 'http',
    tokenHash: null,
    tokenMaxPriority: null,
    clientCertificates: new Map(),
    affinity: false,
    routingPolicy: 'affinity',
    paused: false,
    scaleToZero: false,
    status: 'ready',
    component: 'Replica',
    replicas: [],
    split: null,
    trafficRevisions: [],
    tag: null,
    maxBodyBytes: null,
    firstResponseMs: null,
    rateLimit: null,
    flowControl: DEFAULT_FLOW_CONTROL,
    ...o,
  };
}
