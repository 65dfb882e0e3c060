// Owns the NIM flavor's own endpoints: liveness that only says the process
// answers, readiness that waits for the model, /v1/metadata and /v1/version. A NIM downloads
// its weights from a registry with REGISTRY_API_KEY; without it the real container stays
// live and never becomes ready, and so does this one. The health.response body of
// /v1/health/ready is shared by every flavor (server.ts).

import type http from 'node:http';
import { sendJson } from '../protocol/http-io.js';

export const NIM_API_VERSION = '1.0.0';

export type Readiness = { ready: true } | { ready: false; why: string };

export function handleLive(res: http.ServerResponse): void {
  sendJson(res, 200, { object: 'health.response', message: 'Service is live', status: 'live' });
}

/** 200 once the model is loaded, 503 before (or forever when it cannot load). */
export function handleReady(res: http.ServerResponse, readiness: Readiness): void {
  if (readiness.ready) {
    sendJson(res, 200, { object: 'health.response', message: 'Service is ready', status: 'ready' });
    return;
  }
  sendJson(res, 503, { object: 'health.response', message: `Service is not ready: ${readiness.why}`, status: 'not_ready' });
}

export function handleVersion(res: http.ServerResponse, release: string): void {
  sendJson(res, 200, { release, api: NIM_API_VERSION });
}

export function handleMetadata(res: http.ServerResponse, model: string, release: string): void {
  sendJson(res, 200, {
    simulated: true,
    description: 'infergate reference engine in the nim flavor: a simulated NIM, no GPU and no real model',
    version: release,
    modelInfo: [{ shortName: model, modelUrl: `simulated://${model}` }],
    assetInfo: [],
    licenseInfo: { name: 'simulated', type: 'none' },
    repository_override: '',
  });
}

/** The key a NIM needs to download weights; unset or empty means the model can never load. */
export function registryKeyMissing(env: NodeJS.ProcessEnv): boolean {
  return (env.REGISTRY_API_KEY ?? '') === '';
}
