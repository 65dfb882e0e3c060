// Test helper: a replica request as the controller would hand it to a runtime — a reference
// engine replica of deployment 1, revision 1, with logging on — changed by what a test names.

import type { ReplicaRequest } from '../../src/runtime/runtime.js';

export function replicaRequest(o: Partial<ReplicaRequest> = {}): ReplicaRequest {
  return {
    name: 'web-r1-3',
    deploymentId: 1,
    revision: 1,
    component: 'Replica',
    image: 'infergate/reference-engine',
    tag: 'openai',
    command: [],
    env: {},
    configFile: null,
    containerPort: 8000,
    protocol: 'http',
    healthPath: '/health',
    metricsPort: null,
    metricsPath: null,
    logging: true,
    modelCaching: false,
    gpus: 1,
    hardware: null,
    registryAuth: null,
    ...o,
  };
}
